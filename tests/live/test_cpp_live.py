"""cpp_grpc (gRPC C++ from Debian, one completion-queue thread): a short run whose DWARF stacks name grpc
core's and protobuf's frames through Debian's libraries, which have no frame pointers, and `profile.sh
attach` on a cpp_grpc started by hand, pinned as a run pins it, with grpc's own threads on its CPU."""
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

pytestmark = pytest.mark.skipif(not Path("/usr/include/grpcpp/grpcpp.h").exists() or not shutil.which("grpc_cpp_plugin"),
                                reason="needs gRPC C++ (tools/setup.sh --cpp)")
OTHER_MAX = 0.05


def grpc_frames(folded: Path) -> float:
    """The share of samples with a named frame of grpc core, gRPC C++ or protobuf C++."""
    from rpcprof.analyze.categorize import open_folded
    stacks = open_folded(folded)
    total = sum(w for _, w in stacks)
    named = sum(w for frames, w in stacks
                if any(f.startswith(("grpc_core::", "grpc_chttp2", "grpc::", "google::protobuf::")) for f in frames))
    return named / total if total else 0.0


def test_a_run_profiles_cpp_grpc_with_whole_stacks(profile, port):
    done = profile.run("run", "cpp_grpc", "-d", "1", "-w", "1", "--profile-duration", "2", "--rounds", "1",
                       "--port", str(port))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((done.run_dir / "cpp_grpc" / "result.json").read_text())
    assert result["cpu_us_per_req"] > 0
    profile_json = json.loads((done.run_dir / "cpp_grpc" / "profile.json").read_text())
    assert profile_json["call_graph"] == "dwarf"
    folded = done.run_dir / "cpp_grpc" / "profile.folded"
    assert grpc_frames(folded) > 0.8
    shares = category_shares(done.run_dir, "cpp_grpc")
    assert shares["other"] <= OTHER_MAX and shares["protocol"] > 0.2 and shares["runtime"] > 0.05, shares


def test_attach_profiles_a_cpp_grpc_started_by_hand_with_grpcs_threads_on_its_cpu():
    spec = load_server("cpp_grpc")
    subprocess.run(["bash", "build.sh"], cwd=spec.folder, check=True, capture_output=True)
    port = take_port()
    assert port_is_free(port)
    server = subprocess.Popen(["taskset", "-c", "0", str(spec.folder / "bin" / "cpp_grpc"), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    runs = Path(tempfile.mkdtemp(prefix="rpcprof-test-cpp-"))
    try:
        wait_answering(server, port, "complex_proto", 30)
        # grpc starts threads of its own (executors, timers, its event engine's pool): the CPU set given
        # to the process at its start holds them all
        tasks = list(Path(f"/proc/{server.pid}/task").iterdir())
        names = {(t / "comm").read_text().strip() for t in tasks}
        assert {"cpp_grpc-cq", "default-executo", "grpc_global_tim"} <= names, names
        for task in tasks:
            allowed = next(line for line in (task / "status").read_text().splitlines()
                           if line.startswith("Cpus_allowed_list:"))
            assert allowed.split()[-1] == "0", (task.name, allowed)
        done = subprocess.run([str(ROOT / "profile.sh"), "attach", "--runs-dir", str(runs), "--pid", str(server.pid),
                               "-d", "2", "-w", "1", "--load", "--target", f"127.0.0.1:{port}", "--no-off-cpu",
                               "--no-pictures", "--scenario", "complex_proto", "--app", spec.app, "--format", "json"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        run_dir = next(runs.iterdir())
        (name,) = [p.name for p in run_dir.iterdir() if p.is_dir()]
        profile_json = json.loads((run_dir / name / "profile.json").read_text())
        assert profile_json["call_graph"] == "dwarf"
        folded = run_dir / name / "profile.folded"
        assert grpc_frames(folded) > 0.8
        shares = category_shares(run_dir, name, level=2)
        assert shares["other"] <= OTHER_MAX, shares
        assert shares["protocol/protobuf"] > 0 and shares["protocol/http2"] > 0 and shares["runtime/scheduler"] > 0
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=10) == 0
        shutil.rmtree(runs, ignore_errors=True)
