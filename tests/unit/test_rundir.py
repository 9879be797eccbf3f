"""Run folders (rundir.py): folders made in the same second get distinct names."""
from __future__ import annotations

import re

from rpcprof.rundir import RunFolder


def test_run_folders_made_in_the_same_second_get_a_suffix(tmp_path):
    folders = [RunFolder.create("same label", base=tmp_path).path for _ in range(3)]
    assert len(set(folders)) == 3
    assert all(f.is_dir() and f.parent == tmp_path for f in folders)
    assert all(re.fullmatch(r"\d{8}-\d{6}-same-label(-\d+)?", f.name) for f in folders)


def test_a_rounds_folder_is_round_k_and_a_run_made_before_keeps_its_repeat_k(tmp_path):
    from rpcprof.rundir import server_path
    assert server_path(tmp_path, "s", 1) == tmp_path / "s"
    assert server_path(tmp_path, "s", 2) == tmp_path / "s" / "round-2"
    (tmp_path / "s" / "repeat-3").mkdir(parents=True)
    assert server_path(tmp_path, "s", 3) == tmp_path / "s" / "repeat-3"
