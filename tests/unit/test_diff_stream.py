"""report.py diff of two bare folded files read as they go (report/diff_stream.py) gives the same graph, tables
and lists, byte for byte, as the stacks held whole (report/sigdiff.py's path before it): on the captures, on
hostile frame names, on the leaves shape with frames on one side only (new, vanished, drawn at A's width), in
every --normalize mode and format."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report import sigdiff
from rpcprof.report.diff_stream import drawn_block, scan
from rpcprof.report.flamegraph import displayable_stack

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
RULES = load_rules()
APP = r"main\.\(\*server\)|Greeter|<script>"


def both_ways(a: Path, b: Path, tmp_path: Path, monkeypatch, normalize: bool, fmt: str, app=None) -> None:
    got_svg, want_svg = tmp_path / "got.svg", tmp_path / "want.svg"
    got = sigdiff.render_diff(a, b, got_svg, RULES, app, normalize, False, "t", fmt)
    with monkeypatch.context() as m:
        m.setattr(sigdiff, "scan", lambda path: None)           # the stacks held whole, as before
        want = sigdiff.render_diff(a, b, want_svg, RULES, app, normalize, False, "t", fmt)
    assert got.replace(str(got_svg), "X") == want.replace(str(want_svg), "X")
    assert got_svg.read_bytes() == want_svg.read_bytes()


def leaves_pair(tmp_path: Path) -> tuple[Path, Path]:
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:30]]
    odd = ["", "send", "x_[k]", "a b", "é", "# c", "n 12", "m 1.5", "tab\there"]
    a = fleet_folded(tmp_path / "a.folded", 3000, stacks, odd)
    b = fleet_folded(tmp_path / "b.folded", 2500, stacks[:20] + [["main", "only_b"]])
    with b.open("a") as f:
        f.write("main;worker_1;gone_[k] 3\n")
    return a, b


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("normalize", [True, False])
def test_streamed_diff_of_leaves_files(tmp_path, monkeypatch, normalize, fmt):
    a, b = leaves_pair(tmp_path)
    assert scan(a) and scan(b)
    both_ways(a, b, tmp_path, monkeypatch, normalize, fmt)
    both_ways(b, a, tmp_path, monkeypatch, normalize, fmt, APP)
    both_ways(a, a, tmp_path, monkeypatch, normalize, fmt)


PRINTABLE_ODD = ["", "a b", "# c", "n 12", "m 1.5", "x .", "y 1.2.3", "trail ", " lead", "#x", "# ", "z 7."]


@pytest.mark.parametrize("odd", [["x_[k]", "send"], PRINTABLE_ODD], ids=["as-written", "printable"])
@pytest.mark.parametrize("normalize", [True, False])
def test_streamed_diff_of_printable_leaves_files(tmp_path, monkeypatch, normalize, odd):
    """Printable ASCII lines, some drawn otherwise than written (a leaf ending in a space or in ` 12`, a stack
    starting with a space or `# `, none at all), frames on both sides only: the core draws and merges them
    and the graph is drawn while the sides are read."""
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:30]]
    a = fleet_folded(tmp_path / "a.folded", 3000, stacks, odd)
    b = fleet_folded(tmp_path / "b.folded", 2500, stacks[:20] + [["main", "only_b"]])
    both_ways(a, b, tmp_path, monkeypatch, normalize, "json")
    both_ways(b, a, tmp_path, monkeypatch, normalize, "table")


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("pair", [(0, 1), (2, 3), (4, 4), (5, 6), (7, -1)])
def test_streamed_diff_of_captures(tmp_path, monkeypatch, pair, normalize):
    files = CAPTURES + [DATA / "hostile.folded"]
    both_ways(files[pair[0]], files[pair[1]], tmp_path, monkeypatch, normalize, "json")


def test_a_block_is_written_as_displayable_stack_writes_it():
    lines = ["a;b 1", " lead 2", "# c;d 3", "e;f 12 4", "g;h 1.5 5", "i;j  6", "k;é 7", "l;\x7f 8", "m; 9",
             "n;o 010", "p;q 0", ";r 1", "s;;t 2", "u;v (w.py:12) 3", "u;v w 4", "x;y  z 5", "x;y z. 6", "x;y z 1.5 7"]
    from rpcprof.analyze.folded_blocks import _rows
    for i in range(len(lines)):
        for j in range(i + 1, len(lines) + 1):
            text, rows = _rows("\n".join(lines[i:j]))
            want = "".join(f"{displayable_stack((c + leaf).split(';'))} {int(w)}\n" for c, leaf, w in rows)
            assert drawn_block(text, rows) == want
            assert drawn_block(text, rows, 0.5) == "".join(
                f"{displayable_stack((c + leaf).split(';'))} {round(int(w) * 0.5)}\n" for c, leaf, w in rows)
            assert drawn_block(text, rows, 0.5, weighed=True) == "".join(
                f"{displayable_stack((c + leaf).split(';'))} {round(int(w) * 0.5)}\n" for c, leaf, w in rows
                if round(int(w) * 0.5) > 0)


def test_a_side_that_cannot_be_read_again_is_one_line(tmp_path, monkeypatch):
    from rpcprof.errors import UserError
    a, b = leaves_pair(tmp_path)

    def gone(*args):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(sigdiff, "SidesRead", gone)
    with pytest.raises(UserError, match="run the command again"):
        sigdiff.render_diff(a, b, tmp_path / "x.svg", RULES, None, True, False, "t", "table")


@pytest.mark.parametrize("normalize", [True, False])
def test_streamed_diff_of_leaves_no_rule_matches(tmp_path, monkeypatch, normalize):
    """Every chunk counted at once, the graph drawn while the sides are read; frames on both sides only."""
    a, b = tmp_path / "a.folded", tmp_path / "b.folded"
    a.write_text("".join(f"main;worker_{i % 7};fn_{i % 13};leaf_{i} {i % 7 + 1}\n" for i in range(20_000)))
    b.write_text("".join(f"main;worker_{i % 7};fn_{i % 13};leaf_{i} {i % 5 + 1}\n" for i in range(300, 18_000)))
    both_ways(a, b, tmp_path, monkeypatch, normalize, "json")
