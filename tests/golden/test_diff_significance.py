"""Every difference with its significance (issue 22, item 1): report.py diff and compare on rounds.

The rounds are real: a saved run's (tests/data/runs/rounds: rust_tonic_mt and rust_pajamax, 5 rounds
each, made by tests/data/capture_runs.sh rounds). For one server profiled twice, each round of
rust_tonic_mt is dealt into two halves (its samples shuffled, seeded): the halves of a round are two
profiles of the same server in the same window, and the only difference between the two sets of halves
is the one a test puts there. Each case writes a run folder of its own (manifest, metrics with each
round's CPU µs per request, SERVER/[repeat-K/]profile.folded) and runs report.py on it.
"""
from __future__ import annotations

import json
import random
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.analyze.significance import benjamini_hochberg
from rpcprof.analyze.sigdiff import build_diff
from rpcprof.cli.common import run_click
from rpcprof.cli.report import main
from rpcprof.folded import sample_weight
from rpcprof.folded import drawn_stacks
from rpcprof.report.one_side import drawn_names
from rpcprof.report.sigdiff import sides_of

pytestmark = pytest.mark.skipif(not (shutil.which("inferno-flamegraph")
                                     or (Path.home() / ".cargo/bin/inferno-flamegraph").exists()),
                                reason="inferno not installed (tools/setup.sh)")

DATA = Path(__file__).resolve().parents[1] / "data"
ROUNDS_RUN = DATA / "runs" / "rounds"
APP = json.loads((ROUNDS_RUN / "metrics.json").read_text())["rust_tonic_mt"]["app"]
SVG = "{http://www.w3.org/2000/svg}"
GREY = "rgb(215,215,215)"


