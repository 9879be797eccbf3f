"""The package's structure, held by tests: the one-way flow capture -> fold -> categorize -> report, and
one owner of the run folder on disk.

    measure/   servers, processes, load, kernel accounting, windows, the session owning processes
    capture/   perf and py-spy attached to a PID, folding
    analyze/   the figures: categorize, frame shares, statistics, rounds, and every model and test a report
               quotes (the runs' agreement, diff's tests across rounds, paces, the what-if, the hosts' model)
    report/    the renderers: tables, text, flame graphs, SVG, charts, report.html, export formats, and the
               reports of report.py's commands, each saying analyze/'s figures in rows and lines
    documents/ the published documents (docs/results.md, docs/seeds.md, their headers and quoted figures)
               and the check that regenerates them (tools/publish.sh --check)
    jobs/      run, attach, sweep: thin drivers over the steps of measure and capture, on one scaffold
               (jobs/base.py) and their defaults (jobs/defaults.py)
    cli/       both command lines
    rundir.py  the run folder: written and read there only
The three rooms of the reading side hold one arrow, analyze <- report <- documents: analyze imports
neither report nor documents, report never imports documents, documents may import both; report holds
no module that only computes (its figures belong in analyze/), and analyze/ draws nothing, reads no run
folder (its caller does, through rundir.py) and writes no prose: it returns figures in typed records, and
every sentence is made in report/.
Below every layer, importing none: folded.py (the folded-file reader) and pprof_in.py (pprof's), syscall_families.py,
profiler_names.py, status.py (the one vocabulary of statuses), records.py (a run folder's typed records), progress.py
(the one logger), errors.py and paths.py. Each constant is defined in one module.
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tools" / "rpcprof"


def imports_of(path: Path) -> set[str]:
    """Every rpcprof module a file imports (absolute names), including imports inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rpcprof"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; write rpcprof.<package>.<module>")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("rpcprof"))
    return out


@pytest.mark.parametrize("layer", ["analyze", "report", "documents"])
def test_analysis_and_reports_never_import_what_measures(layer):
    """Reports run on saved files: they must not pull in servers, load drivers or profilers."""
    for path in sorted((PKG / layer).glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] and m.split(".")[1] in ("measure", "capture", "jobs", "cli")}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_measurement_never_imports_reports_or_jobs():
    for layer in ("measure", "capture"):
        for path in sorted((PKG / layer).glob("*.py")):
            bad = {m for m in imports_of(path) if m.split(".")[1:2] and m.split(".")[1] in ("report", "documents", "jobs",
                                                                                          "cli")}
            assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


# the reading side's arrow, analyze <- report <- documents: what each room may not import
NOT_IMPORTED_BY = {"analyze": ("report", "documents"), "report": ("documents",)}


@pytest.mark.parametrize("room", sorted(NOT_IMPORTED_BY))
def test_the_reading_side_imports_one_way(room):
    """The figures (analyze/) never import what writes them, and the reports (report/) never import the
    published documents, which are built from both."""
    for path in sorted((PKG / room).glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] and m.split(".")[1] in NOT_IMPORTED_BY[room]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}: the arrow is analyze <- report <- documents"


# a function whose name says it writes: a renderer, a table's columns, a line or text for a reader, a file
WRITES = re.compile(r"^(render|build|write|draw|recolour|mark|add|to|esc|xml|html|table|terminal)(_|$)"
                    r"|_(line|lines|text|section|svg|legend|columns|note)$")


@pytest.mark.parametrize("module", sorted(p.name for p in (PKG / "report").glob("*.py") if p.name != "__init__.py"))
def test_every_report_module_writes_something(module):
    """report/ is the renderers' room: each module writes (a table, lines, an SVG, a page, a file); a module
    of report/ that only computes belongs in analyze/."""
    names = [n.name.lstrip("_") for n in ast.parse((PKG / "report" / module).read_text()).body
             if isinstance(n, ast.FunctionDef)]
    assert any(WRITES.search(n) for n in names), (f"report/{module} only computes ({', '.join(names)}): "
                                                   "move it to analyze/, or name what writes as it does")


