"""Annotated flame graphs, differential graphs and the breakdown chart, checked by parsing the SVG as XML.

Real captures (tests/data/*.folded.gz, recorded by tests/data/capture.sh) are drawn by the installed
inferno; each expectation is recomputed here from the folded stacks and categorize.yaml, independently
of rpcprof.flamegraph's own matching of boxes to stacks.
"""
import gzip
import json
import math
import os
import re
import shutil
import stat
import subprocess
import threading
import xml.etree.ElementTree as ET
from bisect import bisect_left, bisect_right
from collections import defaultdict
from functools import reduce
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import fleet_folded

from rpcprof.analyze.categorize import group_of, load_rules, open_folded
from rpcprof.report.chart import render_breakdown_chart
from rpcprof.folded import drawn_stacks
from rpcprof.report.flamegraph import render_run_flamegraph
from rpcprof.cli.report import main

pytestmark = pytest.mark.skipif(not (shutil.which("inferno-flamegraph")
                                     or (Path.home() / ".cargo/bin/inferno-flamegraph").exists()),
                                reason="inferno not installed (tools/setup.sh)")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CAPTURES = yaml.safe_load((DATA / "captures.yaml").read_text())
SERVERS = ["rust_tonic_st", "rust_pajamax"]
SVG = "{http://www.w3.org/2000/svg}"
FRAME_HEIGHT = 16
HOVER = re.compile(r"^(?P<name>.*) \((?P<samples>[\d,]+) samples?, (?P<share>[\d.]+)%; (?P<category>[^()]+)\)$")

# Figures of a real run of both servers (flamegraphs/20261121-051247-..., h2load, C=1 S=100, 5 s windows).
REAL_METRICS = {
    "rust_tonic_st": {"req_per_s": 81932.1342155163, "req_per_cpu_s": 146874.09579852672,
                   "cpu_us_per_req": 6.8085525535540405, "server_cpu_cores": 0.5578392416311859,
                   "server_cpu_s": 2.796953389, "requests_ok": 410800, "window_s": 5.013905764000015},
    "rust_pajamax": {"req_per_s": 304719.07835385675, "req_per_cpu_s": 1916611.477789493,
                     "cpu_us_per_req": 0.5217541539265648, "server_cpu_cores": 0.15898844491179914,
                     "server_cpu_s": 0.798596908, "requests_ok": 1530600, "window_s": 5.022987100999899},
}
REAL_COMMAND = ["profile.sh", "run", "rust_tonic_st", "rust_pajamax", "-d", "5", "-w", "2"]   # the fake run's


