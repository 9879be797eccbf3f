"""The run table on synthetic metrics: bottleneck flags, rows, ratio sentences, and the four formats."""
from __future__ import annotations

import csv
import io
import json

import pytest

from rpcprof.measure.windows import CLIENT_BOUND_SHARE, LATENCY_BOUND_SHARE, SATURATED_SHARE, classify_bottleneck
from rpcprof.report.summary import RUN_COLUMNS, run_rows, ratio_lines
from rpcprof.report.tables import FORMATS, Shown, render


def metrics_for(req_per_s: float, server_cores: float, client_share: float, status: str = "ok", **extra) -> dict:
    """A metrics.json entry with consistent figures, as runner.window_metrics writes it."""
    m = {
        "status": status,
        "req_per_s": req_per_s,
        "server_cpu_cores": server_cores,
        "req_per_cpu_s": req_per_s / server_cores,
        "cpu_us_per_req": 1e6 * server_cores / req_per_s,
        "client_cpu_share": client_share,
        "latency": {"avg_ms": 1.5, "p90_ms": 2.0, "p95_ms": 2.5, "p99_ms": 4.0},
        "memory": {"rss_avg_mib": 12.5},
        "requests_non_ok": 0,
    }
    m.update(classify_bottleneck(server_cores, 1, client_share, 1))
    m.update(extra)
    return m


# ----- classify_bottleneck ------------------------------------------------------------------------

def test_thresholds_are_ninety_and_sixty_percent():
    assert (CLIENT_BOUND_SHARE, LATENCY_BOUND_SHARE) == (0.90, 0.60)


@pytest.mark.parametrize("client_share, bound", [(0.899, False), (0.90, True), (0.95, True), (1.0, True)])
def test_client_bound_from_ninety_percent_of_the_load_cpus(client_share, bound):
    assert classify_bottleneck(0.5, 1, client_share, 1)["client_bound"] is bound


@pytest.mark.parametrize("server_share, client_share, bound", [
    (0.59, 0.59, True), (0.10, 0.20, True), (0.60, 0.10, False), (0.10, 0.60, False), (0.99, 0.75, False)])
def test_latency_bound_only_when_both_sides_are_below_sixty_percent(server_share, client_share, bound):
    assert classify_bottleneck(server_share, 1, client_share, 1)["latency_bound"] is bound


@pytest.mark.parametrize("server_share, client_share, unsaturated", [
    (0.66, 0.32, True),     # tonic at C=1 S=100 on this machine: the two take turns
    (0.60, 0.10, True), (0.899, 0.50, True), (0.90, 0.50, False), (0.99, 0.75, False),
    (0.50, 0.95, False),    # client-bound says it already
    (0.10, 0.20, False)])   # latency-bound says it already
def test_unsaturated_when_the_server_is_below_ninety_percent_and_no_other_flag_explains_it(
        server_share, client_share, unsaturated):
    assert SATURATED_SHARE == 0.90
    assert classify_bottleneck(server_share, 1, client_share, 1)["unsaturated"] is unsaturated


def test_shares_are_cores_over_the_cpus_given_to_each_side():
    flags = classify_bottleneck(1.5, 2, 2.7, 3)
    assert flags["server_cpu_share"] == pytest.approx(0.75)
    assert flags["client_cpu_share"] == pytest.approx(0.90)
    assert flags["client_bound"] is True      # 2.7 cores of 3 is 90 %, though 2.7 > 0.9 alone says nothing
    assert flags["latency_bound"] is False


# ----- run_rows and ratio_lines -------------------------------------------------------------------

@pytest.fixture
def two_servers() -> dict:
    return {
        "tonic": metrics_for(100_000, 0.99, 0.75),
        "pajamax": metrics_for(600_000, 0.25, 0.98),
    }


def test_rows_follow_the_given_order_and_show_percent_cpu(two_servers):
    rows = run_rows(two_servers, ["pajamax", "tonic"])
    assert [r["server"] for r in rows] == ["pajamax", "tonic"]
    assert rows[1]["avg_cpu_pct"] == pytest.approx(99.0)
    assert rows[0]["client_cpu_pct"] == pytest.approx(98.0)
    assert rows[1]["req_per_cpu_s"] == pytest.approx(100_000 / 0.99)
    assert rows[1]["p99_ms"] == 4.0 and rows[1]["rss_avg_mib"] == 12.5


