"""pprof profiles in: gzip'd profile.proto as go tool pprof, net/http/pprof, Pyroscope and Parca write it,
read into the stacks the analysis uses, as collapsed lines. The readers of folded files (rpcprof.folded.open_folded,
the categorisation, the exports, the flame graph and the diff) read a file that is_pprof() says is one through them,
so every command that reads folded stacks reads pprof too.

Which file is pprof: a name ending in .pb.gz, .pb, .pprof or .pprof.gz; or gzip content (1f 8b) under a
name that does not end in .gz (`curl -o profile .../debug/pprof/profile`), which read as folded text
could only fail. Anything else is folded text as before (NAME.gz: gzip'd folded text).

How: by the compiled core (rpcprof_core.pprof, tools/core/src/pprof_in.rs), in process: the file streams (gunzipped
as it comes, every gzip member, stopped at MAX_BYTES of profile), field by field of profile.proto's wire format, each
sample kept as its location ids and values; the stacks written as collapsed lines, which every command then reads
as it reads a folded file (collapsed_file: once a file while the process runs).

Which values: the sample type cpu/nanoseconds when the profile declares it (Go's CPU profile declares
samples/count and cpu/nanoseconds), else samples/count; a profile with neither (heap, mutex...) is
refused. Weights are those values as integers: nanoseconds of CPU, or samples.

Frames: each location's lines, the inlined ones as frames of their own (pprof lists a location's lines
leaf first), the function's name (else its system name); a location without lines is its mapping's file
name in brackets, else [unknown], as inferno names an unsymbolised frame; a frame of the mapping
[kernel.kallsyms] gets perf's kernel mark `_[k]`. What a folded line cannot hold in a frame becomes what it can, as
async-profiler writes a method's descriptor: a name's `;` becomes `|`, its line breaks spaces. Labels are ignored:
samples with the same frames are summed into one stack, in the order first met. Samples whose value is 0 are left
out.

The app rule: a profile that `report.py export` wrote carries the server's app pattern as a comment,
`rpcprof app: REGEX` (APP_COMMENT); app_of() gives it, so a profile read back with no --app puts its
handler's samples in app as the run did.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import rpcprof_core

from rpcprof.errors import UserError

SUFFIXES = (".pb.gz", ".pb", ".pprof", ".pprof.gz")
GZIP_MAGIC = b"\x1f\x8b"
MAX_BYTES = 1 << 30          # decompressed: a profile of 10 M distinct stacks is a few hundred MB

APP_COMMENT = "rpcprof app: "
# file identity -> (its stacks as collapsed lines in _scratch, how many, the sample type its weights were read as,
# the app pattern its comment carries), read once (_read)
_collapsed: dict[tuple, tuple[Path, int, tuple[str, str], str | None]] = {}
_scratch: tempfile.TemporaryDirectory | None = None


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


def collapsed_file(path: Path | str) -> tuple[Path, int]:
    """(a file of a pprof profile's stacks as collapsed lines, how many), written once a file while the process runs,
    in a scratch folder deleted as it exits. UserError naming the file and the fix when it is missing, damaged,
    not a profile, or holds no samples."""
    return _read(path)[:2]


def app_of(path: Path | str) -> str | None:
    """The app pattern of a pprof profile's `rpcprof app: REGEX` comment (report.py export writes it), or None."""
    return _read(path)[3]


def sample_type_of(path: Path | str) -> tuple[str, str]:
    """(type, unit) of the values read from this profile: ("cpu", "nanoseconds") or ("samples", "count")."""
    return _read(path)[2]


def _read(path: Path | str) -> tuple[Path, int, tuple[str, str], str | None]:
    global _scratch
    path, key = Path(path), _identity(Path(path))
    if key in _collapsed:
        return _collapsed[key]
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise UserError(f"{path}: no such pprof file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a pprof file (e.g. profile.pb.gz)") from None
    except OSError as e:
        raise UserError(f"{path}: unreadable: {e}") from None
    try:
        _scratch = _scratch or tempfile.TemporaryDirectory(prefix="rpcprof-pprof-")
        out = Path(_scratch.name) / f"{len(_collapsed)}.collapsed"
        stacks, sample_type, app = rpcprof_core.pprof(str(path), str(out), MAX_BYTES)
    except rpcprof_core.Refused as e:
        raise UserError(f"{path}: {e}") from None
    except OSError as e:
        raise UserError(f"{path}: its stacks could not be written to a scratch file in {tempfile.gettempdir()} "
                        f"({e.strerror or e}): free space there, or set TMPDIR to a folder with room") from None
    _collapsed[key] = out, stacks, tuple(sample_type), app
    return _collapsed[key]


def _identity(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return (str(path),)
    return (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
