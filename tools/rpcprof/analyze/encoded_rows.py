"""A folded file's rows read by the compiled core (rpcprof_core.rows, tools/core/src/grouped.rs, on a thread of its
own) for the categorisation (`table`, `top`, diff's sides): report.py reads no line itself. The core numbers
each distinct callers text (`a;b;`) and sends, a chunk of rows at a time, the texts new in it, the rows' leaves
joined by newlines, and each row's callers number and count. A chunk whose leaves no rule may match
(LeafFilter, one RE2 call over them all) is summed by callers number at once (numpy's add.at, exact on
integers), as Tally.add_rows sums such a run by callers text, or, when the frames are kept, counted under its
own leaves at once (stack_walk.new_leaves_at_once) when it can be; any other chunk is given to add_rows as rows.
At the end, the sums join the tally's weights by callers text: the same Breakdown as folded_rows' rows give.

read_into() gives False, having counted nothing that stays, when the core refuses the file (a line folded_blocks
does not take): the caller then reads the file line by line, which says what is wrong with it.
"""
from __future__ import annotations

import struct
from pathlib import Path

import rpcprof_core

_HEAD = struct.Struct("<4I")


class _Sums:
    """Per callers number: the weight of the rows summed at once, and whether any was."""

    def __init__(self, np) -> None:
        self.np = np
        self.weights = np.zeros(1 << 12, np.uint64)
        self.hit = np.zeros(1 << 12, np.bool_)

    def add(self, ids, counts, known: int) -> None:
        if known > len(self.weights):
            size = 1 << (known - 1).bit_length()
            self.weights = self.np.concatenate([self.weights, self.np.zeros(size - len(self.weights), self.np.uint64)])
            self.hit = self.np.concatenate([self.hit, self.np.zeros(size - len(self.hit), self.np.bool_)])
        self.np.add.at(self.weights, ids, counts)
        self.hit[ids] = True

    def into(self, under: dict[str, int], callers: list[str]) -> None:
        """The sums added to under (callers text -> weight), as add_rows adds them."""
        hit = self.np.flatnonzero(self.hit)
        for i, w in zip(hit.tolist(), self.weights[hit].tolist()):
            text = callers[i]
            under[text] = under.get(text, 0) + w


class _Read:
    """The core's byte blocks read n bytes at a time."""

    def __init__(self, blocks) -> None:
        self.blocks, self.data, self.at = blocks, b"", 0

    def exactly(self, n: int) -> bytes:
        while len(self.data) - self.at < n:
            block = next(self.blocks, None)
            if block is None:
                raise EOFError
            self.data, self.at = self.data[self.at:] + block, 0
        self.at += n
        return self.data[self.at - n:self.at]


def chunks(path: Path):
    """(new callers texts, leaves text, ids, counts, rows) of each chunk of the core's rows of a folded file;
    rpcprof_core.Refused, or EOFError when the stream stops short."""
    import numpy as np
    exactly = _Read(iter(rpcprof_core.rows(str(path)))).exactly

    while True:
        kind = exactly(1)
        if kind == b"E":
            return
        rows, new, new_len, leaves_len = _HEAD.unpack(exactly(_HEAD.size))
        texts = exactly(new_len).decode("utf-8").split("\n") if new else []
        leaves = exactly(leaves_len).decode("utf-8")
        ids = np.frombuffer(exactly(4 * rows), np.uint32)
        counts = np.frombuffer(exactly(8 * rows), np.uint64)
        yield texts, leaves, ids, counts, rows


def read_into(tally, path: Path, between=None) -> bool:
    """Every row of the folded file counted into tally (a stack_walk.Tally whose others are not kept) by the
    core's chunks, between(at_once) called after each when given (at_once: whether it was counted at once);
    False when the core refused the file (tally then holds what it counted)."""
    if not Path(path).is_file() or tally.others is not None:
        return False
    import numpy as np
    try:
        callers: list[str] = []
        sums, none_match, empty = _Sums(np), tally.leaf_filter().none_match, None   # empty: the number of ""
        for texts, leaves, ids, counts, rows in chunks(path):
            if empty is None and "" in texts:
                empty = len(callers) + texts.index("")
            callers += texts
            at_once = none_match(leaves) and (empty is None or not (ids == empty).any())   # no stack of one frame
            if at_once and not tally.keep_frames:
                sums.add(ids, counts, len(callers))
                tally.counted(rows, int(np.gcd.reduce(counts)))
            else:
                columns = list(map(callers.__getitem__, ids.tolist())), leaves.split("\n"), counts.tolist()
                at_once = at_once and tally.leaves_at_once(*columns)
                if not at_once:
                    tally.add_rows(list(zip(*columns)))
            if between:
                between(at_once)
        sums.into(tally.under_callers, callers)
        return True
    except (EOFError, rpcprof_core.Refused):
        return False
