"""The lines inferno-flamegraph draws from, as the core writes them (rpcprof.folded.drawn_stacks), and a side
of report/sigdiff.py whose file no longer reads as it did a moment ago is one line."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import rpcprof_core
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report import sigdiff
from rpcprof.folded import drawn_stacks

DATA = Path(__file__).resolve().parents[1] / "data"
RULES = load_rules()


# each line, and the stack inferno-flamegraph must be given for it to draw every frame as written: inferno trims a
# line, skips one starting with `# `, reads a last frame ending in ` 123` or ` 1.5` as a second count, rejects what
# is not UTF-8 and passes control characters through
DRAWN = [("a;b 1", "a;b", 1), (" lead 2", "lead", 2), ("# c;d 3", "#\u00a0c;d", 3), ("e;f 12 4", "e;f\u00a012", 4),
         ("g;h 1.5 5", "g;h\u00a01.5", 5), ("i;j  6", "i;j", 6), ("k;\u00e9 7", "k;\u00e9", 7), ("l;\x7f 8", "l;\ufffd", 8),
         ("m; 9", "m;", 9), ("n;o 010", "n;o", 10), ("p;q 0", "p;q", 0), (";r 1", ";r", 1), ("s;;t 2", "s;;t", 2),
         ("u;v (w.py:12) 3", "u;v (w.py:12)", 3), ("u;v w 4", "u;v w", 4), ("x;y  z 5", "x;y  z", 5),
         ("x;y z. 6", "x;y z.", 6), ("x;y z 1.5 7", "x;y z\u00a01.5", 7), ("a;\u202eb\x1b 8", "a;\ufffdb\ufffd", 8),
         (" 9", "[empty stack]", 9)]


@pytest.mark.parametrize("gzipped", [False, True])
def test_the_core_draws_each_line_as_inferno_must_read_it(tmp_path, gzipped):
    text = "".join(line + "\n" for line, _, _ in DRAWN).encode("utf-8") + b"bad;\xff\xfe 3\n"
    path = tmp_path / ("lines.folded.gz" if gzipped else "lines.folded")
    path.write_bytes(gzip.compress(text) if gzipped else text)
    want = [(stack.split(";"), w) for _, stack, w in DRAWN] + [(["bad", "\ufffd\ufffd"], 3)]
    assert drawn_stacks(path) == want


def test_a_side_that_cannot_be_read_again_is_one_line(tmp_path, monkeypatch):
    from rpcprof.errors import UserError
    stacks = [frames for frames, _ in open_folded(DATA / "rust_tonic_mt.folded.gz")[:30]]
    a = fleet_folded(tmp_path / "a.folded", 3000, stacks)
    def changed(*args, **kwargs):                                       # changed since it was scanned
        raise rpcprof_core.Refused("a line that is not a stack")
    monkeypatch.setattr(sigdiff, "read_breakdown", changed)
    with pytest.raises(UserError, match="run the command again"):
        sigdiff.render_diff(a, a, tmp_path / "x.svg", RULES, None, True, False, "t", "table")
