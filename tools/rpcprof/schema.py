"""The types of the files rpcprof reads (a run folder's JSON, categorize.yaml, servers/*/server.yaml), as
JSON Schemas, and one check that turns the first violation into a one-line UserError naming the file, the
key and the type expected:

    flamegraphs/X/manifest.json: key 'parameters.servers' must be a list, got a number; re-run or fix the file

A run folder's schemas give types, not presence: a key a reader needs and cannot do without is checked
there, and keys not listed are free (older and newer run folders differ in what they record). The
configuration files people write (categorize.yaml, server.yaml) are closed: every key is listed, and a
key that is not is refused, naming the keys known.
"""
from __future__ import annotations

from contextlib import suppress
from functools import cache
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.paths import VENV
from rpcprof.profiler_names import CALL_GRAPHS, PROFILERS
from rpcprof.status import JOB_STATUSES, SERVER_STATUSES

CHECKED = VENV / ".rpcprof-checked"     # hashes of the data found valid (check)
CHECKED_MAX = 1 << 20                     # bytes of it, past which nothing more is kept
MODES = ("run", "attach", "sweep")

NUMBER = {"type": ["number", "null"]}
FLAG = {"type": ["boolean", "null"]}
TEXT = {"type": ["string", "null"]}
NUMBERS = {"type": ["object", "null"], "additionalProperties": NUMBER}
CPUS = {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0}}
COLOR = {"type": "string", "pattern": r"^#[0-9a-fA-F]{6}\Z", "description": "a colour like #4caf50"}

# the busy processes outside a run beside its windows or the host card (measure/neighbours.py)
NEIGHBOURS = {"type": ["array", "null"], "items": {"type": "object", "required": ["pid", "name", "cores"], "properties": {
    "pid": {"type": "integer"}, "name": {"type": "string"}, "cores": {"type": "number"}}}}

PROFILE = {"type": "object", "properties": {
    **{k: NUMBER for k in ("samples", "overhead_pct", "cpu_us_per_req_profiled", "req_per_s", "requests_ok",
                           "server_cpu_s", "window_s", "duration_s", "frequency_hz", "fold_seconds", "pyspy_kept",
                           "pyspy_errors", "pyspy_behind_s", "pyspy_error_share", "pid_filter", "started_unix_ns", "lead_s",
                           "unnamed_jit_share", "jit_elf_files", "jit_elf_kept")},
    **{k: TEXT for k in ("event", "profiler", "weight", "call_graph", "plan", "scope")},
    "too_few_samples": FLAG,
    "syscalls": {"type": ["object", "null"], "properties": {
        "per_req": NUMBER, "writes_per_req": NUMBER, "events": NUMBERS, "events_per_req": NUMBERS,
        "by_syscall_per_req": NUMBERS}},
}}

OFFCPU = {"type": ["object", "null"], "properties": {
    **{k: NUMBER for k in ("waits", "threads", "off_cpu_s", "cut", "window_s", "requests_ok", "req_per_s",
                           "server_cpu_cores", "runnable_own_us")},
    "histogram": {"type": ["array", "null"], "items": {"type": "integer"}},
    "ports": {"type": ["array", "null"], "items": {"type": "integer"}},
    "reasons": {"type": ["array", "null"], "items": {"type": "object", "properties": {
        "reason": {"type": "string"}, **{k: NUMBER for k in ("ms", "share_pct", "waits", "mean_us", "waits_per_req")}}}},
    "sockets": NUMBERS, "runnable_to": NUMBERS, "verdict": TEXT, "contention": TEXT,
    "asleep": {"type": ["array", "null"], "items": {"type": "object", "properties": {
        "tid": {"type": "integer"}, **{k: TEXT for k in ("name", "state", "wchan")}}}},
}}

