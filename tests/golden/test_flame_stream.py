"""The flame graph drawn as the file is read (report/flame_stream.py) is the one drawn in memory
(report/flamegraph.render_flamegraph), byte for byte; where it cannot be sure of that, it draws nothing and
says so, and the in-memory graph is drawn instead."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.report import flame_stream
from rpcprof.report.flamegraph import render_flamegraph

pytestmark = pytest.mark.skipif(not (shutil.which("inferno-flamegraph")
                                     or (Path.home() / ".cargo/bin/inferno-flamegraph").exists()),
                                reason="inferno not installed (tools/setup.sh)")

DATA = Path(__file__).resolve().parents[1] / "data"
RULES = load_rules()
GROUPINGS = [(1, "category"), (2, "category"), (1, "tax"), (2, "tax")]


def both(path: Path, rules, tmp_path: Path) -> tuple[bool, bytes, bytes]:
    def subtitle(samples: int) -> str:
        return f"{path.name} · {samples:,} samples"

    streamed = flame_stream.streamed_flamegraph(path, rules, tmp_path / "streamed.svg", "a title", subtitle)
    render_flamegraph(path, rules, tmp_path / "memory.svg", "a title",
                      subtitle(categorize_file(path, rules, keep_frames=False).samples))
    return streamed, (tmp_path / "streamed.svg").read_bytes() if streamed else b"", (tmp_path / "memory.svg").read_bytes()


@pytest.mark.parametrize("level, view, form", [(*g, "plain") for g in GROUPINGS] + [(1, "category", "gzip"),
                                                                                       (1, "category", "no last newline")])
def test_a_fleet_file_streamed_is_the_graph_drawn_in_memory(tmp_path, monkeypatch, level, view, form):
    """inferno draws a plain file itself, and is piped a gzip'd one."""
    monkeypatch.setattr(flame_stream, "STREAM_FROM", 0)
    stacks = [frames for frames, _ in open_folded(DATA / "python_grpcio.folded.gz") if all(frames)]   # drawn as written
    path = fleet_folded(tmp_path / "fleet.folded", 30_000, stacks)
    if form == "gzip":
        path = tmp_path / "fleet.folded.gz"
        path.write_bytes(gzip.compress((tmp_path / "fleet.folded").read_bytes()))
    elif form == "no last newline":
        path.write_text(path.read_text().rstrip("\n"))
    streamed, got, want = both(path, RULES.using(level, view).with_app(r"Greeter"), tmp_path)
    assert streamed, "the fleet file was drawn in memory"
    assert got == want


@pytest.mark.parametrize("capture", ["rust_tonic_mt", "go_grpc", "hostile"])
def test_what_is_not_streamed_is_drawn_in_memory(tmp_path, monkeypatch, capture):
    """Real captures (boxes split in inferno's sorted order, stacks ending at a box) and hostile names: either
    the same graph or none."""
    monkeypatch.setattr(flame_stream, "STREAM_FROM", 0)
    path = next(DATA.glob(f"{capture}.folded*"))
    streamed, got, want = both(path, RULES, tmp_path)
    assert not streamed or got == want


@pytest.mark.parametrize("level, view", GROUPINGS)
def test_names_inferno_draws_otherwise_are_piped_as_drawn_and_streamed(tmp_path, monkeypatch, level, view):
    """Kernel frames (`_[k]`, which inferno leaves out of a box's name), leaves ending in a space or in ` 12`,
    non-ASCII and `# ` names: the file is piped to inferno as drawn, and each box's weights found by the names
    inferno gives it; the graph is the one drawn in memory."""
    monkeypatch.setattr(flame_stream, "STREAM_FROM", 0)
    stacks = [frames for frames, _ in open_folded(DATA / "rust_tonic_mt.folded.gz") if all(frames)]
    assert any(f.endswith("_[k]") for frames in stacks for f in frames)
    odd = ["StubRoutines ", "[unknown] ", "foo 12", "bar 1.5", "é", "tab x", "x_[k]", "y_[j]"]
    path = fleet_folded(tmp_path / "fleet.folded", 30_000, stacks, odd)
    streamed, got, want = both(path, RULES.using(level, view).with_app(r"Greeter"), tmp_path)
    assert streamed, "the fleet file was drawn in memory"
    assert got == want
