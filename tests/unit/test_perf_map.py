"""JIT perf maps: a JVM is asked for its map over its attach socket while its JIT frees code (InWindowMaps);
keep_freed_code adds to the map written at a window's end the lines of those written before it whose code no
later map holds (freed by the JIT meanwhile), not those whose code was reused; the map is saved beside the
recording (save_jit_map), and a saved map names addresses as perf does (SavedMaps)."""
import os
import socket
import threading
import time
from pathlib import Path

from rpcprof.capture import jit_maps
from rpcprof.capture.fold import prune_jitted
from rpcprof.capture.jit_maps import InWindowMaps, SavedMaps, jcmd_socket, keep_freed_code, save_jit_map


def test_code_freed_during_the_window_keeps_its_name_and_reused_code_takes_the_new_one(tmp_path):
    end = tmp_path / "perf-1.map"
    end.write_text("7f0000001000 100 void a.B.hot\n"         # compiled again at the same place
                   "7f0000002000 80 void a.B.new\n"          # new code over part of a freed method
                   "7f0000004000 40 void a.B.late\n")
    start = ["7f0000001000 100 void a.B.hot",                # still there
             "7f0000001f80 100 void a.B.reused",             # [1f80, 2080) overlaps a.B.new's [2000, 2080)
             "7f0000003000 200 void a.B.freed",              # [3000, 3200): nothing at the end
             "7f0000003200 20 Interpreter",                  # ends where the next begins: kept
             "not a map line",
             "7f0000004030 8 void a.B.inside_late"]          # inside a.B.late's [4000, 4040)
    assert keep_freed_code([start], end) == 2
    lines = end.read_text().splitlines()
    assert lines[3:] == ["7f0000003000 200 void a.B.freed", "7f0000003200 20 Interpreter"]


def test_no_end_map_keeps_nothing_and_writes_nothing(tmp_path):
    assert keep_freed_code([["7f0000003000 200 void a.B.freed"]], tmp_path / "perf-2.map") == 0
    assert not (tmp_path / "perf-2.map").exists()


def test_of_the_maps_written_in_the_window_the_latest_names_code_freed_and_reused_since(tmp_path):
    end = tmp_path / "perf-6.map"
    end.write_text("7f0000001000 100 void a.B.c2\n")
    start = ["7f0000001000 100 void a.B.interpreted_stub",      # at the end's code: not kept
             "7f0000002000 100 void a.B.c1",                    # freed, then its place reused mid-window
             "7f0000005000 10 void a.B.early"]                  # freed, nothing over it since
    middle = ["7f0000002000 40 void a.B.short_lived",            # compiled and freed within the window
              "7f0000003000 100 void a.B.later"]
    assert keep_freed_code([start, middle], end) == 3
    assert end.read_text().splitlines()[1:] == ["7f0000002000 40 void a.B.short_lived", "7f0000003000 100 void a.B.later",
                                                "7f0000005000 10 void a.B.early"]


def test_a_saved_map_names_an_address_inside_its_code_as_perf_does_and_nothing_outside(tmp_path):
    (tmp_path / "perf-3.map").write_bytes(b"0x00007f0000001000 0x0000000000000100 void a.B.run(int, java.lang.String)\n"
                                          b"7f0000002000 80 Interpreter\n"
                                          b"not a map line\n")
    maps = SavedMaps(tmp_path)
    assert maps.name(b"perf-3.map", 0x7f0000001000) == b"void a.B.run(int, java.lang.String)+0x0"
    assert maps.name(b"perf-3.map", 0x7f0000002042) == b"Interpreter+0x42"
    assert maps.name(b"perf-3.map", 0x7f0000002080) is None          # one past its end
    assert maps.name(b"perf-3.map", 0x7f0000000fff) is None
    assert maps.name(b"perf-4.map", 0x7f0000001000) is None          # no such map saved


