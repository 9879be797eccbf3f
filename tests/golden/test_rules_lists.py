"""Lists with one source: a category added to the rules file appears in every report of the saved runs
(tables, compare, sweep, results, seeds, whatif, diff, top, the chart and report.html), one renamed there
keeps its part in them (categorize.yaml's groups), and the choices the command lines offer come from the code that
implements them. Nothing here starts a server or a profiler."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from conftest import invoke
from rpcprof.cli.report import entry, main

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "runs"
EXTRA = "alloc"


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> Path:
    """categorize.yaml with one more category, after the others: the allocator's frames."""
    data = yaml.safe_load((ROOT / "categorize.yaml").read_text())
    data["categories"].append({"name": EXTRA, "color": "#795548", "description": "the allocator", "rules": [
        {"name": "glibc-malloc", "where": "user", "match": r"^(malloc|_int_malloc|cfree@GLIBC_2\.2\.5)$",
         "examples": ["malloc", "_int_malloc"]}]})
    path = tmp_path_factory.mktemp("rules") / "categorize.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def report(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_rules_with_the_extra_category_check(rules):
    assert "all decided by their own rule" in report("check-rules", "--rules", rules)


def test_table_has_the_extra_category(rules):
    rows = list(csv.DictReader(io.StringIO(report("table", RUNS / "seed-001" / "rust_tonic_mt" / "profile.folded.gz",
                                                  "--rules", rules, "--format", "csv"))))
    assert float(rows[0][f"{EXTRA} [%]"]) > 0


def test_compare_has_the_extra_category(rules):
    rows = json.loads(report("compare", RUNS / "seed-001", "--rules", rules, "--format", "json"))
    rows = rows["rows"] if isinstance(rows, dict) else rows
    extra = [r for r in rows if r.get("category") == EXTRA]
    assert extra and extra[0]["rust_tonic_mt_us"] > 0
    assert f"\n{EXTRA} " in report("compare", RUNS / "seed-001", "--rules", rules)


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_sweep_has_the_extra_category(rules, fmt):
    out = report("sweep", RUNS / "sweep", "--rules", rules, "--format", fmt)
    if fmt == "json":
        rows = json.loads(out)
        assert rows and all(f"{EXTRA}_us" in r for r in rows)
        assert any(r[f"{EXTRA}_us"] for r in rows)
    else:
        header = out.splitlines()[2] if fmt == "table" else out.splitlines()[0]
        assert f"{EXTRA} [µs/req]" in header
        assert header.index(f"{EXTRA} [µs/req]") < header.index("other [µs/req]")


def test_results_have_the_extra_category(rules):
    doc = report("results", RUNS / "sweep", "--rules", rules)
    assert f"  {EXTRA} [µs/req]  " in doc                               # the table
    assert f"The two parts and app + {EXTRA} + other add up to the difference." in doc
    where = next(line for line in doc.splitlines() if line.startswith("- Where the difference comes from"))
    assert f" {EXTRA} " in where


def test_seeds_have_the_extra_category(rules):
    doc = report("seeds", RUNS / "seed-001", "--rules", rules)
    header = next(line for line in doc.splitlines() if line.startswith("| server | app | recv"))
    assert f" | {EXTRA} | " in header


@pytest.mark.slow
def test_whatif_diff_top_and_the_pictures_have_the_extra_category(rules, tmp_path):
    rows = json.loads(report("whatif", RUNS / "rounds", "rust_tonic_mt", "rust_pajamax", "--rules", rules,
                             "--format", "json"))["categories"]
    assert EXTRA in {r["category"] for r in rows}
    diff = json.loads(report("diff", RUNS / "rounds" / "rust_tonic_mt", RUNS / "rounds" / "rust_pajamax", "--rules", rules,
                             "-o", tmp_path / "diff.svg", "--format", "json"))
    assert EXTRA in {r["category"] for r in diff["categories"]}
    assert "rule" in report("top", RUNS / "seed-001" / "rust_tonic_mt" / "profile.folded.gz", "-c", EXTRA, "--rules", rules)
    report("chart", RUNS / "seed-001", "-o", tmp_path / "chart.svg", "--rules", rules)
    report("html", RUNS / "seed-001", "-o", tmp_path / "report.html", "--rules", rules)
    assert EXTRA in (tmp_path / "chart.svg").read_text() and EXTRA in (tmp_path / "report.html").read_text()


def renamed(tmp_path: Path, old: str, new: str) -> Path:
    """categorize.yaml with category old called new, in its list and in its groups."""
    data = yaml.safe_load((ROOT / "categorize.yaml").read_text())
    for c in data["categories"]:
        c["name"] = new if c["name"] == old else c["name"]
    data["groups"] = {k: ([new if x == old else x for x in v] if isinstance(v, list) else new if v == old else v)
                      for k, v in data["groups"].items()}
    path = tmp_path / "categorize.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_category_renamed_in_the_rules_file_keeps_its_part_in_every_report(tmp_path):
    """The groups of categorize.yaml name the categories the reports treat apart (the writes', the socket
    side): renamed there, the reports follow with nothing else changed."""
    rules = renamed(tmp_path, "send", "transmit")
    before = report("whatif", RUNS / "rounds", "rust_tonic_mt", "rust_pajamax", "--format", "json")
    after = report("whatif", RUNS / "rounds", "rust_tonic_mt", "rust_pajamax", "--rules", rules, "--format", "json")
    assert after == before.replace('"send"', '"transmit"')
    compare = report("compare", RUNS / "rounds", "--rules", rules)
    assert "transmit: " in compare and "write syscalls" in compare
    doc = report("results", RUNS / "sweep", "--rules", rules)
    assert "split into recv + transmit (the syscall path" in doc


def test_a_group_naming_no_category_is_one_line_naming_it(tmp_path):
    data = yaml.safe_load((ROOT / "categorize.yaml").read_text())
    data["groups"]["writes"] = "sned"
    path = tmp_path / "categorize.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    done = invoke(entry, "check-rules", "--rules", str(path))
    assert done.code == 2 and not done.out
    assert done.err.startswith("report.py: error: categorize.yaml: groups: writes names 'sned', which is not a category")
    assert len(done.err.splitlines()) == 1


def test_export_offers_the_exporters_formats():
    from rpcprof.report.export import FORMATS
    help_text = report("export", "--help")
    assert f"[{'|'.join(FORMATS)}]" in help_text
    done = CliRunner().invoke(main, ["export", str(RUNS / "seed-001" / "rust_pajamax" / "profile.folded.gz"),
                                     "--format", "svg", "-o", "/dev/null"])
    assert done.exit_code == 2 and all(f"'{f}'" in done.output for f in FORMATS), done.output


def test_the_server_yaml_schema_offers_what_the_profiler_implements():
    """call_graph and profiler in server.yaml (schema.SERVER) are the modes capture/profiler.py has."""
    from rpcprof import schema
    from rpcprof.profiler_names import CALL_GRAPHS, PROFILERS
    assert schema.SERVER["properties"]["call_graph"]["enum"] == list(CALL_GRAPHS)
    assert schema.SERVER["properties"]["profiler"]["enum"] == list(PROFILERS)
