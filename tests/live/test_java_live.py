"""java_grpc (grpc-java on Netty, a JIT runtime): a run whose warm-up is raised to the server's measured
warmup_s and ends connections as the windows do, JIT frames named through the JVM's perf map, and
`profile.sh attach` on a JVM started by hand, profiled by PID."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, category_shares, port_is_free, take_port, wait_answering

from rpcprof.measure.servers import load_server

pytestmark = pytest.mark.skipif(not shutil.which("java") or not shutil.which("jcmd"),
                                reason="needs a JDK (tools/setup.sh --java)")
OTHER_MAX = 0.05


def unnamed_jit(folded: Path) -> float:
    """The share of samples with a frame in JIT-compiled code that the perf map did not name."""
    import re
    from rpcprof.analyze.categorize import open_folded
    stacks = open_folded(folded)
    total = sum(w for _, w in stacks)
    bad = sum(w for frames, w in stacks if any(re.fullmatch(r"\[perf-\d+\.map\]", f) for f in frames))
    return bad / total if total else 0.0


# the JVM's own threads (perf's 15-character names, spaces made underscores): the JIT compilers, the
# collector and the VM's housekeeping run no Netty or grpc-java code, and how much CPU they take in a short
# window depends on how far the JIT has got (C2 alone: 5.6 % of the golden capture's samples)
JVM_OWN_THREADS = ("C1_CompilerThre", "C2_CompilerThre", "VM_Thread", "VM_Periodic_Tas", "GC_Thread", "G1_",
                   "Monitor_Deflati", "Reference_Handl", "Finalizer", "Signal_Dispatch", "Service_Thread",
                   "Sweeper_thread", "Common-Cleaner", "Notification_Th")


def java_frames(folded: Path) -> float:
    """The share of the application threads' samples (all but the JVM's own threads) with a frame of Netty
    or grpc-java named from the JVM's perf map."""
    from rpcprof.analyze.categorize import open_folded
    stacks = [(frames, w) for frames, w in open_folded(folded) if not frames[0].startswith(JVM_OWN_THREADS)]
    total = sum(w for _, w in stacks)
    named = sum(w for frames, w in stacks if any(f.split(" ")[-1].startswith(("io.netty.", "io.grpc.")) for f in frames))
    return named / total if total else 0.0


def test_a_run_warms_the_jit_up_and_names_its_frames(profile, port):
    # a 2 s measured window: after the warm-up the JVM still pauses now and then (a 1 s window here counted 3,400-22,000
    # requests, its p99 latency 0.6 s when slow), and 1,000 streams in flight are over a quarter of a slow second's count
    done = profile.run("run", "java_grpc", "-d", "2", "-w", "1", "--profile-duration", "2", "--port", str(port))
    assert done.returncode == 0, done.stderr[-2000:]
    spec = load_server("java_grpc")
    assert f"java_grpc: warm-up raised to {spec.warmup_s:g} s" in done.stderr
    result = json.loads((done.run_dir / "java_grpc" / "result.json").read_text())
    assert result["warmup_s"] == spec.warmup_s
    # the last warm-up window led the measured one on its connections: h2load warmed them up, then measured,
    # and its requests (the timed window's) bound the OK count its DATA bytes (from the lead on) would double
    from rpcprof.jobs.steps import WARMUP_PIECE_S
    assert result["lead_s"] == WARMUP_PIECE_S and "--warm-up-time" in result["load_argv"]
    load_log = (done.run_dir / "java_grpc" / "load.log").read_text()
    assert f"with {WARMUP_PIECE_S:g}s of warm-up time" in load_log
    assert 0.9 * result["driver_figures"]["succeeded"] <= result["requests_ok"] <= result["driver_figures"]["succeeded"]
    profile_json = json.loads((done.run_dir / "java_grpc" / "profile.json").read_text())
    assert profile_json["after_profile"]["exit_code"] == 0 == profile_json["after_profile"]["before_exit_code"], (
        profile_json["after_profile"])
    assert java_frames(done.run_dir / "java_grpc" / "profile.folded") > 0.9
    assert unnamed_jit(done.run_dir / "java_grpc" / "profile.folded") < 0.01
    # the JVM's map, removed when the run stopped it, is kept beside the recording, for report.py fold
    (saved,) = (done.run_dir / "java_grpc").glob("perf-*.map")
    assert saved.stat().st_size > 0
    shares = category_shares(done.run_dir, "java_grpc")
    assert shares["other"] <= OTHER_MAX and shares["protocol"] > 0.3 and shares["app"] > 0, shares


