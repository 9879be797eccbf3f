"""pprof profiles in: gzip'd profile.proto as go tool pprof, net/http/pprof, Pyroscope and Parca write it,
read into the stacks the analysis uses, (frames root-first, weight). rpcprof.folded.open_folded calls it for
a file that is_pprof() says is one, so every command that reads folded stacks reads pprof too.

Which file is pprof: a name ending in .pb.gz, .pb, .pprof or .pprof.gz; or gzip content (1f 8b) under a
name that does not end in .gz (`curl -o profile .../debug/pprof/profile`), which read as folded text
could only fail. Anything else is folded text as before (NAME.gz: gzip'd folded text).

Which values: the sample type cpu/nanoseconds when the profile declares it (Go's CPU profile declares
samples/count and cpu/nanoseconds), else samples/count; a profile with neither (heap, mutex...) is
refused. Weights are those values as integers: nanoseconds of CPU, or samples.

Frames: each location's lines, the inlined ones as frames of their own (pprof lists a location's lines
leaf first), the function's name (else its system name); a location without lines is its mapping's file
name in brackets, else [unknown], as inferno names an unsymbolised frame; a frame of the mapping
[kernel.kallsyms] gets perf's kernel mark `_[k]`. Labels are ignored: samples with the same frames are
summed into one stack. Samples whose value is 0 are left out.

The app rule: a profile that `report.py export` wrote carries the server's app pattern as a comment,
`rpcprof app: REGEX` (APP_COMMENT); app_of() gives it, so a profile read back with no --app puts its
handler's samples in app as the run did.
"""
from __future__ import annotations

import zlib
from pathlib import Path

from rpcprof.errors import UserError

SUFFIXES = (".pb.gz", ".pb", ".pprof", ".pprof.gz")
GZIP_MAGIC = b"\x1f\x8b"
MAX_BYTES = 1 << 30          # decompressed: a profile of 10 M distinct stacks is a few hundred MB
WEIGHT_LIMIT = 10 ** 15      # as for a folded count: 11 days of CPU in ns on one stack, beyond any profile's
CPU, SAMPLES = ("cpu", "nanoseconds"), ("samples", "count")
KERNEL_MAPPING = "[kernel.kallsyms]"    # perf's name for the kernel, and parca-agent's
FIX = "download the profile again, or export it again from its source (go tool pprof -proto, Pyroscope, Parca)"

APP_COMMENT = "rpcprof app: "
_declared: dict[tuple, tuple[str, str]] = {}       # file identity -> the sample type its weights were read as
_apps: dict[tuple, str | None] = {}                # file identity -> the app pattern its comment carries


def is_pprof(path: Path | str) -> bool:
    """True when path names a pprof profile (by its name, or gzip content under a name without .gz)."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(SUFFIXES):
        return True
    if name.endswith(".gz"):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(2) == GZIP_MAGIC
    except OSError:
        return False            # missing, a directory...: open_folded says so as for any folded file


def read_pprof(path: Path | str) -> list[tuple[list[str], int]]:
    """The stacks of a pprof profile, (frames root-first, weight); UserError naming the file and the fix
    when it is missing, damaged, not a profile, or holds no samples."""
    path = Path(path)
    profile = _decode(path, _proto_bytes(path))
    stacks, sample_type = _stacks(path, profile)
    _declared[_identity(path)] = sample_type
    comments = [profile.string_table[i] for i in profile.comment if 0 <= i < len(profile.string_table)]
    _apps[_identity(path)] = next((c[len(APP_COMMENT):] for c in comments if c.startswith(APP_COMMENT)), None)
    return stacks


def app_of(path: Path | str) -> str | None:
    """The app pattern a pprof profile carries (a `rpcprof app: REGEX` comment, as report.py export writes
    it), or None."""
    path = Path(path)
    if _identity(path) not in _apps:
        read_pprof(path)
    return _apps[_identity(path)]


def sample_type_of(path: Path | str) -> tuple[str, str]:
    """(type, unit) of the values read_pprof takes from this profile: ("cpu", "nanoseconds") or ("samples", "count")."""
    path = Path(path)
    if _identity(path) not in _declared:
        read_pprof(path)
    return _declared[_identity(path)]


def _identity(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return (str(path),)
    return (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)


def _proto_bytes(path: Path) -> bytes:
    """The serialized profile.proto: the file gunzipped (every gzip member), or as it is when not gzip'd."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such pprof file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a pprof file (e.g. profile.pb.gz)") from None
    except OSError as e:
        raise UserError(f"{path}: unreadable: {e}") from None
    if not data.startswith(GZIP_MAGIC):
        if len(data) > MAX_BYTES:
            raise _too_big(path)
        return data
    out, total = [], 0
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(data, MAX_BYTES + 1 - total)
        except zlib.error as e:
            raise UserError(f"{path}: damaged gzip ({e}): {FIX}") from None
        total += len(chunk)
        out.append(chunk)
        if total > MAX_BYTES:
            raise _too_big(path)
        if not d.eof:
            raise UserError(f"{path}: truncated: the gzip stream ends after {total:,} bytes of profile, before its end "
                            f"marker (a download cut short?): {FIX}")
        data = d.unused_data.lstrip(b"\0")          # a further member, or the padding some writers add
    return b"".join(out)


