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

Weights are the folded file's: perf samples weighted by their period in ns (cpu-clock), py-spy samples
counted; the unit comes from the run folder's profile.json when the file is in one, or from the sample
type a pprof profile declares (rpcprof.pprof_in).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rpcprof.analyze.categorize import Rules, open_folded
from rpcprof.errors import UserError
from rpcprof.pprof_in import is_pprof, sample_type_of
from rpcprof.rundir import read_profile, write_bytes, write_text

FORMATS = ("pprof", "speedscope", "collapsed")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def weight_unit(folded: Path) -> tuple[str, str]:
    """(sample type, unit) of a folded file's weights: ("cpu", "nanoseconds") for perf, else ("samples", "count");
    for a pprof profile, the sample type its weights were read as."""
    if is_pprof(folded):
        return sample_type_of(folded)
    try:
        prof = read_profile(Path(folded).parent)
    except UserError:
        prof = {}
    if prof.get("profiler") == "perf" or "period in ns" in str(prof.get("weight", "")):
        return "cpu", "nanoseconds"
    return "samples", "count"


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
        sample.label.add(key=s("category"), str=s(rules.classify_stack(frames)[0]))
        sub = level2.classify_stack(frames)[0]
        if "/" in sub:
            sample.label.add(key=s("subcategory"), str=s(sub))
        if tax:
            sample.label.add(key=s("tax"), str=s(tax.classify_stack(frames)[0]))
    profile.string_table.extend(strings)           # insertion order = index order
    return gzip.compress(profile.SerializeToString(), mtime=0)


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


def export(folded: Path, rules: Rules, fmt: str, out: Path, app: str | None = None) -> int:
    """Write folded in fmt to out (whole or not at all); returns the number of stacks written. app: the app
    pattern rules hold (pprof keeps it)."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
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
        elif fmt == "speedscope":
            write_text(out, to_speedscope(stacks, Path(folded).name, sample_type))
        else:
            write_text(out, to_collapsed(stacks))
    except OSError as e:
        raise UserError(f"-o {out}: cannot write it ({e.strerror or e}); choose a writable place") from None
    return len(stacks)
