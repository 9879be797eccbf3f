"""pprof profiles in: gzip'd profile.proto as go tool pprof, net/http/pprof, Pyroscope and Parca write it,
read into the stacks the analysis uses, (frames root-first, weight). rpcprof.folded.open_folded calls it for
a file that is_pprof() says is one, so every command that reads folded stacks reads pprof too.

Which file is pprof: a name ending in .pb.gz, .pb, .pprof or .pprof.gz; or gzip content (1f 8b) under a
name that does not end in .gz (`curl -o profile .../debug/pprof/profile`), which read as folded text
could only fail. Anything else is folded text as before (NAME.gz: gzip'd folded text).

How: as the file streams (CHUNK at a time, gunzipped as it comes, stopped at MAX_BYTES of profile), field
by field of profile.proto's wire format, each sample kept as its locations and values alone: neither the
file nor its decompressed bytes are ever held whole.

Which values: the sample type cpu/nanoseconds when the profile declares it (Go's CPU profile declares
samples/count and cpu/nanoseconds), else samples/count; a profile with neither (heap, mutex...) is
refused. Weights are those values as integers: nanoseconds of CPU, or samples.

Frames: each location's lines, the inlined ones as frames of their own (pprof lists a location's lines
leaf first), the function's name (else its system name); a location without lines is its mapping's file
name in brackets, else [unknown], as inferno names an unsymbolised frame; a frame of the mapping
[kernel.kallsyms] gets perf's kernel mark `_[k]`. What a folded line cannot hold in a frame becomes what it can, as
async-profiler writes a method's descriptor: a name's `;` becomes `|`, its line breaks spaces. Labels are ignored: samples with the same frames are
summed into one stack. Samples whose value is 0 are left out.

The app rule: a profile that `report.py export` wrote carries the server's app pattern as a comment,
`rpcprof app: REGEX` (APP_COMMENT); app_of() gives it, so a profile read back with no --app puts its
handler's samples in app as the run did.
"""
from __future__ import annotations

import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

from rpcprof.errors import UserError

SUFFIXES = (".pb.gz", ".pb", ".pprof", ".pprof.gz")
GZIP_MAGIC = b"\x1f\x8b"
MAX_BYTES = 1 << 30          # decompressed: a profile of 10 M distinct stacks is a few hundred MB
WEIGHT_LIMIT = 10 ** 15      # as for a folded count: 11 days of CPU in ns on one stack, beyond any profile's
CPU, SAMPLES = ("cpu", "nanoseconds"), ("samples", "count")
KERNEL_MAPPING = "[kernel.kallsyms]"    # perf's name for the kernel, and parca-agent's
FIX = "download the profile again, or export it again from its source (go tool pprof -proto, Pyroscope, Parca)"

APP_COMMENT = "rpcprof app: "
# file identity -> (the sample type its weights were read as, the app pattern its comment carries)
_read_as: dict[tuple, tuple[tuple[str, str], str | None]] = {}


def is_pprof(path: Path | str) -> bool:
    """True when path names a pprof profile (by its name, or gzip content under a name without .gz)."""
    name = Path(path).name.lower()
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
    profile = _read(path)
    stacks, sample_type = _stacks(path, profile)
    comments = [profile.string_table[i] for i in profile.comment if 0 <= i < len(profile.string_table)]
    app = next((c[len(APP_COMMENT):] for c in comments if c.startswith(APP_COMMENT)), None)
    _read_as[_identity(path)] = sample_type, app
    return stacks


def _read_as_of(path: Path | str) -> tuple[tuple[str, str], str | None]:
    """(sample type, app pattern) of a pprof profile, read once."""
    if _identity(Path(path)) not in _read_as:
        read_pprof(path)
    return _read_as[_identity(Path(path))]


def app_of(path: Path | str) -> str | None:
    """The app pattern of a pprof profile's `rpcprof app: REGEX` comment (report.py export writes it), or None."""
    return _read_as_of(path)[1]