def test_the_analysis_draws_nothing():
    """analyze/ gives figures: no renderer (render_...) and no plotting library."""
    for path in sorted((PKG / "analyze").glob("*.py")):
        tree = ast.parse(path.read_text())
        renders = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("render")]
        plots = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                 if a.name.split(".")[0] == "matplotlib"]
        plots += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                  and n.module.split(".")[0] == "matplotlib"]
        assert not renders and not plots, f"{path.relative_to(PKG)} draws ({renders + plots}): put it in report/"


def test_the_analysis_reads_no_run_folder():
    """analyze/ is handed what a run folder holds: its caller (report/, documents/, jobs/ or cli/) reads the
    folder through rundir.py and gives analyze the records and files; no module of analyze/ imports rundir."""
    bad = {str(path.relative_to(PKG)): sorted(m for m in imports_of(path) if m.split(".")[:2] == ["rpcprof", "rundir"])
           for path in sorted((PKG / "analyze").glob("*.py"))}
    bad = {module: names for module, names in bad.items() if names}
    assert not bad, f"analyze/ reads run folders: {bad}: read the run folder in its caller and hand analyze the data"


# prose: a text of PROSE_WORDS words or more, or with a sentence's punctuation between a word (or a value) and
# the next word ("idle, with", "{}. The"); a word is two letters or more and nothing else (an apostrophe or a
# hyphen inside), so keys (cpu_us_per_req), paths, regexes, units (µs/req) and names in capitals (CPU,
# NAGLE/DELAYED-ACK) are not words
PROSE_WORDS = 5
WORD = re.compile(r"[A-Za-z][a-z]+(?:['-][a-z]+)*")
BETWEEN_WORDS = re.compile(r"(?:\b[a-z]{2,}|})[.,;:] +[A-Za-z][a-z]+\b")
# words analyze/ may keep, each a name a record keeps or an error's message, by module and definition
WORDS_ALLOWED = {
    "analyze/rules_file.py": {"FIX",               # the hint of every categorize.yaml error
                              "_rule",             # where a rule's regex is, for its errors
                              "check_examples",    # check-rules' problems with a rule's examples: errors
                              "problems_line"},    # ... in one error line
    "analyze/wakers.py": {"WAKE_PATHS"},           # the names of the wake-up paths, keys of the record
    "analyze/stall.py": {"Mechanism"},             # a stall's mechanism, by the name metrics.json keeps
    "analyze/paces.py": {"Paces.as_dict"},         # the name of the paces' test, a field of the JSON record
}


def is_prose(text: str) -> bool:
    words = [w for w in (t.strip("()[]`'\".,;:!?") for t in text.split()) if WORD.fullmatch(w)]
    return len(words) >= PROSE_WORDS or bool(BETWEEN_WORDS.search(text))


def prose_of(source: str, allowed: set[str] = frozenset()) -> list[str]:
    """`line N (where): text` of each text in source that is prose, outside docstrings, error messages (a
    raise or assert, or a call of ...Error or _fail) and the definitions allowed (a module-level name, a
    function, or Class.method). An f-string is read with {} for each value."""
    found = []

    def text_of(node) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        return None

    def visit(node, where: str, exempt: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            where = f"{where}.{node.name}" if where else node.name
            body = node.body
            if body and isinstance(body[0], ast.Expr) and text_of(body[0].value) is not None:
                body = body[1:]                                          # the docstring
            for child in [*node.decorator_list, *body]:
                visit(child, where, exempt or where in allowed)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and not where:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            where = next((t.id for t in targets if isinstance(t, ast.Name)), "")
        exempt = (exempt or where in allowed or isinstance(node, (ast.Raise, ast.Assert))
                  or isinstance(node, ast.Call) and re.search(r"(Error|_fail)$", ast.unparse(node.func)) is not None)
        text = text_of(node)
        if text is not None and not exempt and is_prose(text):
            found.append(f"line {node.lineno} ({where or 'module'}): {text[:90]!r}")
        # an f-string is read whole above: below it, only the expressions of its values
        children = ([v.value for v in node.values if isinstance(v, ast.FormattedValue)]
                    if isinstance(node, ast.JoinedStr) else ast.iter_child_nodes(node))
        for child in children:
            visit(child, where, exempt)

    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and text_of(body[0].value) is not None:
        body = body[1:]                                                  # the module's docstring
    for node in body:
        visit(node, "", False)
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in (PKG / "analyze").glob("*.py")))
def test_the_analysis_writes_no_prose(module):
    """analyze/ returns figures in typed records (which branch holds as an Enum or a bool, never a test of its
    own words); every sentence a report prints is made in report/ from them."""
    found = prose_of((PKG / "analyze" / module).read_text(), WORDS_ALLOWED.get(f"analyze/{module}", set()))
    assert not found, f"analyze/{module} writes prose: {found}: return the figures and say them in report/"


