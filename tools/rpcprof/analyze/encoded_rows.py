"""A folded file's rows read by the compiled core (rpcprof_core.rows, tools/core/src/grouped.rs, on a thread of its
own) for the categorisation (analyze/stack_walk.py: `table`, `top`, `svg`, diff's sides, the exports' labels):
report.py reads no line itself. The core numbers each distinct callers text (`a;b;`) of the file and each distinct
leaf of a chunk of rows, and sends, a chunk at a time, the callers texts new in it, its leaves, and each row's
callers number, leaf number and count (and,
for `svg` and diff's rounds, the rows' lines as inferno-flamegraph must read them: drawn_stacks).

chunks() raises rpcprof_core.Refused when the core refuses the file (a line that is not `STACK COUNT`, a damaged
gzip stream), or EOFError when its stream stops short: folded.refusal then says what is wrong with it.
"""
from __future__ import annotations

import struct
import sys
from array import array
from pathlib import Path
from typing import NamedTuple

import rpcprof_core

_HEAD = struct.Struct("<6I")


class Chunk(NamedTuple):
    callers: list[str]        # every callers text so far, by number (`a;b;`, "" for a stack of one frame)
    leaves: list[str]         # the chunk's distinct leaves, by number
    callers_ids: array        # each row's callers number (u32)
    leaf_ids: array           # each row's leaf number (u32)
    counts: array             # each row's count (u64)
    drawn: bytes              # with drawn, the rows' lines as inferno-flamegraph must read them


def chunks(path: Path, drawn: bool = False):
    """Each Chunk of the core's rows of a folded file; rpcprof_core.Refused, or EOFError when the stream stops short."""
    blocks, data, at = iter(rpcprof_core.rows(str(path), drawn)), b"", 0

    def exactly(n: int) -> bytes:
        nonlocal data, at
        while len(data) - at < n:
            block = next(blocks, None)
            if block is None:
                raise EOFError
            data, at = data[at:] + block, 0
        at += n
        return data[at - n:at]

    def texts(count: int, length: int) -> list[str]:
        return exactly(length).decode("utf-8").split("\n") if count else []

    def numbers(kind: str, size: int) -> array:
        a = array(kind, exactly(size))
        if sys.byteorder == "big":
            a.byteswap()
        return a
    callers: list[str] = []
    while True:
        if exactly(1) == b"E":
            return
        rows, new_callers, callers_len, leaves, leaves_len, drawn_len = _HEAD.unpack(exactly(_HEAD.size))
        callers += texts(new_callers, callers_len)
        yield Chunk(callers, texts(leaves, leaves_len), numbers("I", 4 * rows), numbers("I", 4 * rows),
                    numbers("Q", 8 * rows), exactly(drawn_len))


def in_memory(stacks: list[tuple[list[str], int]]) -> Chunk:
    """Stacks held in memory ((frames root first, weight)) as one Chunk of rows."""
    callers: dict[str, int] = {}
    leaves: dict[str, int] = {}
    callers_ids = array("I", [callers.setdefault(";".join(frames[:-1]) + ";" if len(frames) > 1 else "", len(callers))
                              for frames, _ in stacks])
    leaf_ids = array("I", [leaves.setdefault(frames[-1], len(leaves)) for frames, _ in stacks])
    return Chunk(list(callers), list(leaves), callers_ids, leaf_ids, array("Q", [w for _, w in stacks]), b"")


def drawn_stacks(path: Path) -> list[tuple[list[str], int]]:
    """The stacks of a folded file as inferno-flamegraph draws them, (frames, weight) in the file's order."""
    return [(stack.split(";"), int(w)) for chunk in chunks(path, drawn=True)
            for stack, _, w in (line.rpartition(" ") for line in chunk.drawn.decode("utf-8").split("\n")[:-1])]