def sample_type_of(path: Path | str) -> tuple[str, str]:
    """(type, unit) of the values read_pprof takes from this profile: ("cpu", "nanoseconds") or ("samples", "count")."""
    return _read_as_of(path)[0]


def _identity(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return (str(path),)
    return (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)


CHUNK = 1 << 20          # read, and decompressed, this much at a time


def _open(path: Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise UserError(f"{path}: no such pprof file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a pprof file (e.g. profile.pb.gz)") from None
    except OSError as e:
        raise UserError(f"{path}: unreadable: {e}") from None


def _proto_chunks(path: Path) -> Iterator[bytes]:
    """The serialized profile.proto as the file is read: gunzipped (every gzip member), or as it is when not
    gzip'd; never more than CHUNK of input nor 4 CHUNKs of output at once, and no further than MAX_BYTES."""
    total = 0
    with _open(path) as f:
        data = f.read(CHUNK)
        if not data.startswith(GZIP_MAGIC):
            while data:
                total += len(data)
                if total > MAX_BYTES:
                    raise _too_big(path)
                yield data
                data = f.read(CHUNK)
            return
        while data:                             # one gzip member per turn
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while not d.eof:
                if not data:
                    data = f.read(CHUNK)
                    if not data:
                        raise UserError(f"{path}: truncated: the gzip stream ends after {total:,} bytes of profile, "
                                        f"before its end marker (a download cut short?): {FIX}")
                try:
                    out = d.decompress(data, min(4 * CHUNK, MAX_BYTES + 1 - total))
                except zlib.error as e:
                    raise UserError(f"{path}: damaged gzip ({e}): {FIX}") from None
                total += len(out)
                if total > MAX_BYTES:
                    raise _too_big(path)
                data = d.unconsumed_tail
                if out:
                    yield out
            data = (d.unused_data + f.read(CHUNK)).lstrip(b"\0")     # a further member, or padding


def _too_big(path: Path) -> UserError:
    return UserError(f"{path}: over {MAX_BYTES >> 20} MiB of profile.proto, more than rpcprof reads: narrow it at "
                     "its source (a shorter time range, one service; go tool pprof -proto -focus=...)")


class _Undecodable(Exception):
    """profile.proto's wire format is broken."""


def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    """(value, position after it), or None when buf ends first."""
    value = shift = 0
    while pos < len(buf):
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise _Undecodable("a varint longer than 10 bytes")
    return None


_FIXED = {1: 8, 5: 4}


def _fields(chunks: Iterator[bytes]) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each top-level field, decoded as the chunks come."""
    buf, pos = b"", 0
    for chunk in chunks:
        buf, pos = buf[pos:] + chunk, 0
        while pos < len(buf):
            tag = _varint(buf, pos)
            if tag is None:
                break
            (key, at), wire = tag, tag[0] & 7
            if key >> 3 == 0 or wire in (3, 4, 6, 7):
                raise _Undecodable(f"field {key >> 3} of wire type {wire}")
            if wire == 0:
                value = _varint(buf, at)
                if value is None:
                    break
                value, end = value
            elif wire == 2:
                size = _varint(buf, at)
                if size is None or size[1] + size[0] > len(buf):
                    break
                value, end = buf[size[1]:size[1] + size[0]], size[1] + size[0]
            else:
                end = at + _FIXED[wire]
                if end > len(buf):
                    break
                value = int.from_bytes(buf[at:end], "little")
            yield key >> 3, wire, value
            pos = end
    if pos < len(buf):
        raise _Undecodable("the last field is cut short")


def _read(path: Path) -> SimpleNamespace:
    """The parts of a profile that the stacks need, read field by field as the file streams: each sample
    kept as its locations and values alone (its labels are dropped)."""
    from google.protobuf.message import DecodeError

    from rpcprof.pprof import profile_pb2 as pb
    messages = {1: ("sample_type", pb.ValueType), 3: ("mapping", pb.Mapping), 4: ("location", pb.Location),
                5: ("function", pb.Function)}
    parts = SimpleNamespace(sample_type=[], sample=[], mapping=[], location=[], function=[], string_table=[],
                            comment=[])
    try:
        for field, wire, value in _fields(_proto_chunks(path)):
            if wire == 2 and field in messages:
                name, kind = messages[field]
                getattr(parts, name).append(kind.FromString(value))
            elif wire == 2 and field == 2:
                sample = pb.Sample.FromString(value)
                parts.sample.append((tuple(sample.location_id), tuple(sample.value)))
            elif wire == 2 and field == 6:
                parts.string_table.append(value.decode("utf-8"))
            elif field == 13:                  # comments: packed, or one varint per field
                parts.comment += pb.Profile.FromString(bytes([0x6a]) + _length(value)).comment if wire == 2 else [value]
    except (DecodeError, _Undecodable, UnicodeDecodeError, RecursionError, ValueError) as e:
        raise UserError(f"{path}: not a pprof profile (profile.proto does not decode: {e}); give a pprof file "
                        "(a folded file gzip'd is NAME.gz)") from None
    return parts


def _length(value: bytes) -> bytes:
    """value as a length-delimited field's payload: its length as a varint, then itself."""
    size, out = len(value), bytearray()
    while True:
        out.append(size & 0x7F | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            return bytes(out) + value


FOLDABLE = str.maketrans({";": "|", "\n": " ", "\r": " "})     # what a folded line's frame cannot hold


def _stacks(path: Path, profile) -> tuple[list[tuple[list[str], int]], tuple[str, str]]:
    strings = list(profile.string_table)

    def damaged(what: str) -> UserError:
        return UserError(f"{path}: damaged pprof profile: {what}; {FIX}")

    def string(i: int, what: str) -> str:
        if not 0 <= i < len(strings):
            raise damaged(f"{what} is string {i}, beyond its string table of {len(strings)}")
        return strings[i]

    def defined(table: dict, key: int, what: str):
        if key not in table:
            raise damaged(f"{what} {key}, which it does not define")
        return table[key]

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
    functions = {f.id: (string(f.name, f"function {f.id}'s name")
                        or string(f.system_name, f"function {f.id}'s system name") or "[unknown]").translate(FOLDABLE)
                 for f in profile.function}
    locations = {}
    for loc in profile.location:
        mapping = mappings.get(loc.mapping_id, "")
        # leaf first: the inlined function, then its caller
        frames = [defined(functions, line.function_id, f"location {loc.id} names function") for line in loc.line]
        if not frames:
            frames = [f"[{Path(mapping).name}]" if Path(mapping).name else "[unknown]"]
        if mapping == KERNEL_MAPPING:
            frames = [f if f.endswith("_[k]") else f + "_[k]" for f in frames]
        locations[loc.id] = frames

    merged: dict[tuple[str, ...], int] = {}
    for k, (location_ids, values) in enumerate(profile.sample):
        if len(values) != len(types):
            raise damaged(f"sample {k} has {len(values)} values for {len(types)} sample types")
        value = values[index]
        if value < 0:
            raise UserError(f"{path}: sample {k} has a negative {chosen[0]} value ({value}): a difference of two profiles "
                            "(pprof -diff_base)? give each profile on its own (report.py diff A B compares them)")
        if value >= WEIGHT_LIMIT:
            raise damaged(f"sample {k}'s value {value} is 10^15 or more, more than any profile's weight")
        if not value:
            continue
        leaf_first = [f for loc in location_ids for f in defined(locations, loc, f"sample {k} names location")]
        key = tuple(reversed(leaf_first)) or ("[unknown]",)
        merged[key] = merged.get(key, 0) + value
    if not merged:
        raise UserError(f"{path}: no samples (no {'/'.join(chosen)} value above 0): profile again while it is busy, "
                        "or give another profile")
    return [(list(frames), w) for frames, w in merged.items()], chosen
