"""An attach's two views of one process (tests/data/runs/attach: profile.sh attach --load to python_grpcio, py-spy's
profile, then perf's of the same pid): the reports give each view's figures and no ratio or gap between them,
and a regime flag says when the profiled window's req/s fell by what its CPU per request rose."""
import copy
import json
import re
import shutil

from click.testing import CliRunner

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.regime import PROFILER_PACED, profiler_paced, regime_flags
from rpcprof.cli.report import main
from rpcprof.records import view_of
from rpcprof.report.chart import render_breakdown_chart, render_timeline_chart
from rpcprof.report.summary import regime_line, render_run, run_rows
from rpcprof.rundir import load_run

from test_documents import RUNS

ATTACH = RUNS / "attach"


def report(*args: str) -> str:
    return report_of(ATTACH, *args)


def report_of(run, command: str, *args: str) -> str:
    done = CliRunner().invoke(main, [command, *args, str(run)])
    assert done.exit_code == 0, done.output
    return done.output


def test_the_second_profile_is_a_view_of_the_first_process():
    manifest, metrics = load_run(ATTACH)
    assert manifest["mode"] == "attach" and list(metrics) == ["python", "python-perf"]
    assert metrics["python"]["pid"] == metrics["python-perf"]["pid"] == manifest["process"]["pid"]
    assert [view_of(metrics, s) for s in metrics] == [None, "python"]
    other = copy.deepcopy(metrics)
    other["python-perf"]["pid"] += 1            # another process: a server of its own
    assert view_of(other, "python-perf") is None


def test_run_names_the_pid_and_gives_no_ratio_between_the_views():
    manifest, _ = load_run(ATTACH)
    p = manifest["parameters"]
    text = report("run")
    assert text.startswith(f"pid {manifest['process']['pid']}, helloworld, h2load C={p['connections']} "
                           f"S={p['streams']}, {p['duration']:g} s window [complete]\n")
    assert " vs python" not in text
    assert "python-perf: the process of python again, seen by another profiler: no ratio" in text
    rows = json.loads(render_run(ATTACH, "json"))["rows"]
    assert [r["relative"] for r in rows] == [1.0, None] and rows[1]["ratio_interval"] is None


def test_compare_shows_both_views_without_a_gap_or_its_mechanism():
    _, metrics = load_run(ATTACH)
    text = report("compare")
    assert (f"python-perf: {metrics['python-perf']['req_per_cpu_s']:,.0f} req/s per CPU (the process of python "
            "again, profiled by perf)") in text
    assert "Δ" not in text and "Why, by mechanism" not in text
    doc = json.loads(report("compare", "--format", "json"))
    assert doc["explanation"] == []
    assert not any(k.startswith("delta_") for row in doc["rows"] for k in row)
    assert all(r.get("ratio") is None for r in doc["ruler"]) and doc["ruler_checks"] == []


def test_a_req_per_s_fall_that_the_profiled_cpu_per_request_explains_is_said_so():
    _, metrics = load_run(ATTACH)
    perf = metrics["python-perf"]
    seen, cost = profiler_paced(perf)
    assert abs(seen - cost) <= PROFILER_PACED and seen < -0.10         # flagged, and explained
    row = next(r for r in run_rows(metrics) if r["server"] == "python-perf")
    [flag] = regime_flags(perf)
    line = regime_line(row, flag)
    assert f"its CPU per request was {100 * (1 / (1 + cost) - 1):.0f} % higher while profiled" in line
    assert "not in the measured window's regime" not in line
    # the same window had its req/s fallen twice as far: the profiled CPU per request no longer explains it
    halved = copy.deepcopy(perf)
    for r in [halved, *halved.get("repeats", [])]:
        r["profile"]["req_per_s"] = r["req_per_s"] * (1 + 2 * seen)
    assert profiler_paced(halved) is None
    row = next(r for r in run_rows({"python-perf": halved}) if r["server"] == "python-perf")
    assert "not in the measured window's regime" in regime_line(row, regime_flags(halved)[0])
    # the other way: req/s rose by what the profiled CPU per request fell, worded as a fall
    faster = copy.deepcopy(perf)
    for r in [faster, *faster.get("repeats", [])]:
        r["profile"]["req_per_s"] = r["req_per_s"] * 1.15
        r["profile"]["cpu_us_per_req_profiled"] = r["cpu_us_per_req"] / 1.15
    assert profiler_paced(faster) is not None
    row = next(r for r in run_rows({"python-perf": faster}) if r["server"] == "python-perf")
    line = regime_line(row, regime_flags(faster)[0])
    assert "its CPU per request was 13 % lower while profiled, which alone takes req/s +15 %" in line
    assert "more requests because each cost less" in line and "higher" not in line
    # py-spy's window also moved its counters: another regime, said as before
    row = next(r for r in run_rows(metrics) if r["server"] == "python")
    assert "it batched differently there" in regime_line(row, regime_flags(metrics["python"])[0])


