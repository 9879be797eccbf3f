"""export --format pprof made as the file is read (report/pprof_stream.py) is the same gzip'd profile, byte for
byte, as report/export.to_pprof makes of the whole file: on the real captures, on hostile frame names, on the
leaves shape with repeated, empty and label-named frames, with and without an app pattern; and report.py export
writes it so."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report.export import export, to_pprof
from rpcprof.report.pprof_stream import to_pprof_blocks, varint

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
RULES = load_rules()
APP = r"main\.\(\*server\)|Greeter|<script>"
TYPES = [("samples", "count"), ("cpu", "nanoseconds")]


def same_profile(path: Path, rules, sample_type, app) -> None:
    want = to_pprof(open_folded(path), rules, sample_type, app)
    made = to_pprof_blocks(path, rules, sample_type, app)
    assert made is not None, "streamed"
    chunks, stacks = made
    assert b"".join(chunks) == want
    assert stacks == len(open_folded(path))


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("capture", CAPTURES + [DATA / "hostile.folded"], ids=lambda p: p.name.split(".")[0])
def test_streamed_pprof_is_to_pprof_on_real_captures(capture, app):
    rules = RULES.with_app(app, "--app") if app else RULES
    same_profile(capture, rules, TYPES[capture.name.startswith("go")], app)


ODD = ["", "send", "category", "other", "recv", "tcp_sendmsg", "leaf_5", "fn_3", "Greeter::SayHello", "é\u2028x",
       "a b", "nanoseconds"]


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("sample_type", TYPES)
def test_streamed_pprof_on_leaves_with_repeats_and_label_names(tmp_path, app, sample_type):
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:40]] + [["main", "send"], ["x", "", "y"]]
    path = fleet_folded(tmp_path / "fleet.folded", 5000, stacks, ODD)
    with path.open("a") as f:          # leaves seen again, and frames seen first as callers then as leaves
        f.write("\nmain;worker_1;fn_1;leaf_10 4\nleaf_11;leaf_12 2\nmain;worker_2 0\n")
    rules = RULES.with_app(app, "--app") if app else RULES
    want = to_pprof(open_folded(path), rules, sample_type, app)
    made = to_pprof_blocks(path, rules, sample_type, app)
    assert made is not None             # every label's name is marked: never a frame kept by count alone
    assert b"".join(made[0]) == want


def test_irregular_files_are_made_in_memory(tmp_path):
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 1\r\nc 2\n")
    assert to_pprof_blocks(bad, RULES, TYPES[0], None) is None
    zero = tmp_path / "zero.folded"
    zero.write_text("a;b 0\n")
    assert to_pprof_blocks(zero, RULES, TYPES[0], None) is None


def test_export_writes_the_streamed_profile(tmp_path):
    path = fleet_folded(tmp_path / "fleet.folded", 3000, [["main", "recv"]])
    out = tmp_path / "out" / "f.pb.gz"
    assert export(path, RULES, "pprof", out) == 3000
    assert out.read_bytes() == to_pprof(open_folded(path), RULES, TYPES[0])


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16383, 16384, 2 ** 21, 2 ** 63 - 1])
def test_varint(n):
    from google.protobuf.internal.encoder import _VarintBytes
    assert varint(n) == _VarintBytes(n)
