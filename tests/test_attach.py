"""profile.sh attach: servers started the way a user would (not through `run`), profiled by PID."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rpcprof import attach as attach_mod
from rpcprof.attach import check_permissions, inspect_process
from rpcprof.errors import UserError
from rpcprof.servers import load_server

ROOT = Path(__file__).resolve().parents[1]
PROFILE_SH = str(ROOT / "profile.sh")
SERVERS = ["rust_tonic", "rust_pajamax", "go_grpc", "python_grpcio", "node_grpcjs"]


def start_server(name: str, port: int) -> subprocess.Popen:
    """Build and start a server by hand on CPU 0, as a user would; wait until it listens."""
    spec = load_server(name)
    subprocess.run(["bash", "build.sh"], cwd=spec.folder, check=True, capture_output=True)
    proc = subprocess.Popen(["taskset", "-c", "0", *spec.argv(port)], cwd=spec.folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    from rpcprof.scenario import SCENARIOS, probe
    deadline = time.monotonic() + 60
    while probe(SCENARIOS["helloworld"], port) is not None:
        assert proc.poll() is None, f"{name} exited at start"
        assert time.monotonic() < deadline, f"{name} did not answer within 60 s"
        time.sleep(0.2)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    Path(f"/tmp/perf-{proc.pid}.map").unlink(missing_ok=True)    # node --perf-basic-prof leaves it


def attach(*args, timeout=300):
    return subprocess.run([PROFILE_SH, "attach", *args], capture_output=True, text=True, timeout=timeout)


def run_folder(stderr: str) -> Path:
    line = next(x for x in stderr.splitlines() if x.startswith("rpcprof: run folder "))
    return Path(line.split("rpcprof: run folder ", 1)[1].strip())


@pytest.mark.parametrize("server", SERVERS)
def test_attach_with_load_gives_a_complete_run_folder(server, tmp_path):
    port = 50600 + SERVERS.index(server)
    proc = start_server(server, port)
    spec = load_server(server)
    try:
        done = attach("--pid", str(proc.pid), "-d", "3", "-w", "1", "--load", "--target", f"127.0.0.1:{port}",
                      "--app", spec.app, "--name", server, "--format", "json")
    finally:
        stop(proc)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "Traceback" not in done.stderr
    folder = run_folder(done.stderr)
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        metrics = json.loads((folder / "metrics.json").read_text())
        assert manifest["status"] == "complete" and manifest["mode"] == "attach"
        assert manifest["process"]["pid"] == proc.pid
        m = metrics[server]
        assert m["status"] == "ok" and m["requests_ok"] > 0 and m["cpu_us_per_req"] > 0
        assert m["req_per_cpu_s"] == pytest.approx(m["req_per_s"] / m["server_cpu_cores"], rel=1e-6)
        assert (folder / server / "profile.folded").stat().st_size > 0
        shares = m["profile"]["shares"]
        assert sum(shares.values()) == pytest.approx(1.0)
        assert shares["other"] <= 0.05 or server == "node_grpcjs" and shares["other"] <= 0.08
        expected_profiler = "py-spy" if server == "python_grpcio" else "perf"
        assert m["profile"]["profiler"] == expected_profiler
        if server == "python_grpcio":
            assert metrics[f"{server}-perf"]["profile"]["profiler"] == "perf"      # the second view
            assert "cannot see kernel time" in done.stderr
    finally:
        subprocess.run(["rm", "-rf", str(folder)])


def test_inspect_tells_go_python_and_native_apart():
    me = inspect_process(os.getpid())
    assert me.kind == "python"
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert inspect_process(sleeper.pid).kind == "native"
    finally:
        sleeper.kill()
        sleeper.wait()
    go_bin = load_server("go_grpc").folder / "bin" / "go_grpc"
    if go_bin.exists():
        assert attach_mod._is_go_binary(str(go_bin))
    assert not attach_mod._is_go_binary("/bin/sleep")


def test_node_without_perf_basic_prof_gets_the_exact_flag():
    info = attach_mod.ProcessInfo(1, "node", "/usr/bin/node", ["node", "server.js"], "node", [0], 0)
    profiler, call_graph, hints = attach_mod.choose_profiler(info, None)
    assert (profiler, call_graph) == ("perf", "fp")
    assert any("--perf-basic-prof" in h for h in hints)
    info.cmdline.insert(1, "--perf-basic-prof")
    assert attach_mod.choose_profiler(info, None)[2] == []


@pytest.mark.parametrize("args, message", [
    (["--pid", "999999"], "no process with pid 999999"),
    (["--pid", "2"], "is a kernel thread"),
    (["--pid", "SLEEPER", "--load"], "--load needs --target"),
    (["--pid", "SLEEPER", "--load", "--target", "10.0.0.1:50051"], "loopback"),
    (["--pid", "SLEEPER", "--requests", "5", "--rps", "3"], "--requests and --rps"),
    (["--pid", "SLEEPER", "--profiler", "py-spy"], "not a CPython process"),
])
def test_bad_attach_input_is_one_line(args, message):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        done = attach(*[str(sleeper.pid) if a == "SLEEPER" else a for a in args], "-d", "1")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode != 0
    errors = [x for x in done.stderr.splitlines() if x.startswith("profile.sh: error:")]
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_zombie_is_refused():
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while attach_mod.proc_state(child.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        done = attach("--pid", str(child.pid), "-d", "1")
        assert done.returncode != 0 and "is a zombie" in done.stderr
    finally:
        child.wait()


def test_idle_process_gives_zero_samples_and_a_hint():
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        done = attach("--pid", str(sleeper.pid), "-d", "1", "--min-samples", "10")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode == 1
    assert "no samples" in done.stderr and "--load" in done.stderr
    folder = run_folder(done.stderr)
    assert json.loads((folder / "manifest.json").read_text())["status"] != "complete"
    subprocess.run(["rm", "-rf", str(folder)])


def test_process_exiting_during_the_window_keeps_what_was_captured():
    busy = subprocess.Popen(["bash", "-c", "end=$((SECONDS + 2)); while ((SECONDS < end)); do :; done"])
    try:
        done = attach("--pid", str(busy.pid), "-d", "5", "--min-samples", "10")
    finally:
        busy.wait()
    assert done.returncode == 1
    assert f"pid {busy.pid} exited" in done.stderr and "into the 5 s window" in done.stderr
    folder = run_folder(done.stderr)
    try:
        name = next(p.name for p in folder.iterdir() if p.is_dir())
        assert (folder / name / "perf.data").stat().st_size > 0          # what was captured is kept
        assert json.loads((folder / "manifest.json").read_text())["status"] == "incomplete"
        assert subprocess.run(["pgrep", "-f", f"perf record .* -p {busy.pid}"]).returncode == 1
    finally:
        subprocess.run(["rm", "-rf", str(folder)])


@pytest.mark.parametrize("profiler, setting, fix", [
    ("perf", "perf_event_paranoid", "sysctl -w kernel.perf_event_paranoid=1"),
    ("py-spy", "ptrace_scope", "sysctl -w kernel.yama.ptrace_scope=0"),
])
def test_not_permitted_names_the_setting(monkeypatch, profiler, setting, fix):
    """As a non-root user of the same uid, with the kernel's defaults on this machine kind."""
    info = attach_mod.ProcessInfo(4242, "srv", "/srv", ["/srv"], "native", [0], 1000)
    monkeypatch.setattr(attach_mod.os, "geteuid", lambda: 1000)
    real_read = Path.read_text
    monkeypatch.setattr(attach_mod.Path, "read_text",
                        lambda self, *a, **k: "2" if "perf_event_paranoid" in str(self) or "ptrace_scope" in str(self)
                        else real_read(self, *a, **k))
    monkeypatch.setattr(attach_mod.Path, "exists", lambda self: True)
    with pytest.raises(UserError) as e:
        check_permissions(info, profiler)
    assert setting in str(e.value) and fix in str(e.value)
    info.uid = 0
    with pytest.raises(UserError, match="belongs to uid 0; run as root"):
        check_permissions(info, profiler)
