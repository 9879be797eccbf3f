"""csv and json carry numbers: every command that prints rows (`--format`), run on the published run folders
(docs/data) and the saved runs the other golden tests read (tests/data/runs), gives each figure as a number
of its own (a ratio with its low and high, a min, max and CV, a unit cost and its factor), never a display
string such as `^54.7 [54.3-55.1]` or `103,459-104,880 (CV 0.5 %)` that a reader would have to parse back.

Every csv cell and json leaf is read: a text that holds a digit must be a plain number (csv) or is not
allowed at all (json, which has numbers of its own), unless its column or key is declared text below; and
no output holds U+FFFD.
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import click
import pytest

from conftest import ROOT, invoke
from rpcprof.cli import printed
from rpcprof.cli import profile as profile_cli
from rpcprof.cli import report as report_cli
from rpcprof.report.tables import FORMATS

DATA = ROOT / "docs" / "data"
SAVED = ROOT / "tests" / "data" / "runs"
RUNS = sorted(d for d in [*DATA.iterdir(), *SAVED.iterdir()] if (d / "metrics.json").is_file())
SWEEP = DATA / "20261126-041905-seed-000"
CELLS = sorted(d for d in SWEEP.iterdir() if (d / "metrics.json").is_file())
NEWEST = DATA / "20261126-023410-rust_tonic_mt-rust_pajamax"        # a host card, paces, a client-bound server
THREE = DATA / "20261125-091134-rust_tonic_mt-java_grpc-cpp_grpc"
SEED_001 = DATA / "20261124-074115-seed-001"
WHATIF = DATA / "20261124-220119-whatif-32113"
INDIRECT = DATA / "indirect-syscall-cost.json"

# The columns (csv headers) and keys (json) whose values are text, digits and all. Everything else that
# holds a digit must be a number.
TEXT = {
    # names: of runs, cells, servers' files, frames, rules and their patterns, categories (protocol/http2),
    # the keys of the records behind a figure (`repeats[repeat=1].cpu_us_per_req`), kernels and drivers, hosts
    # (a boot id)
    "run", "ratio_of", "outside_interval_of", "cell", "profile", "given", "file", "key", "svg", "frame", "path",
    "rule", "pattern", "category", "group", "kernel", "driver", "host", "alike_host", "alike host",
    # flags and notes (`CLIENT-BOUND, PROFILE-REGIME: req/s +21 %`), and verdicts
    "notes", "regime_flags", "waits_verdicts", "verdict",
    # sentences for people, whose figures the same document carries as numbers of their own
    "lines", "line", "text", "headline", "servers", "ruler_checks", "test",
    # timestamps (ISO 8601)
    "started",
}
# subtrees that are a run folder's own files passed through as recorded (report.py run --format json: the
# manifest and metrics.json), and what a run recorded in words (a stall's mechanism, a too-short window)
RECORDED = {"manifest", "metrics", "stalled", "too_short"}
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
DIGIT = re.compile(r"\d")


def leaves(node, keys: tuple = ()):
    """(the keys down to a leaf, the leaf) of a json document; list items keep their list's key."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, (*keys, k))
    elif isinstance(node, list):
        for v in node:
            yield from leaves(v, keys)
    else:
        yield keys, node


def json_problems(text: str) -> list[str]:
    out = []
    for keys, value in leaves(json.loads(text)):
        if isinstance(value, str) and DIGIT.search(value) and not (keys and keys[-1] in TEXT) \
                and not RECORDED.intersection(keys):
            out.append(f"{'.'.join(map(str, keys))}: {value!r}")
    return out


def csv_problems(text: str) -> list[str]:
    """Every table of the output (tables one after the other are apart by a blank line), cell by cell."""
    out = []
    for block in (b for b in re.split(r"\n\s*\n", text) if b.strip()):
        rows = list(csv.reader(io.StringIO(block)))
        for row in rows[1:]:
            out += [f"{head}: {cell!r}" for head, cell in zip(rows[0], row)
                    if DIGIT.search(cell) and head not in TEXT and not NUMBER.fullmatch(cell)]
    return out


