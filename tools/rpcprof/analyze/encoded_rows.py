"""A folded file's rows read by the compiled core (rpcprof_core.rows, tools/core/src/grouped.rs, on a thread of its
own) for the categorisation (`table`, `top`, diff's sides): report.py reads no line itself. The core numbers
each distinct callers text (`a;b;`) and sends, a chunk of rows at a time, the texts new in it, the rows' leaves
joined by newlines, and each row's callers number and count (and, for `svg` and diff's rounds, the rows' lines as
inferno-flamegraph must read them: drawn_stacks). A chunk whose leaves no rule may match
(LeafFilter, one RE2 call over them all) is summed by callers number at once (numpy's add.at, exact on
integers), as Tally.add_rows sums such a run by callers text, or, when the frames are kept, counted under its
own leaves at once (stack_walk.new_leaves_at_once) when it can be; any other chunk is given to add_rows as rows.
At the end, the sums join the tally's weights by callers text: the same Breakdown as add_rows gives of every row.

read_into() gives False, having counted nothing that stays, when the core refuses the file (a line that is not
`STACK COUNT`, a damaged gzip stream): folded.refusal then says what is wrong with it.
"""
from __future__ import annotations

import struct
import sys
from array import array
from pathlib import Path

import rpcprof_core

_HEAD = struct.Struct("<5I")


def grown(a, n: int):
    """a (a numpy array) with zeros after it to hold n entries or more: a power of two, so it seldom grows."""
    if n <= len(a):
        return a
    import numpy as np
    return np.concatenate([a, np.zeros((1 << (n - 1).bit_length()) - len(a), a.dtype)])


def chunks(path: Path, drawn: bool = False):
    """(the callers texts so far, in the order of their numbers; leaves text; ids; counts; rows; the number of the
    callers text "" (a stack of one frame), None until met; with drawn, the rows' lines as inferno-flamegraph must
    read them, bytes) of each chunk of the core's rows of a folded file, ids and counts arrays (array.array, u32 and
    u64); rpcprof_core.Refused, or EOFError when the stream stops short."""
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
    callers: list[str] = []
    empty = None
    while True:
        if exactly(1) == b"E":
            return
        rows, new, new_len, leaves_len, drawn_len = _HEAD.unpack(exactly(_HEAD.size))
        texts = exactly(new_len).decode("utf-8").split("\n") if new else []
        if empty is None and "" in texts:
            empty = len(callers) + texts.index("")
        callers += texts
        leaves = exactly(leaves_len).decode("utf-8")
        ids, counts = array("I", exactly(4 * rows)), array("Q", exactly(8 * rows))
        if sys.byteorder == "big":
            ids.byteswap()
            counts.byteswap()
        yield (callers, leaves, ids, counts, rows, empty) + ((exactly(drawn_len),) if drawn else ())


def numbered_chunks(path: Path, none_match):
    """chunks' with ids and counts as numpy arrays (u32, u64) and, in place of the number of "", whether the chunk
    can be counted by its callers alone: none_match(leaves) (no rule may match a leaf) and no stack of one frame."""
    import numpy as np
    for callers, leaves, ids, counts, rows, empty in chunks(path):
        ids = np.frombuffer(ids, np.uint32)
        yield (callers, leaves, ids, np.frombuffer(counts, np.uint64), rows,
               none_match(leaves) and (empty is None or not (ids == empty).any()))


def drawn_stacks(path: Path) -> list[tuple[list[str], int]]:
    """The stacks of a folded file as inferno-flamegraph draws them, (frames, weight) in the file's order."""
    return [(stack.split(";"), int(w)) for *_, drawn in chunks(path, drawn=True)
            for stack, _, w in (line.rpartition(" ") for line in drawn.decode("utf-8").split("\n")[:-1])]


def read_into(tally, path: Path, between=None) -> bool:
    """Every row of the folded file counted into tally (a stack_walk.Tally whose others are not kept) by the
    core's chunks, between(at_once) called after each when given (at_once: whether it was counted at once);
    False when the core refused the file (tally then holds what it counted)."""
    if not Path(path).is_file():
        return False
    import numpy as np
    callers: list[str] = []
    sums, hit = np.zeros(0, np.uint64), np.zeros(0, np.bool_)     # per callers number: the rows summed at once
    try:
        for callers, leaves, ids, counts, rows, at_once in numbered_chunks(path, tally.leaf_filter().none_match):
            if at_once and not tally.keep_frames:
                sums, hit = grown(sums, len(callers)), grown(hit, len(callers))
                np.add.at(sums, ids, counts)
                hit[ids] = True
                tally.counted(rows, int(np.gcd.reduce(counts)))
            else:
                columns = list(map(callers.__getitem__, ids.tolist())), leaves.split("\n"), counts.tolist()
                at_once = at_once and tally.leaves_at_once(*columns)
                if not at_once:
                    tally.add_rows(list(zip(*columns)))
            if between:
                between(at_once)
    except (EOFError, rpcprof_core.Refused):
        return False
    under, hit = tally.under_callers, np.flatnonzero(hit)
    for text, w in zip(map(callers.__getitem__, hit.tolist()), sums[hit].tolist()):      # as add_rows adds them
        under[text] = under.get(text, 0) + w
    return True
