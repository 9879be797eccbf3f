"""report/sigdiff.py: a block of rows written as inferno must read it (displayable_stack), and a side whose file
no longer reads as it did a moment ago is one line."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report import sigdiff
from rpcprof.report.flamegraph import drawn_block
from rpcprof.report.flamegraph import displayable_stack

DATA = Path(__file__).resolve().parents[1] / "data"
RULES = load_rules()


def test_a_block_is_written_as_displayable_stack_writes_it():
    lines = ["a;b 1", " lead 2", "# c;d 3", "e;f 12 4", "g;h 1.5 5", "i;j  6", "k;é 7", "l;\x7f 8", "m; 9",
             "n;o 010", "p;q 0", ";r 1", "s;;t 2", "u;v (w.py:12) 3", "u;v w 4", "x;y  z 5", "x;y z. 6", "x;y z 1.5 7"]
    from rpcprof.analyze.folded_blocks import _rows
    for i in range(len(lines)):
        for j in range(i + 1, len(lines) + 1):
            text, rows = _rows("\n".join(lines[i:j]))
            want = "".join(f"{displayable_stack((c + leaf).split(';'))} {int(w)}\n" for c, leaf, w in rows)
            assert drawn_block(text, rows) == want


def test_a_side_that_cannot_be_read_again_is_one_line(tmp_path, monkeypatch):
    from rpcprof.errors import UserError
    stacks = [frames for frames, _ in open_folded(DATA / "rust_tonic_mt.folded.gz")[:30]]
    a = fleet_folded(tmp_path / "a.folded", 3000, stacks)
    monkeypatch.setattr(sigdiff, "read_into", lambda *args: False)      # changed since it was scanned
    with pytest.raises(UserError, match="run the command again"):
        sigdiff.render_diff(a, a, tmp_path / "x.svg", RULES, None, True, False, "t", "table")