RESULT = {"type": "object", "properties": {
    "status": {"enum": list(SERVER_STATUSES)},
    **{k: NUMBER for k in ("req_per_s", "req_per_cpu_s", "cpu_us_per_req", "server_cpu_cores", "client_cpu_cores",
                           "server_cpu_s", "client_cpu_s", "window_s", "requests_ok", "requests_non_ok",
                           "server_cpu_share", "client_cpu_share", "in_flight_share", "in_flight_ends", "repeat")},
    "repeats": {"type": ["array", "null"], "items": {"type": "object"}},
    **{k: FLAG for k in ("client_bound", "latency_bound", "unsaturated", "in_flight_flag")},
    **{k: TEXT for k in ("app", "ruler", "cpu_note", "error", "server", "description", "profiler")},
    "latency": NUMBERS, "memory": NUMBERS, "proc": NUMBERS, "proc_per_req": NUMBERS, "offcpu": OFFCPU,
    "profile": {"anyOf": [{"type": "null"}, PROFILE]},
    "spread": {"type": ["object", "null"]}, "neighbours": NEIGHBOURS, "steal": NUMBERS,
    "halting": CPUS, "syscalls": {"type": ["object", "null"], "properties": {
        **{k: NUMBER for k in ("per_req", "named_per_req", "writes_per_req", "reads_per_req", "bytes_per_write", "bytes_per_read",
                               "req_per_write", "eagain_reads_per_req", "req_per_s", "window_s", "total")},
        **{k: NUMBERS for k in ("events", "events_per_req", "by_syscall", "by_syscall_per_req")},
        "io": {"type": ["object", "null"], "additionalProperties": NUMBERS}}},
}}

METRICS = {"type": "object", "additionalProperties": RESULT, "description": "a mapping of server results"}
SERVER_RESULT = {**RESULT, "required": ["server", "status"]}     # SERVER/result.json: whose, and how it ended

NAMES = {"type": "array", "items": {"type": "string"}}
MANIFEST = {"type": "object", "required": ["status", "parameters"], "properties": {
    "mode": {"enum": list(MODES)},
    "status": {"enum": list(JOB_STATUSES)},
    "command": {"type": ["array", "null"], "items": {"type": "string"}},
    "parameters": {"type": "object", "required": ["servers"], "properties": {
        "servers": NAMES, "connections": NUMBER, "streams": NUMBER, "scenario": TEXT, "driver": TEXT,
        "precision": NUMBER}},
    "git": {"type": ["object", "null"], "properties": {"commit": TEXT, "dirty": FLAG,
                                                  "changed": {"type": ["array", "null"], "items": {"type": "string"}}}},
    "scenario": {"type": ["object", "null"], "properties": {"name": TEXT}},
    "servers": {"type": ["object", "null"], "additionalProperties": {"enum": list(SERVER_STATUSES)}},
    "cells": {"type": ["object", "null"], "additionalProperties": {
        "type": "object", "required": ["connections", "streams", "run"], "properties": {
            "connections": {"type": "integer"}, "streams": {"type": "integer"}, "run": {"type": "string"}}}},
    "stopped_by": TEXT, "started": TEXT, "finished": TEXT,
    "host": {"type": ["object", "null"], "properties": {"neighbours": NEIGHBOURS, "steal": NUMBERS, "halting": CPUS,
        "cards": {"type": ["array", "null"], "items": {"type": "object", "required": ["round"], "properties": {
            "round": {"type": "integer"}, "neighbours": NEIGHBOURS, "steal": NUMBERS, "halting": CPUS}}}}},
}, "if": {"properties": {"mode": {"const": "sweep"}}, "required": ["mode"]}, "then": {"required": ["cells"], "properties": {"cells": {"type": "object"}}}}