def problems(text: str, fmt: str) -> list[str]:
    found = json_problems(text) if fmt == "json" else csv_problems(text)
    if "\ufffd" in text:
        found.append("U+FFFD in the output")
    return sorted(set(found))


def other_host(tmp_path: Path) -> list[Path]:
    """The newest published run and a copy of it as if made on another host, whose writes cost 1.5 times as
    much: report.py runs then sets the hosts' unit costs side by side."""
    copy = tmp_path / "20261126-090000-rust_tonic_mt-rust_pajamax"
    copy.mkdir()
    shutil.copy(NEWEST / "metrics.json", copy / "metrics.json")
    manifest = json.loads((NEWEST / "manifest.json").read_text())
    manifest["owner"]["boot_id"] = manifest["host"]["boot_id"] = "another-boot"
    manifest["host"]["write_us"] = {k: 1.5 * v if k != "batches" else [1.5 * x for x in v]
                                    for k, v in manifest["host"]["write_us"].items()}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return [NEWEST, copy]


def slow(*argv) -> pytest.param:
    return pytest.param(list(argv), marks=pytest.mark.slow, id=" ".join(map(str, argv)).replace(str(ROOT) + "/", ""))


def case(*argv) -> pytest.param:
    return pytest.param(list(argv), id=" ".join(map(str, argv)).replace(str(ROOT) + "/", ""))


PRE_IDLE = sorted(DATA.glob("2026112[45]-*-rust_tonic_mt-rust_pajamax"))
POLL = sorted(DATA.glob("20261126-*-rust_tonic_mt-rust_pajamax"))
FOLDED = SEED_001 / "rust_tonic_mt" / "profile.folded.gz"
FOLDED_B = SEED_001 / "rust_pajamax" / "profile.folded.gz"
COMPARED = (NEWEST, THREE, SAVED / "seed-001")
# every report.py command that prints rows, on the folders that exercise it; compare reads every round's
# profile (a few seconds a folder): the other folders in the full suite
CASES = [
    *(case("run", d) for d in [*RUNS, *CELLS]),
    case("runs", *PRE_IDLE), case("runs", *POLL), case("runs", "OTHER-HOST"),
    case("hosts", "--ledger", DATA / "hosts.jsonl"),
    *(case("compare", d) for d in COMPARED), *(slow("compare", d) for d in RUNS if d not in COMPARED and any(d.glob("*/profile.folded*"))),
    case("compare", SAVED / "rounds", "--level", "2", "--indirect", INDIRECT),
    slow("compare", SEED_001, "--level", "2", "--indirect", INDIRECT), slow("compare", THREE, "--view", "tax"),
    case("sweep", SAVED / "sweep"), slow("sweep", SWEEP),
    case("waits", SAVED / "offcpu"), case("waits", DATA / "20261124-074608-seed-002-A"), slow("waits", CELLS[0]),
    case("whatif", WHATIF, "rust_tonic_st", "rust_tonic_mt"), case("whatif", SEED_001, "rust_tonic_st", "rust_tonic_mt"),
    case("whatif", SEED_001, "rust_tonic_st", "rust_tonic_mt", "--ratio", "1.5"),
    case("table", FOLDED, FOLDED_B), case("table", FOLDED, "--requests", "100000", "--level", "2"),
    case("top", FOLDED, "-c", "send"), case("top", FOLDED, "-c", "other", "--requests", "100000"),
    case("explain", "tcp_recvmsg_locked_[k]"), case("check-rules"),
    case("diff", f"{SAVED}/rounds/rust_tonic_mt", f"{SAVED}/rounds/rust_pajamax", "-o", "OUT"),
    slow("diff", f"{SEED_001}/rust_tonic_mt", f"{SEED_001}/rust_tonic_st", "-o", "OUT"),
    case("diff", FOLDED, FOLDED_B, "-o", "OUT"),
]


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("argv", CASES)
def test_report_py_writes_each_figure_as_a_number(argv, fmt, tmp_path):
    argv = [str(tmp_path / "out.svg") if a == "OUT" else str(a) for a in argv]
    if argv[1:] == ["OTHER-HOST"]:
        argv = ["runs", *map(str, other_host(tmp_path))]
    done = invoke(report_cli.entry, *argv, "--format", fmt)
    assert done.code == 0, done.err
    found = problems(done.out, fmt)
    assert not found, f"{len(found)} values mix a number with text, e.g.\n" + "\n".join(found[:8])


