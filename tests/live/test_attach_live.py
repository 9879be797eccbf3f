"""profile.sh attach: servers started the way a user would (not through `run`), profiled by PID."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import category_shares

from rpcprof.measure.servers import load_server

ROOT = Path(__file__).resolve().parents[2]
PROFILE_SH = str(ROOT / "profile.sh")
SERVERS = ["rust_tonic_mt", "rust_pajamax", "go_grpc", "python_grpcio", "node_grpcjs"]


def start_server(name: str, port: int, cwd: Path, argv: list[str] | None = None) -> subprocess.Popen:
    """Build and start a server by hand on CPU 0, from cwd, as a user would; wait until it listens."""
    spec = load_server(name)
    subprocess.run(["bash", "build.sh"], cwd=spec.folder, check=True, capture_output=True)
    assert port_is_free(port), f"port {port} is taken: a server from an earlier run is still there"
    argv = argv or spec.argv(port)
    proc = subprocess.Popen(["taskset", "-c", "0", *argv], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    from rpcprof.measure.scenario import SCENARIOS, learn_reply
    deadline = time.monotonic() + 60
    while learn_reply(SCENARIOS["helloworld"], port, calls=1)[1] is not None:
        assert proc.poll() is None, f"{name} exited at start"
        assert time.monotonic() < deadline, f"{name} did not answer within 60 s"
        time.sleep(0.2)
    return proc


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    Path(f"/tmp/perf-{proc.pid}.map").unlink(missing_ok=True)    # node --perf-basic-prof leaves it


# this module's --runs-dir: made when its first test runs, not when it is collected (every pytest session,
# each of its workers, collects it), and removed after its last
RUNS = Path(tempfile.gettempdir()) / f"rpcprof-test-attach-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _remove_runs():
    RUNS.mkdir(exist_ok=True)
    yield
    shutil.rmtree(RUNS, ignore_errors=True)


def attach(*args, timeout=300):
    if not any(a.startswith(("--off-cpu", "--no-off-cpu")) for a in args):
        args = (*args, "--no-off-cpu")          # the off-CPU window is tests/live/test_offcpu_live.py's
    if not {"--pictures", "--no-pictures"} & set(args):
        args = (*args, "--no-pictures")         # an attach's pictures: test_offcpu_live's and the golden tests'
    return subprocess.run([PROFILE_SH, "attach", "--runs-dir", str(RUNS), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def explain_category(frame: str, app: str) -> str:
    """The category categorize.yaml, with app as the app rule, gives a one-frame stack of frame."""
    from rpcprof.analyze.categorize import categorize, load_rules
    rules = load_rules().with_app(app)
    shares = categorize([([frame], 1)], rules)
    return next(c for c in rules.all_categories if shares.share(c) == 1)


def heaviest_leaves(folder: Path, server: str, n: int = 5) -> list[tuple[str, int]]:
    """The n leaf frames with the most samples in a server's profile (for a failing assert's message)."""
    from rpcprof.analyze.categorize import open_folded
    from rpcprof.rundir import profile_folded
    leaves: dict[str, int] = {}
    for frames, weight in open_folded(profile_folded(folder, server)):
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + weight
    return sorted(leaves.items(), key=lambda kv: -kv[1])[:n]


def run_folder(stderr: str) -> Path:
    line = next(x for x in stderr.splitlines() if x.startswith("rpcprof: run folder "))
    path = Path(line.split("rpcprof: run folder ", 1)[1].strip())
    return path if path.is_absolute() else ROOT / path


# attached with no --app (then the app category is the process's own code, found by rpcprof), but for
# rust_pajamax, attached with its server.yaml's app regex: both ways are tested, one attach per server
OWN_CODE = ["rust_tonic_mt", "go_grpc", "python_grpcio", "node_grpcjs"]
# grpcio's handler is too small to be sampled for sure in a short window: it held 1, 2, 0 and 3 of py-spy's
# ~3,600 samples in four attaches of 2 s (0.03 % to 0.09 %), and 4 of ~11,000 in 6 s. Its rule is checked on
# the handler's frame as py-spy names it instead (the line of SayHello's body in server.py)
SAMPLED_HANDLER = ["rust_tonic_mt", "go_grpc", "node_grpcjs"]


@pytest.mark.parametrize("server", SERVERS)
def test_attach_with_load_gives_a_complete_run_folder(server, tmp_path):
    port = 30600 + SERVERS.index(server)
    spec = load_server(server)
    # from the server's folder (relative paths in its argv), but node from a folder of the test's own:
    # it writes its jitdump into its working directory, and perf inject the JIT functions' ELF files beside it
    proc = start_server(server, port, tmp_path if spec.workdir == "run" else spec.folder)
    app = [] if server in OWN_CODE else ["--app", spec.app]
    try:
        done = attach("--pid", str(proc.pid), "-d", "2", "-w", "1", "--load", "--target", f"127.0.0.1:{port}",
                      *app, "--name", server, "--format", "json")
    finally:
        stop(proc)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "Traceback" not in done.stderr
    folder = run_folder(done.stderr)
    try:
        doc = json.loads(done.stdout)           # --format json: one document on stdout
        assert doc["shares"][0]["profile"] == server and doc["compare"]["rows"][-1]["category"] == "total"
        manifest = json.loads((folder / "manifest.json").read_text())
        metrics = json.loads((folder / "metrics.json").read_text())
        assert manifest["status"] == "complete" and manifest["mode"] == "attach"
        assert manifest["process"]["pid"] == proc.pid
        m = metrics[server]
        assert m["status"] == "ok" and m["requests_ok"] > 0 and m["cpu_us_per_req"] > 0
        assert m["req_per_cpu_s"] == pytest.approx(m["req_per_s"] / m["server_cpu_cores"], rel=1e-6)
        # pinned apart from the load: syscalls counted on its CPU and perf sampling that CPU, as run does, not per
        # thread (a per-thread counter costs a context-switching server a fifth to a half more CPU per request)
        cpus = ",".join(map(str, manifest["process"]["affinity"]))
        assert m["syscalls"]["scope"].startswith(f"CPU {cpus}"), m["syscalls"]
        if m["profile"]["profiler"] == "perf":
            assert m["profile"]["scope"] == f"CPU {cpus}, pid {proc.pid}'s samples kept"
        assert (folder / server / "profile.folded").stat().st_size > 0
        shares = category_shares(folder, server)
        if server in OWN_CODE:
            # no --app: the app category is the process's own code (crate, main module, own files, own JS),
            # and its handler is in it (app > 0 %); the rule used is printed and recorded
            assert "rpcprof: app frames: " in done.stderr
            assert m["app"] and m["app_source"] != "--app"
            if server in SAMPLED_HANDLER:
                assert shares["app"] > 0, (m["app"], m["profile"]["samples"], heaviest_leaves(folder, server))
            else:
                source = (spec.folder / "server.py").read_text().splitlines()
                line = next(i for i, x in enumerate(source, 1) if "def SayHello" in x) + 1
                for frame in (f"HelloGreeter.SayHello (server.py:{line})",
                              f"HelloGreeter.SayHello ({spec.folder / 'server.py'}:{line})"):
                    assert explain_category(frame, m["app"]) == "app", (frame, m["app"])
        assert sum(shares.values()) == pytest.approx(1.0)
        assert shares["other"] <= 0.05
        expected_profiler = "py-spy" if server == "python_grpcio" else "perf"
        assert m["profile"]["profiler"] == expected_profiler
        if server == "node_grpcjs":     # started with --perf-prof --perf-prof-unwinding-info (server.yaml)
            assert m["profile"]["call_graph"] == "dwarf-jit"
            assert m["profile"]["jitdumps"] == [str(tmp_path / f"jit-{proc.pid}.dump")]
            assert m["profile"]["jit_elf_files"] > 100
            # beside a dump outside the run folder (the process's working directory) every ELF file is kept
            assert len(list(tmp_path.glob(f"jitted-{proc.pid}-*.so"))) == m["profile"]["jit_elf_files"] \
                == m["profile"]["jit_elf_kept"]
            assert "perf inject --jit wrote" in done.stderr
        if server == "python_grpcio":
            assert metrics[f"{server}-perf"]["profile"]["profiler"] == "perf"      # the second view
            # both views begin after the measured window's lead, as a run's do: py-spy is started then
            assert metrics[f"{server}-perf"]["profile"]["lead_s"] == m["profile"]["lead_s"] == m["lead_s"] > 0
            # py-spy's own count of the stacks it kept is the folded file's, and its errors are its log's last
            # summary (py-spy.log in the server's folder), as a share of the ticks asked for the window
            assert m["profile"]["pyspy_kept"] == m["profile"]["samples"]
            summary = re.findall(r"Samples: (\d+) Errors: (\d+)", (folder / server / "py-spy.log").read_text())
            assert summary and int(summary[-1][0]) == m["profile"]["pyspy_kept"]
            assert int(summary[-1][1]) == m["profile"]["pyspy_errors"]
            ticks = m["profile"]["frequency_hz"] * m["profile"]["duration_s"]
            assert m["profile"]["pyspy_error_share"] == pytest.approx(m["profile"]["pyspy_errors"] / ticks)
            assert "cannot see kernel time" in done.stderr
    finally:
        subprocess.run(["rm", "-rf", str(folder)])


def test_node_with_the_jit_map_only_is_profiled_with_frame_pointers(tmp_path):
    """The other Node path: started with --perf-basic-prof alone, JS frames are named from /tmp/perf-PID.map."""
    port = 30609
    spec = load_server("node_grpcjs")
    argv = ["node", "--perf-basic-prof", "--no-logfile-per-isolate", "--logfile=+", "--allow-natives-syntax",
            str(spec.folder / "server.js"), "--port", str(port)]
    proc = start_server("node_grpcjs", port, tmp_path, argv)
    try:
        done = attach("--pid", str(proc.pid), "-d", "2", "-w", "1", "--load", "--target", f"127.0.0.1:{port}",
                      "--app", spec.app, "--format", "json")
    finally:
        stop(proc)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "--perf-prof --perf-prof-unwinding-info" in done.stderr       # the hint towards whole stacks
    folder = run_folder(done.stderr)
    try:
        m = next(iter(json.loads((folder / "metrics.json").read_text()).values()))
        assert m["status"] == "ok" and m["profile"]["call_graph"] == "fp" and "jitdumps" not in m["profile"]
        folded = next(folder.glob("*/profile.folded")).read_text()
        assert ";JS:" in folded and "helloSayHello" in folded                # JS frames named by the map
        assert not list(tmp_path.glob("jit*"))
    finally:
        subprocess.run(["rm", "-rf", str(folder)])


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
    # 4 s of spinning: enough for setup and perf to attach first (bash's SECONDS counts whole seconds, so
    # a 2 s loop could end after 1 s, before perf opened its event), well inside the 8 s window
    busy = subprocess.Popen(["bash", "-c", "end=$((SECONDS + 4)); while ((SECONDS < end)); do :; done"])
    try:
        done = attach("--pid", str(busy.pid), "-d", "8", "--min-samples", "10")
    finally:
        busy.wait()
    assert done.returncode == 1
    assert f"pid {busy.pid} exited" in done.stderr and "into the 8 s window" in done.stderr
    folder = run_folder(done.stderr)
    try:
        name = next(p.name for p in folder.iterdir() if p.is_dir())
        assert (folder / name / "perf.data").stat().st_size > 0          # what was captured is kept
        # the job failed (a measurement did not end ok), as a run whose server dies does; its capture is kept
        assert json.loads((folder / "manifest.json").read_text())["status"] == "failed"
        assert subprocess.run(["pgrep", "-f", f"perf record .* -p {busy.pid}"]).returncode == 1
    finally:
        subprocess.run(["rm", "-rf", str(folder)])


OTHER_REPLY_SERVER = '''
import itertools, sys, time
from concurrent import futures
import grpc
sizes = itertools.cycle([b"\\n\\x13Greetings, world :)", b"\\n\\x02Hi"] if sys.argv[2] == "vary" else [b"\\n\\x13Greetings, world :)"])
handler = grpc.method_handlers_generic_handler("helloworld.Greeter", {
    "SayHello": grpc.unary_unary_rpc_method_handler(lambda request, context: next(sizes))})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port(f"127.0.0.1:{sys.argv[1]}")
server.start()
server.wait_for_termination()
'''


@pytest.mark.parametrize("sizes", ["fixed", "vary"])
def test_attach_learns_any_servers_reply(tmp_path, sizes):
    """A server replying in its own words (and, in one case, with replies of two sizes) is measured, not
    refused: its reply is learned from the probe and OK responses are counted by it."""
    port = 30620 + (sizes == "vary")
    script = tmp_path / "server.py"
    script.write_text(OTHER_REPLY_SERVER)
    proc = subprocess.Popen(["taskset", "-c", "0", str(ROOT / ".venv" / "bin" / "python"), str(script), str(port), sizes],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while port_is_free(port):
            assert proc.poll() is None and time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.2)
        done = attach("--pid", str(proc.pid), "-d", "2", "-w", "1", "--load", "--target", f"127.0.0.1:{port}",
                      "-S", "10", "--name", "other", "--app", "lambda", "--no-second-profile", "--format", "json")
    finally:
        stop(proc)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "not the built-in reply" in done.stderr
    folder = run_folder(done.stderr)
    m = json.loads((folder / "metrics.json").read_text())["other"]
    assert m["reply"]["builtin"] is False and "Greetings, world" in m["reply"]["text"]
    assert m["requests_ok"] > 0 and m["requests_non_ok"] <= 10
    if sizes == "fixed":
        assert m["reply"]["framed_len"] == 5 + 21
    else:
        assert m["reply"]["framed_len"] is None and "reply sizes vary" in done.stderr