# categorize.yaml: every mapping closed (additionalProperties: false), so a misspelt key is refused. What a
# schema cannot say (regexes compiled through the guarded UserRegex, names defined twice, a `sub:` its
# category does not declare, the `app` category) is checked in rpcprof.analyze.rules_file.
CATEGORY_NAME = {"type": "string", "pattern": r"^\w[\w-]*\Z", "not": {"const": "other"},
                 "description": "a name of letters, digits, '-' and '_' (it names table columns, HTML and CSS "
                                "classes, and CATEGORY/SUB groups), not 'other' (the stacks no rule matches)"}
SUB_NAME = {"type": "string", "pattern": r"^[a-z0-9][a-z0-9-]*\Z", "not": {"const": "other"},
            "description": "a lower-case word (letters, digits, '-'), not 'other' (CATEGORY/other is what no "
                           "sub-category rule takes)"}


def _closed(required: list[str], **properties) -> dict:
    """A mapping with exactly these keys, the required ones among them."""
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": False}


_EXAMPLES = {"type": "array", "minItems": 1, "items": {"type": "string"},
             "description": "a non-empty list of frame names"}
_WHERE = {"enum": ["any", "kernel", "user"]}
_GROUP_RULE = _closed(["name", "match", "examples"], name={"type": "string"}, match={"type": "string"},
                      where=_WHERE, examples=_EXAMPLES)
_RULE = {**_closed(["name", "match", "examples"], **_GROUP_RULE["properties"], sub={"type": "string"},
                   level={"enum": [1, 2]}),
         "if": {"properties": {"level": {"const": 2}}, "required": ["level"]},
         "then": {"required": ["sub"], "description": "a level-2 rule needs a `sub`: the sub-category it decides"}}
_GROUPS = _closed(["groups"], rest={"type": "string"}, description={"type": "string"},   # the tax and waits views
                  groups={"type": "array", "items": _closed(
                      ["name", "color"], name={"type": "string"}, color=COLOR, description={"type": "string"},
                      rules={"type": ["array", "null"], "items": _GROUP_RULE})})
_NAMES = {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "description": "a list of category names"}
# how the reports group and order the categories (rpcprof.analyze.rules_file.Groups says what each is)
_CATEGORY_GROUPS = _closed([], socket=_NAMES, above_socket=_NAMES, user_space=_NAMES, seed_000_columns=_NAMES,
                           reads={"type": "string"}, writes={"type": "string"}, scheduling={"type": "string"})
RULES = _closed(["categories"], other_color=COLOR, tax=_GROUPS, waits=_GROUPS, groups=_CATEGORY_GROUPS, categories={
    "type": "array", "items": _closed(
        ["name", "color", "rules"], name=CATEGORY_NAME, color=COLOR, description={"type": "string"},
        rules={"type": ["array", "null"], "items": _RULE},
        subcategories={"type": ["array", "null"], "items": _closed(["name"], name=SUB_NAME,
                                                                    description={"type": "string"})})})

# servers/NAME/server.yaml (servers/README.md); `app` and `ruler` are compiled through UserRegex where it
# is loaded (rpcprof.measure.servers).
_REGEX = {"type": ["string", "null"], "description": "a regex (Python re.search) for frame names"}
SERVER = _closed(
    ["description", "language", "profiler", "run", "app"],
    description={"type": "string"}, language={"type": "string"}, profiler={"enum": list(PROFILERS)},
    run={"type": "array", "minItems": 1, "items": {"type": "string"},
         "description": "a non-empty list of strings (an argv)"},
    app=_REGEX, ruler=_REGEX,
    params={"type": ["object", "null"], "additionalProperties": {"type": ["string", "number", "boolean"]}},
    call_graph={"enum": list(CALL_GRAPHS)},   # perf's unwinding: rpcprof/profiler_names.py
    # where the server runs: its own folder, or a folder of the run (SERVER/workdir) for runtimes that write
    # profiling files into their working directory (V8's jit-PID.dump), so those stay with the run
    workdir={"enum": ["folder", "run"]},
    # a command run when a profile window ends, after the profiler stopped and before its samples are
    # symbolised: a JIT runtime writing the map that names its code (/tmp/perf-PID.map)
    after_profile={"type": "array", "minItems": 1, "items": {"type": "string"},
                   "description": "a non-empty list of strings (an argv, {pid} the server's PID)"},
    # the least warm-up [s] under load before the server's CPU per request is steady (a JIT compiling its
    # hot code), measured; a shorter -w is raised to it
    warmup_s={"type": "number", "minimum": 0, "description": "a number of seconds, 0 or more"})

