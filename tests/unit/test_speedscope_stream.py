"""export --format speedscope written as the file is read (report/speedscope_stream.py) is the document
report/export.to_speedscope makes of the whole file, byte for byte: on the captures, hostile frame names, and the
leaves shape with repeated and odd frames; report.py export writes it so, and reads an irregular file whole."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report.export import export, to_speedscope
from rpcprof.report.speedscope_stream import write_speedscope

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
TYPES = [("samples", "count"), ("cpu", "nanoseconds")]


def same_document(path: Path, sample_type) -> None:
    out = io.BytesIO()
    assert write_speedscope(path, path.name, sample_type, out) == len(open_folded(path))
    assert out.getvalue() == to_speedscope(open_folded(path), path.name, sample_type).encode()


@pytest.mark.parametrize("capture", CAPTURES + [DATA / "hostile.folded"], ids=lambda p: p.name.split(".")[0])
def test_streamed_speedscope_on_real_captures(capture):
    same_document(capture, TYPES[capture.name.startswith("go")])


@pytest.mark.parametrize("sample_type", TYPES)
def test_streamed_speedscope_on_leaves(tmp_path, sample_type):
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:40]] + [["main", "x"], ["x", "", "y"]]
    path = fleet_folded(tmp_path / "fleet \"é\".folded", 5000, stacks, ["", "leaf_5", "fn_3", "é\u2028x", "a b", "\\"])
    with path.open("a") as f:
        f.write("\nmain;worker_1;fn_1;leaf_10 4\nleaf_11;leaf_12 2\nmain;worker_2 0\n")
    same_document(path, sample_type)


def test_export_streams_speedscope_and_reads_irregular_files_whole(tmp_path):
    path = fleet_folded(tmp_path / "fleet.folded", 3000, [["main", "recv"]])
    out = tmp_path / "f.json"
    assert export(path, load_rules(), "speedscope", out) == 3000
    assert out.read_text() == to_speedscope(open_folded(path), path.name, TYPES[0])
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 1\r\n\nc 2\n")
    assert write_speedscope(bad, bad.name, TYPES[0], io.BytesIO()) is None
    assert export(bad, load_rules(), "speedscope", out) == 2
    assert out.read_text() == to_speedscope(open_folded(bad), bad.name, TYPES[0])
