"""keep_freed_code: the lines of the perf map written as a window began whose code the map written at its end
no longer holds (freed by the JIT meanwhile) are added to the end's; lines whose code was reused are not."""
from rpcprof.capture.profiler import keep_freed_code


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
