"""Folded stacks (`frame;frame;... COUNT` lines), as inferno and py-spy write them: read here for every
layer that needs them (folding checks a py-spy file, the analysis categorises them). A pprof profile is
read by rpcprof.pprof_in into the same stacks. What a file's weights are (weight_unit) its header says for
pprof, the profile record beside it in a run folder (rpcprof.rundir) for perf's.
"""
from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import Iterable, Iterator

from rpcprof.errors import UserError
from rpcprof.pprof_in import is_pprof, read_pprof, sample_type_of
from rpcprof.rundir import read_profile

WAKE_SEPARATOR = "--"     # between the waker's stack and the sleeper's in a wake-up stack (as bcc's offwaketime)


def parse_folded(lines: Iterable[str]) -> Iterator[tuple[str, int]]:
    """(stack as written, `a;b;c`, weight) for each `a;b;c 123` line; py-spy raw output is the same format."""
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line or line.isspace():         # what str.strip() removes is what isspace() tests
            continue
        stack, sep, count = line.rpartition(" ")
        # ASCII digits only: int() also takes '١٢' (Arabic-Indic) and isdigit() '²', which perf and
        # inferno never write: such a count is a damaged line, not a weight
        if not sep or not (count.isascii() and count.isdigit()):
            raise UserError(f"line {lineno} is not a folded stack ('frame;frame;... COUNT' with COUNT in "
                            f"0-9): {line[:80]!r}")
        if len(count) > 15:
            # 10^15 ns is 11 days of CPU on one stack: beyond that, not a weight perf or py-spy writes, and
            # inferno's 64-bit sums would overflow
            raise UserError(f"line {lineno}: count {count[:20]}{'...' if len(count) > 20 else ''} is 10^15 or more, "
                            "more than any profile's weight: a damaged line")
        yield stack, int(count)


def read_folded(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """(frames root-first, weight) for each `a;b;c 123` line; py-spy raw output is the same format."""
    for stack, weight in parse_folded(lines):
        yield stack.split(";"), weight


def stream_folded(path: Path | str) -> Iterator[tuple[str, int]]:
    """(stack as written, weight) of each line of a folded file (.gz too; bytes that are not UTF-8 read as
    U+FFFD), read as it goes; UserError naming the file when it is missing or damaged."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        # lines end at LF only (as inferno reads them): a CR inside a frame stays in its name
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="\n") as f:
            yield from parse_folded(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such folded file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a folded file (e.g. RUN/SERVER/perf.folded)") from None
    except (OSError, EOFError) as e:
        raise UserError(f"{path}: unreadable: {e}") from None
    except UserError as e:
        raise UserError(f"{path}: {e}") from None


def refusal(path: Path | str) -> UserError:
    """The error for a folded file the compiled core refused: stream_folded's, which names the file and the line."""
    for _ in stream_folded(path):
        pass
    return UserError(f"{path}: not a folded file ('frame;frame;... COUNT' lines)")


def no_samples(path: Path | str) -> UserError:
    """The error for a file whose stacks weigh nothing."""
    return UserError(f"{path}: no samples (the file is empty or every count is 0): profile again, or "
                     "give another folded file")


def open_folded(path: Path | str) -> list[tuple[list[str], int]]:
    """The stacks of a folded file (stream_folded), or of a pprof profile (rpcprof.pprof_in says which files
    are); UserError naming the file when it is missing, damaged, or holds no samples."""
    path = Path(path)
    if is_pprof(path):
        return read_pprof(path)
    stacks = [(stack.split(";"), w) for stack, w in stream_folded(path)]
    if not any(w for _, w in stacks):
        raise no_samples(path)
    return stacks


def sample_weight(stacks: list[tuple[list[str], int]]) -> int:
    """The weight of one sample: the gcd of the weights (perf's period, as inferno-collapse-perf weighted
    the stacks; 1 for counts)."""
    return math.gcd(*(w for _, w in stacks)) or 1


def weight_unit(folded: Path | str) -> tuple[str, str]:
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
