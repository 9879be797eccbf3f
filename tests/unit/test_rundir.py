"""Run folders (rundir.py): folders made in the same second get distinct names."""
from __future__ import annotations

import re

from rpcprof.rundir import make_run_dir


def test_run_folders_made_in_the_same_second_get_a_suffix(tmp_path):
    folders = [make_run_dir("same label", base=tmp_path) for _ in range(3)]
    assert len(set(folders)) == 3
    assert all(f.is_dir() and f.parent == tmp_path for f in folders)
    assert all(re.fullmatch(r"\d{8}-\d{6}-same-label(-\d+)?", f.name) for f in folders)
