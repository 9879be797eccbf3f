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
                subcategory and tax group as attributes of those names; OTLP's JSON encoding for -o FILE.json,
                protobuf otherwise

Weights are the folded file's: perf samples weighted by their period in ns (cpu-clock), py-spy samples
counted; the unit comes from the run folder's profile.json when the file is in one, or from the sample
type a pprof profile declares (rpcprof.pprof_in; analyze/per_request.py's weight_unit).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rpcprof.analyze.categorize import Rules, open_folded
from rpcprof.analyze.per_request import weight_unit
from rpcprof.errors import UserError
from rpcprof.pprof_in import is_pprof
from rpcprof.rundir import write_bytes, write_text

# pprof's gzip at zlib's fastest level, as Go's runtime/pprof writes its profiles (gzip.BestSpeed): on a
# million-stack file (bench/distinct_stacks -s leaves), one after the other on one 2-vCPU host, the export took
# 3.1x as long at level 9 as at level 1, for a file 2.5 % smaller; the profile inside is the same byte for byte
GZIP_LEVEL = 1

FORMATS = ("pprof", "speedscope", "collapsed", "otlp")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def app_carried(profile: Path) -> str | None:
    """The app pattern a pprof profile carries (the comment report.py export writes), or None; a UserError
    naming the file when it is no regex."""
    from rpcprof.analyze.patterns import UserRegex
    from rpcprof.pprof_in import APP_COMMENT, app_of
    if not (is_pprof(profile) and Path(profile).is_file()):
        return None
    regex = app_of(profile)
    if regex is not None:
        UserRegex(regex, f"{profile}: its comment `{APP_COMMENT}...`")
    return regex


def to_pprof(stacks, rules: Rules, sample_type: tuple[str, str], app: str | None = None) -> bytes:
    """The gzip'd profile.proto of stacks, each sample labelled; app: the server's app pattern, kept as a comment."""
    from rpcprof.pprof import profile_pb2 as pb
    from rpcprof.pprof_in import APP_COMMENT

    strings: dict[str, int] = {"": 0}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    profile = pb.Profile()
    profile.sample_type.add(type=s(sample_type[0]), unit=s(sample_type[1]))
    if app:
        profile.comment.append(s(APP_COMMENT + app))
    locations: dict[str, int] = {}
    level2, tax = rules.using(level=2), rules.using(view="tax") if rules.tax_groups else None
    for frames, weight in stacks:
        sample = profile.sample.add()
        for frame in reversed(frames):             # pprof: the leaf first
            loc = locations.get(frame)
            if loc is None:
                loc = locations[frame] = len(locations) + 1
                profile.function.add(id=loc, name=s(frame), system_name=s(frame))
                profile.location.add(id=loc).line.add(function_id=loc)
            sample.location_id.append(loc)
        sample.value.append(weight)
        for key, value in labels_of(frames, rules, level2, tax):
            sample.label.add(key=s(key), str=s(value))
    profile.string_table.extend(strings)           # insertion order = index order
    return gzip.compress(profile.SerializeToString(), compresslevel=GZIP_LEVEL, mtime=0)


def labels_of(frames: list[str], rules: Rules, level2: Rules, tax: Rules | None) -> list[tuple[str, str]]:
    """A stack's labels: (category, its group), (subcategory, CATEGORY/SUB) where its category has them, (tax, its group)."""
    labels = [("category", rules.classify_stack(frames)[0])]
    sub = level2.classify_stack(frames)[0]
    if "/" in sub:
        labels.append(("subcategory", sub))
    if tax:
        labels.append(("tax", tax.classify_stack(frames)[0]))
    return labels


def to_otlp(stacks, rules: Rules, sample_type: tuple[str, str], as_json: bool) -> bytes:
    """An OpenTelemetry ProfilesData of stacks, each sample with its labels as attributes: JSON or protobuf."""
    from google.protobuf import json_format
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
    from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp

    data = otlp.ProfilesData()
    tables = data.dictionary
    strings: dict[str, int] = {"": 0}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    for table in (tables.mapping_table, tables.location_table, tables.function_table, tables.link_table,
                  tables.attribute_table, tables.stack_table):
        table.add()                          # every dictionary table starts with its zero value
    scope = data.resource_profiles.add().scope_profiles.add(scope=InstrumentationScope(name="rpcprof"))
    profile = scope.profiles.add(sample_type=otlp.ValueType(type_strindex=s(sample_type[0]), unit_strindex=s(sample_type[1])))
    locations: dict[str, int] = {}
    attributes: dict[tuple[str, str], int] = {}
    level2, tax = rules.using(level=2), rules.using(view="tax") if rules.tax_groups else None
    for frames, weight in stacks:
        leaf_first = []
        for frame in reversed(frames):
            loc = locations.get(frame)
            if loc is None:                  # a function and its location, at the same index of their tables
                loc = locations[frame] = len(tables.location_table)
                tables.function_table.add(name_strindex=s(frame), system_name_strindex=s(frame))
                tables.location_table.add().lines.add(function_index=loc)
            leaf_first.append(loc)
        tables.stack_table.add(location_indices=leaf_first)
        sample = profile.samples.add(stack_index=len(tables.stack_table) - 1, values=[weight])
        for label in labels_of(frames, rules, level2, tax):
            if label not in attributes:
                attributes[label] = len(tables.attribute_table)
                tables.attribute_table.add(key_strindex=s(label[0]), value=AnyValue(string_value=label[1]))
            sample.attribute_indices.append(attributes[label])
    tables.string_table.extend(strings)
    if as_json:
        return (json_format.MessageToJson(data, indent=None, sort_keys=True) + "\n").encode()
    return data.SerializeToString(deterministic=True)


def to_speedscope(stacks, name: str, sample_type: tuple[str, str]) -> str:
    index: dict[str, int] = {}
    samples = [[index.setdefault(f, len(index)) for f in frames] for frames, _ in stacks]
    weights = [w for _, w in stacks]
    doc = {"$schema": SPEEDSCOPE_SCHEMA, "exporter": "rpcprof", "name": name, "activeProfileIndex": 0,
           "shared": {"frames": [{"name": f} for f in index]},
           "profiles": [{"type": "sampled", "name": name, "unit": "nanoseconds" if sample_type[1] == "nanoseconds" else "none",
                         "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights}]}
    return json.dumps(doc, separators=(",", ":")) + "\n"


def to_collapsed(stacks) -> str:
    return "".join(f"{';'.join(frames)} {w}\n" for frames, w in stacks)


def _streamable(folded: Path, out: Path, parent_made: bool = True) -> bool:
    """Whether an export of folded to out may be made as the file is read: a folded file (not a pprof
    profile) written to another file, in a folder that exists (unless the export makes it: parent_made=False)."""
    return not (is_pprof(folded) or not folded.is_file() or out.is_dir() or (parent_made and not out.parent.is_dir())
                or out.resolve() == folded.resolve())


def _write_streamed(out: Path, write) -> int | None:
    """write(f) into out, whole or not at all (rundir.output_file): the stacks it gives; None, out left as it
    was, when it gives None or the block reader raises Irregular (export then reads the file whole, as before)."""
    from rpcprof.analyze.folded_blocks import Irregular
    from rpcprof.rundir import output_file
    try:
        with output_file(out) as f:
            stacks = write(f)
            if stacks is None:
                raise Irregular              # nothing written: read whole, as before
    except Irregular:
        return None
    return stacks


def _encoded(out: Path, write) -> int | None:
    """_write_streamed(out, write) with the compiled encoder's write (report/encoder.py), when it is there and
    out's folder is (export makes it only once the input is known good); None, out left as it was, otherwise."""
    from rpcprof.report import encoder
    return _write_streamed(out, write) if encoder.available() and out.parent.is_dir() else None


def stream_collapsed(folded: Path, out: Path) -> int | None:
    """export's collapsed stacks of a folded file, written as it is read (analyze/folded_blocks.py): the number
    of stacks written; None, having written nothing, when export must read it whole (a pprof profile, a line
    it does not take, an output it would refuse, a file whose weights are all 0: its error comes from there)."""
    from rpcprof.analyze.folded_blocks import write_collapsed

    def write(f) -> int | None:
        stacks, total = write_collapsed(folded, f)
        return stacks if total else None     # open_folded names the file

    return _write_streamed(out, write) if _streamable(folded, out) else None


def stream_profile(folded: Path, rules: Rules, out: Path, app: str | None) -> int | None:
    """export's pprof profile of a folded file, made as it is read (report/pprof_stream.py) and written whole:
    the number of stacks; None, having written nothing, when export must read it whole (as stream_collapsed)."""
    from rpcprof.report import encoder
    from rpcprof.report.pprof_stream import to_pprof_blocks
    if not _streamable(folded, out, parent_made=False):
        return None
    n = _encoded(out, lambda f: encoder.write_pprof(folded, rules, weight_unit(folded), app, f))
    if n is not None:
        return n
    made = to_pprof_blocks(folded, rules, weight_unit(folded), app)
    if made is None:
        return None
    chunks, stacks = made
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"-o {out}: cannot write it ({e.strerror or e}); choose a writable place") from None
    return _write_streamed(out, lambda f: (f.writelines(chunks), stacks)[1])


def stream_document(folded: Path, out: Path, fmt: str, rules: Rules) -> int | None:
    """export's speedscope document or OTLP profile (protobuf, or JSON for -o FILE.json) of a folded file, made as
    it is read (report/speedscope_stream.py, otlp_stream.py, otlp_json_stream.py): the number of stacks; None,
    having written nothing, when export must read it whole (as stream_collapsed)."""
    from rpcprof.report import encoder
    from rpcprof.report.otlp_json_stream import write_otlp_json
    from rpcprof.report.otlp_stream import write_otlp
    from rpcprof.report.speedscope_stream import write_speedscope
    if not _streamable(folded, out):
        return None
    unit = weight_unit(folded)
    if fmt == "speedscope":
        n = _encoded(out, lambda f: encoder.write_speedscope(folded, folded.name, unit, f))
        return n if n is not None else _write_streamed(out, lambda f: write_speedscope(folded, folded.name, unit, f))
    if out.suffix.lower() == ".json":
        return _write_streamed(out, lambda f: write_otlp_json(folded, rules, unit, f))
    n = _encoded(out, lambda f: encoder.write_otlp(folded, rules, unit, f))
    return n if n is not None else _write_streamed(out, lambda f: write_otlp(folded, rules, unit, f))


def export(folded: Path, rules: Rules, fmt: str, out: Path, app: str | None = None) -> int:
    """Write folded in fmt to out (whole or not at all); returns the number of stacks written. app: the app
    pattern rules hold (pprof keeps it)."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "collapsed":
        n = stream_collapsed(Path(folded), Path(out))
        if n is not None:
            return n
    if fmt == "pprof":
        n = stream_profile(Path(folded), rules, Path(out), app)
        if n is not None:
            return n
    if fmt in ("speedscope", "otlp"):
        n = stream_document(Path(folded), Path(out), fmt, rules)
        if n is not None:
            return n
    stacks = open_folded(folded)
    out = Path(out)
    if out.resolve() == Path(folded).resolve():
        raise UserError(f"-o {out}: is the profile being exported; give another file name")
    if out.is_dir():
        raise UserError(f"-o {out}: is a directory; give the name of the file to write")
    sample_type = weight_unit(folded)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "pprof":
            write_bytes(out, to_pprof(stacks, rules, sample_type, app))
        elif fmt == "otlp":
            write_bytes(out, to_otlp(stacks, rules, sample_type, out.suffix.lower() == ".json"))
        elif fmt == "speedscope":
            write_text(out, to_speedscope(stacks, Path(folded).name, sample_type))
        else:
            write_text(out, to_collapsed(stacks))
    except OSError as e:
        raise UserError(f"-o {out}: cannot write it ({e.strerror or e}); choose a writable place") from None
    return len(stacks)