def test_the_words_allowed_are_still_there():
    """Each definition WORDS_ALLOWED names is in its module (a name that went leaves the list)."""
    def names(module: str) -> set[str]:
        classes = [n for n in module_definitions()[module].values() if isinstance(n, ast.ClassDef)]
        return set(module_definitions()[module]) | {f"{c.name}.{f.name}" for c in classes for f in c.body
                                                    if isinstance(f, ast.FunctionDef)}
    gone = {m: sorted(allowed - names(m)) for m, allowed in WORDS_ALLOWED.items() if allowed - names(m)}
    assert not gone, f"WORDS_ALLOWED names what its module no longer defines: {gone}"


def test_the_prose_check_tells_a_sentence_from_a_label():
    sentence = 'def gap(a, b, d):\n    return f"{b} needs {d:.2f} CPU µs per request less than {a}."\n'
    clause = 'def stalled(s):\n    return f"answered {s}, then idle"\n'
    nested = 'def word(d):\n    return f"{d:.2f} {\'less than the server that writes\' if d < 0 else \'more\'}"\n'
    figures = ('KEYS = {"writes_per_req": "syscalls.writes_per_req", "flag": "PROFILE-REGIME: req/s {} %"}\n'
               'def f(x):\n    """A docstring of many words, as long as it likes."""\n'
               '    raise ValueError(f"{x}: not a count per request: measure the run again")\n')
    assert prose_of(sentence) and prose_of(clause) and prose_of(nested) and not prose_of(figures)
    assert not prose_of(sentence, {"gap"})


def test_measure_is_below_capture():
    """capture attaches profilers to what measure starts; measure never imports capture (Recorder and
    require are measure/recorder.py's)."""
    for path in sorted((PKG / "measure").glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] == ["capture"]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_jobs_never_import_the_command_lines():
    """The command lines are thin: they import the jobs, never the other way (defaults live in jobs)."""
    for path in sorted((PKG / "jobs").glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] == ["cli"]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_one_job_scaffold():
    """Folders, manifests, leftovers, the profile plan and the pictures of a finished folder are
    jobs/base.py's: no job builds them itself."""
    for path in sorted((PKG / "jobs").glob("*.py")):
        if path.name == "base.py":     # the scaffold
            continue
        text = path.read_text()
        for name in ("Manifest(", "RunFolder.create(", "tidy_leftovers(", "ProfilePlan.for_load(", "machine_specs(",
                     "render_breakdown_chart(", "build_html("):
            assert name not in text, f"{path.relative_to(PKG)} calls {name}...): use rpcprof.jobs.base"


def test_only_rundir_names_the_run_folders_files():
    """manifest.json, metrics.json, result.json and profile.json are written and read in rundir.py."""
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "rundir.py":
            continue
        text = path.read_text()
        for name in ("manifest.json", "metrics.json", "result.json", "profile.json"):
            assert f'"{name}"' not in text, f"{path.relative_to(PKG)} names {name}: go through rpcprof.rundir"


