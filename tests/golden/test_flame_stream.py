"""The flame graph drawn as the file is read (report/flame_stream.py) is the one drawn in memory
(report/flamegraph.render_flamegraph), byte for byte; where it cannot be sure of that, it draws nothing and
says so, and the in-memory graph is drawn instead."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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


def fleet_file(path: Path, n: int) -> Path:
    """bench/distinct_stacks' leaves shape, with stacks whose leaf a rule decides (real captured stacks, some
    under the fleet's callers) and stacks of one frame among them."""
    real = [";".join(frames) for frames, _ in open_folded(DATA / "python_grpcio.folded.gz")][:400]
    lines = []
    for i in range(n):
        if i % 50 == 7:
            lines.append(f"{real[i % len(real)]} {i % 5 + 1}")
        elif i % 50 == 9:
            lines.append(f"main;worker_{i % 7};{real[i % len(real)].split(';')[-1]} 3")
        elif i % 997 == 3:
            lines.append(f"lonely_{i} 2")
        else:
            lines.append(f"main;worker_{i % 7};fn_{i % 13};leaf_{i} {i % 7 + 1}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def both(path: Path, rules, tmp_path: Path) -> tuple[bool, bytes, bytes]:
    def subtitle(samples: int) -> str:
        return f"{path.name} · {samples:,} samples"

    streamed = flame_stream.streamed_flamegraph(path, rules, tmp_path / "streamed.svg", "a title", subtitle)
    render_flamegraph(path, rules, tmp_path / "memory.svg", "a title",
                      subtitle(categorize_file(path, rules, keep_frames=False).samples))
    return streamed, (tmp_path / "streamed.svg").read_bytes() if streamed else b"", (tmp_path / "memory.svg").read_bytes()


@pytest.mark.parametrize("level, view", GROUPINGS)
def test_a_fleet_file_streamed_is_the_graph_drawn_in_memory(tmp_path, monkeypatch, level, view):
    monkeypatch.setattr(flame_stream, "STREAM_FROM", 0)
    path = fleet_file(tmp_path / "fleet.folded", 30_000)
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