def format_commands(group: click.Group) -> set[str]:
    """The commands of a click group that take --format table|markdown|json|csv."""
    ctx = click.Context(group)
    return {name for name in group.list_commands(ctx)
            if any(p.name == "fmt" and getattr(p.type, "choices", None) == FORMATS
                   for p in group.get_command(ctx, name).params)}


def test_every_command_that_prints_rows_is_run_here():
    assert format_commands(report_cli.main) == {p.values[0][0] for p in CASES}
    # profile.sh's commands measure first: what run and attach print of the folder they made is read below,
    # what sweep prints is report.py sweep's
    assert format_commands(profile_cli.main) == {"run", "sweep", "attach"}


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("run_dir", [NEWEST, SAVED / "seed-001", SAVED / "offcpu"], ids=lambda d: d.name)
def test_profile_sh_run_and_attach_print_each_figure_as_a_number(run_dir, fmt):
    from rpcprof.analyze.categorize import load_rules
    from rpcprof.records import ServerResult
    from rpcprof.rundir import load_run
    results = {s: ServerResult.from_json({"server": s, **r}) for s, r in load_run(run_dir)[1].items()}
    rules = load_rules()
    assert problems("".join(printed.run_report(run_dir, results, rules, fmt, "seed", DATA)), fmt) == []
    if run_dir.name != "offcpu":            # attach's folders have a profile
        assert problems("".join(printed.attach_report(run_dir, results, rules, fmt)), fmt) == []


def test_what_the_table_and_the_sentences_show_is_made_of_the_numbers_beside_them():
    run = json.loads(invoke(report_cli.entry, "run", str(NEWEST), "--format", "json").out)
    r = next(r for r in run["rows"] if r["server"] == "rust_pajamax")
    i = r["ratio_interval"]
    assert (r["ratio"], r["ratio_low"], r["ratio_high"]) == (i["ratio"], i["low"], i["high"])
    assert [r["req_per_cpu_s_min"], r["req_per_cpu_s_max"]] == r["spread_req_per_cpu_s"]
    table = invoke(report_cli.entry, "run", str(NEWEST)).out
    assert f"  {r['req_per_cpu_s_min']:,.0f}-{r['req_per_cpu_s_max']:,.0f} (CV {r['req_per_cpu_s_cv_pct']:.1f} %)  " in table
    assert f"  ^{r['ratio']:.1f} [{r['ratio_low']:.1f}-{r['ratio_high']:.1f}]  " in table
    compare = json.loads(invoke(report_cli.entry, "compare", str(NEWEST), "--format", "json").out)
    assert [f["server"] for f in compare["server_figures"]] == ["rust_tonic_mt", "rust_pajamax"]
    for line, f in zip(compare["servers"], compare["server_figures"]):
        assert line.startswith(f"{f['server']}: {f['req_per_cpu_s']:,.0f} req/s per CPU (x{f['ratio']:.2f} of ")
        # the median round's figure, beside the rounds' mean that the table's total row gives
        total = next(r for r in compare["rows"] if r["category"] == "total")[f"{f['server']}_us"]
        assert f['cpu_us_per_req_mean'] == pytest.approx(total)
        assert f"{f['cpu_us_per_req']:.2f} CPU µs/req unprofiled (its median round; {f['cpu_us_per_req_mean']:.2f} the mean, the total " \
               f"below), {round(f['overhead_pct']):+d} % while profiled " \
               f"[{round(f['overhead_low_pct']):+d} to {round(f['overhead_high_pct']):+d} %], {f['samples']:,} samples in " \
               f"{f['rounds']} rounds" in line
