"""report.py whatif on a saved run: rust_tonic_mt writing as rust_tonic_st does (the same code, one write per
response against one per ~14), predicted from rust_tonic_mt's own rounds and the committed indirect cost,
checked against rust_tonic_st's measured figures. The verdict is recomputed here from the run's files."""
import json
import shutil
import statistics

import pytest

from conftest import ROOT, invoke
from rpcprof.analyze.categorize import categorize, load_rules, open_folded
from rpcprof.analyze.indirect import load_indirect
from rpcprof.cli.report import entry
from rpcprof.paths import INDIRECT_COST
from rpcprof.rundir import load_run, profile_folded, read_server_result, server_path
from rpcprof.records import round_of, round_rows

RUN = ROOT / "docs" / "data" / "20261124-074115-seed-001"
A, B = "rust_tonic_st", "rust_tonic_mt"


def report(*args):
    return invoke(entry, "whatif", *map(str, args))


def rounds(server):
    """(cpu µs/req, send µs/req, writes/req) per round, read from the files directly."""
    _, metrics = load_run(RUN)
    rules = load_rules().with_app(metrics[server]["app"])
    out = []
    for row in round_rows(metrics[server]):
        k = round_of(row)
        writes = read_server_result(server_path(RUN, server, k)).figures["syscalls"]["writes_per_req"]
        b = categorize(open_folded(profile_folded(RUN, server, k)), rules)
        out.append((row["cpu_us_per_req"], b.share("send") * row["cpu_us_per_req"], writes))
    return out