def report(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def folded_of(server: str) -> Path:
    return DATA / f"{server}.folded.gz"


def parse(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def frame_boxes(root: ET.Element) -> list[dict]:
    """Each box of the graph: its hover text, fill, fg:x, fg:w and depth (0 = `all`)."""
    boxes = []
    for g in root.find(f".//{SVG}svg[@id='frames']"):
        rect = g.find(f"{SVG}rect")
        boxes.append({"title": g.find(f"{SVG}title").text, "fill": rect.get("fill"), "y": int(rect.get("y")),
                      "x": int(rect.get("{http://github.com/jonhoo/inferno}x")),
                      "w": int(rect.get("{http://github.com/jonhoo/inferno}w"))})
    y_all = next(b["y"] for b in boxes if b["title"].startswith("all ("))
    for b in boxes:
        b["depth"] = (y_all - b["y"]) // FRAME_HEIGHT
    return boxes


def rgb(color: str) -> str:
    return "rgb({},{},{})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)))


def shown_name(frame: str) -> str:
    """A frame as inferno labels it: without the _[k] / _[j] / _[i] / _[w] annotation."""
    return frame[:-4] if re.search(r"_\[[kwij]\]$", frame) else frame


def expected_boxes(stacks, rules) -> list[tuple[int, int, list[str], str, int]]:
    """Each stack as (start, end, frames, category, weight) in inferno's order: lines sorted as text,
    each stack occupying the next `weight` units of the x axis."""
    lines = sorted(stacks, key=lambda s: f"{';'.join(s[0])} {s[1]}")
    out, x = [], 0
    for frames, w in lines:
        out.append((x, x + w, frames, group_of(frames, rules), w))
        x += w
    return out


@pytest.fixture(scope="module")
def rules():
    return load_rules()


@pytest.fixture
def fake_run(tmp_path):
    """A run folder with the real metrics of both servers and the real captures as their profiles."""
    run = tmp_path / "20261121-051247-rust_tonic_st-rust_pajamax"
    metrics = {}
    for server in SERVERS:
        (run / server).mkdir(parents=True)
        (run / server / "profile.folded").write_bytes(gzip.decompress(folded_of(server).read_bytes()))
        stacks = open_folded(run / server / "profile.folded")
        samples = sum(w for _, w in stacks) // reduce(math.gcd, (w for _, w in stacks))
        profile = {"samples": samples, "event": "cpu-clock", "profiler": "perf", "too_few_samples": False}
        metrics[server] = {**REAL_METRICS[server], "server": server, "status": "ok",
                           "app": CAPTURES[server]["app"], "profile": profile}
        (run / server / "profile.json").write_text(json.dumps(profile))
        (run / server / "result.json").write_text(json.dumps(metrics[server]))
    manifest = {"command": REAL_COMMAND, "status": "complete", "scenario": {"name": "helloworld"},
                "parameters": {"servers": SERVERS, "connections": 1, "streams": 100, "scenario": "helloworld",
                               "driver": "h2load"}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


@pytest.mark.parametrize("command", ["svg", "diff"])
def test_svg_and_diff_have_help(command):
    result = report(command, "--help")
    assert result.exit_code == 0 and "Usage:" in result.output


def assert_boxes_coloured_by_their_stacks(out: Path, stacks, r) -> None:
    """Every box of out is as wide as the stacks beneath it in inferno's order, named after their frame at its
    depth, and has the colour of their dominant category under rules r."""
    stacks = expected_boxes(stacks, r)
    starts = [s[0] for s in stacks]
    boxes = frame_boxes(parse(out))
    assert len(boxes) > 100
    for box in boxes:
        near = stacks[bisect_left(starts, box["x"]):bisect_right(starts, box["x"] + box["w"])]
        beneath = [s for s in near if box["x"] <= s[0] and s[1] <= box["x"] + box["w"]]
        assert sum(s[4] for s in beneath) == box["w"], box["title"]
        hover = HOVER.match(box["title"])
        assert hover, box["title"]
        if box["depth"]:
            # the box is frame depth-1 of every stack beneath it
            assert {shown_name(s[2][box["depth"] - 1]) for s in beneath} == {hover["name"]}
        weights = defaultdict(int)
        for s in beneath:
            weights[s[3]] += s[4]
        top = max(weights.values())
        dominant = next(c for c in r.all_categories if weights.get(c) == top)
        assert box["fill"] == rgb(r.colors[dominant]), f"{box['title']}: {dict(weights)}"


@pytest.mark.parametrize("server", SERVERS)
def test_every_frame_has_the_colour_of_the_category_of_the_stacks_through_it(server, rules, tmp_path):
    app = CAPTURES[server]["app"]
    out = tmp_path / "flame.svg"
    assert report("svg", str(folded_of(server)), "-o", str(out), "--app", app).exit_code == 0
    assert_boxes_coloured_by_their_stacks(out, open_folded(folded_of(server)), rules.with_app(app))


@pytest.mark.parametrize("level, view", [(2, "category"), (1, "tax")])
def test_a_fleet_files_boxes_have_the_colour_of_their_stacks(rules, tmp_path, level, view):
    """A gzip'd file of distinct leaves over more than one of the core's chunks, most of them counted by their
    callers' answer at once, with real stacks and stacks of one frame among them."""
    drawn = {";".join(f) for f, _ in drawn_stacks(folded_of("rust_tonic_st"))}
    stacks = [f for f, _ in open_folded(folded_of("rust_tonic_st")) if ";".join(f) in drawn]
    path = fleet_folded(tmp_path / "fleet.folded", 20_000, stacks)
    gz = tmp_path / "fleet.folded.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    out = tmp_path / "flame.svg"
    assert report("svg", str(gz), "-o", str(out), "--level", str(level), "--view", view).exit_code == 0
    assert_boxes_coloured_by_their_stacks(out, open_folded(path), rules.using(level, view))


def test_hover_shows_real_samples_share_and_category(rules, tmp_path):
    server = "rust_tonic_st"
    out = tmp_path / "flame.svg"
    report("svg", str(folded_of(server)), "-o", str(out), "--app", CAPTURES[server]["app"])
    stacks = open_folded(folded_of(server))
    weight = reduce(math.gcd, (w for _, w in stacks))
    total = sum(w for _, w in stacks)
    boxes = frame_boxes(parse(out))
    for box in boxes:
        hover = HOVER.match(box["title"])
        assert int(hover["samples"].replace(",", "")) == box["w"] // weight
        assert float(hover["share"]) == pytest.approx(100 * box["w"] / total, abs=0.006)
        named = re.findall(r"[a-z]+", hover["category"])
        assert named and set(named) <= set(rules.all_categories)
    root = next(b for b in boxes if b["depth"] == 0)
    assert root["title"].startswith(f"all ({total // weight:,} samples, 100.00%; ")


def test_legend_lists_every_category_with_the_share_of_report_table(rules, tmp_path):
    server = "rust_pajamax"
    folded, app = str(folded_of(server)), CAPTURES[server]["app"]
    out = tmp_path / "flame.svg"
    report("svg", folded, "-o", str(out), "--app", app)
    table = report("table", folded, "--app", app).output.splitlines()
    shares = dict(zip(rules.all_categories, table[2].split()[2:]))
    legend = parse(out).find(f".//{SVG}g[@id='legend']")
    labels = [t.text for t in legend.iter(f"{SVG}text")][1:]
    assert labels == [f"{c} {shares[c]}%" for c in rules.all_categories]
    swatches = [r.get("fill") for r in legend.iter(f"{SVG}rect")]
    assert swatches == [rules.colors[c] for c in rules.all_categories]


def test_subtitle_figures_equal_the_run_metrics_and_title_is_the_command(fake_run, tmp_path):
    metrics = json.loads((fake_run / "metrics.json").read_text())
    for server in SERVERS:
        out = tmp_path / f"{server}.svg"
        folded = fake_run / server / "profile.folded"
        assert report("svg", str(folded), "-o", str(out)).exit_code == 0
        root = parse(out)
        title = root.find(f".//{SVG}text[@id='title']").text
        subtitle = root.find(f".//{SVG}text[@id='subtitle']").text
        assert title == f"report.py svg {folded} -o {out}"
        m = metrics[server]

        def figure(pattern):
            found = re.search(pattern, subtitle)
            assert found, f"{pattern!r} not in {subtitle!r}"
            return float(found.group(1).replace(",", ""))

        assert subtitle.startswith(f"{server} · helloworld · C=1 S=100 · ")
        assert figure(r"([\d,]+) req/s ·") == round(m["req_per_s"])
        assert figure(r"server CPU ([\d.]+) cores") == round(m["server_cpu_cores"], 2)
        assert figure(r"([\d,]+) req/s per CPU") == round(m["req_per_cpu_s"])
        assert figure(r"([\d.]+) CPU µs/req") == round(m["cpu_us_per_req"], 2)
        assert figure(r"([\d,]+) samples of cpu-clock \(perf\)") == m["profile"]["samples"]


def test_a_runs_flame_graph_is_titled_with_the_runs_command(fake_run, rules):
    out = render_run_flamegraph(fake_run, "rust_tonic_st", rules)
    assert out == fake_run / "rust_tonic_st" / "flame.svg"
    title = parse(out).find(f".//{SVG}text[@id='title']").text
    assert title == " ".join(REAL_COMMAND)


def test_hostile_frame_names_yield_valid_xml_and_no_injected_script(rules, tmp_path):
    out = tmp_path / "hostile.svg"
    result = report("svg", str(DATA / "hostile.folded"), "-o", str(out), "--title", "<script>alert(9)</script>")
    assert result.exit_code == 0
    raw = out.read_bytes()
    root = ET.fromstring(raw)                   # valid XML
    scripts = [e for e in root.iter() if e.tag.split("}")[-1].lower() == "script"]
    assert len(scripts) == 1 and "alert" not in "".join(scripts[0].itertext())   # inferno's own, only
    assert b"<script>alert" not in raw and b"<svg onload" not in raw
    handlers = [(e.tag, k) for e in root.iter() for k in e.attrib if k.lower().startswith("on")]
    assert handlers == [(f"{SVG}svg", "onload")] and root.get("onload") == "init(evt)"
    titles = [b["title"] for b in frame_boxes(root)]
    for name in ("<script>alert(1)</script>", "]]><script>alert(2)</script><![CDATA[", 'x" onload="alert(3)',
                 "--> <!-- not a comment -->", "caf\ufffd \ufffd\ufffd broken utf-8", "operator->"):
        assert any(t.startswith(name + " (") for t in titles), name     # kept, as text
    assert any(t.startswith("bell\ufffd and\ufffdescape and\ufffdnul (") for t in titles)
    assert any(len(t) > 1500 for t in titles)                          # the long template, whole
    colours = {rgb(c) for c in rules.colors.values()}
    assert {b["fill"] for b in frame_boxes(root)} <= colours
    assert root.find(f".//{SVG}text[@id='title']").text == "<script>alert(9)</script>"


def test_boxes_split_as_inferno_draws_them_are_coloured_separately(rules, tmp_path):
    # inferno sorts lines as text: "a;b-x" falls between "a;b" and "a;b;...", so `b` is drawn twice.
    folded = tmp_path / "split.folded"
    folded.write_text("a;b 5\na;b-x 2\na;b;tcp_recvmsg_[k] 3\n")
    out = tmp_path / "split.svg"
    assert report("svg", str(folded), "-o", str(out)).exit_code == 0
    b_boxes = sorted((b["x"], b["fill"], b["title"]) for b in frame_boxes(parse(out)) if b["title"].startswith("b ("))
    assert b_boxes == [(0, rgb(rules.colors["other"]), "b (5 samples, 50.00%; other)"),
                       (7, rgb(rules.colors["recv"]), "b (3 samples, 30.00%; recv)")]


def test_search_matches_frame_names_not_hover_text(tmp_path):
    out = tmp_path / "flame.svg"
    report("svg", str(folded_of("rust_tonic_st")), "-o", str(out))
    script = "".join(e.text or "" for e in parse(out).iter(f"{SVG}script"))
    assert 'return (func.replace(/ \\([^(]*\\)$/, ""));' in script
    assert "function search(term)" in script


def test_rendering_leaves_the_working_directory_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "palette.map").write_text("main->rgb(1,2,3)\n")
    report("svg", str(DATA / "hostile.folded"), "-o", "out.svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.svg", "palette.map"]
    assert (tmp_path / "palette.map").read_text() == "main->rgb(1,2,3)\n"


def test_a_pipe_given_as_output_is_written_not_replaced(tmp_path):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    assert report("svg", str(DATA / "hostile.folded"), "-o", str(pipe)).exit_code == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    ET.fromstring(received[0])


def test_same_input_gives_the_same_svg(tmp_path):
    outs = [tmp_path / "1.svg", tmp_path / "2.svg"]
    for out in outs:
        report("svg", str(folded_of("rust_pajamax")), "-o", str(out), "--title", "t")
    assert outs[0].read_bytes() == outs[1].read_bytes()


@pytest.mark.parametrize("normalize", [True, False])
def test_diff_writes_svg_and_category_differences_that_sum_to_zero(normalize, tmp_path):
    out = tmp_path / "diff.svg"
    args = ["diff", str(folded_of("rust_tonic_st")), str(folded_of("rust_pajamax")), "-o", str(out), "--format", "json"]
    result = report(*args, *([] if normalize else ["--no-normalize"]))
    assert result.exit_code == 0
    rows = json.loads(result.output)["categories"]
    assert sum(r["delta"] for r in rows) == pytest.approx(0, abs=1e-9)
    assert sum(r["a"] for r in rows) == pytest.approx(100) and sum(r["b"] for r in rows) == pytest.approx(100)
    root = parse(out)
    subtitle = root.find(f".//{SVG}text[@id='subtitle']").text
    assert ("not normalised" not in subtitle and "normalised" in subtitle) if normalize else "not normalised" in subtitle
    titles = [g.find(f"{SVG}title").text for g in root.find(f".//{SVG}svg[@id='frames']")]
    assert any(re.search(r"; [+-]\d+\.\d\d%\)$", t) for t in titles)      # inferno's differential hover


def test_diff_table_prints_every_category(rules, tmp_path):
    result = report("diff", str(folded_of("rust_tonic_st")), str(folded_of("rust_pajamax")), "-o", str(tmp_path / "d.svg"))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[:2] == [f"A = {folded_of('rust_tonic_st')}", f"B = {folded_of('rust_pajamax')}"]
    first = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    assert [line.split()[0] for line in lines[first:first + len(rules.all_categories)]] == rules.all_categories


def test_breakdown_chart_is_valid_svg_with_every_server_and_ratio(fake_run, rules, tmp_path):
    out = tmp_path / "breakdown.svg"
    render_breakdown_chart(fake_run, rules, out)
    root = parse(out)
    text = " ".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))
    for server in SERVERS:
        assert server in text
    ratio = REAL_METRICS["rust_pajamax"]["req_per_cpu_s"] / REAL_METRICS["rust_tonic_st"]["req_per_cpu_s"]
    assert f"×{ratio:.2f}" in text and "×1.00" in text
    for category in rules.all_categories:
        assert category in text
    again = tmp_path / "again.svg"
    render_breakdown_chart(fake_run, rules, again)
    assert again.read_bytes() == out.read_bytes()


