"""A run folder's typed records (rpcprof/records.py): rounds are `rounds` in the code, and the JSON keys that
kept their older name (`repeat`, `repeats`) are named in records.py only, read by one function each."""
from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from rpcprof.records import (ROUND_KEY, ROUNDS_KEY, parameters_json, round_of, round_rows, rounds_asked)

PKG = Path(__file__).resolve().parents[2] / "tools" / "rpcprof"

# where else the words are written, and why: the schema's list of a result's keys; report.py run's rows (its JSON
# output keeps its column `repeats`); the document's words for a sweep measured before rounds
KEY_WORDS = {"repeat", "repeats"}
ALSO_NAMED_IN = {"schema.py": {"repeat", "repeats"}, "report/summary.py": {"repeats"}}


def test_the_rounds_keys_are_named_in_records_py_only():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        module = str(path.relative_to(PKG))
        if module == "records.py" or path.name.endswith("_pb2.py"):
            continue
        words = {n.value for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Constant) and n.value in KEY_WORDS} - ALSO_NAMED_IN.get(module, set())
        if words:
            found[module] = sorted(words)
    assert not found, f"the rounds' JSON keys named outside records.py (use round_of, round_rows, rounds_asked): {found}"


def test_the_options_say_rounds():
    from rpcprof.jobs.defaults import RUN, SWEEP
    from rpcprof.jobs.run import RunOptions
    names = {f.name for f in fields(RunOptions)}
    assert "rounds" in names and "repeat" not in names
    assert "repeat" not in RUN and "repeat" not in SWEEP and RUN["rounds"] == 5 and SWEEP["rounds"] == 1


def test_rounds_are_written_and_read_under_the_key_of_every_run_folder():
    written = parameters_json({"servers": ["a"], "rounds": 4, "precision": None})
    assert written == {"servers": ["a"], "repeat": 4, "precision": None}
    assert rounds_asked(written) == 4 and rounds_asked({"servers": ["a"]}) == 1
    assert parameters_json({"servers": ["a"]}) == {"servers": ["a"]}          # attach has no rounds


def test_a_results_rounds_and_their_numbers():
    rows = [{ROUND_KEY: 1, "x": 1.0}, {ROUND_KEY: 2, "x": 2.0}]
    assert round_rows({ROUNDS_KEY: rows}) == rows and round_rows({"x": 1.0}) == []
    assert [round_of(r) for r in rows] == [1, 2] and round_of({}) == 1 and round_of({ROUND_KEY: None}) == 1


def test_a_published_run_reads_its_rounds(tmp_path):
    from rpcprof.rundir import load_run
    run = Path(__file__).resolve().parents[1] / "data" / "runs" / "rounds"
    manifest, metrics = load_run(run)
    assert rounds_asked(manifest["parameters"]) >= 2
    assert all([round_of(r) for r in round_rows(m)] == list(range(1, len(round_rows(m)) + 1)) for m in metrics.values())


# --- a server's result: typed, and its JSON the same keys as ever ---------------------------------------

ROOT = Path(__file__).resolve().parents[2]
RESULT_FILES = sorted(p for base in (ROOT / "docs" / "data", ROOT / "tests" / "data" / "runs")
                      for p in base.rglob("result.json"))


def test_every_published_result_reads_and_writes_back_the_same_json():
    import json
    from rpcprof.records import ServerResult
    assert len(RESULT_FILES) > 50
    for path in RESULT_FILES:
        data = json.loads(path.read_text())
        result = ServerResult.from_json(data)
        assert result.server == data["server"] and result.status == data["status"]
        assert result.round == data.get(ROUND_KEY) and result.started == data.get("started")
        assert result.to_json() == data, path
        assert json.loads(json.dumps(result.to_json())) == data, path


