"""Off-CPU waits, live: pajamax at exactly 50 and at 51 streams in flight through profile.sh run, attach
by PID to a pajamax driven by someone else's h2load, and bench/nagle taking each half of the stall away
(the saved captures and runs: tests/golden/test_offcpu.py)."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path


def xml_ok(path: Path) -> None:
    ET.parse(path)


def test_pajamax_at_exactly_50_in_flight_gets_an_off_cpu_window_naming_the_stall(profile, port):
    done = profile.run("run", "rust_pajamax", "-S", "50", "-d", "2", "-w", "1", "--no-profile", "--no-syscalls",
                       "--off-cpu-duration", "3", "--port", str(port), "--pictures")
    assert done.returncode == 0, done.stderr
    result = json.loads((done.run_dir / "rust_pajamax" / "result.json").read_text())
    assert result["latency_bound"], "the window should be LATENCY-BOUND: the off-CPU window is automatic then"
    off = result["offcpu"]
    assert off["verdict"].startswith("NAGLE/DELAYED-ACK"), off
    assert {r["reason"] for r in off["reasons"] if r["share_pct"] > 50} == {"socket-data"}
    assert off["ports"] == [port] and off["sockets"]["held_share"] > 0.5
    assert "NAGLE/DELAYED-ACK" in done.stdout and "socket-data" in done.stdout
    assert done.stdout.count("NAGLE/DELAYED-ACK") == 1, "the verdict is said once, with the run's figures"
    xml_ok(done.run_dir / "rust_pajamax" / "offcpu.svg")
    page = (done.run_dir / "report.html").read_text()
    assert "Where the threads waited" in page and "NAGLE/DELAYED-ACK" in page
    report = subprocess.run(["./report.py", "waits", str(done.run_dir), "--format", "json"], capture_output=True,
                            text=True, cwd=Path(__file__).parents[2])
    assert report.returncode == 0 and json.loads(report.stdout)["servers"]["rust_pajamax"]["verdict"] == off["verdict"]
    # who woke whom: the waits paired with their wake-ups, the client's write named as the waker, drawn
    assert off["wakes"]["paired"] > 0 and off["wakes"]["wakeups"] >= off["wakes"]["paired"]
    top = off["wakers"]["socket-data"]["wakers"][0]
    assert top["waker"].startswith("h2load: ") and "loopback softirq" in top["waker"], off["wakers"]
    assert "socket-data: woken by h2load: " in done.stdout
    xml_ok(done.run_dir / "rust_pajamax" / "offwake.svg")
    assert "who woke its threads" in page


def test_pajamax_at_51_in_flight_on_request_waits_without_a_stall(profile, port):
    done = profile.run("run", "rust_pajamax", "-S", "51", "-d", "2", "-w", "1", "--no-profile", "--no-syscalls",
                       "--off-cpu", "--off-cpu-duration", "2", "--port", str(port))
    assert done.returncode == 0, done.stderr
    result = json.loads((done.run_dir / "rust_pajamax" / "result.json").read_text())
    assert result["offcpu"]["verdict"] is None and result["offcpu"]["waits"] > 0


def test_no_off_cpu_window_unless_the_server_waited_or_it_is_asked(profile, port):
    done = profile.run("run", "rust_pajamax", "-S", "50", "-d", "1", "-w", "0", "--no-profile", "--no-syscalls",
                       "--no-off-cpu", "--port", str(port))
    assert done.returncode == 0, done.stderr
    assert "offcpu" not in json.loads((done.run_dir / "rust_pajamax" / "result.json").read_text())
    assert not (done.run_dir / "rust_pajamax" / "offcpu.data").exists()


def test_attach_off_cpu_finds_the_processs_port_and_names_the_stall(tmp_path, port):
    """attach --off-cpu to a pajamax someone else drives at 50 in flight: the port is found from the
    process's listening sockets, the stall is named."""
    from test_attach_live import attach, run_folder, start_server, stop
    server = start_server("rust_pajamax", port, Path(__file__).parents[2] / "servers" / "rust_pajamax")
    body = tmp_path / "hello.bin"
    body.write_bytes(b"\x00\x00\x00\x00\x07\x0a\x05world")
    load = subprocess.Popen(["taskset", "-c", "1", "h2load", "-c1", "-m50", "-D", "30", "-d", str(body),
                             "-H", "content-type: application/grpc", "-H", "te: trailers",
                             f"http://127.0.0.1:{port}/helloworld.Greeter/SayHello"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        done = attach("--pid", str(server.pid), "-d", "2", "--off-cpu", "--off-cpu-duration", "3")
        assert done.returncode == 0, done.stderr
        result = json.loads((run_folder(done.stderr) / "rust_pajamax" / "result.json").read_text())
        assert result["offcpu"]["ports"] == [port]
        assert result["offcpu"]["verdict"].startswith("NAGLE/DELAYED-ACK"), result["offcpu"]
        assert "NAGLE/DELAYED-ACK" in done.stdout
        # pajamax's main thread accepts, a thread per connection serves: h2load's one connection was made
        # before the window, so the acceptor sleeps through it, unseen by the recording, and is named
        assert [(t["name"], t["wchan"]) for t in result["offcpu"]["asleep"]] == [("rust_pajamax", "inet_csk_accept")]
        assert "1 thread(s) asleep the whole window, not in these figures: 1 x rust_pajamax in inet_csk_accept" in done.stdout
    finally:
        load.kill()
        load.wait()
        stop(server)


def test_the_stall_goes_when_either_half_of_it_is_taken_away(tmp_path, port):
    """The verdict proven by perturbation (bench/nagle): pajamax at 50 in flight in a network namespace
    of its own is named NAGLE/DELAYED-ACK; in one whose loopback routes have quickack on (every segment
    ACKed at once: no delayed ACK), and with TCP_NODELAY set on the server's accepted sockets by an
    LD_PRELOAD shim (no Nagle), the same run has no stall to name."""
    done = subprocess.run([str(Path(__file__).parents[2] / "bench" / "nagle"), "-d", "1", "-w", "1",
                           "--off-cpu-duration", "2", "--no-pictures", "--port", str(port), "--runs-dir", str(tmp_path)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = re.findall(r"verdict: (.*)", done.stdout)
    assert len(verdicts) == 3, done.stdout
    assert verdicts[0].startswith("NAGLE/DELAYED-ACK") and verdicts[1:] == ["none", "none"], done.stdout
    assert not subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count("rpcprof-")