def test_missing_folded_file_is_one_line_error(tmp_path):
    done = subprocess.run([str(ROOT / "report.py"), "svg", str(tmp_path / "nope.folded"), "-o", str(tmp_path / "x.svg")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"report.py: error: {tmp_path / 'nope.folded'}: no such folded file\n"
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize("body", ["", "a 0\n\n"])
def test_a_file_with_no_samples_is_one_line_error(tmp_path, body):
    (tmp_path / "none.folded").write_text(body)
    done = subprocess.run([str(ROOT / "report.py"), "svg", str(tmp_path / "none.folded"), "-o", str(tmp_path / "x.svg")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"report.py: error: {tmp_path / 'none.folded'}: no samples (") and done.stderr.count("\n") == 1
    assert not (tmp_path / "x.svg").exists()


def test_the_installed_inferno_is_the_version_the_box_matching_relies_on():
    """box_weights and recolour_frames follow inferno's order of lines and its SVG: pinned together, checked together."""
    import re
    import subprocess
    from rpcprof.report.svg import INFERNO_VERSION
    setup = (ROOT / "tools" / "setup.sh").read_text()
    assert f"INFERNO_VERSION={INFERNO_VERSION}\n" in setup
    installed = subprocess.run(["cargo", "install", "--list"], capture_output=True, text=True).stdout
    assert re.search(rf"^inferno v{re.escape(INFERNO_VERSION)}:", installed, re.M), installed
