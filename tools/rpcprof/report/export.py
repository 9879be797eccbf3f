"""A profile in the formats other tools read, each sample labelled with where rpcprof puts it.

    pprof       gzip'd profile.proto (google/pprof's, with the protobuf library): one sample per folded
                stack, labels category, subcategory (level 2, where the category has them) and tax, so
                `go tool pprof -top -tagfocus=category=send FILE` shows report.py's send share; the server's
                app pattern as a comment (rpcprof.pprof_in.APP_COMMENT), so read back with no --app it
                gives the run's shares, app included
    speedscope  speedscope's file format (https://www.speedscope.app/file-format-schema.json): one
                sampled profile, frames shared, stacks root first, weights as folded; no categories and no
                app pattern (the format has no place for them): read back, give --app
    collapsed   folded stacks, `frame;frame;... weight`, as Pyroscope's ingest (format=folded) takes them;
                no categories, no app pattern and no unit (ns or samples) either
    otlp        an OpenTelemetry profiles document (ProfilesData of opentelemetry-proto's profiles
                v1development, the version requirements.txt pins): one sample per folded stack, its category,
                subcategory and tax group as attributes of those names; what consumers key on (otlp_meta):
                service.name and process.pid on the resource, the window's start and length, the period
                type and period, profile.frame.type on each location (kernel, jvm, native or cpython), and
                the dictionary's zero entries; OTLP's JSON encoding for -o FILE.json, protobuf otherwise

Every format is written by rpcprof's compiled core (tools/core, the module rpcprof_core, called in process): it
reads the folded file itself, while each stack's labels are found here (report/labels.py). A pprof profile is given
to it as collapsed stacks in a temporary file, written as collapsed export writes them; a damaged line (named, with
its file: folded.refusal) or a file that weighs nothing is one line.

Weights are the folded file's: perf samples weighted by their period in ns (cpu-clock), py-spy samples
counted; the unit comes from the run folder's profile.json when the file is in one, or from the sample
type a pprof profile declares (rpcprof.pprof_in; rpcprof/folded.py's weight_unit).
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import rpcprof_core

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.labels import label_blocks
from rpcprof.analyze.patterns import UserRegex
from rpcprof.errors import UserError
from rpcprof.folded import no_samples, refusal, weight_unit
from rpcprof.pprof_in import APP_COMMENT, app_of, collapsed_file, is_pprof
from rpcprof.rundir import output_file, read_profile, read_result

# pprof's gzip at zlib's fastest level, as Go's runtime/pprof writes its profiles (gzip.BestSpeed): on a
# million-stack file (bench/distinct_stacks -s leaves), one after the other on one 2-vCPU host, the export took
# 3.1x as long at level 9 as at level 1, for a file 2.5 % smaller; the profile inside is the same byte for byte
GZIP_LEVEL = 1

FORMATS = ("pprof", "speedscope", "collapsed", "otlp")


def app_carried(profile: Path) -> str | None:
    """The app pattern a pprof profile carries (report.py export's comment), or None; UserError if it is no regex."""
    if not (is_pprof(profile) and Path(profile).is_file()):
        return None
    regex = app_of(profile)
    if regex is not None:
        UserRegex(regex, f"{profile}: its comment `{APP_COMMENT}...`")
    return regex


def write_collapsed(folded: Path, f) -> int:
    """The stacks of folded (a folded file, or a pprof profile) to f (a binary file, which the core writes afresh by
    its name) as `frame;...;frame weight` lines, a count with leading zeros written as its number: the stacks. A
    damaged line (named) or a file that weighs nothing raises UserError."""
    if is_pprof(folded):
        source, stacks = collapsed_file(folded)      # a UserError when it holds no samples
        shutil.copyfile(source, f.name)
        return stacks
    try:
        stacks, total = rpcprof_core.collapsed(str(folded), f.name)
    except rpcprof_core.Refused as e:
        raise refusal(folded, e) from None
    if not total:
        raise no_samples(folded)
    return stacks


def core_readable(path: Path) -> tuple[Path, int, int]:
    """(the file the core reads for path, its total weight, the gcd of its weights): path itself, or a pprof
    profile's stacks as collapsed lines (pprof_in.collapsed_file); UserError naming path when it is missing,
    damaged or weighs nothing."""
    source = collapsed_file(path)[0] if is_pprof(path) else path
    try:
        total, unit, _ = rpcprof_core.scan(str(source))
    except rpcprof_core.Refused as e:
        raise refusal(path, e) from None
    if not total:
        raise no_samples(path)
    return source, total, unit


def _core_writes(folded: Path, write) -> int:
    """write(source), source the file the core reads for folded (core_readable): the stacks written."""
    source = core_readable(folded)[0]
    try:
        return write(source)
    except (rpcprof_core.Refused, EOFError) as e:       # EOFError: the rows stopped short
        raise UserError(f"{folded}: no longer reads as it did a moment ago ({e or 'its end is gone'}); "
                        "run the command again") from None


def otlp_meta(folded: Path, source: Path, unit: str) -> dict:
    """What an OTLP profile of folded says of itself, as rpcprof_core.labelled's keywords: on its resource,
    service.name (the server's name: its folder in a run, else the file's name) and process.pid (an int) where
    the run kept one; the profile window's start (profile.json's started_unix_ns; in run folders from before it, the
    round's start, result.json's `started`) and length; the period type (the sample type) and period (the
    weights' greatest common divisor: perf's sampling period in ns; 1 for counted samples); and the frame type
    of a frame without inferno's `_[k]` or `_[j]` (native for perf, cpython for py-spy). source: the file the
    core reads."""
    import datetime as dt
    folder = folded.parent
    try:
        prof, result = read_profile(folder), read_result(folder) or {}
    except UserError:
        prof, result = {}, {}
    server = (folder.parent if re.fullmatch(r"round-\d+", folder.name) else folder).name if prof else folded.name.split(".")[0]
    pid = result.get("pid") or prof.get("pid_filter")
    resource = [("service.name", server)] + ([("process.pid", int(pid))] if pid else [])
    start = prof.get("started_unix_ns")
    if start is None and result.get("started"):
        start = int(dt.datetime.fromisoformat(result["started"]).astimezone().timestamp() * 1e9)
    _, period, _ = rpcprof_core.scan(str(source)) if unit == "nanoseconds" else (0, 1, 0)
    return {"resource": resource, "time_unix_nano": int(start or 0),
            "duration_nano": int(prof.get("duration_s", 0) * 1e9), "period": period,
            "native": "cpython" if prof.get("profiler") == "py-spy" else "native"}


def _otlp_json(protobuf: bytes) -> bytes:
    """OTLP's JSON encoding of a ProfilesData: the protobuf library's JSON mapping, keys sorted, but for trace and
    span ids, which OTLP's JSON writes as hex strings, not base64 (opentelemetry-proto's specification.md)."""
    import base64
    from google.protobuf import json_format
    from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
    doc = json_format.MessageToDict(otlp.ProfilesData.FromString(protobuf))
    for link in doc.get("dictionary", {}).get("linkTable", []):
        for key in ("traceId", "spanId"):
            if key in link:
                link[key] = base64.b64decode(link[key]).hex()
    return (json.dumps(doc, sort_keys=True) + "\n").encode()


def export(folded: Path, rules: Rules, fmt: str, out: Path, app: str | None = None) -> int:
    """Write folded in fmt to out, whole or not at all: the stacks written. app: the pattern rules hold (for pprof)."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    folded, out = Path(folded), Path(out)
    if out.resolve() == folded.resolve():
        raise UserError(f"-o {out}: is the profile being exported; give another file name")
    if out.is_dir():
        raise UserError(f"-o {out}: is a directory; give the name of the file to write")
    kind, unit = weight_unit(folded)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"-o {out}: cannot write it ({e.strerror or e}); choose a writable place") from None
    if fmt == "collapsed":
        with output_file(out) as f:
            return write_collapsed(folded, f)

    def write(src: Path, to: str) -> int:        # src: a file the core takes; to: the name of the file written
        if fmt == "speedscope":
            return rpcprof_core.speedscope(str(src), json.dumps(folded.name),
                                           "nanoseconds" if unit == "nanoseconds" else "none", to)
        if fmt == "pprof":
            return rpcprof_core.labelled("pprof", str(src), kind, unit, to, label_blocks(src, rules),
                                         GZIP_LEVEL, APP_COMMENT + app if app else None)
        return rpcprof_core.labelled("otlp", str(src), kind, unit, to, label_blocks(src, rules),
                                     period_type=(kind, unit), **otlp_meta(folded, src, unit))

    if fmt == "otlp" and out.suffix.lower() == ".json":
        with tempfile.NamedTemporaryFile(prefix="rpcprof-", suffix=".otlp") as tmp:
            n = _core_writes(folded, lambda src: write(src, tmp.name))
            data = _otlp_json(Path(tmp.name).read_bytes())
        with output_file(out) as f:
            f.write(data)
        return n
    with output_file(out) as f:       # the core writes it afresh (File::create) when it tries a second source
        return _core_writes(folded, lambda src: write(src, f.name))