def test_only_rundir_names_the_files_of_a_server_folder():
    """Recordings, folded stacks, pictures and logs of a run folder are named once, in rundir.py."""
    names = ("profile.folded", "offcpu.folded", "perf.data", "offcpu.data", "sockets.log", "py-spy.raw", "flame.svg",
             "offcpu.svg", "breakdown.svg", "breakdown-level2.svg", "report.html", "build.log", "server.log",
             "load.log", "warmup.log", "load-lead-ended.log", "profile-load.log", "offcpu-load.log", "perf-record.log", "perf-offcpu.log",
             "py-spy.log")
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "rundir.py":
            continue
        text = path.read_text()
        for name in names:
            for quoted in (f'"{name}"', f"'{name}'", f"/{name}'", f'/{name}"'):
                assert quoted not in text, f"{path.relative_to(PKG)} names {name}: use the name rpcprof.rundir gives it"


# names made outside rundir.py that are not a run folder's: a file of a servers/ package, perf script's
# transient text beside a folded file, a flame graph drawn in a scratch folder
NOT_THE_RUN_FOLDERS = {"measure/scenario.py": 1, "capture/fold.py": 1, "report/html.py": 1}
EXTENSIONS = (".csv", ".log", ".data", ".json", ".folded", ".svg", ".raw", ".txt", ".tsv", ".script")


def test_only_rundir_builds_a_file_name_from_a_stem():
    """A run folder's file named from a stem (f"{name}.csv", log.with_suffix(".json")) is named in rundir.py."""
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "rundir.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            last = node.values[-1] if isinstance(node, ast.JoinedStr) and node.values else None
            suffix = (node.args[0] if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".with_suffix")
                      and node.args else None)
            text = getattr(last if last is not None else suffix, "value", None)
            if isinstance(text, str) and text.endswith(EXTENSIONS):
                found.setdefault(str(path.relative_to(PKG)), []).append(f"line {node.lineno}: {ast.unparse(node)}")
    over = {m: names for m, names in found.items() if len(names) > NOT_THE_RUN_FOLDERS.get(m, 0)}
    assert not over, f"file names built outside rundir.py: {over}: name them in rpcprof.rundir"


REPORT_PY_COMMANDS = sorted(p.name for p in (PKG / "cli").glob("*.py") if p.name != "profile.py")


@pytest.mark.parametrize("module", REPORT_PY_COMMANDS)
def test_report_py_never_imports_what_measures(module):
    """report.py runs on saved files; folding a saved perf.data is the one capture stage it reruns."""
    bad = {m for m in imports_of(PKG / "cli" / module) if m.split(".")[1] in ("measure", "jobs")}
    assert not bad, f"cli/{module} imports {sorted(bad)}"


def test_capture_reads_folded_files_without_importing_the_analysis():
    """The folded-file reader is rpcprof.folded, below both: capture (which checks a py-spy file) never
    imports analyze, and the reader imports no layer."""
    for path in sorted((PKG / "capture").glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] == ["analyze"]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


LAYERS = ("measure", "capture", "analyze", "report", "documents", "jobs", "cli")
BELOW_THE_LAYERS = ("folded.py", "pprof_in.py", "syscall_families.py", "host_units.py", "profiler_names.py", "status.py",
                    "records.py", "progress.py", "errors.py", "paths.py")


@pytest.mark.parametrize("module", BELOW_THE_LAYERS)
def test_the_modules_below_the_layers_import_none(module):
    """Both measure and analyze (or capture and schema, or every layer) import these: they import no layer."""
    bad = {m for m in imports_of(PKG / module) if m.split(".")[1:2] and m.split(".")[1] in LAYERS}
    assert not bad, f"{module} imports {sorted(bad)}"


PACKAGES = sorted({str(p.parent.relative_to(PKG)) for p in PKG.rglob("*.py")})


