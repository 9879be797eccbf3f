"""Fuzz test: random folded lines, rules files and mutated run files fed to report.py's commands, in-process
through its error boundary (cli/common.run_click). Whatever the input, a command either succeeds (and any
SVG it wrote parses as XML) or prints one line `report.py: error: ...` and exits 2: never a traceback,
never an internal error (exit 70).

Reproducible: hypothesis is derandomized and keeps no example database; under a minute in all.
"""
from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcprof.cli.common import run_click
from rpcprof.cli.report import main
from rpcprof.paths import INDIRECT_COST

DATA = Path(__file__).resolve().parents[1] / "data"
SEED_RUN = DATA / "runs" / "seed-001"
HAVE_INFERNO = bool(shutil.which("inferno-flamegraph") or (Path.home() / ".cargo/bin/inferno-flamegraph").exists())

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def report(*args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of report.py ARGS; stdout and stderr encode strictly as UTF-8, as a
    terminal would, so an unencodable character is caught too."""
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            run_click(main, [str(a) for a in args])
        except SystemExit as e:
            code = e.code
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))
    return code, texts[0], texts[1]


def assert_clean(code: int, err: str, args) -> None:
    """Success, or one error line with exit 2; never a traceback or an internal error."""
    assert "Traceback" not in err, (args, err)
    assert code in (0, 2), (args, code, err)
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("report.py: error: "), (args, err)


# --- folded lines ------------------------------------------------------------------------------------

HOSTILE_CHARS = st.sampled_from(list("\x00\x07\x1b\r\t\x7f\x85\ufffe\uffff\ud800|<&\"'; ;[]_k$\u0661"))
FRAME = st.one_of(st.text(st.one_of(st.characters(), HOSTILE_CHARS), max_size=30),
                  st.text(HOSTILE_CHARS, max_size=8).map(lambda s: s + "_[k]"))
COUNT = st.one_of(st.integers(0, 10**7).map(str),
                  st.sampled_from(["\u0661\u0662", "\u00b2", "-1", "1.5", "", "0x10", "9" * 40, "3\r", " 3"]))
LINE = st.builds(lambda frames, count: ";".join(frames) + " " + count, st.lists(FRAME, min_size=1, max_size=6), COUNT)


def write_folded(directory: Path, lines: list[str]) -> Path:
    path = directory / "fuzz.folded"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    return path


@FUZZ
@given(lines=st.lists(LINE, max_size=8), fmt=st.sampled_from(["table", "markdown", "csv", "json"]))
def test_random_folded_lines_never_crash_a_report(lines, fmt):
    with tempfile.TemporaryDirectory() as d:
        folded = write_folded(Path(d), lines)
        for args in (["table", folded, "--format", fmt], ["top", folded, "-c", "other", "--format", fmt],
                     ["table", folded, "--level", "2", "--view", "tax"]):
            code, out, err = report(*args)
            assert_clean(code, err, args)
            if code == 0 and fmt in ("table", "markdown"):
                assert "\x1b" not in out and "\r" not in out


# --- pprof profiles (the compiled core's reader) ---------------------------------------------------------

@pytest.fixture(scope="module")
def pprof_bytes(tmp_path_factory) -> bytes:
    """A real capture exported as pprof (labels, the app comment), its profile.proto as bytes."""
    out = tmp_path_factory.mktemp("pprof") / "go.pb.gz"
    code, _, err = report("export", DATA / "go_grpc.folded.gz", "--format", "pprof", "-o", out, "--app", "Greeter")
    assert code == 0, err
    return gzip.decompress(out.read_bytes())


EDITS = st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert"]), st.floats(0, 1), st.binary(min_size=1,
                                                                                                   max_size=12)),
                 min_size=1, max_size=4)


@FUZZ
@given(edits=EDITS, zipped=st.booleans())
def test_mutated_pprof_profiles_never_crash_a_report(pprof_bytes, edits, zipped):
    """Bytes of a real profile flipped, cut or inserted: the core reads it or refuses it in one line, never panics."""
    data = bytearray(pprof_bytes)
    for kind, where, junk in edits:
        at = int(where * len(data))
        if kind == "flip":
            data[at:at + len(junk)] = bytes(a ^ b for a, b in zip(data[at:at + len(junk)], junk))
        elif kind == "cut":
            del data[at:at + 8 * len(junk)]
        else:
            data[at:at] = junk
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzz.pb.gz"
        path.write_bytes(gzip.compress(bytes(data), mtime=0) if zipped else bytes(data))
        for args in (["table", path], ["top", path, "-c", "other", "--format", "json"]):
            code, _, err = report(*args)
            assert_clean(code, err, args)


@pytest.mark.skipif(not HAVE_INFERNO, reason="inferno not installed (tools/setup.sh)")
@settings(FUZZ, max_examples=15)
@given(lines=st.lists(LINE, min_size=1, max_size=6), title=FRAME)
def test_every_folded_file_table_reads_is_drawn_as_valid_xml(lines, title):
    with tempfile.TemporaryDirectory() as d:
        folded, out = write_folded(Path(d), lines), Path(d) / "out.svg"
        readable = report("table", folded)[0] == 0
        args = ["svg", folded, "-o", out, "--title", title or "t"]
        code, _, err = report(*args)
        assert_clean(code, err, args)
        assert code == (0 if readable else 2), (args, err)     # stacks `table` reads can be drawn
        if code == 0:
            ET.parse(out)


# --- rules files -----------------------------------------------------------------------------------

RULES = {"other_color": "#b4b4b4", "categories": [
    {"name": "app", "color": "#00ff00", "description": "handler",
     "rules": [{"name": "main", "match": "^main$", "examples": ["main"]}]},
    {"name": "recv", "color": "#0000ff", "subcategories": [{"name": "tcp", "description": "TCP"}],
     "rules": [{"name": "tcp", "match": "^tcp_recvmsg$", "where": "kernel", "sub": "tcp", "examples": ["tcp_recvmsg_[k]"]}]}],
    "tax": {"rest": "rest", "groups": [{"name": "alloc", "color": "#ff0000", "description": "malloc",
                                       "rules": [{"name": "malloc", "match": "^malloc$", "examples": ["malloc"]}]}]}}


def key_paths(node, prefix=()):
    """Every path to a value in a nested structure of dicts and lists."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from key_paths(value, prefix + (key,))


def replaced(data, path, value):
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


ODD_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=True), FRAME,
    st.sampled_from(["(a+)+$", "(a|aa)+$", "[", "(?P<x>a)(?P=x)", "\\1", "(?<=a)b", "#12345", "#zzzzzz",
                     "red", "", "other", "a/b", "app"]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@FUZZ
@given(path=st.sampled_from(list(key_paths(RULES))), value=ODD_VALUE, junk=st.binary(max_size=4))
def test_random_rules_files_never_crash_a_report(path, value, junk):
    with tempfile.TemporaryDirectory() as d:
        rules = Path(d) / "rules.yaml"
        rules.write_bytes(yaml.safe_dump(replaced(RULES, path, value), allow_unicode=True).encode("utf-8", "surrogatepass")
                          + (b"# " + junk + b"\n" if junk else b""))
        folded = write_folded(Path(d), ["main;" + "a" * 30 + ";tcp_recvmsg_[k] 3", "main;malloc 2", "x;aaaa 1"])
        for args in (["table", folded, "--rules", rules], ["top", folded, "-c", "app", "--rules", rules],
                     ["table", folded, "--rules", rules, "--view", "tax"], ["explain", "main", "--rules", rules]):
            code, _, err = report(*args)
            assert_clean(code, err, args)


# --- run files -------------------------------------------------------------------------------------

RUN_FILES = ["manifest.json", "metrics.json", "rust_pajamax/result.json", "rust_tonic_mt/profile.json"]
RUN_JSON = {name: json.loads((SEED_RUN / name).read_text()) for name in RUN_FILES}
RUN_PATHS = [(name, p) for name in RUN_FILES for p in key_paths(RUN_JSON[name])]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """seed-001 with each profile cut to its first 40 stacks, so a command takes milliseconds."""
    run = tmp_path_factory.mktemp("fuzz") / "seed"
    shutil.copytree(SEED_RUN, run)
    for gz in run.glob("*/profile.folded.gz"):
        with gzip.open(gz, "rt") as f:
            lines = [next(f) for _ in range(40)]
        gz.unlink()
        gz.with_suffix("").write_text("".join(lines))
    return run


MUTATION = st.one_of(
    st.tuples(st.just("value"), st.sampled_from(RUN_PATHS), ODD_VALUE),
    st.tuples(st.just("bytes"), st.sampled_from(RUN_FILES), st.tuples(st.integers(0, 4000), st.binary(max_size=6))),
    st.tuples(st.just("whole"), st.sampled_from(RUN_FILES), st.sampled_from(["[]", "3", '"x"', "null", "{", ""])),
    st.tuples(st.just("rename"), st.sampled_from(RUN_JSON["manifest.json"]["parameters"]["servers"]),
              st.text(st.one_of(HOSTILE_CHARS, st.sampled_from("ab_")), min_size=1, max_size=8)))


def mutate_file(run: Path, originals: dict, mutation) -> bool:
    """The mutations every run file takes: a value replaced (originals: the files' JSON), bytes overwritten,
    the whole file replaced. False for another kind."""
    kind, target, arg = mutation
    if kind == "value":
        name, path = target
        (run / name).write_text(json.dumps(replaced(originals[name], path, arg)))
    elif kind == "bytes":
        raw = (run / target).read_bytes()
        at, junk = arg
        (run / target).write_bytes(raw[:at] + junk + raw[at + len(junk):])
    elif kind == "whole":
        (run / target).write_text(arg)
    else:
        return False
    return True


def mutate(run: Path, mutation) -> None:
    kind, target, arg = mutation
    if not mutate_file(run, RUN_JSON, mutation):    # "rename": a server renamed, in the manifest and metrics.json
        for name, change in (("manifest.json", lambda d: d["parameters"].update(
                                  servers=[arg if s == target else s for s in d["parameters"]["servers"]])),
                             ("metrics.json", lambda d: d.update({arg: d.pop(target)}))):
            try:
                data = json.loads((run / name).read_text(errors="surrogateescape"))
                change(data)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue                    # the file is already damaged otherwise
            (run / name).write_text(json.dumps(data))


@settings(FUZZ, max_examples=60, suppress_health_check=list(HealthCheck))
@given(mutations=st.lists(MUTATION, min_size=1, max_size=2), fmt=st.sampled_from(["table", "markdown", "json", "csv"]))
def test_mutated_run_files_never_crash_a_report(small_run, mutations, fmt):
    reports_stay_clean(small_run, mutate, mutations, lambda run: (
        ["run", run, "--format", fmt, "--latency", "full"], ["compare", run, "--format", fmt],
        ["compare", run, "--level", "2"], ["table", run / "rust_pajamax" / "profile.folded"],
        ["compare", run, "--indirect", str(INDIRECT_COST), "--format", fmt]))


@settings(FUZZ, max_examples=40, suppress_health_check=list(HealthCheck))
@given(mutations=st.lists(MUTATION, min_size=1, max_size=2), fmt=st.sampled_from(["table", "json", "csv"]))
def test_mutated_run_files_never_crash_the_what_if_nor_runs(mutations, fmt):
    """report.py whatif on a run with rounds (tests/data/runs/rounds), its files mutated: a report or one line;
    and report.py runs, the mutated run beside the intact one."""
    reports_stay_clean(DATA / "runs" / "rounds", mutate, mutations, lambda run: (
        ["whatif", run, "rust_pajamax", "rust_tonic_mt", "--format", fmt],
        ["whatif", run, "rust_tonic_mt", "rust_pajamax", "--format", fmt],
        ["runs", DATA / "runs" / "rounds", run, "--format", fmt]))


def reports_stay_clean(source: Path, mutate_run, mutations, commands) -> None:
    """A copy of the run folder source, mutated, then each of commands(copy) run: clean, every one."""
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        shutil.copytree(source, run)
        for m in mutations:
            mutate_run(run, m)
        for args in commands(run):
            code, _, err = report(*args)
            assert_clean(code, err, args)


# --- an off-CPU run's files ----------------------------------------------------------------------------

OFFCPU_RUN = DATA / "runs" / "offcpu"
OFFCPU_JSON = {name: json.loads((OFFCPU_RUN / name).read_text())
               for name in ["manifest.json", "metrics.json", "rust_pajamax/result.json"]}
OFFCPU_PATHS = [(name, p) for name in OFFCPU_JSON for p in key_paths(OFFCPU_JSON[name])
                if "offcpu" in p or name == "manifest.json"]
# the saved text files the waits report reads again, unzipped so a mutation hits their text
OFFCPU_TEXT = ["rust_pajamax/offcpu.folded", "rust_pajamax/offcpu.folded.count", "rust_pajamax/sockets.log"]


@pytest.fixture(scope="module")
def offcpu_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("fuzz") / "offcpu"
    shutil.copytree(OFFCPU_RUN, run)
    for name in OFFCPU_TEXT:
        gz = run / f"{name}.gz"
        with gzip.open(gz, "rb") as f:
            (run / name).write_bytes(f.read())
        gz.unlink()
    return run


OFFCPU_MUTATION = st.one_of(
    st.tuples(st.just("value"), st.sampled_from(OFFCPU_PATHS), ODD_VALUE),
    st.tuples(st.just("bytes"), st.sampled_from([*OFFCPU_JSON, *OFFCPU_TEXT]),
              st.tuples(st.integers(0, 6000), st.binary(max_size=6))),
    st.tuples(st.just("line"), st.sampled_from(OFFCPU_TEXT), st.lists(LINE, max_size=3)),
    st.tuples(st.just("whole"), st.sampled_from([*OFFCPU_JSON, *OFFCPU_TEXT]), st.sampled_from(["[]", "3", "{", ""])))


def mutate_offcpu(run: Path, mutation) -> None:
    kind, target, arg = mutation
    if not mutate_file(run, OFFCPU_JSON, mutation):   # "line": random lines added to a folded file or the log
        with open(run / target, "a", encoding="utf-8", errors="surrogatepass") as f:
            f.write("".join(line + "\n" for line in arg))


@settings(FUZZ, max_examples=40, suppress_health_check=list(HealthCheck))
@given(mutations=st.lists(OFFCPU_MUTATION, min_size=1, max_size=2),
       fmt=st.sampled_from(["table", "markdown", "json", "csv"]))
def test_mutated_off_cpu_files_never_crash_the_waits_report(offcpu_run, mutations, fmt):
    reports_stay_clean(offcpu_run, mutate_offcpu, mutations,
                       lambda run: (["waits", run, "--format", fmt], ["run", run, "--format", fmt]))
