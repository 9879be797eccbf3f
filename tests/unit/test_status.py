"""One vocabulary of statuses (rpcprof/status.py): each word one meaning, documented; every status written is a
Status, never a word spelt out; the words of older run folders read as what they meant."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from rpcprof.errors import UserError
from rpcprof.status import JOB_STATUSES, MEASURED, SERVER_STATUSES, STATUS_MEANING, Status, read_statuses

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "tools" / "rpcprof"
PUBLISHED = sorted({p.parent for base in (ROOT / "docs" / "data", ROOT / "tests" / "data" / "runs")
                    for p in base.rglob("manifest.json")})


def test_status_meaning_covers_exactly_the_enum_and_no_two_words_mean_one_thing():
    assert list(STATUS_MEANING) == list(Status)
    meanings = list(STATUS_MEANING.values())
    assert len(set(meanings)) == len(meanings)
    assert all(isinstance(m, str) and m for m in meanings)


def test_every_word_is_a_job_s_or_a_server_s_and_the_schema_takes_those():
    from rpcprof import schema
    assert set(JOB_STATUSES) | set(SERVER_STATUSES) == set(Status)
    assert schema.MANIFEST["properties"]["status"]["enum"] == list(JOB_STATUSES)
    assert schema.RESULT["properties"]["status"]["enum"] == list(SERVER_STATUSES)
    assert schema.MANIFEST["properties"]["servers"]["additionalProperties"]["enum"] == list(SERVER_STATUSES)
    assert set(MEASURED) <= set(SERVER_STATUSES)


def test_a_status_is_written_and_compared_as_its_word():
    assert json.dumps({"status": Status.PID_EXITED}) == '{"status": "pid-exited"}'
    assert f"{Status.NOT_RUN}".upper() == "NOT RUN" and Status.OK == "ok"


def test_every_status_is_documented_with_its_meaning_in_run_folders_md():
    page = (ROOT / "docs" / "run-folders.md").read_text()
    rows = dict(re.findall(r"^\| `([^`]+)` \| [a-z, ]+ \| (.+) \|$", page, flags=re.M))
    assert rows == {str(s): m for s, m in STATUS_MEANING.items()}


def test_the_exit_codes_page_names_only_status_words():
    page = (ROOT / "docs" / "errors.md").read_text()
    marked = re.findall(r"marked `([^`]+)`|exists `([^`]+)`", page)
    words = {w for pair in marked for w in pair if w}
    assert words and words <= set(Status), words - set(Status)


# --- every status written anywhere is a Status member -------------------------------------------------

# a "status" that is not one of rpcprof's: ghz's per-request status in its JSON report
NOT_OURS = {"measure/load.py": {"OK"}}


def status_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, word) of every string literal written or compared as a status: {"status": "w"}, status="w",
    x["status"] = "w", x.status = "w", and x.get("status") / x["status"] / x.status compared with "w" (or a
    tuple of words)."""
    def is_status(node) -> bool:
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value == "status"
        if isinstance(node, ast.Attribute):
            return node.attr == "status"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "status"
        return False

    def words(node) -> list[ast.Constant]:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return [n for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str)]

    found = []
    for node in ast.walk(tree):
        values = []
        if isinstance(node, ast.Dict):
            values = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "status"]
        elif isinstance(node, ast.Call):
            values = [kw.value for kw in node.keywords if kw.arg == "status"]
        elif isinstance(node, ast.Assign) and any(is_status(t) for t in node.targets):
            values = [node.value]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_status(s) for s in sides):
                values = [s for s in sides if not is_status(s)]
        found += [(n.lineno, n.value) for v in values for n in words(v)]
    return found


def test_no_status_is_spelt_out_as_a_word_it_is_a_status_member():
    spelt = {}
    for path in sorted(PKG.rglob("*.py")):
        module = str(path.relative_to(PKG))
        if module == "status.py" or path.name.endswith("_pb2.py"):
            continue
        bad = [(line, w) for line, w in status_literals(ast.parse(path.read_text()))
               if w not in NOT_OURS.get(module, set())]
        if bad:
            spelt[module] = bad
    assert not spelt, f"statuses spelt as words (use rpcprof.status.Status): {spelt}"


