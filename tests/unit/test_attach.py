"""profile.sh attach before it measures: what kind of process a PID is, the profiler and the hints chosen for
it, and the input refused in one line (servers attached to and profiled: tests/live/test_attach_live.py)."""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from rpcprof.jobs import process_kind as attach_mod
from rpcprof.jobs.process_kind import check_permissions, inspect_process
from rpcprof.errors import UserError
from rpcprof.measure.servers import load_server


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
    assert any("`node --perf-basic-prof ...`" in h for h in hints)
    assert any("--perf-prof --perf-prof-unwinding-info" in h for h in hints)
    info.cmdline.insert(1, "--perf-basic-prof")
    hints = attach_mod.choose_profiler(info, None)[2]
    assert not any("`node --perf-basic-prof ...`" in h for h in hints)
    assert any("--perf-prof --perf-prof-unwinding-info" in h for h in hints)
    info.cmdline.insert(1, "--perf-prof-unwinding-info")   # the flag alone is not enough: pid 1 maps no jitdump
    assert attach_mod.choose_profiler(info, None)[1] == "fp"


@pytest.mark.parametrize("args, message", [
    (["--pid", "999999"], "no process with pid 999999"),
    (["--pid", "2"], "is a kernel thread"),
    (["--pid", "SLEEPER", "--load"], "--load needs --target"),
    (["--pid", "SLEEPER", "--load", "--target", "10.0.0.1:50051"], "loopback"),
    (["--pid", "SLEEPER", "--requests", "5", "--rps", "3"], "--requests and --rps"),
    (["--pid", "SLEEPER", "--profiler", "py-spy"], "not a CPython process"),
])
def test_bad_attach_input_is_one_line(profile, args, message):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        done = profile.run("attach", *[str(sleeper.pid) if a == "SLEEPER" else a for a in args], "-d", "1")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode != 0
    errors = [x for x in done.stderr.splitlines() if x.startswith("profile.sh: error:")]
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_zombie_is_refused(profile):
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while attach_mod.proc_state(child.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        done = profile.run("attach", "--pid", str(child.pid), "-d", "1")
        assert done.returncode != 0 and "is a zombie" in done.stderr
    finally:
        child.wait()


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


@pytest.mark.parametrize("euid, message", [
    (0, "the kernel refuses even root its /proc/"),               # pid 1 of a sandbox: no 'run as root' to a root
    (1000, "run as root (it belongs to another user)"),
])
def test_a_process_whose_exe_cannot_be_read_is_refused_for_the_right_reason(monkeypatch, euid, message):
    def refused(path):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(attach_mod.os, "readlink", refused)
    monkeypatch.setattr(attach_mod.os, "geteuid", lambda: euid)
    with pytest.raises(UserError, match=re.escape(message)):
        inspect_process(os.getpid())


def test_a_jvm_gets_frame_pointers_and_its_perf_map_written_at_the_windows_end(monkeypatch):
    monkeypatch.setattr(attach_mod.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    info = attach_mod.ProcessInfo(4242, "java", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
                                  ["java", "-XX:+PreserveFramePointer", "-jar", "srv.jar"], "jvm", [0], 0)
    profiler, call_graph, hints = attach_mod.choose_profiler(info, None)
    assert (profiler, call_graph, hints) == ("perf", "fp", [])
    assert attach_mod.jvm_after_profile(info) == ["/usr/bin/jcmd", "4242", "Compiler.perfmap"]
    bare = attach_mod.ProcessInfo(4242, "java", "/usr/bin/java", ["java", "-jar", "srv.jar"], "jvm", [0], 0)
    assert any("-XX:+PreserveFramePointer" in h for h in attach_mod.choose_profiler(bare, None)[2])
    native = attach_mod.ProcessInfo(1, "srv", "/srv", ["/srv"], "native", [0], 0)
    assert attach_mod.jvm_after_profile(native) is None