def test_the_packages_are_all_there():
    assert {".", "analyze", "capture", "cli", "documents", "jobs", "measure", "report"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_400_lines(package):
    for path in sorted((PKG / package).glob("*.py")):
        assert len(path.read_text().splitlines()) <= 400, f"{path.relative_to(PKG)} is over 400 lines: split it"


@lru_cache(maxsize=1)     # parsed once for the tests that read it
def module_definitions() -> dict[str, dict[str, ast.AST]]:
    """module (path under rpcprof/) -> {name: value} of its module-level constants (UPPER_CASE names), and
    of its functions and classes (the node itself)."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        if path.name.endswith("_pb2.py"):          # generated by protoc
            continue
        names = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update({t.id: node.value for t in targets if isinstance(t, ast.Name) and t.id.isupper()})
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names[node.name] = node
        out[str(path.relative_to(PKG))] = names
    return out


# each of these is defined in this module only (the others import it)
DEFINED_ONCE = {
    **dict.fromkeys(("READS", "WRITES", "WAITS", "IO_READS", "IO_WRITES", "SYSCALLS"), "syscall_families.py"),
    **dict.fromkeys(("CALL_GRAPHS", "PROFILERS"), "profiler_names.py"),
    "MODES": "schema.py",
    **dict.fromkeys(("JOB_STATUSES", "SERVER_STATUSES", "STATUS_MEANING", "MEASURED"), "status.py"),
    "sample_weight": "folded.py",                  # the gcd of a profile's weights
    "log": "progress.py",
    **dict.fromkeys(("RUN", "SWEEP", "ATTACH", "FREQUENCY"), "jobs/defaults.py"),
    "RUNS_DIR": "paths.py",
}


@pytest.mark.parametrize("name", sorted(DEFINED_ONCE))
def test_a_shared_constant_is_defined_in_one_module(name):
    where = sorted(m for m, names in module_definitions().items() if name in names)
    assert where == [DEFINED_ONCE[name]], f"{name} is defined in {where}: define it in {DEFINED_ONCE[name]} only"


def holds_numbers(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in ast.walk(node))


def test_the_seeds_figures_are_quoted_in_one_module():
    """A seed's figures (SEED_... holding numbers) are documents/seed_figures.py's; a seed's layout (the order of
    its columns) is categorize.yaml's `groups:`."""
    where = sorted({m for m, names in module_definitions().items() for n, node in names.items()
                    if n.startswith("SEED_") and holds_numbers(node)})
    assert where == ["documents/seed_figures.py"], f"seed figures are defined in {where}"


def test_the_gcd_sample_weight_is_computed_in_one_module():
    where = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if "math.gcd" in p.read_text())
    assert where == ["folded.py"], f"the gcd of the weights is computed in {where}: use rpcprof.folded.sample_weight"


# one short name, different things: the output formats of the tables and of the exporter, the hint of each
# configuration file's errors, the style of the charts and of the HTML page
SAME_NAME_OTHER_THING = {"FORMATS", "FIX", "STYLE"}


def test_no_constant_name_is_defined_in_two_modules():
    where: dict[str, list[str]] = {}
    for module, names in module_definitions().items():
        for name in names:
            if name.isupper() and not name.startswith("_"):       # a module's private names are its own
                where.setdefault(name, []).append(module)
    twice = {n: m for n, m in where.items() if len(m) > 1 and n not in SAME_NAME_OTHER_THING}
    assert not twice, f"defined more than once: {twice}"


def test_no_list_or_text_constant_is_written_twice_under_two_names():
    """A copy under another name (SEED_001_RATIO beside SEED_RATIO_QUOTED, WRITES in two layers) is found
    by its value: a tuple, list, dict or set, or a text of 8 characters or more, assigned in two modules."""
    seen: dict[str, list[str]] = {}
    for module, names in module_definitions().items():
        for name, node in names.items():
            if not name.isupper():
                continue
            try:
                value = ast.literal_eval(node)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
            if isinstance(value, (tuple, list, dict, set)) and value or isinstance(value, str) and len(value) >= 8:
                seen.setdefault(repr(value), []).append(f"{module}:{name}")
    copies = [w for w in seen.values() if len({x.split(":")[0] for x in w}) > 1]
    assert not copies, f"the same value in two modules: {copies}"