@pytest.fixture(scope="module")
def whatif():
    r = report(RUN, A, B, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_the_prediction_is_b_minus_each_saved_write_s_direct_and_indirect_cost(whatif):
    cost = load_indirect(INDIRECT_COST)
    a_writes = statistics.fmean(w for _, _, w in rounds(A))
    per_round = [cpu - (w - a_writes) * (send / w + cost.user.slope) for cpu, send, w in rounds(B)]
    assert whatif["predicted_cpu_us_per_req"]["value"] == pytest.approx(statistics.fmean(per_round))
    assert whatif["a_writes_per_req"] == pytest.approx(a_writes)
    assert whatif["indirect_us_per_syscall"]["key"] == "docs/data/indirect-syscall-cost.json: user_us_per_syscall"
    assert {s["file"] for s in whatif["sources"]} >= {f"{B}/result.json", f"{B}/repeat-2/result.json"}


def test_the_verdict_is_computed_from_the_figures(whatif):
    p, measured = whatif["predicted_cpu_us_per_req"], statistics.fmean(cpu for cpu, _, _ in rounds(A))
    assert whatif["measured_a_cpu_us_per_req"]["value"] == pytest.approx(measured)
    inside = p["low"] <= measured <= p["high"]
    assert whatif["contains"] is inside
    verdict = whatif["lines"][-1]
    assert ("inside the predicted interval" in verdict) is inside
    if not inside:
        edge = p["high"] if measured > p["high"] else p["low"]
        assert f"{abs(measured - edge):.2f} µs/req {'above' if measured > edge else 'below'} it" in verdict
        worst = max(whatif["categories"], key=lambda c: abs(c["miss"]))
        assert worst["category"] == whatif["missed_category"] and f"misses most is {worst['category']}" in verdict


def test_the_categories_add_up_to_the_prediction_and_to_the_measured_figures(whatif):
    cats = whatif["categories"]
    assert sum(c["predicted"] for c in cats) == pytest.approx(whatif["predicted_cpu_us_per_req"]["value"])
    assert sum(c["a"] for c in cats) == pytest.approx(whatif["measured_a_cpu_us_per_req"]["value"])


def test_another_indirect_cost_moves_the_prediction_and_can_turn_the_verdict(tmp_path, whatif):
    """The verdict follows the figures: an indirect cost that covers the miss brings A inside the interval."""
    data = json.loads(INDIRECT_COST.read_text())
    gap = whatif["predicted_cpu_us_per_req"]["value"] - whatif["measured_a_cpu_us_per_req"]["value"]
    extra = gap / (whatif["b_writes_per_req"] - whatif["a_writes_per_req"])
    for node in (data["user_us_per_syscall"], data["categories"]["protocol"]):
        node.update(slope=node["slope"] + extra, low=node["low"] + extra, high=node["high"] + extra)
    path = tmp_path / "cost.json"
    path.write_text(json.dumps(data))
    r = report(RUN, A, B, "--indirect", path, "--format", "json")
    moved = json.loads(r.out)
    assert moved["predicted_cpu_us_per_req"]["value"] == pytest.approx(whatif["measured_a_cpu_us_per_req"]["value"])
    assert moved["contains"] is True and "inside the predicted interval" in moved["lines"][-1]


def test_an_unknown_server_is_one_line_naming_the_run_s_servers():
    r = report(RUN, A, "rust_tonik")
    assert r.code != 0 and len(r.error_lines) == 1 and "no server 'rust_tonik'" in r.err
    assert "rust_tonic_mt" in r.err and "Traceback" not in r.err


def test_a_run_with_no_write_counts_is_one_line(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "runs" / "rounds", run)
    for result in run.rglob("result.json"):
        data = json.loads(result.read_text())
        data.pop("syscalls", None)
        result.write_text(json.dumps(data))
    r = report(run, "rust_pajamax", "rust_tonic_mt")
    assert r.code != 0 and len(r.error_lines) == 1 and "has no write counts" in r.err and "Traceback" not in r.err


def test_a_run_of_one_round_says_an_interval_needs_rounds():
    r = report(ROOT / "tests" / "data" / "runs" / "seed-001", A, B)
    assert r.code != 0 and "--rounds" in r.err and len(r.error_lines) == 1


def test_compare_with_the_indirect_cost_says_what_user_code_the_extra_writes_slow():
    r = invoke(entry, "compare", str(RUN), "--indirect", str(INDIRECT_COST), "--format", "json")
    data = json.loads(r.out)
    send = next(f for e in data["explanation"] if e["server"] == A for f in e["findings"] if f["category"] == "send")
    cost = load_indirect(INDIRECT_COST)
    w = {s["server"]: s["value"] for s in send["sources"] if s["key"] == "syscalls.writes_per_req"}
    assert f"~{cost.user.slope * (w[B] - w[A]):.2f} µs/req" in send["text"]
    assert any(s["key"] == "docs/data/indirect-syscall-cost.json: user_us_per_syscall" for s in send["sources"])
    st = next(row for row in data["ruler"] if row["server"] == A)
    assert st["expected_low"] <= st["expected_ratio"] <= st["expected_high"]
    flagged = "DISAGREE" in next(x for x in data["ruler_checks"] if x.startswith(A))
    overlap = st["ratio_low"] <= st["expected_high"] and st["expected_low"] <= st["ratio_high"]
    assert flagged is (not st["agrees"] and not overlap)


def test_compare_without_the_indirect_cost_says_nothing_of_it():
    r = invoke(entry, "compare", str(RUN))
    assert r.code == 0 and "Of the gap" not in r.out and "expected ^" not in r.out


@pytest.mark.slow
def test_report_html_with_the_indirect_cost_holds_the_what_if_and_the_mechanism(tmp_path):
    out = tmp_path / "report.html"
    r = invoke(entry, "html", str(RUN), "-o", str(out), "--indirect", str(INDIRECT_COST))
    assert r.code == 0, r.err
    page = out.read_text()
    w = json.loads(report(RUN, A, B, "--format", "json").out)
    assert f"What if {B} wrote as {A} does?" in page
    p = w["predicted_cpu_us_per_req"]
    assert f"= {p['value']:.2f} [{p['low']:.2f}-{p['high']:.2f}] CPU µs/req" in page
    assert "is user code in rust_tonic_mt slowed by the extra writes" in page
    plain = tmp_path / "plain.html"
    assert invoke(entry, "html", str(RUN), "-o", str(plain)).code == 0
    assert "What if" not in plain.read_text() and "Of the gap" not in plain.read_text()


def test_the_re_measured_run_is_inside_or_says_where_it_misses():
    """bench/whatif's run (h2load C=1 S=1000, docs/data): the same checks of the verdict on a second load."""
    run = ROOT / "docs" / "data" / "20261124-220119-whatif-32113"
    w = json.loads(report(run, A, B, "--format", "json").out)
    p, measured = w["predicted_cpu_us_per_req"], w["measured_a_cpu_us_per_req"]["value"]
    assert w["contains"] is (p["low"] <= measured <= p["high"])
    assert ("inside the predicted interval" in w["lines"][-1]) is w["contains"]


def test_b_profiled_without_kernel_time_is_one_line():
    """py-spy sees no kernel time, so a CPython server's send per write would be a 0 nobody measured."""
    run = ROOT / "tests" / "data" / "runs" / "attach"
    r = report(run, "python-perf", "python")
    assert r.code != 0 and len(r.error_lines) == 1 and "python was profiled by py-spy, which sees no kernel time" in r.err
    r = report(run, "python", "python-perf")             # perf's view as B: past that check, to the next
    assert r.code != 0 and "py-spy" not in r.err