def test_the_scan_finds_a_status_spelt_out():
    code = ('r = {"status": "ok"}\nf(status="failed")\nr["status"] = "running"\nif m.get("status") in ("ok", "x"): '
            'pass\nlife.status = "complete"\nr = {"status": Status.OK}')
    assert sorted(status_literals(ast.parse(code))) == [(1, "ok"), (2, "failed"), (3, "running"), (4, "ok"), (4, "x"),
                                                        (5, "complete")]


def test_the_jobs_write_status_members():
    """What a job writes, from its lifecycle and its results, is a Status (the live tests run the jobs)."""
    from rpcprof.jobs.base import lifecycle
    written = []
    with lifecycle(written.append):
        pass
    assert all(type(w) is Status for w in written)


# --- the words of older run folders ----------------------------------------------------------------

@pytest.mark.parametrize("record, kind, status", [
    ({"status": "incomplete"}, "job", Status.INTERRUPTED),                 # Ctrl-C, before `interrupted`
    ({"status": "interrupted", "interrupted": "marked on ..."}, "job", Status.KILLED),   # killed, before `killed`
    ({"status": "interrupted", "killed": None}, "job", Status.INTERRUPTED),  # today's manifest: Ctrl-C
    ({"status": "killed", "killed": "marked on ..."}, "job", Status.KILLED),
    ({"status": "complete"}, "job", Status.COMPLETE),
    ({"status": "incomplete"}, "server", Status.PID_EXITED),               # an attached process that exited
    ({"status": "interrupted"}, "server", Status.INTERRUPTED),             # a server's Ctrl-C, the same word
    ({"status": "not run"}, "server", Status.NOT_RUN),
])
def test_an_old_word_reads_as_what_it_meant(record, kind, status):
    read = read_statuses(record, kind)
    assert read["status"] is status
    if status is Status.KILLED and "interrupted" in record:
        assert read["killed"] == record["interrupted"]


def test_an_old_manifest_s_servers_read_in_today_s_words():
    read = read_statuses({"status": "failed", "servers": {"a": "incomplete", "b": "ok"}}, "job")
    assert read["servers"] == {"a": Status.PID_EXITED, "b": Status.OK}


def test_what_is_no_status_is_left_for_the_schema_to_name(tmp_path):
    from rpcprof.rundir import load_run
    assert read_statuses([1], "job") == [1] and read_statuses({"status": 3}, "job") == {"status": 3}
    (tmp_path / "manifest.json").write_text(json.dumps({"status": "complete", "parameters": {"servers": ["a"]}}))
    (tmp_path / "metrics.json").write_text(json.dumps({"a": {"status": "done"}}))
    with pytest.raises(UserError, match=r"metrics.json: key 'a.status' must be one of running, ok, failed"):
        load_run(tmp_path)


def test_a_folder_of_the_old_words_reads_in_today_s(tmp_path):
    from rpcprof.rundir import load_run, read_result
    (tmp_path / "manifest.json").write_text(json.dumps({"mode": "attach", "status": "interrupted",
                                                        "interrupted": "marked on 2026-01-01", "parameters": {
                                                            "servers": ["app"]}, "servers": {"app": "incomplete"}}))
    (tmp_path / "metrics.json").write_text(json.dumps({"app": {"server": "app", "status": "incomplete"}}))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "result.json").write_text(json.dumps({"server": "app", "status": "incomplete"}))
    manifest, metrics = load_run(tmp_path)
    assert manifest["status"] is Status.KILLED and manifest["servers"] == {"app": Status.PID_EXITED}
    assert metrics["app"]["status"] is Status.PID_EXITED
    assert read_result(tmp_path / "app")["status"] is Status.PID_EXITED


@pytest.mark.parametrize("folder", PUBLISHED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_published_folder_reads_with_status_members(folder):
    from rpcprof.rundir import load_manifest, load_run
    manifest = load_manifest(folder)
    assert type(manifest["status"]) is Status
    if manifest["mode"] != "sweep":
        _, metrics = load_run(folder)
        assert metrics and all(type(m["status"]) is Status for m in metrics.values())
