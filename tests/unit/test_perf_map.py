"""JIT perf maps: keep_freed_code adds to the map written at a window's end the lines of the one written as it
began whose code the end's no longer holds (freed by the JIT meanwhile), not those whose code was reused; the
map is saved beside the recording (save_jit_map), and a saved map names addresses as perf does (SavedMaps)."""
from rpcprof.capture import profiler
from rpcprof.capture.fold import SavedMaps
from rpcprof.capture.profiler import keep_freed_code, save_jit_map


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
    assert keep_freed_code(start, end) == 2
    lines = end.read_text().splitlines()
    assert lines[3:] == ["7f0000003000 200 void a.B.freed", "7f0000003200 20 Interpreter"]


def test_no_end_map_keeps_nothing_and_writes_nothing(tmp_path):
    assert keep_freed_code(["7f0000003000 200 void a.B.freed"], tmp_path / "perf-2.map") == 0
    assert not (tmp_path / "perf-2.map").exists()


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
    monkeypatch.setattr(profiler, "JIT_MAP_KEEP_BYTES", 10)
    save_jit_map("java", jit_map, out)
    assert not list(out.iterdir())
    assert f"java: {jit_map} holds 0 MiB, not copied into the run folder" in capsys.readouterr().err