def test_profile_sh_writes_no_default_of_its_own():
    """Every default of profile.sh's options is jobs/defaults.py's (or the job's own constant): a literal
    default in cli/profile.py would be a second copy."""
    tree = ast.parse((PKG / "cli" / "profile.py").read_text())
    literal = [f"line {node.lineno}: {ast.unparse(node)[:80]}" for node in ast.walk(tree)
               if isinstance(node, ast.Call) and ast.unparse(node.func) == "click.option"
               for kw in node.keywords if kw.arg == "default"
               and isinstance(kw.value, (ast.Constant, ast.List, ast.Tuple)) and getattr(kw.value, "value", 0) is not None]
    assert not literal, f"cli/profile.py writes its own defaults: {literal}"


# --- sizes: no class over 150 lines, no function over 80 -----------------------------------------------

MAX_CLASS_LINES = 150
MAX_FUNCTION_LINES = 80
# Classes still over the limit while they are reshaped (none now).
# Each leaves this list when it is under the limit (the test after the next says so).
LONG_CLASSES: set[str] = set()


def definitions_over(kind, limit: int) -> dict[str, int]:
    """{module:Name: lines} of the classes or functions (methods and nested functions included) longer
    than limit, from the def line to the last line."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        if path.name.endswith("_pb2.py"):          # generated by protoc
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, kind) and node.end_lineno - node.lineno + 1 > limit:
                out[f"{path.relative_to(PKG)}:{node.name}"] = node.end_lineno - node.lineno + 1
    return out


def test_no_class_is_over_150_lines():
    long = {k: v for k, v in definitions_over(ast.ClassDef, MAX_CLASS_LINES).items() if k not in LONG_CLASSES}
    assert not long, f"classes over {MAX_CLASS_LINES} lines: {long}: split them"


def test_the_long_classes_listed_are_still_long():
    shorter = LONG_CLASSES - set(definitions_over(ast.ClassDef, MAX_CLASS_LINES))
    assert not shorter, f"{sorted(shorter)} no longer over {MAX_CLASS_LINES} lines: take them out of LONG_CLASSES"


def test_no_function_is_over_80_lines():
    long = definitions_over((ast.FunctionDef, ast.AsyncFunctionDef), MAX_FUNCTION_LINES)
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}: split them"


def test_report_py_only_registers_its_commands():
    """Each report.py command lives in a module of its own under cli/; cli/report.py registers them."""
    lines = len((PKG / "cli" / "report.py").read_text().splitlines())
    assert lines <= 150, f"cli/report.py has {lines} lines: put the command in a module of its own"
    tree = ast.parse((PKG / "cli" / "report.py").read_text())
    commands = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                and any("command" in ast.unparse(d) for d in n.decorator_list)]
    assert not commands, f"cli/report.py defines {commands}: give each a module under cli/"


def _module_name(path: Path) -> str:
    parts = ("rpcprof", *path.relative_to(PKG).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path):
    """(module, names) of each `from rpcprof... import names` and `import rpcprof...` in path, at any depth,
    but those under `if TYPE_CHECKING:` (annotations only: no import at run time)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
            for child in node.body for n in ast.walk(child)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rpcprof"):
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            yield from ((a.name, []) for a in node.names if a.name.startswith("rpcprof"))


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def test_no_private_name_is_imported_from_another_module():
    """A name with a leading underscore is its module's own: another module that needs it needs a public name."""
    crossing = [f"{_module_name(p)} imports {module}.{name}" for p in PKG.rglob("*.py") for module, names in _imports(p)
                for name in names if name.startswith("_") and not name.startswith("__")]
    assert not crossing, "make these names public, or keep the code that uses them in their module:\n" + "\n".join(crossing)


def test_no_import_circle():
    """The modules' imports, at module level or inside functions, make no circle."""
    graph = {m: set() for m in MODULES}
    for m, path in MODULES.items():
        for module, names in _imports(path):
            for target in [module, *(f"{module}.{n}" for n in names)]:
                if target in MODULES and target != m:
                    graph[m].add(target)
    state: dict[str, int] = {}             # 1: on the path walked, 2: done

    def circle_from(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n] if n in path else [m, n]
            if n not in state and (found := circle_from(n, path + [n])):
                return found
        state[m] = 2
        return None
    for m in sorted(graph):
        if m not in state and (found := circle_from(m, [m])):
            pytest.fail("an import circle: " + " -> ".join(found))