def report(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_click(main, [str(a) for a in args])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def dealt_rounds(stacks, n: int, seed: int) -> list[list[tuple[list[str], int]]]:
    """The samples of stacks shuffled and dealt into n rounds (weights in samples)."""
    one = sample_weight(stacks)
    samples = [i for i, (_, w) in enumerate(stacks) for _ in range(w // one)]
    random.Random(seed).shuffle(samples)
    rounds = []
    for k in range(n):
        counts: dict[int, int] = {}
        for i in samples[k::n]:
            counts[i] = counts.get(i, 0) + 1
        rounds.append([(stacks[i][0], c) for i, c in sorted(counts.items())])
    return rounds


def write_run(folder: Path, servers: dict[str, list[tuple[list, float]]], app: str = APP) -> Path:
    """A run folder of these servers: each a list of rounds (stacks, CPU µs per request)."""
    metrics = {}
    for name, rounds in servers.items():
        for k, (stacks, _) in enumerate(rounds, 1):
            where = folder / name / ("" if k == 1 else f"repeat-{k}")
            where.mkdir(parents=True, exist_ok=True)
            (where / "profile.folded").write_text("".join(f"{';'.join(f)} {w}\n" for f, w in stacks))
        cpu = [us for _, us in rounds]
        metrics[name] = {"server": name, "status": "ok", "app": app, "cpu_us_per_req": cpu[0],
                         "req_per_cpu_s": 1e6 / cpu[0], "profile": {"samples": 1000},
                         "repeats": [{"repeat": k, "started": "t", "cpu_us_per_req": us, "req_per_cpu_s": 1e6 / us}
                                     for k, us in enumerate(cpu, 1)]}
        (folder / name / "result.json").write_text(json.dumps(metrics[name]))
    (folder / "manifest.json").write_text(json.dumps({"mode": "run", "status": "complete", "command": ["profile.sh"],
                                                      "parameters": {"servers": list(servers)}}))
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def is_app(frames: list[str]) -> bool:
    return any(re.search(APP, f) for f in frames)


def real_rounds(server: str = "rust_tonic_mt") -> list[tuple[list, float]]:
    """The saved run's rounds of server: (stacks, that round's unprofiled CPU µs per request)."""
    m = json.loads((ROUNDS_RUN / "metrics.json").read_text())[server]
    return [(open_folded(ROUNDS_RUN / server / ("" if r["repeat"] == 1 else f"repeat-{r['repeat']}") / "profile.folded.gz"),
             r["cpu_us_per_req"]) for r in m["repeats"]]


@pytest.fixture(scope="module")
def halves() -> list[tuple[list, list, float]]:
    """Each real round of rust_tonic_mt dealt into two halves: (half, other half, the round's CPU µs/req)."""
    return [(*dealt_rounds(stacks, 2, seed=k), us) for k, (stacks, us) in enumerate(real_rounds())]


@pytest.fixture(scope="module")
def same_server(tmp_path_factory, halves) -> Path:
    """One run whose two 'servers' are the two halves of each real round: one server twice, paired."""
    return write_run(tmp_path_factory.mktemp("same"), {"first": [(a, us) for a, _, us in halves],
                                         "second": [(b, us) for _, b, us in halves]})


@pytest.fixture(scope="module")
def more_app(tmp_path_factory, halves) -> Path:
    """As same_server, but the second server's app stacks weigh twice as much in every round, and its CPU
    per request grows by exactly that, so that every other category costs the same µs per request."""
    servers = {"base": [(a, us) for a, _, us in halves], "more_app": []}
    for _, b, us in halves:
        grown = [(f, w * 2 if is_app(f) else w) for f, w in b]
        servers["more_app"].append((grown, us * sum(w for _, w in grown) / sum(w for _, w in b)))
    return write_run(tmp_path_factory.mktemp("more-app"), servers)


@pytest.fixture(scope="module")
def more_app_json(more_app, tmp_path_factory) -> dict:
    """report.py diff of more_app's two servers, --format json."""
    out = tmp_path_factory.mktemp("d") / "d.svg"
    done = CliRunner().invoke(main, ["diff", str(more_app / "base"), str(more_app / "more_app"), "-o", str(out),
                                     "--format", "json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def diff_json(capsys, tmp_path, a: Path, b: Path, *options) -> dict:
    code, out, err = report(capsys, "diff", a, b, "-o", tmp_path / "d.svg", "--format", "json", *options)
    assert code == 0, err
    return json.loads(out)


def marks(data: dict, view: str = "delta_us") -> dict[str, str]:
    return {r["category"]: r[f"{view}_sig"] for r in data["categories"]}


@pytest.mark.slow
def test_two_profiles_of_the_same_server_have_nothing_significant(capsys, tmp_path, same_server):
    data = diff_json(capsys, tmp_path, same_server / "first", same_server / "second")
    assert data["test"] == "paired t over 5 rounds" and data["frames_tested"] > 50
    assert "*" not in marks(data).values() and "*" not in marks(data, "delta").values()
    assert data["frames"] == []
    fills = {rect.get("fill") for rect in ET.parse(tmp_path / "d.svg").getroot().iter(f"{SVG}rect")
             if rect.get("{http://github.com/jonhoo/inferno}w")}
    assert fills == {GREY}


def test_bh_marks_fewer_frames_than_the_uncorrected_test(same_server, tmp_path):
    d = build_diff(*sides_of(same_server / "first", same_server / "second"))
    pvalues = [t.gap.p for t in d.frames["us"].values()]
    uncorrected = sum(p < 0.05 for p in pvalues)
    assert uncorrected > 0 and sum(benjamini_hochberg(pvalues)) == 0 < uncorrected


def test_a_category_that_differs_in_every_round_is_marked_and_nothing_else(more_app, more_app_json):
    data = more_app_json
    app = next(r for r in data["categories"] if r["category"] == "app")
    assert marks(data)["app"] == "*" and app["delta_us"] > 0
    assert app["delta_us_test"]["significant"] is True and app["delta_us_test"]["test"] == "paired t"
    assert [c for c, m in marks(data).items() if m == "*"] == ["app"]
    found = [f for f in data["frames"] if f.get("sig_us") == "*"]
    assert found, "the frames of app are found"
    app_stacks = [f for f, _ in drawn_stacks(more_app / "base" / "profile.folded") if is_app(f)]
    for f in found:       # a frame found is an app frame, or a caller of one
        assert any(s[:len(f["path"])] == f["path"] for s in app_stacks), f["path"]


def test_the_graph_colours_only_significant_frames_and_prints_both_views(capsys, tmp_path, more_app):
    out = tmp_path / "d.svg"
    code, text, err = report(capsys, "diff", more_app / "base", more_app / "more_app", "-o", out, "--per-request")
    assert code == 0, err
    root = ET.parse(out).getroot()
    subtitle = root.find(f".//{SVG}text[@id='subtitle']").text
    assert "Benjamini–Hochberg at 5 %" in subtitle and "paired t over 5 rounds" in subtitle
    boxes = [(g.find(f"{SVG}title").text, g.find(f"{SVG}rect").get("fill"))
             for g in root.find(f".//{SVG}svg[@id='frames']")]
    coloured = [t for t, fill in boxes if fill != GREY]
    assert coloured and any(fill == GREY for _, fill in boxes)
    assert all(t.endswith(" significant)") and "not significant" not in t for t in coloured)
    assert "B−A [µs/req]" in text and "Frames whose difference is significant" in text
    header = text.splitlines()[3]            # both views: µs per request and share
    assert "A [µs/req]" in header and "A [%]" in header and "B−A [points]" in header


def test_the_files_behind_each_round_are_named(more_app_json):
    data = more_app_json
    rounds = data["b"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]
    assert rounds[1]["file"] == "more_app/result.json" and rounds[1]["key"] == "repeats[repeat=2].cpu_us_per_req"
    assert all(Path(r["profile"]).exists() for r in rounds)


def test_one_round_says_significance_needs_rounds_and_draws_as_before(capsys, tmp_path):
    run = DATA / "runs" / "seed-001"
    code, text, err = report(capsys, "diff", run / "rust_tonic_mt", run / "rust_pajamax", "-o", tmp_path / "d.svg")
    assert code == 0, err
    assert "Significance needs rounds: A has 1, B 1" in text and "Frames whose" not in text
    fills = {r.get("fill") for r in ET.parse(tmp_path / "d.svg").getroot().iter(f"{SVG}rect")}
    assert GREY not in fills


def test_hostile_frame_names_stay_escaped(capsys, tmp_path):
    hostile = open_folded(DATA / "hostile.folded")
    heavy = [(f, w * (20 if "<script>" in ";".join(f) else 1)) for f, w in hostile]
    run = write_run(tmp_path / "hostile", {"plain": [(hostile, 1.0 + k / 100) for k in range(3)],
                                           "heavy": [(heavy, 1.0 + k / 50) for k in range(3)]}, app="leaf")
    out = tmp_path / "d.svg"
    for fmt in ("table", "markdown"):
        code, text, err = report(capsys, "diff", run / "plain", run / "heavy", "-o", out, "--format", fmt)
        assert code == 0, err
        assert "\x1b" not in text and "\x07" not in text
    root = ET.parse(out).getroot()         # parses: every name escaped
    assert not [e for e in root.iter() if e.tag.endswith("script") and "alert" in (e.text or "")]
    titles = [g.find(f"{SVG}title").text for g in root.find(f".//{SVG}svg[@id='frames']")]
    assert any("<script>alert(1)</script>" in t and t.endswith(" significant)") for t in titles)


def test_a_run_of_several_servers_must_name_one(capsys, tmp_path, more_app):
    code, _, err = report(capsys, "diff", more_app, more_app / "base", "-o", tmp_path / "d.svg")
    assert code == 2 and "a run of 2 profiled servers (base, more_app)" in err


# --- the real rounds of a saved run ----------------------------------------------------------------

@pytest.mark.slow
def test_compare_marks_every_gap_and_names_its_files(capsys):
    code, out, err = report(capsys, "compare", ROUNDS_RUN, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    for row in data["rows"]:
        half, delta = row["delta_rust_pajamax_pm"], row["delta_rust_pajamax"]
        assert row["delta_rust_pajamax_sig"] == ("*" if abs(delta) > half else "n.s.")
        assert row["delta_rust_pajamax_significant"] is (abs(delta) > half)
    assert [r["round"] for r in data["rounds"]["rust_pajamax"]] == [1, 2, 3, 4, 5]
    assert all(Path(r["profile"]).exists() for rounds in data["rounds"].values() for r in rounds)
    code, text, _ = report(capsys, "compare", ROUNDS_RUN, "--level", "2")
    assert "n.s." in text and "n.s. (not significant) where it contains 0" in text


def test_the_real_rounds_of_two_servers_differ_significantly(capsys, tmp_path):
    data = diff_json(capsys, tmp_path, ROUNDS_RUN / "rust_tonic_mt", ROUNDS_RUN / "rust_pajamax", "--per-request")
    assert data["test"] == "paired t over 5 rounds"
    total_gap = sum(r["delta_us"] for r in data["categories"])
    assert total_gap < 0 and marks(data)["send"] == "*"        # pajamax's batched writes
    assert len(data["frames"]) > 0


@pytest.mark.slow
def test_the_real_rounds_of_one_server_split_in_two_have_nothing_significant(capsys, tmp_path):
    """rust_tonic_mt's rounds 1, 3, 5 against its rounds 2, 4, as two runs (Welch's t)."""
    runs = {}
    for name, keep in (("odd", {1, 3, 5}), ("even", {2, 4})):
        run = tmp_path / name
        shutil.copytree(ROUNDS_RUN, run)
        metrics = json.loads((run / "metrics.json").read_text())
        m = metrics["rust_tonic_mt"]
        kept = [r for r in m["repeats"] if r["repeat"] in keep]
        for new, r in enumerate(kept, 1):           # renumbered 1..n, their profiles moved along
            src = run / "rust_tonic_mt" / ("" if r["repeat"] == 1 else f"repeat-{r['repeat']}") / "profile.folded.gz"
            dst = tmp_path / f"{name}-{new}.folded.gz"
            shutil.copy(src, dst)
            r["repeat"] = new
        for new in range(1, len(kept) + 1):
            where = run / "rust_tonic_mt" / ("" if new == 1 else f"repeat-{new}")
            where.mkdir(exist_ok=True)
            shutil.copy(tmp_path / f"{name}-{new}.folded.gz", where / "profile.folded.gz")
        m["repeats"] = kept
        metrics = {"rust_tonic_mt": m}
        (run / "metrics.json").write_text(json.dumps(metrics))
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["parameters"]["servers"] = ["rust_tonic_mt"]
        (run / "manifest.json").write_text(json.dumps(manifest))
        runs[name] = run
    data = diff_json(capsys, tmp_path, runs["odd"], runs["even"])
    assert data["test"] == "Welch t over 3 and 2 rounds"
    assert data["frames"] == []
    assert "*" not in marks(data).values()


def test_results_gives_each_cells_gaps_and_says_one_round_cannot_test_them(capsys, tmp_path):
    out = tmp_path / "results.md"
    code, _, err = report(capsys, "results", DATA / "runs" / "sweep", "-o", out)
    assert code == 0, err
    doc = out.read_text()
    cells = doc.split("## The gap by mechanism, per cell")[1].split("\n### ")[1:]
    assert len(cells) == 2
    for cell in cells:
        line = next(x for x in cell.splitlines() if x.startswith("rust_pajamax − rust_tonic_mt, CPU µs/req"))
        assert "(one round: significance needs rounds)" in line and " total " in line


# --- frames and categories present on one side only -------------------------------------------------

def one_side_of(capsys, tmp_path, a, b) -> dict:
    with pytest.raises(SystemExit) as e:
        run_click(main, ["diff", str(a), str(b), "-o", str(tmp_path / "d.svg"), "--format", "json"])
    out = capsys.readouterr().out
    assert e.value.code == 0, out
    return json.loads(out)["one_side"]


def test_frames_on_one_side_only_are_those_of_its_stacks_alone_with_their_share(capsys, tmp_path):
    a, b = DATA / "rust_tonic_mt.folded.gz", DATA / "rust_pajamax.folded.gz"
    found = one_side_of(capsys, tmp_path, a, b)
    for side, here, there in (("b", b, a), ("a", a, b)):
        stacks, other = open_folded(here), {f for frames, _ in open_folded(there) for f in frames}
        total = sum(w for _, w in stacks)
        want = {f: 100 * sum(w for frames, w in stacks if f in frames) / total
                for f in {f for frames, _ in stacks for f in frames} - other}
        got = found[f"frames_only_in_{side}"]
        assert {r["frame"]: r["share"] for r in got} == pytest.approx(want)
        assert [r["share"] for r in got] == sorted((r["share"] for r in got), reverse=True)
        assert len(want) > 10


def test_a_category_on_one_side_only_is_named_in_json_and_text(capsys, tmp_path):
    a, b = tmp_path / "a.folded", tmp_path / "b.folded"
    a.write_text("main;recv_path;tcp_recvmsg_[k] 3\nmain;shared 2\n")
    b.write_text("main;shared 2\nmain;send_path;__libc_send 4\n")
    found = one_side_of(capsys, tmp_path, a, b)
    assert (found["categories_only_in_a"], found["categories_only_in_b"]) == (["recv"], ["send"])
    assert [r["frame"] for r in found["frames_only_in_a"]] == ["recv_path", "tcp_recvmsg_[k]"]
    assert [r["frame"] for r in found["frames_only_in_b"]] == ["__libc_send", "send_path"]
    with pytest.raises(SystemExit):
        run_click(main, ["diff", str(a), str(b), "-o", str(tmp_path / "d.svg")])
    text = capsys.readouterr().out
    assert "Categories new in B (share 0 in A): send. Frames new in B (in no stack of A): 2:" in text
    assert "Categories vanished from A (share 0 in B): recv. Frames vanished from A (in no stack of B): 2:" in text
    assert re.search(r"66\.67 +__libc_send", text)


@pytest.mark.parametrize("empty_side", [0, 1])
@pytest.mark.parametrize("content", ["", "main;x 0\n"])
def test_a_diff_of_an_empty_profile_is_one_line_naming_it(capsys, tmp_path, empty_side, content):
    empty = tmp_path / "empty.folded"
    empty.write_text(content)
    sides = [DATA / "go_grpc.folded.gz", DATA / "go_grpc.folded.gz"]
    sides[empty_side] = empty
    with pytest.raises(SystemExit) as e:
        run_click(main, ["diff", *map(str, sides), "-o", str(tmp_path / "d.svg"), "--format", "json"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.splitlines() == [f"report.py: error: {empty}: no samples (the file is empty or "
                                                      "every count is 0): profile again, or give another folded file"]
    assert not (tmp_path / "d.svg").exists()


# --- --normalize share|per-request|absolute, each tested across rounds ----------------------------------

def test_absolute_mode_tests_the_difference_in_samples_and_draws_it(capsys, tmp_path, more_app):
    data = diff_json(capsys, tmp_path, more_app / "base", more_app / "more_app", "--normalize", "absolute")
    found = [f for f in data["frames"] if f.get("sig_abs") == "*"]
    assert found and all(f["delta_abs"] > 0 for f in found)      # more_app's app stacks weigh twice as much
    app_stacks = [f for f, _ in drawn_stacks(more_app / "base" / "profile.folded") if is_app(f)]
    for f in found:
        assert any(s[:len(f["path"])] == f["path"] for s in app_stacks), f["path"]
    subtitle = ET.parse(tmp_path / "d.svg").getroot().find(f".//{SVG}text[@id='subtitle']").text
    assert "coloured where B−A in samples is significant" in subtitle and "samples, not normalised" in subtitle
    code, text, err = report(capsys, "diff", more_app / "base", more_app / "more_app", "-o", tmp_path / "t.svg",
                             "--normalize", "absolute")
    assert code == 0 and "B−A [samples]" in text


@pytest.mark.parametrize("mode, alias", [("per-request", "--per-request"), ("absolute", "--no-normalize")])
def test_each_mode_and_its_older_flag_give_the_same_report(capsys, tmp_path, more_app, mode, alias):
    by_mode = diff_json(capsys, tmp_path, more_app / "base", more_app / "more_app", "--normalize", mode)
    by_flag = diff_json(capsys, tmp_path, more_app / "base", more_app / "more_app", alias)
    assert by_mode == by_flag and by_mode["frames"]


def test_share_mode_is_the_default(capsys, tmp_path, more_app):
    default = diff_json(capsys, tmp_path, more_app / "base", more_app / "more_app")
    share = diff_json(capsys, tmp_path, more_app / "base", more_app / "more_app", "--normalize", "share")
    assert default == share and not any("delta_abs" in f for f in default["frames"])


def boxes_of(svg: Path) -> dict[str, tuple[str, str, int]]:
    """{frame drawn: (fill, hover text, width)} of a diff graph's boxes."""
    out = {}
    for g in ET.parse(svg).getroot().find(f".//{SVG}svg[@id='frames']"):
        title, rect = g.find(f"{SVG}title").text, g.find(f"{SVG}rect")
        out[title[:title.rfind(" (")]] = (rect.get("fill"), title, int(rect.get("{http://github.com/jonhoo/inferno}w")))
    return out


def test_the_graph_of_two_profiles_marks_new_frames_and_draws_vanished_ones_at_as_width(capsys, tmp_path):
    a, b, out = tmp_path / "a.folded", tmp_path / "b.folded", tmp_path / "d.svg"
    a.write_text("main;old;x 4\nmain;shared 2\n")
    b.write_text("main;shared 2\nmain;new;y 3\n")
    code, text, err = report(capsys, "diff", a, b, "-o", out)
    assert code == 0, err
    boxes = boxes_of(out)
    for frame in ("new", "y"):
        assert boxes[frame][0] == "rgb(0,170,170)" and boxes[frame][1].endswith("; in B only)")
    for frame in ("old", "x"):           # A's 4 samples of 6, scaled to B's 5: drawn 3 wide
        assert boxes[frame][0] == "rgb(230,170,0)" and boxes[frame][1].endswith("; in A only)") and boxes[frame][2] == 3
    assert "in " not in boxes["shared"][1].split(";")[-1] and boxes["shared"][2] == 2
    subtitle = ET.parse(out).getroot().find(f".//{SVG}text[@id='subtitle']").text
    assert "teal: in B only; amber: in A only, drawn at A's width" in subtitle


def test_on_real_captures_only_frames_of_one_side_are_marked(capsys, tmp_path):
    a, b = DATA / "rust_tonic_mt.folded.gz", DATA / "rust_pajamax.folded.gz"
    found = one_side_of(capsys, tmp_path, a, b)
    boxes = boxes_of(tmp_path / "d.svg")
    teal = {f for f, (fill, _, _) in boxes.items() if fill == "rgb(0,170,170)"}
    amber = {f for f, (fill, _, _) in boxes.items() if fill == "rgb(230,170,0)"}
    assert teal and amber
    assert teal <= drawn_names(r["frame"] for r in found["frames_only_in_b"])      # as drawn: _[k] left out
    assert amber <= drawn_names(r["frame"] for r in found["frames_only_in_a"])


def test_the_graph_of_two_profiles_draws_hostile_names_as_the_core_draws_them(capsys, tmp_path):
    """Control characters, bidirectional overrides, `# `, a leaf ending in ` 12`, markup: each box is named as the
    core draws its frame (drawn_stacks; inferno leaving out a `_[k]`), and the graph parses."""
    a, b, out = DATA / "hostile.folded", tmp_path / "b.folded", tmp_path / "d.svg"
    b.write_text("main;shared 2\nmain;é\u202e;x 3\n")
    code, _, err = report(capsys, "diff", a, b, "-o", out)
    assert code == 0, err
    drawn = {name for f in (a, b) for frames, _ in drawn_stacks(f) for name in frames}
    boxes = set(boxes_of(out)) - {"all"}
    assert boxes and boxes <= drawn | {n[:-4] for n in drawn if n.endswith("_[k]")}
    assert "é\ufffd" in boxes and not any("\u202e" in n or "\x1b" in n for n in boxes)