_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a string", "number": "a number",
               "integer": "a whole number", "boolean": "true or false", "null": "null"}


def kind(value) -> str:
    """What a value is, in the words of the messages: 'a number', 'a list'..."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    names = ((int, "a number"), (float, "a number"), (str, "a string"), (list, "a list"), (dict, "a mapping"))
    return next((name for t, name in names if isinstance(value, t)), type(value).__name__)


def _key(error, data) -> str:
    """The key path of an error, dotted; a list item that has a `name` is shown by it: rules[tokio]."""
    parts, node = [], data
    for step in error.absolute_path:
        node = node[step]
        if isinstance(step, int):
            name = node.get("name") if isinstance(node, dict) else None
            parts[-1] += f"[{name}]" if isinstance(name, str) and name else f"[{step + 1}]"
        else:
            parts.append(str(step))
    return ".".join(parts)


def _message(error, data) -> str:
    key, value, schema = _key(error, data), error.instance, error.schema
    where = f"key '{key}'" if key else "the file"
    if error.validator == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        want = " or ".join(_TYPE_NAMES[t] for t in types if t != "null")
        return f"{where} must be {want}, got {kind(value)}"
    if error.validator == "required":
        missing = next(k for k in error.validator_value if k not in value)
        why = f" ({schema['description']})" if "description" in schema else ""
        return (f"{where} has no key '{missing}'" if key else f"missing key '{missing}'") + why
    if error.validator == "additionalProperties":
        known = schema.get("properties", {})
        unknown = ", ".join(sorted(str(k) for k in value if k not in known))
        return (f"{where} has unknown key(s) {unknown}" if key else f"unknown top-level key(s) {unknown}") + \
            f" (known: {', '.join(sorted(known))})"
    if error.validator in ("enum", "const"):
        choices = error.validator_value if error.validator == "enum" else [error.validator_value]
        return f"{where} must be one of {', '.join(map(str, choices))}, got {value!r}"[:300]
    return f"{where} must be {schema.get('description', 'as documented')}, got {value!r}"[:300]


def check(data, schema: dict, path: Path | str, fix: str = "re-run or fix the file"):
    """data, if it has schema's types; else UserError `PATH: key 'K' must be T, got U; FIX`. Data found valid
    once (the same data under the same schema, by a hash of both) is not checked again: CHECKED keeps the hashes,
    and a report reading the same categorize.yaml again skips jsonschema's import and its walk."""
    key = _hash(data, schema)
    if key is not None and key in _checked():
        return data
    import jsonschema                      # here: its import costs a report that reads no run file 70 ms
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        raise UserError(f"{path}: {_message(error, data)}; {fix}")
    if key is not None:
        _remember(key)
    return data


def _hash(data, schema: dict) -> str | None:
    import hashlib
    import json
    try:
        text = json.dumps([data, schema], sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):        # what JSON cannot say exactly (a date, NaN): checked every time
        return None
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@cache
def _checked() -> set[str]:
    try:
        return set(CHECKED.read_text(encoding="ascii").split())
    except (OSError, UnicodeDecodeError):
        return set()


def _remember(key: str) -> None:
    _checked().add(key)
    with suppress(OSError):
        if CHECKED.parent.is_dir() and (not CHECKED.exists() or CHECKED.stat().st_size < CHECKED_MAX):
            with open(CHECKED, "a", encoding="ascii") as f:     # one short line: appended whole
                f.write(key + "\n")
