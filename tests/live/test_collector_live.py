"""Profiles pushed to a real OpenTelemetry Collector (rpcprof-otelcol, tools/collector: the Collector at
v0.165.0 with its OTLP receiver and contrib's file exporter, profiles behind --feature-gates=
service.profilesSupport), read back from what the Collector wrote (OTLP JSON and length-prefixed protobuf)
by the Collector's own pdata/pprofile (rpcprof-profile-read): a published run's profiles sent by report.py
export over gRPC and HTTP, the Collector configuration docs/fleet.md gives, forwarding to a second Collector
in Pyroscope's place, and profile.sh run and attach sending each profile as they make it. Each profile that
arrives has the category shares and the total `report.py table` gives its folded file. An endpoint that is
down costs attach one line and exit 1, and its run folder is kept. Every Collector and process started here
is stopped by PID."""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, take_port

from rpcprof.analyze.categorize import open_folded
from rpcprof.rundir import profile_folded

VENV = Path(os.environ.get("RPCPROF_VENV", ROOT / ".venv"))
OTELCOL = VENV / "bin" / "rpcprof-otelcol"
READER = VENV / "bin" / "rpcprof-profile-read"
RUN = ROOT / "tests" / "data" / "runs" / "seed-001"
SERVERS = sorted(p.name for p in RUN.iterdir() if (p / "profile.folded.gz").exists())
FEATURE_GATE = "--feature-gates=service.profilesSupport"
ARRIVAL_S = 60          # a profile sent is written by the Collector's file exporter within this (it flushes each second)


def config_yaml(grpc_port: int, http_port: int, out: Path) -> dict:
    """A Collector receiving OTLP on both ports and writing every profile to out.jsonl (OTLP JSON, a line per
    request) and out.pb (protobuf, each message after its length); no telemetry server of its own."""
    endpoint = {"grpc": {"endpoint": f"127.0.0.1:{grpc_port}"}, "http": {"endpoint": f"127.0.0.1:{http_port}"}}
    return {"receivers": {"otlp": {"protocols": endpoint}},
            "exporters": {"file/json": {"path": str(out.with_suffix(".jsonl")), "format": "json"},
                          "file/proto": {"path": str(out.with_suffix(".pb")), "format": "proto"}},
            "service": {"telemetry": {"metrics": {"level": "none"}},
                        "pipelines": {"profiles": {"receivers": ["otlp"], "exporters": ["file/json", "file/proto"]}}}}


