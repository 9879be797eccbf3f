"""A real `profile.sh run` of the seeds' servers (rust_tonic_mt, rust_pajamax) with rust_tonic_st beside
them, checked for invariants that hold whatever the machine's speed: the figures agree with each other,
the run folder holds everything it should, and each tonic build writes as its runtime makes it.

The run builds the servers first if needed (minutes on a fresh machine), then measures each for 2 s.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, card_run, pid_alive
from rpcprof.jobs.run import RunOptions
from rpcprof.records import parameters_json, rounds_asked
from rpcprof.measure.syscalls import EVENT_KEYS, IO_KEEP_BYTES, IO_READS, IO_WRITES
from rpcprof.measure.windows import CLIENT_BOUND_SHARE, LATENCY_BOUND_SHARE

SERVERS = ["rust_tonic_mt", "rust_pajamax", "rust_tonic_st"]
PORT = 30151
# -S 100: the figures below were chosen for it; --io-sizes: the read/write size window is tested here
# (2 s: --syscall-duration, the length of that window of its own); 3 s profiles and --min-samples 1000:
# the tonic builds' send shares below need ~3,000 samples (999 Hz), and client-bound pajamax, whose
# profile no test here reads, would otherwise have its window stretched to 9 s to reach 5,000
ARGS = ["run", *SERVERS, "-d", "2", "-w", "1", "-S", "100", "--io-sizes", "--syscall-duration", "2",
        "--profile-duration", "3", "--min-samples", "1000", "--port", str(PORT), "--format", "json",
        "--label", "pytest", "--no-off-cpu", "--pictures"]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module")
def head_before_run() -> str:
    return git("rev-parse", "HEAD").stdout.strip()


@pytest.fixture(scope="module")
def seed_run(module_profile, head_before_run):
    """The one measured run this module checks; its folder is deleted after the module."""
    done = module_profile.run(*ARGS)
    assert done.returncode == 0, f"profile.sh {' '.join(ARGS)} failed:\n{done.stderr}"
    assert done.run_dir is not None, f"no 'run folder' line on stderr:\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def output(seed_run) -> dict:
    return json.loads(seed_run.stdout)


@pytest.fixture(scope="module")
def manifest(seed_run) -> dict:
    return json.loads((seed_run.run_dir / "manifest.json").read_text())


@pytest.fixture(scope="module")
def metrics(seed_run) -> dict:
    return json.loads((seed_run.run_dir / "metrics.json").read_text())


# ----- the figures --------------------------------------------------------------------------------

def test_run_exits_zero_without_a_traceback(seed_run):
    assert seed_run.returncode == 0
    assert "Traceback" not in seed_run.stderr


def test_printed_json_holds_the_same_metrics_and_manifest_as_the_folder(output, metrics, manifest):
    assert output["metrics"] == metrics
    assert output["manifest"] == manifest
    assert [row["server"] for row in output["rows"]] == SERVERS


@pytest.mark.parametrize("name", SERVERS)
def test_server_was_measured_ok_with_requests_answered(metrics, name):
    m = metrics[name]
    assert m["status"] == "ok"
    assert m["requests_ok"] > 0
    assert m["req_per_s"] > 0
    assert m["req_per_s"] == pytest.approx(m["requests_ok"] / m["window_s"], rel=1e-9)


@pytest.mark.parametrize("name", SERVERS)
def test_server_used_some_cpu_but_at_most_its_one_pinned_core(metrics, name):
    cores = metrics[name]["server_cpu_cores"]
    assert 0 < cores <= 1.05
    assert cores == pytest.approx(metrics[name]["server_cpu_s"] / metrics[name]["window_s"], rel=1e-9)


@pytest.mark.parametrize("name", SERVERS)
def test_req_per_cpu_second_is_req_per_second_over_server_cores(metrics, name):
    m = metrics[name]
    assert m["req_per_cpu_s"] == pytest.approx(m["req_per_s"] / m["server_cpu_cores"], rel=1e-6)


@pytest.mark.parametrize("name", SERVERS)
def test_cpu_microseconds_per_request_is_the_inverse_of_req_per_cpu_second(metrics, name):
    m = metrics[name]
    assert m["cpu_us_per_req"] * m["req_per_cpu_s"] == pytest.approx(1e6, rel=1e-9)


@pytest.mark.parametrize("name", SERVERS)
def test_bottleneck_flags_match_the_cpu_shares(metrics, manifest, name):
    m = metrics[name]
    load_cpus = manifest["parameters"]["load_cpus"]
    assert m["client_cpu_share"] == pytest.approx(m["client_cpu_cores"] / len(load_cpus), rel=1e-9)
    assert m["client_bound"] is (m["client_cpu_share"] >= CLIENT_BOUND_SHARE)
    assert m["latency_bound"] is (m["server_cpu_share"] < LATENCY_BOUND_SHARE
                                  and m["client_cpu_share"] < LATENCY_BOUND_SHARE)


@pytest.mark.parametrize("name", SERVERS)
def test_latency_percentiles_are_ordered(metrics, name):
    lat = metrics[name]["latency"]
    assert lat["samples"] > 0
    chain = [lat["min_ms"], lat["p50_ms"], lat["p90_ms"], lat["p95_ms"], lat["p99_ms"], lat["p99_9_ms"],
             lat["max_ms"]]
    assert chain == sorted(chain), chain
    assert lat["min_ms"] <= lat["avg_ms"] <= lat["max_ms"]


def test_relative_column_starts_at_one_and_matches_the_ratio_of_req_per_cpu(output, metrics):
    rows = {row["server"]: row for row in output["rows"]}
    assert rows["rust_tonic_mt"]["relative"] == pytest.approx(1.0)
    assert rows["rust_pajamax"]["relative"] == pytest.approx(
        metrics["rust_pajamax"]["req_per_cpu_s"] / metrics["rust_tonic_mt"]["req_per_cpu_s"], rel=1e-9)


@pytest.mark.parametrize("name", SERVERS)
def test_server_ran_under_the_cpu_accounting_the_result_names(metrics, name):
    assert re.fullmatch(r"cgroup-v[12]|schedstat", metrics[name]["cpu_method"])


@pytest.mark.parametrize("name", SERVERS)
def test_no_server_process_outlives_the_run(metrics, name):
    assert not pid_alive(metrics[name]["pid"])


# ----- the run folder -----------------------------------------------------------------------------

def test_run_folder_is_a_new_timestamped_folder_under_the_runs_dir(seed_run, module_profile):
    assert seed_run.run_dir.parent.resolve() == module_profile.runs_dir.resolve()
    assert re.fullmatch(r"\d{8}-\d{6}-pytest(-\d+)?", seed_run.run_dir.name)
    assert seed_run.run_dir.is_dir()


def test_manifest_says_complete_with_every_server_ok(manifest, module_profile):
    assert manifest["status"] == "complete"
    assert manifest["mode"] == "run"
    assert manifest["servers"] == {name: "ok" for name in SERVERS}
    assert manifest["started"] <= manifest["finished"]
    assert manifest["command"] == ["profile.sh", ARGS[0], "--runs-dir", str(module_profile.runs_dir), *ARGS[1:],
                                   "--rounds", "1",        # conftest's: one round unless a test names rounds
                                   "--host-card", str(card_run())]     # and the session's host card
    assert manifest["scenario"] == {"name": "helloworld", "method": "/helloworld.Greeter/SayHello"}


def test_manifest_records_the_machine(manifest):
    machine = manifest["machine"]
    assert machine["cpus"] == os.cpu_count()
    assert machine["kernel"] == os.uname().release
    assert machine["hostname"] == os.uname().nodename
    assert machine["memory_gib"] > 0
    assert set(machine) >= {"os", "cpu_model"}


def test_manifest_records_every_tool_version(manifest):
    assert set(manifest["tools"]) == {"perf", "h2load", "ghz", "inferno", "py-spy", "protoc", "python"}
    assert manifest["tools"]["h2load"].startswith("h2load nghttp2/")
    assert "v0.120.0" in manifest["tools"]["ghz"]


def test_no_tool_version_is_an_error_message(manifest):
    bad = {tool: v for tool, v in manifest["tools"].items() if re.search(r"error|unexpected|not found", v, re.I)}
    assert bad == {}


def test_manifest_records_the_git_commit(manifest, head_before_run):
    # Others commit to this repository while tests run: the recorded commit is HEAD as it was at the
    # start of the run, so it is HEAD from before the run or a later one, and an ancestor of HEAD now.
    commit = manifest["git"]["commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", commit)
    assert git("merge-base", "--is-ancestor", head_before_run, commit).returncode == 0
    assert git("merge-base", "--is-ancestor", commit, "HEAD").returncode == 0
    assert isinstance(manifest["git"]["dirty"], bool)


def test_manifest_records_every_parameter_as_given(manifest):
    params = manifest["parameters"]
    # every field of RunOptions, under the key the manifest gives it (--rounds is `repeat` there)
    assert set(params) == set(parameters_json({f.name: None for f in dataclasses.fields(RunOptions)}))
    assert rounds_asked(params) == 1
    assert params["servers"] == SERVERS
    assert (params["duration"], params["warmup"], params["port"], params["label"]) == (2.0, 1.0, PORT, "pytest")
    assert (params["driver"], params["connections"], params["streams"]) == ("h2load", 1, 100)
    assert params["server_cpus"] == [0]
    assert params["load_cpus"] == [c for c in range(os.cpu_count()) if c != 0]


@pytest.mark.parametrize("name", SERVERS)
def test_each_server_has_its_logs_and_result_in_the_folder(seed_run, metrics, name):
    folder = seed_run.run_dir / name
    for log in ("server.log", "load.log", "build.log"):
        assert (folder / log).is_file(), f"{folder / log} missing"
    assert json.loads((folder / "result.json").read_text()) == metrics[name]
    assert "finished in" in (folder / "load.log").read_text()     # h2load's own summary


def test_the_run_ends_with_its_folders_size_and_keeps_its_recordings_compressed(seed_run):
    last = seed_run.stderr.strip().splitlines()[-1]
    assert re.fullmatch(rf"rpcprof: {re.escape(str(seed_run.run_dir))} takes [0-9.]+ MiB on disk \([0-9.]+ MiB of it "
                        r"the recordings that report.py fold folds again\)", last), last
    for data in seed_run.run_dir.glob("*/perf.data"):
        header = subprocess.run(["perf", "report", "--header-only", "-i", str(data)], capture_output=True, text=True)
        assert "# compressed : Zstd" in header.stdout, data


def test_a_recording_folds_again_to_the_same_stacks_and_leaves_the_files_beside_its_output_alone(seed_run, tmp_path):
    data = seed_run.run_dir / SERVERS[0] / "perf.data"
    (tmp_path / "again.script").write_text("a file of the user's\n")     # where the fold once kept perf script's text
    fold = [str(ROOT / "report.py"), "fold", str(data), "-o"]
    done = subprocess.run([*fold, str(tmp_path / "again.folded")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "again.folded").read_bytes() == (data.parent / "profile.folded").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.folded", "again.script"]
    assert (tmp_path / "again.script").read_text() == "a file of the user's\n"
    nowhere = tmp_path / "no-such-folder" / "x.folded"
    done = subprocess.run([*fold, str(nowhere)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == f"report.py: error: cannot write {nowhere}: No such file or directory; its folder does " \
                                  "not exist; choose another -o"


# ----- one folder per run -------------------------------------------------------------------------

def test_two_runs_get_two_distinct_folders_and_the_second_its_ratio_over_both(profile, port):
    args = ["run", "rust_tonic_st", "rust_pajamax", "-d", "1", "-w", "0", "--no-profile", "--no-syscalls",
            "--port", str(port), "--label", "pytest-twice"]
    first, second = profile.run(*args), profile.run(*args)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert first.run_dir != second.run_dir
    for done in (first, second):
        manifest = json.loads((done.run_dir / "manifest.json").read_text())
        assert manifest["status"] == "complete"
    # the second run finds the first (same setup, servers, machine and code) and gives the ratio over both
    assert "over this run and" not in first.stdout
    over = re.search(r"^rust_pajamax vs rust_tonic_st over this run and 1 earlier one of this setup here: "
                     r"\^([\d.]+) \[([\d.]+)-([\d.]+)\]", second.stdout, re.M)
    assert over, second.stdout
    ratios = [json.loads(subprocess.run(["./report.py", "run", str(d), "--format", "json"], capture_output=True,
                                        text=True, cwd=ROOT).stdout)["rows"][1]["relative"]
              for d in (first.run_dir, second.run_dir)]
    assert float(over[1]) == pytest.approx(math.sqrt(ratios[0] * ratios[1]), abs=0.06)
    assert float(over[2]) <= min(ratios) and max(ratios) <= float(over[3])


def test_the_run_s_own_processes_are_never_named_neighbours(metrics):
    # the load driver, perf and rpcprof itself are the run's: on a machine otherwise idle, nothing is named
    assert {name: m.get("neighbours") for name, m in metrics.items()} == {name: [] for name in SERVERS}


def test_each_cpus_steal_is_recorded_as_its_share_of_the_windows(metrics, manifest):
    # what the hypervisor took from each CPU (/proc/stat), for each server's windows and for the host card
    for steal in [metrics[name]["steal"] for name in SERVERS] + [manifest["host"]["steal"]]:
        assert sorted(steal) == [str(cpu) for cpu in range(os.cpu_count())], steal
        assert all(0.0 <= share <= 1.0 for share in steal.values()), steal
    # with the CPUs that halted when idle beside it: the load generator's, the server's too under --idle halt
    p = manifest["parameters"]
    halting = [*p["load_cpus"], *(p["server_cpus"] if p["idle"] == "halt" else [])]
    for record in [metrics[name] for name in SERVERS] + [manifest["host"]]:
        assert record["halting"] == sorted(halting), record["halting"]


def test_a_busy_program_beside_a_run_is_named_and_the_server_flagged_busy_host(profile, port):
    # beside each window the server's own load drives: measured, profile, read/write size (count_syscalls, as the
    # syscall-count window) and off-CPU
    loop = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", "while True: pass"])
    try:
        done = profile.run("run", "rust_pajamax", "-d", "0.5", "-w", "0", "--profile-duration", "0.5", "--min-samples",
                           "100", "--no-syscalls", "--io-sizes", "--syscall-duration", "0.5", "--off-cpu",
                           "--off-cpu-duration", "0.5", "--no-pictures", "--port", str(port), "--label", "pytest-busy")
    finally:
        loop.kill()
        loop.wait()
    assert done.returncode == 0, done.stderr
    found = json.loads((done.run_dir / "metrics.json").read_text())["rust_pajamax"]["neighbours"]
    mine = [n for n in found if n["pid"] == loop.pid]
    assert mine and mine[0]["cores"] >= 0.3, found
    for window in ("measured", "profile", "read/write size", "off-CPU"):
        assert f"WARNING: rust_pajamax: other programs were busy in the {window} window (pid {loop.pid} " in done.stderr
    assert f"BUSY-HOST: pid {loop.pid} " in done.stdout


# ----- the runtime's write pattern: invariants of tokio's scheduler, not timings ---------------------

def send_share(seed_run, server: str) -> float:
    from rpcprof.analyze.categorize import categorize, load_rules, open_folded
    m = json.loads((seed_run.run_dir / "metrics.json").read_text())[server]
    rules = load_rules().with_app(m["app"])
    return categorize(open_folded(seed_run.run_dir / server / "profile.folded"), rules).share("send")


def test_multi_thread_tonic_writes_once_per_response(seed_run, metrics):
    """On tokio's multi-thread runtime a finished stream wakes h2's connection task into the worker's
    LIFO slot: it flushes after every response (seed 001's 38 % in poll_write_vectored)."""
    assert metrics["rust_tonic_mt"]["syscalls"]["writes_per_req"] >= 0.8
    assert send_share(seed_run, "rust_tonic_mt") >= 0.25


def test_current_thread_tonic_writes_once_per_batch(seed_run, metrics):
    """On current_thread the connection task runs after every ready stream task: one write per batch."""
    assert metrics["rust_tonic_st"]["syscalls"]["writes_per_req"] <= 0.2
    assert send_share(seed_run, "rust_tonic_st") < send_share(seed_run, "rust_tonic_mt")


def test_run_records_each_servers_ruler(metrics):
    for name in SERVERS:
        assert metrics[name]["ruler"] == "alloc::fmt::format::format_inner"


def test_profile_and_syscall_windows_record_the_figures_their_regime_is_checked_by(metrics):
    for name in SERVERS:
        m = metrics[name]
        assert m["syscalls"]["req_per_s"] > 0 and m["syscalls"]["writes_per_req"] is not None
        assert m["profile"]["req_per_s"] > 0 and m["profile"]["syscalls"]["writes_per_req"] is not None


# ----- kernel events and read/write sizes of the syscall windows: invariants, not timings ----------

@pytest.mark.parametrize("name", SERVERS)
def test_both_syscall_windows_count_kernel_events_per_request(metrics, name):
    """Every event is counted on this machine kind (counted on the server's CPU, the switches and faults
    are the process's own /proc counters, and wake-ups issued have none: None, never 0; counted on the
    server's threads, as the read/write size window is, perf counts them all), the switches split into
    involuntary and voluntary ones, and each per-request figure is its count over the OK requests of its own
    window."""
    m = metrics[name]
    assert m["syscalls"]["window"] == "profile" and m["syscalls"]["scope"] == "CPU 0"
    assert m["io_sizes"]["scope"] == "threads"
    assert m["syscalls"]["events"]["context_switches"] == m["syscalls"]["proc"]["context_switches"]
    for record, requests in ((m["syscalls"], m["syscalls"]["requests_ok"]),
                             (m["profile"]["syscalls"], m["profile"]["requests_ok"]),
                             (m["io_sizes"], m["io_sizes"]["requests_ok"])):
        events, per = record["events"], record["events_per_req"]
        assert set(events) == set(per) == set(EVENT_KEYS)
        threads = record.get("scope") == "threads"
        assert (events["wakeups_issued"] is None and per["wakeups_issued"] is None) != threads
        assert all(n is not None for k, n in events.items() if k != "wakeups_issued"), events
        events = {k: n for k, n in events.items() if n is not None}
        assert events["involuntary_switches"] <= events["context_switches"]
        assert events["voluntary_switches"] == events["context_switches"] - events["involuntary_switches"]
        assert requests > 0
        assert {k: v for k, v in per.items() if v is not None} == {k: pytest.approx(n / requests, rel=1e-9)
                                                                    for k, n in events.items()}


@pytest.mark.parametrize("name", SERVERS)
def test_the_syscalls_window_records_every_read_and_write_it_counts(metrics, name):
    """perf record's sys_exit samples and perf stat's sys_enter counts cover the same window and the same
    threads, the server's (counts of its whole CPU would take in other processes' reads and writes there):
    with no event lost they agree call for call (up to a call in flight at either edge)."""
    sc = metrics[name]["io_sizes"]
    assert sc["window"] == "io-sizes" and sc["io_lost"] == 0
    for family in (IO_READS, IO_WRITES):
        recorded = sum(sc["io"][s]["calls"] for s in family if s in sc["io"])
        counted = sum(sc["by_syscall"].get(s, 0) for s in family)
        assert abs(recorded - counted) <= max(3, 0.01 * counted), (family, recorded, counted)
    assert sc["reads_per_req"] > 0 and sc["bytes_per_read"] > 0
    assert sc["eagain_reads_per_req"] <= sc["reads_per_req"]


def test_multi_thread_tonic_writes_about_once_per_request(metrics):
    sc = metrics["rust_tonic_mt"]["syscalls"]
    assert sc["req_per_write"] <= 1.5
    assert sc["bytes_per_write"] > 0


def test_current_thread_tonic_batches_several_requests_per_write(metrics):
    sc = metrics["rust_tonic_st"]["syscalls"]
    assert sc["req_per_write"] >= 3
    assert sc["bytes_per_write"] > metrics["rust_tonic_mt"]["syscalls"]["bytes_per_write"]


@pytest.mark.parametrize("name", SERVERS)
def test_the_io_recording_is_summarised_and_cleaned_up(seed_run, name):
    folder = seed_run.run_dir / name
    assert not (folder / "syscalls-io.txt").exists()
    data = folder / "syscalls-io.data"
    assert not data.exists() or data.stat().st_size <= IO_KEEP_BYTES
    assert not (folder / "profile-syscalls-io.data").exists()      # never in the profile window


def test_no_perf_process_outlives_the_run(seed_run):
    left = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"perf") and str(seed_run.run_dir).encode() in b" ".join(argv):
            left.append(proc.name)
    assert left == []