def test_relative_column_is_req_per_cpu_over_the_first_server(two_servers):
    rows = run_rows(two_servers, ["tonic", "pajamax"])
    assert rows[0]["relative"] == pytest.approx(1.0)
    assert rows[1]["relative"] == pytest.approx((600_000 / 0.25) / (100_000 / 0.99))


def test_a_server_missing_from_the_metrics_is_a_not_run_row(two_servers):
    rows = run_rows(two_servers, ["tonic", "grpc_go"])
    assert rows[1]["status"] == "not run"
    assert rows[1]["req_per_s"] is None and rows[1]["relative"] is None
    assert rows[1]["notes"] == "NOT RUN"


def test_notes_flag_client_bound_latency_bound_unsaturated_and_non_ok():
    metrics = {
        "client": metrics_for(600_000, 0.25, 0.98),
        "idle": metrics_for(2_000, 0.02, 0.05, requests_non_ok=7),
        "busy": metrics_for(100_000, 0.99, 0.75),
        "turns": metrics_for(96_000, 0.66, 0.32),
    }
    notes = {r["server"]: r["notes"] for r in run_rows(metrics)}
    assert notes == {"client": "CLIENT-BOUND", "idle": "LATENCY-BOUND, 7 non-OK", "busy": "", "turns": "UNSATURATED"}


def test_a_failed_server_row_says_failed_and_why():
    metrics = {"tonic": {"server": "tonic", "status": "failed", "error": "exited with status -9"}}
    assert run_rows(metrics)[0]["notes"] == "FAILED: exited with status -9"


def test_ratio_line_gives_each_server_against_the_first(two_servers):
    lines = ratio_lines(run_rows(two_servers, ["tonic", "pajamax"]))
    ratio = (600_000 / 0.25) / (100_000 / 0.99)
    assert lines[0] == (f"pajamax vs tonic: ^{ratio:.1f} requests per server CPU-second (one round: no interval; "
                        "--rounds 5 or --precision 5% gives one)")


def test_ratio_lines_explain_client_bound_and_latency_bound_servers():
    metrics = {"client": metrics_for(600_000, 0.25, 0.98), "idle": metrics_for(2_000, 0.02, 0.05)}
    lines = ratio_lines(run_rows(metrics))
    assert any(line.startswith("client: the load generator was the bottleneck (client CPU 98 %)") for line in lines)
    assert any(line.startswith("idle: neither side was busy") and "--off-cpu" in line for line in lines)


def test_a_latency_bound_server_gets_its_off_cpu_verdict_even_alone():
    m = metrics_for(2_000, 0.02, 0.05)
    m["offcpu"] = {"verdict": "NAGLE/DELAYED-ACK: held back", "contention": None}
    lines = ratio_lines(run_rows({"idle": m}))
    assert lines == ["idle: neither side was busy: the run is latency-bound; its off-CPU window says why "
                     "(report.py waits).", "idle: NAGLE/DELAYED-ACK: held back"]


def test_ratio_lines_explain_an_unsaturated_server_and_say_when_the_shares_add_up_to_one_cpu():
    metrics = {"turns": metrics_for(96_000, 0.66, 0.32), "half": metrics_for(50_000, 0.70, 0.10)}
    lines = {line.split(":", 1)[0]: line for line in ratio_lines(run_rows(metrics)) if " vs " not in line}
    assert lines["turns"].startswith("turns: neither side was saturated (server 66 %, client 32 % of their CPUs)")
    assert "add up to 98 %" in lines["turns"] and "take turns" in lines["turns"]
    assert "neither side was saturated (server 70 %, client 10 %" in lines["half"]
    assert "take turns" not in lines["half"]


def test_no_ratio_with_a_single_measured_server(two_servers):
    assert ratio_lines(run_rows({"tonic": two_servers["tonic"]})) == []


