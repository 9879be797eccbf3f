"""Which leaf frames of a folded file are seen once in the whole file, for the exports made as the file is read
(report/pprof_stream.py, otlp_stream.py, speedscope_stream.py): such a leaf is numbered without being kept by
name, so a fleet's million distinct leaves cost no dictionary entry.

The counts are kept per bucket of the strings' hash (ONCE_BITS of it), as 0, 1 or 2 (more): a bucket's count
is min(2, the leaves that fall there), or 2 where a caller frame or a marked string falls. Neither depends on
the order the lines are read in, so a file that is not gzip'd and of HALVES_FROM bytes or more is counted in two
halves at once, the first here and the second in a forked child (forked.py), and the halves' counts summed.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.analyze.folded_blocks import folded_rows, halfway
from rpcprof.analyze.rules import remember
from rpcprof.forked import Forked

ONCE_BITS = 24           # buckets of the counts: 16 MB
# a file read in two passes at once from this size (its halves here, diff's two sides' scans): below it the child's start and the sum of the halves' counts
# cost about what the half saves (a 10 MB file: 0.18 s in halves, 0.10 s whole; 36 MB: 0.56 s against 0.76 s)
HALVES_FROM = 16 << 20
_AT_MOST_2 = bytes(min(i, 2) for i in range(256))


def leaf_counts(path: Path, marked: list[str]) -> bytearray:
    """Per bucket of the strings' hash, 0, 1 or 2 (more): how many times a leaf frame of the file falls there,
    2 where a caller frame or one of marked does. A leaf whose bucket holds 1 is seen once in the whole
    file, as that leaf, and is never asked for again: its location need not be kept by name. Irregular,
    OSError, EOFError as folded_rows raises them."""
    path = Path(path)
    half = halfway(path, HALVES_FROM)
    if half is None:
        counts = _counts(path, 0, None)
    else:
        second = Forked(_counts, path, half, None)
        try:
            first = _counts(path, 0, half)
            counts = _sum(first, second.result())
        finally:
            second.stop()
    mask = (1 << ONCE_BITS) - 1
    for text in marked:
        counts[hash(text) & mask] = 2
    return counts


def _sum(a: bytearray, b: bytearray) -> bytearray:
    """Two halves' counts added bucket by bucket, at most 2: each is 0-2, so one integer sum adds every byte
    without a carry into the next."""
    n = len(a)
    total = (int.from_bytes(a, "little") + int.from_bytes(b, "little")).to_bytes(n, "little")
    return bytearray(total.translate(_AT_MOST_2))


def _counts(path: Path, start: int, stop: int | None) -> bytearray:
    """The counts of the lines in the bytes [start, stop) of the file (the whole file: 0, None)."""
    mask = (1 << ONCE_BITS) - 1
    counts = bytearray(1 << ONCE_BITS)
    seen: dict[str, None] = {}
    for _, rows in folded_rows(path, start, stop):
        for callers, leaf, _ in rows:
            i = hash(leaf) & mask
            if counts[i] < 2:
                counts[i] += 1
            if callers not in seen:
                remember(seen, callers, None)
                for frame in callers[:-1].split(";"):
                    counts[hash(frame) & mask] = 2
    return counts
