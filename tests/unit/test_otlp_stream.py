"""export --format otlp (protobuf) made as the file is read (report/otlp_stream.py) is the ProfilesData
report/export.to_otlp makes of the whole file, byte for byte: on the captures, hostile frame names, and the leaves
shape with repeated, empty and label-named frames, with and without an app pattern; report.py export writes it
so, and the JSON (-o FILE.json) too (report/otlp_json_stream.py)."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report.export import export, to_otlp
from rpcprof.report.otlp_json_stream import write_otlp_json
from rpcprof.report.otlp_stream import write_otlp

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
RULES = load_rules()
APP = r"main\.\(\*server\)|Greeter|<script>"
TYPES = [("samples", "count"), ("cpu", "nanoseconds")]


def same_data(path: Path, rules, sample_type) -> None:
    for writer, as_json in ((write_otlp, False), (write_otlp_json, True)):
        out = io.BytesIO()
        assert writer(path, rules, sample_type, out) == len(open_folded(path))
        assert out.getvalue() == to_otlp(open_folded(path), rules, sample_type, as_json)


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("capture", CAPTURES + [DATA / "hostile.folded"], ids=lambda p: p.name.split(".")[0])
def test_streamed_otlp_on_real_captures(capture, app):
    same_data(capture, RULES.with_app(app, "--app") if app else RULES, TYPES[capture.name.startswith("go")])


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("sample_type", TYPES)
def test_streamed_otlp_on_leaves(tmp_path, app, sample_type):
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:40]] + [["main", "send"], ["x", "", "y"]]
    path = fleet_folded(tmp_path / "fleet.folded", 5000, stacks, ["", "send", "category", "other", "leaf_5", "fn_3",
                                                                  "é\u2028x", "a b", "nanoseconds", "rpcprof"])
    with path.open("a") as f:
        f.write("\nmain;worker_1;fn_1;leaf_10 4\nleaf_11;leaf_12 2\nmain;worker_2 0\n")
    same_data(path, RULES.with_app(app, "--app") if app else RULES, sample_type)


def test_export_streams_otlp(tmp_path):
    path = fleet_folded(tmp_path / "fleet.folded", 3000, [["main", "recv"]])
    for name, as_json in (("f.pb", False), ("f.json", True)):
        out = tmp_path / name
        assert export(path, RULES, "otlp", out) == 3000
        assert out.read_bytes() == to_otlp(open_folded(path), RULES, TYPES[0], as_json)
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 1\r\n\nc 2\n")
    assert write_otlp(bad, RULES, TYPES[0], io.BytesIO()) is None
    assert write_otlp_json(bad, RULES, TYPES[0], io.BytesIO()) is None
    assert export(bad, RULES, "otlp", tmp_path / "bad.json") == 2
    assert (tmp_path / "bad.json").read_bytes() == to_otlp(open_folded(bad), RULES, TYPES[0], True)