def _too_big(path: Path) -> UserError:
    return UserError(f"{path}: over {MAX_BYTES >> 20} MiB of profile.proto, more than rpcprof reads: narrow it at "
                     "its source (a shorter time range, one service; go tool pprof -proto -focus=...)")


def _decode(path: Path, raw: bytes):
    from google.protobuf.message import DecodeError

    from rpcprof.pprof import profile_pb2
    try:
        return profile_pb2.Profile.FromString(raw)
    except (DecodeError, RecursionError, ValueError) as e:
        raise UserError(f"{path}: not a pprof profile (profile.proto does not decode: {e}); give a pprof file "
                        "(a folded file gzip'd is NAME.gz)") from None


def _stacks(path: Path, profile) -> tuple[list[tuple[list[str], int]], tuple[str, str]]:
    strings = list(profile.string_table)

    def damaged(what: str) -> UserError:
        return UserError(f"{path}: damaged pprof profile: {what}; {FIX}")

    def string(i: int, what: str) -> str:
        if not 0 <= i < len(strings):
            raise damaged(f"{what} is string {i}, beyond its string table of {len(strings)}")
        return strings[i]

    if not profile.sample_type:
        raise UserError(f"{path}: not a pprof profile: it declares no sample type; give a CPU profile "
                        "(e.g. /debug/pprof/profile?seconds=N)")
    if not strings or strings[0] != "":
        raise damaged("its string table does not start with the empty string")
    types = [(string(t.type, f"sample type {k}"), string(t.unit, f"sample type {k}'s unit"))
             for k, t in enumerate(profile.sample_type)]
    chosen = CPU if CPU in types else SAMPLES if SAMPLES in types else None
    if chosen is None:
        declared = ", ".join("/".join(t) for t in types)
        raise UserError(f"{path}: a pprof profile of {declared}, not of CPU: rpcprof categorises cpu/nanoseconds or "
                        "samples/count; give a CPU profile (e.g. /debug/pprof/profile?seconds=N)")
    index = types.index(chosen)

    mappings = {m.id: string(m.filename, f"mapping {m.id}'s file name") for m in profile.mapping}
    functions = {}
    for f in profile.function:
        functions[f.id] = (string(f.name, f"function {f.id}'s name")
                           or string(f.system_name, f"function {f.id}'s system name") or "[unknown]")
    locations = {}
    for loc in profile.location:
        mapping = mappings.get(loc.mapping_id, "")
        frames = []
        for line in loc.line:                   # leaf first: the inlined function, then its caller
            if line.function_id not in functions:
                raise damaged(f"location {loc.id} names function {line.function_id}, which it does not define")
            frames.append(functions[line.function_id])
        if not frames:
            frames = [f"[{Path(mapping).name}]" if Path(mapping).name else "[unknown]"]
        if mapping == KERNEL_MAPPING:
            frames = [f if f.endswith("_[k]") else f + "_[k]" for f in frames]
        locations[loc.id] = frames

    merged: dict[tuple[str, ...], int] = {}
    for k, sample in enumerate(profile.sample):
        if len(sample.value) != len(types):
            raise damaged(f"sample {k} has {len(sample.value)} values for {len(types)} sample types")
        value = sample.value[index]
        if value < 0:
            raise UserError(f"{path}: sample {k} has a negative {chosen[0]} value ({value}): a difference of two profiles "
                            "(pprof -diff_base)? give each profile on its own (report.py diff A B compares them)")
        if value >= WEIGHT_LIMIT:
            raise damaged(f"sample {k}'s value {value} is 10^15 or more, more than any profile's weight")
        if not value:
            continue
        leaf_first = []
        for loc in sample.location_id:
            frames = locations.get(loc)
            if frames is None:
                raise damaged(f"sample {k} names location {loc}, which it does not define")
            leaf_first.extend(frames)
        key = tuple(reversed(leaf_first)) or ("[unknown]",)
        merged[key] = merged.get(key, 0) + value
    if not merged:
        raise UserError(f"{path}: no samples (no {'/'.join(chosen)} value above 0): profile again while it is busy, "
                        "or give another profile")
    return [(list(frames), w) for frames, w in merged.items()], chosen