class Collector:
    """rpcprof-otelcol started on a configuration, listening on ports; stop() ends it by PID."""

    def __init__(self, folder: Path, name: str, config: dict, ports: list[int]):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.out = folder, folder / name
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        self.log = folder / f"{name}.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen([str(OTELCOL), "--config", str(path), FEATURE_GATE], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 60
        for port in ports:
            while not listening(port):
                assert self.proc.poll() is None, f"the Collector exited: {self.log.read_text()[-2000:]}"
                assert time.monotonic() < deadline, f"the Collector did not listen on {port}: {self.log.read_text()[-2000:]}"
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def written(self) -> tuple[list[bytes], list[bytes]]:
        """The requests the file exporter wrote so far: OTLP JSON lines, protobuf messages (whole ones only)."""
        jsonl = self.out.with_suffix(".jsonl")
        lines = jsonl.read_bytes().split(b"\n")[:-1] if jsonl.exists() else []
        messages, data = [], (self.out.with_suffix(".pb").read_bytes() if self.out.with_suffix(".pb").exists() else b"")
        while len(data) >= 4 and len(data) >= 4 + int.from_bytes(data[:4], "big"):
            size = int.from_bytes(data[:4], "big")
            messages.append(data[4:4 + size])
            data = data[4 + size:]
        return lines, messages

    def profiles_after(self, seen: int, count: int) -> list[tuple[dict, dict]]:
        """The count requests written after the first seen, each as pdata reads it (rpcprof-profile-read) from the
        Collector's JSON file and from its protobuf file (one profile a request, as they are sent one at a time)."""
        deadline = time.monotonic() + ARRIVAL_S
        while True:
            lines, messages = self.written()
            if min(len(lines), len(messages)) >= seen + count:
                break
            assert self.proc.poll() is None, f"the Collector exited: {self.log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, (f"{len(lines) - seen} of {count} profiles arrived within {ARRIVAL_S} s:"
                                                 f" {self.log.read_text()[-2000:]}")
            time.sleep(0.2)
        assert len(lines) == len(messages) == seen + count, "more requests reached the Collector than were sent"
        out = []
        for i in range(seen, seen + count):
            as_json, as_proto = self.folder / f"read-{i}.json", self.folder / f"read-{i}.pb"
            as_json.write_bytes(lines[i])
            as_proto.write_bytes(messages[i])
            out.append((read("otlp", as_json), read("otlp", as_proto)))
        return out

    def count(self) -> int:
        return len(self.written()[0])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def read(kind: str, path: Path) -> dict:
    done = subprocess.run([str(READER), kind, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def only_profile(doc: dict) -> dict:
    (resource,) = doc["resources"]
    (scope,) = resource["scopes"]
    (profile,) = scope["profiles"]
    return profile


def report(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "report.py"), *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def check_against_table(profile: dict, folded: Path) -> None:
    """The profile's category shares and total are what report.py table gives folded (its samples: the total
    over one sample's weight), and its total weight is the folded file's."""
    done = report("table", folded, "--format", "json")
    assert done.returncode == 0, done.stderr
    (table,) = json.loads(done.stdout)
    values = [s["values"][0] for s in profile["samples"]]
    total = sum(values)
    assert total == sum(w for _, w in open_folded(folded))
    assert total // math.gcd(*values) == table["samples"]
    by_category: dict[str, int] = {}
    for sample, value in zip(profile["samples"], values):
        (category,) = [v for k, v in sample["labels"] if k == "category"]
        by_category[category] = by_category.get(category, 0) + value
    want = {k: v for k, v in table.items() if k not in ("profile", "samples") and v > 0}
    assert {k: 100 * w / total for k, w in by_category.items()} == pytest.approx(want, abs=1e-9)


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    if not (OTELCOL.exists() and READER.exists()):
        pytest.fail(f"{OTELCOL.name} and {READER.name} are built by tools/setup.sh --for-tests (tests/run.sh runs it)")
    grpc_port, http_port = take_port(), take_port()
    folder = tmp_path_factory.mktemp("collector")
    sink = Collector(folder, "sink", config_yaml(grpc_port, http_port, folder / "sink"), [grpc_port, http_port])
    sink.grpc, sink.http = grpc_port, http_port
    yield sink
    sink.stop()


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("suffix, scheme", [(".pb", "grpc://"), (".json", "http://")])
def test_a_runs_profile_sent_by_export_reaches_the_collector_with_report_pys_shares(collector, tmp_path, server,
                                                                                   suffix, scheme):
    folded = RUN / server / "profile.folded.gz"
    port = collector.grpc if scheme == "grpc://" else collector.http
    seen = collector.count()
    done = report("export", folded, "--format", "otlp", "-o", tmp_path / f"{server}{suffix}",
                  "--otlp-endpoint", f"{scheme}127.0.0.1:{port}")
    assert done.returncode == 0, done.stderr
    assert f"sent {tmp_path / f'{server}{suffix}'} to {scheme}127.0.0.1:{port}" in done.stderr
    ((as_json, as_proto),) = collector.profiles_after(seen, 1)
    assert as_json == as_proto
    check_against_table(only_profile(as_json), folded)


def test_the_collector_configuration_of_docs_fleet_md_forwards_the_profiles(collector, tmp_path):
    """docs/fleet.md's configuration, its receiver on a port of the test's and its exporter sent to the sink
    Collector in Pyroscope's place (TLS off, as there), no telemetry server: what the sink gets is the run's."""
    text = (ROOT / "docs" / "fleet.md").read_text()
    section = text[text.index("## Push to a Collector"):]
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    port = take_port()
    config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] = f"127.0.0.1:{port}"
    assert config["exporters"]["otlp_grpc/pyroscope"]["endpoint"] == "pyroscope.example:4040"
    config["exporters"]["otlp_grpc/pyroscope"]["endpoint"] = f"127.0.0.1:{collector.grpc}"
    config["service"]["telemetry"] = {"metrics": {"level": "none"}}
    forwarder = Collector(tmp_path, "forwarder", config, [port])
    try:
        folded = RUN / SERVERS[0] / "profile.folded.gz"
        seen = collector.count()
        done = report("export", folded, "--format", "otlp", "-o", tmp_path / "forwarded.pb",
                      "--otlp-endpoint", f"127.0.0.1:{port}")
        assert done.returncode == 0, done.stderr
        ((as_json, _),) = collector.profiles_after(seen, 1)
        check_against_table(only_profile(as_json), folded)
    finally:
        forwarder.stop()


@pytest.fixture(scope="module")
def pushed_run(collector, module_profile):
    """profile.sh run of rust_tonic_st, 2 rounds, sending to the Collector: (the run, each round's request as it
    arrived)."""
    seen = collector.count()
    done = module_profile.run("run", "rust_tonic_st", "--rounds", "2", "-w", "1", "-d", "2", "--profile-duration", "2",
                              "--no-syscalls", "--port", str(take_port()),
                              "--otlp-endpoint", f"127.0.0.1:{collector.grpc}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(re.findall(r"rust_tonic_st: profile sent to ", done.stderr)) == 2, done.stderr[-3000:]
    return done, [as_json for as_json, _ in collector.profiles_after(seen, 2)]


def test_profile_sh_run_sends_each_rounds_profile_as_it_is_made(pushed_run):
    done, requests = pushed_run
    for k, request in enumerate(requests, start=1):
        check_against_table(only_profile(request), profile_folded(done.run_dir, "rust_tonic_st", k))


def test_each_rounds_profile_arrives_named_and_dated_by_its_round(pushed_run):
    """service.name, the period type, and the round's profile window (profile.json), as the Collector passes them."""
    done, requests = pushed_run
    for k, request in enumerate(requests, start=1):
        folder = profile_folded(done.run_dir, "rust_tonic_st", k).parent
        window = json.loads((folder / "profile.json").read_text())
        started = dt.datetime.fromisoformat(json.loads((folder / "result.json").read_text())["started"]).astimezone()
        assert request["resources"][0]["attributes"]["service.name"] == "rust_tonic_st"
        profile = only_profile(request)
        assert profile["period_type"] == ["cpu", "nanoseconds"] and profile["period"] > 0
        assert started.timestamp() * 1e9 <= profile["time_unix_nano"] <= started.timestamp() * 1e9 + 600e9
        assert profile["duration_nano"] == window["duration_s"] * 1e9


@pytest.mark.xfail(reason="writer gives process.pid as a string; the semantic conventions type it int", strict=True)
def test_each_rounds_profile_arrives_with_its_servers_pid(pushed_run):
    done, requests = pushed_run
    for k, request in enumerate(requests, start=1):
        pid = json.loads((profile_folded(done.run_dir, "rust_tonic_st", k).parent / "result.json").read_text())["pid"]
        assert request["resources"][0]["attributes"].get("process.pid") == pid


@pytest.fixture
def busy_process():
    """A shell loop spinning on CPU 0 (native code, profiled by perf); stopped by PID."""
    proc = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL,
                            start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def attach(profile, pid: int, *args: str):
    return profile.run("attach", "--pid", str(pid), "-d", "2", "--name", "spinner", *args, timeout=300)


def test_profile_sh_attach_sends_its_profile(collector, profile, busy_process):
    seen = collector.count()
    done = attach(profile, busy_process.pid, "--otlp-endpoint", f"http://127.0.0.1:{collector.http}")
    assert done.returncode == 0, done.stderr[-3000:]
    ((as_json, _),) = collector.profiles_after(seen, 1)
    check_against_table(only_profile(as_json), profile_folded(done.run_dir, "spinner"))


def test_profile_sh_attach_with_the_collector_down_is_one_line_and_exit_1_its_run_kept(profile, busy_process):
    down = take_port()
    assert not listening(down)
    done = attach(profile, busy_process.pid, "--otlp-endpoint", f"127.0.0.1:{down}")
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("profile.sh: error: ")]
    assert len(errors) == 1 and f"--otlp-endpoint 127.0.0.1:{down}: cannot reach it" in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert open_folded(profile_folded(done.run_dir, "spinner"))
    assert json.loads((done.run_dir / "manifest.json").read_text())["status"] == "complete"