def test_every_published_metrics_entry_reads_and_writes_back_the_same_json():
    import json
    from rpcprof.records import ServerResult
    for path in sorted(p for base in (ROOT / "docs" / "data", ROOT / "tests" / "data" / "runs")
                       for p in base.rglob("metrics.json")):
        for name, data in json.loads(path.read_text()).items():
            assert ServerResult.from_json(data).to_json() == data, (path, name)


def test_a_result_writes_only_the_typed_fields_it_has():
    from rpcprof.records import ServerResult
    from rpcprof.status import Status
    assert ServerResult("s", Status.NOT_RUN).to_json() == {"server": "s", "status": "not run"}
    attach = ServerResult("app", figures={"pid": 7, "mode": "attach"}).end(Status.PID_EXITED, "pid 7 exited")
    assert attach.to_json() == {"server": "app", "status": "pid-exited", "error": "pid 7 exited", "pid": 7,
                                "mode": "attach"}
    assert ServerResult.from_json({"server": "app", "status": "incomplete"}).status is Status.PID_EXITED


def test_read_server_result_gives_a_typed_result_and_names_one_without_a_status(tmp_path):
    import json
    import pytest
    from rpcprof.errors import UserError
    from rpcprof.records import ServerResult
    from rpcprof.rundir import RunFolder, read_result, read_server_result
    from rpcprof.status import Status
    RunFolder.write_result(tmp_path, ServerResult("s", Status.OK, 2, "d", "t", figures={"req_per_s": 1.0}))
    assert read_server_result(tmp_path) == ServerResult("s", Status.OK, 2, "d", "t", figures={"req_per_s": 1.0})
    assert read_result(tmp_path) == {"server": "s", "status": "ok", ROUND_KEY: 2, "description": "d", "started": "t",
                                     "req_per_s": 1.0}
    assert json.loads((tmp_path / "result.json").read_text())[ROUND_KEY] == 2
    (tmp_path / "result.json").write_text(json.dumps({"server": "s"}))
    with pytest.raises(UserError, match="result.json: missing key 'status'"):
        read_server_result(tmp_path)
    assert read_result(tmp_path) == {"server": "s"}             # the reports' dict: what is there
    assert read_server_result(tmp_path / "none") is None and read_result(tmp_path / "none") is None


def a_round(tmp_path, monkeypatch, raised):
    """ServerRound.measure of a server whose build raises `raised`: (its result or the exception, the run, the
    JSON written)."""
    import json
    from rpcprof.jobs.run import Run, RunOptions
    from rpcprof.rundir import RunFolder
    run = Run(RunOptions(servers=["rust_tonic_st"], profile=False, syscalls=False, rounds=2), ["pytest"])
    run.folder = RunFolder(tmp_path)

    def build(log):
        raise raised
    monkeypatch.setattr(run.specs[0], "build", build)
    try:
        got = run.measure(run.specs[0], 2)
    except BaseException as e:           # noqa: BLE001 (KeyboardInterrupt among them)
        got = e
    return got, run, json.loads((tmp_path / "rust_tonic_st" / "round-2" / "result.json").read_text())


def test_a_round_that_fails_is_a_failed_result_written_with_its_error(tmp_path, monkeypatch):
    from rpcprof.measure.process import ServerFailed
    from rpcprof.status import Status
    result, _, written = a_round(tmp_path, monkeypatch, ServerFailed("rust_tonic_st: would not build"))
    assert result.status is Status.FAILED and result.round == 2 and result.error == "rust_tonic_st: would not build"
    assert written == {**result.to_json(), "status": "failed"} and written[ROUND_KEY] == 2
    assert written["description"] and written["started"] and "build.log" not in written


def test_a_round_stopped_by_ctrl_c_is_an_interrupted_result_kept_by_the_run(tmp_path, monkeypatch):
    from rpcprof.status import Status
    raised, run, written = a_round(tmp_path, monkeypatch, KeyboardInterrupt())
    assert isinstance(raised, KeyboardInterrupt)
    assert run.results["rust_tonic_st"].status is Status.INTERRUPTED and written["status"] == "interrupted"