def test_the_window_behind_cpu_per_request_is_named(tmp_path):
    footer = "CPU µs per request = category share of the profile × server CPU µs per request of the "
    assert footer + "unprofiled window.\n" in report("compare")
    # an attach given --requests or --rps measures its CPU while profiling (cpu_note): the footer says so
    run = tmp_path / "attach"
    shutil.copytree(ATTACH, run)
    metrics = json.loads((run / "metrics.json").read_text())
    for name in metrics:
        metrics[name]["cpu_note"] = "measured while profiling"
        (run / "metrics.json").write_text(json.dumps(metrics))
        done = CliRunner().invoke(main, ["compare", str(run)])
        assert done.exit_code == 0, done.output
        assert (footer + ("unprofiled window (python: the profiled one)." if name == "python" else
                          "profiled window (no window was measured without the profiler).")) in done.output


def test_the_page_and_its_pictures_of_two_views(tmp_path):
    """report.html: the kernel figures named by the window they were counted in, and the breakdown gives the second
    view no ×ratio; the timeline's log axis reads in plain numbers (220, not 2.2×10²)."""
    run = tmp_path / "attach"
    shutil.copytree(ATTACH, run)
    done = CliRunner().invoke(main, ["html", str(run)])
    assert done.exit_code == 0, done.output
    page = (run / "report.html").read_text()
    assert "Kernel, per request (profile window)" in page and "(syscall window)" not in page
    render_breakdown_chart(run, load_rules(), tmp_path / "breakdown.svg")
    assert (tmp_path / "breakdown.svg").read_text().count("×1.00") == 1        # the first view's, only
    assert render_timeline_chart(run, tmp_path / "timeline.svg")
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", (tmp_path / "timeline.svg").read_text())
    ticks = [t for t in labels if t and t[0].isdigit()]
    assert ticks and all(re.fullmatch(r"[0-9.]+", t) for t in ticks), ticks


def test_the_breakdowns_ratio_is_the_runs(tmp_path):
    """The chart's ×ratio is the one the run table and compare give (over its rounds' adjacent pairs), not the
    ratio of the means (tests/data/runs/rounds: 5 rounds)."""
    rounds = RUNS / "rounds"
    figures = json.loads(CliRunner().invoke(main, ["compare", str(rounds), "--format", "json"]).output)["server_figures"]
    render_breakdown_chart(rounds, load_rules(), tmp_path / "breakdown.svg")
    svg = (tmp_path / "breakdown.svg").read_text()
    _, metrics = load_run(rounds)
    for f in figures:
        assert f"×{f['ratio']:.2f}" in svg
    means = metrics[figures[1]["server"]]["req_per_cpu_s"] / metrics[figures[0]["server"]]["req_per_cpu_s"]
    assert f"{means:.2f}" != f"{figures[1]['ratio']:.2f}"     # the two differ on this run, so the test tells them apart


def test_a_gap_in_the_socket_categories_of_a_profile_without_kernel_time_is_not_given(tmp_path):
    """py-spy sees no kernel time: its recv and send are 0 in its profile, not measured, so no gap there is
    given (with the perf view made another process's here, so that a gap is computed at all)."""
    run = tmp_path / "attach"
    shutil.copytree(ATTACH, run)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["python-perf"]["pid"] = -1
    (run / "metrics.json").write_text(json.dumps(metrics))
    text = report_of(run, "compare")
    assert "python: profiled by py-spy, which sees no kernel time: recv and send are not in its profile" in text
    doc = json.loads(report_of(run, "compare", "--format", "json"))
    by = {r["category"]: r for r in doc["rows"]}
    assert by["recv"]["delta_python-perf"] is None is by["send"]["delta_python-perf"]
    assert by["protocol"]["delta_python-perf"] is not None