def test_the_map_is_saved_beside_the_recording_unless_it_is_too_large_to_copy(tmp_path, monkeypatch, capsys):
    jit_map, out = tmp_path / "perf-5.map", tmp_path / "run"
    out.mkdir()
    save_jit_map("java", jit_map, out)                                # no map: no copy, nothing said
    assert not list(out.iterdir()) and not capsys.readouterr().err
    jit_map.write_text("7f0000001000 100 void a.B.hot\n")
    save_jit_map("java", jit_map, out)
    assert (out / "perf-5.map").read_bytes() == jit_map.read_bytes()
    (out / "perf-5.map").unlink()
    monkeypatch.setattr(jit_maps, "JIT_MAP_KEEP_BYTES", 10)
    save_jit_map("java", jit_map, out)
    assert not list(out.iterdir())
    assert f"java: {jit_map} holds 0 MiB, not copied into the run folder" in capsys.readouterr().err


class FakeJvm:
    """An attach socket that answers jcmd's protocol as HotSpot does ("0\\n" and the output), writing the next
    of its maps on each Compiler.perfmap, and records what it was sent."""

    def __init__(self, sock: Path, path: Path, maps: list[str]):
        self.sent, self.maps, self.path = [], list(maps), path
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(sock))
        self.server.listen()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while data.count(b"\0") < 5:
                    data += conn.recv(4096)
                self.sent.append(data)
                if self.maps:
                    self.path.write_text(self.maps.pop(0))
                conn.sendall(b"0\n")


def test_the_jvm_is_asked_for_its_map_over_its_socket_while_its_jit_frees_code(tmp_path, monkeypatch):
    monkeypatch.setattr(jit_maps, "MAP_REFRESH_S", 0.01)
    sock, path = tmp_path / "attach", tmp_path / "perf-7.map"
    start = ["7f0000001000 100 void a.B.c1"]
    jvm = FakeJvm(sock, path, ["7f0000002000 100 void a.B.c2\n",      # a.B.c1 freed: asked again
                               "7f0000002000 100 void a.B.c2\n7f0000003000 10 void a.B.new\n",   # nothing freed: done
                               "never written\n"])
    with InWindowMaps(sock, "Compiler.perfmap", path, start) as during:
        deadline = time.monotonic() + 30
        while len(jvm.sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)         # 30 more periods: a third map would be asked for now, were the rule not kept
    jvm.server.close()
    assert jvm.sent == [b"1\0jcmd\0Compiler.perfmap\0\0\0"] * 2
    assert during.maps == [["7f0000002000 100 void a.B.c2"], ["7f0000002000 100 void a.B.c2", "7f0000003000 10 void a.B.new"]]


def test_a_jcmd_after_command_is_taken_over_the_jvms_socket_once_jcmd_opened_it(tmp_path):
    pid = os.getpid()
    argv = ["/usr/bin/jcmd", str(pid), "Compiler.perfmap"]
    sock = Path(f"/tmp/.java_pid{pid}")
    assert jcmd_socket(argv, pid) is None                              # not opened
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    try:
        assert jcmd_socket(argv, pid) == Path(f"/proc/{pid}/root/tmp/.java_pid{pid}")
        assert jcmd_socket(["kill", "-USR2", str(pid)], pid) is None   # not jcmd
        assert jcmd_socket(["jcmd", "1", "Compiler.perfmap"], pid) is None
    finally:
        server.close()
        sock.unlink()


def test_the_jit_elf_files_no_sample_runs_in_go_from_the_runs_own_folder_only(tmp_path):
    run, elsewhere = tmp_path / "run" / "node_grpcjs", tmp_path / "cwd"
    for folder in (run / "workdir", elsewhere):
        folder.mkdir(parents=True)
        (folder / "jit-7.dump").write_bytes(b"")
        for n in range(4):
            (folder / f"jitted-7-{n}.so").write_bytes(b"")
        (folder / "jitted-8-0.so").write_bytes(b"")       # another process's: not this dump's
    kept = {"jitted-7-1.so", "jitted-7-3.so"}
    assert prune_jitted([run / "workdir" / "jit-7.dump"], kept, run) == 2
    assert sorted(p.name for p in (run / "workdir").glob("jitted-*")) == ["jitted-7-1.so", "jitted-7-3.so", "jitted-8-0.so"]
    assert prune_jitted([elsewhere / "jit-7.dump"], kept, run) == 4
    assert len(list(elsewhere.glob("jitted-*"))) == 5