def test_a_failed_server_is_neither_the_baseline_nor_in_a_ratio():
    # What runner writes for a server that died mid-window: the window's figures, then status failed.
    metrics = {
        "tonic": metrics_for(20_000, 0.17, 0.07, status="failed", error="rust_tonic exited with status -9"),
        "pajamax": metrics_for(600_000, 0.25, 0.98),
        "go": metrics_for(130_000, 0.99, 0.30),
    }
    rows = run_rows(metrics, ["tonic", "pajamax", "go"])
    assert rows[0]["relative"] is None
    assert rows[1]["relative"] == pytest.approx(1.0)
    assert not any(line.startswith("tonic") or " vs tonic" in line for line in ratio_lines(rows))


# ----- render: four formats from one row list -----------------------------------------------------

COLUMNS = [("name", "name"), ("rps", "req/s"), ("cpu", "cpu [%]"), ("bound", "client-bound"), ("notes", "notes")]
ROWS = [
    {"name": "rust_tonic", "rps": 104_321.5, "cpu": 99.2, "bound": False, "notes": "", "extra": 1},
    {"name": "rust_pajamax", "rps": 612_000.0, "cpu": 12.25, "bound": True, "notes": "CLIENT-BOUND", "extra": 2},
    {"name": "go_grpc", "rps": None, "cpu": None, "bound": None, "notes": "FAILED", "extra": 3},
]


def test_every_format_is_rendered():
    assert set(FORMATS) == {"table", "markdown", "json", "csv"}
    for fmt in FORMATS:
        assert "rust_pajamax" in render(ROWS, COLUMNS, fmt)


def test_json_parses_back_to_the_rows_with_every_key():
    assert json.loads(render(ROWS, COLUMNS, "json")) == ROWS


def test_csv_has_the_header_then_one_row_per_server():
    records = list(csv.reader(io.StringIO(render(ROWS, COLUMNS, "csv"))))
    assert records[0] == [h for _, h in COLUMNS]
    assert len(records) == 1 + len(ROWS)
    assert records[1][:3] == ["rust_tonic", "104321.5", "99.2"]
    assert records[3] == ["go_grpc", "", "", "", "FAILED"]    # None is an empty cell, not "None"


def test_markdown_has_a_separator_row_aligning_numbers_right():
    lines = render(ROWS, COLUMNS, "markdown").splitlines()
    assert lines[0] == "| name | req/s | cpu [%] | client-bound | notes |"
    assert lines[1] == "|---|---:|---:|---|---|"
    assert len(lines) == 2 + len(ROWS)
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines[2:])
    assert lines[2].split(" | ")[1] == "104,322"


def test_markdown_keeps_its_columns_when_a_cell_holds_a_pipe():
    rows = [{"name": "tonic", "rps": None, "cpu": None, "bound": None,
             "notes": "FAILED: exited with status 1: line one | line two"}]
    lines = render(rows, COLUMNS, "markdown").splitlines()
    unescaped = [line.replace("\\|", "") for line in lines]
    assert unescaped[2].count("|") == unescaped[0].count("|")


def _markdown_cells(line: str) -> list[str]:
    """The cells of a markdown table row as a markdown reader splits them: a `|` ends a cell unless a
    backslash escapes it, and a backslash escapes the backslash after it."""
    cells, cell, i = [], "", 0
    body = line.strip()[1:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] in "\\|":
            cell += body[i + 1]
            i += 2
            continue
        if body[i] == "|":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += body[i]
        i += 1
    return [*cells, cell.strip()]


@pytest.mark.parametrize("notes", ["a\\|b", "ends with a backslash\\", "\\\\|", "two \\ | \\|"])
def test_markdown_keeps_its_columns_and_the_name_when_a_backslash_comes_before_a_pipe(notes):
    rows = [{"name": "tonic", "rps": None, "cpu": None, "bound": None, "notes": notes}]
    head, _, row = render(rows, COLUMNS, "markdown").splitlines()
    cells = _markdown_cells(row)
    assert len(cells) == len(_markdown_cells(head)), row
    assert cells[-1] == notes.strip()


