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