def test_attach_profiles_a_jvm_started_by_hand_and_names_its_jit_frames(tmp_path):
    spec = load_server("java_grpc")
    subprocess.run(["bash", "build.sh"], cwd=spec.folder, check=True, capture_output=True)
    port = take_port()
    assert port_is_free(port)
    jvm = subprocess.Popen(["taskset", "-c", "0", "java", "-XX:ActiveProcessorCount=1", "-XX:+PreserveFramePointer",
                            "-jar", str(spec.folder / "target" / "java_grpc.jar"), "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    runs = Path(tempfile.mkdtemp(prefix="rpcprof-test-java-"))
    try:
        wait_answering(jvm, port, "helloworld", 60)
        done = subprocess.run([str(ROOT / "profile.sh"), "attach", "--runs-dir", str(runs), "--pid", str(jvm.pid),
                               "-d", "2", "-w", "4", "--load", "--target", f"127.0.0.1:{port}", "--no-off-cpu",
                               "--no-pictures", "--app", spec.app, "--format", "json"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        run_dir = next(runs.iterdir())
        (name,) = [p.name for p in run_dir.iterdir() if p.is_dir()]
        profile_json = json.loads((run_dir / name / "profile.json").read_text())
        assert profile_json["call_graph"] == "fp" and profile_json["after_profile"]["exit_code"] == 0
        # a JVM a few seconds old still interprets and compiles: its named Netty and grpc-java frames are
        # fewer than in a warm run, and code the JIT compiled and freed again within the window (replaced by
        # a higher tier, or deoptimised) is in neither the map written at its start nor the one at its end: the
        # JVM is asked for its map during the window too, while its JIT frees code (a JVM started with a cold
        # page cache here: 7.5-9.1 % of the samples unnamed without, 0-0.04 % with; 5.5 % once in CI with
        # neither). Without the maps, 47 % of the samples hold an unnamed JIT frame. Over 1 %, the run says so.
        assert java_frames(run_dir / name / "profile.folded") > 0.2
        unnamed = unnamed_jit(run_dir / name / "profile.folded")
        assert unnamed < 0.03
        after = profile_json["after_profile"]
        assert after["maps_in_window"] >= 1 and 0 < after["attach_thread_share"] < 0.05, after
        assert f"the JVM wrote its perf map {after['maps_in_window']} more time(s) in the window" in done.stderr
        assert profile_json["unnamed_jit_share"] == pytest.approx(unnamed)
        warned = "of the samples hold JIT-compiled code" in done.stderr
        assert warned == (unnamed > 0.01), done.stderr[-2000:]
        assert not warned or "compiled and freed again within the window" in done.stderr
        # once the JVM's map is gone, report.py fold names its frames from the copy the run saved beside
        # perf.data, as they were named when the window ended; with neither, most go unnamed and it says why
        jit_map = Path(f"/tmp/perf-{jvm.pid}.map")
        jit_map.rename(tmp_path / "perf.map")
        shutil.copy(run_dir / name / "perf.data", tmp_path / "perf.data")
        refolds = [subprocess.run([str(ROOT / "report.py"), "fold", str(data), "-o", str(data.with_suffix(".folded"))],
                                  capture_output=True, text=True, cwd=ROOT)
                   for data in (run_dir / name / "perf.data", tmp_path / "perf.data")]
        (tmp_path / "perf.map").rename(jit_map)
        assert [r.returncode for r in refolds] == [0, 0], [r.stderr for r in refolds]
        assert (run_dir / name / "perf.folded").read_bytes() == (run_dir / name / "profile.folded").read_bytes()
        assert unnamed_jit(tmp_path / "perf.folded") > 0.2
        assert f"{jit_map} does not name: no map was written" in refolds[1].stderr, refolds[1].stderr
        shares = category_shares(run_dir, name)
        assert shares["other"] <= OTHER_MAX, shares
    finally:
        if jvm.poll() is None:
            jvm.send_signal(signal.SIGTERM)
            jvm.wait(timeout=30)
        Path(f"/tmp/perf-{jvm.pid}.map").unlink(missing_ok=True)
        shutil.rmtree(runs, ignore_errors=True)