def test_table_aligns_names_left_and_numbers_right():
    lines = render(ROWS, COLUMNS, "table").splitlines()
    head, rule, *body = lines
    assert head.startswith("name") and set(rule.replace(" ", "")) == {"-"}
    assert len(body) == len(ROWS)
    rps_end = head.index("req/s") + len("req/s")
    assert body[0][:rps_end].endswith("104,322")           # right-aligned under its header
    assert body[1][:rps_end].endswith("612,000")
    assert body[2].startswith("go_grpc ")
    assert body[0].split()[3] == "no" and body[1].split()[3] == "yes"


def test_table_shows_small_numbers_with_two_decimals_and_missing_ones_as_dashes():
    body = render(ROWS, COLUMNS, "table").splitlines()[2:]
    assert body[1].split()[2] == "12.25"
    assert body[2].split()[1:4] == ["-", "-", "-"]


def test_a_cell_of_several_figures_is_text_in_the_table_and_a_column_each_in_csv():
    shown = {"range": Shown(lambda r: None if r["lo"] is None else f"{r['lo']:,.0f}-{r['hi']:,.0f}",
                            (("lo", "min"), ("hi", "max")))}
    rows = [{"name": "a", "lo": 1000.0, "hi": 2499.75}, {"name": "bb", "lo": None, "hi": None}]
    columns = [("name", "name"), ("range", "min-max")]
    assert render(rows, columns, "table", shown).splitlines()[2:] == ["a     1,000-2,500", "bb    -"]
    assert render(rows, columns, "markdown", shown).splitlines()[1] == "|---|---|"     # text: aligned left
    assert list(csv.reader(io.StringIO(render(rows, columns, "csv", shown)))) == [
        ["name", "min", "max"], ["a", "1000.0", "2499.75"], ["bb", "", ""]]
    assert json.loads(render(rows, columns, "json", shown)) == rows


def test_unknown_format_is_refused():
    with pytest.raises(ValueError):
        render(ROWS, COLUMNS, "html")


def test_run_table_renders_in_every_format(two_servers):
    rows = run_rows(two_servers, ["tonic", "pajamax"])
    for fmt in FORMATS:
        text = render(rows, RUN_COLUMNS, fmt)
        assert "tonic" in text and "pajamax" in text
    assert list(csv.reader(io.StringIO(render(rows, RUN_COLUMNS, "csv"))))[0] == [h for _, h in RUN_COLUMNS]


def test_a_window_ending_with_many_requests_in_flight_is_flagged():
    from rpcprof.measure.load import LoadResult
    from rpcprof.measure.windows import IN_FLIGHT_SHARE, window_metrics
    from rpcprof.analyze.stats import LatencyHistogram

    def metrics(ok, streams, lead=0.0):
        load = LoadResult("h2load", [], 8.0, ok, 0, 2.0, LatencyHistogram(), 0)
        return window_metrics(load, int(8e9), {}, streams, 1, [1], lead=lead)

    assert IN_FLIGHT_SHARE == 0.02
    deep, shallow = metrics(740_000, 100_000), metrics(1_000_000, 1_000)
    assert deep["in_flight_share"] == pytest.approx(100_000 / 740_000) and deep["in_flight_flag"] is True
    assert shallow["in_flight_share"] == pytest.approx(0.001) and shallow["in_flight_flag"] is False
    assert metrics(0, 100)["in_flight_flag"] is False
    rows = run_rows({"deep": {**deep, "status": "ok"}, "shallow": {**shallow, "status": "ok"}})
    assert [r["notes"] for r in rows] == ["IN-FLIGHT 14 %", ""]
    assert any(line.startswith("deep: the requests in flight when the window ended are 13.5 %")
               for line in ratio_lines(rows))
    # after a lead, S were in flight when the window began too, served in it and not counted
    led = metrics(1_000_000, 15_000, lead=2.0)
    assert led["in_flight_share"] == pytest.approx(0.03) and led["in_flight_flag"] is True
    assert metrics(1_000_000, 15_000)["in_flight_flag"] is False
    (row,) = run_rows({"led": {**led, "status": "ok"}})
    assert any(line.startswith("led: the requests in flight when the window began, after its lead, and when it "
                               "ended are 3.0 %") for line in ratio_lines([row]))
