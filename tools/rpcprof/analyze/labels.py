"""Each stack's labels in an export (its category, its sub-category where its category has them, its tax
group), as the core's writers (rpcprof_core.labelled) read them: a block of records per chunk of the core's rows,
integers little-endian u32 (tools/core/src/labels.rs):

  b'L' ID N (KEY_LEN KEY VALUE_LEN VALUE)*N   label set ID is these N (key, value) pairs
  b'R' N ID*N                                 the label sets of the next N stacks, in order

The answers are the walk's that report.py table makes (analyze/stack_walk.py's Grouping), one per question; the
label sets are numbered in the order their first stack is met.
"""
from __future__ import annotations

import struct
import sys
from array import array
from pathlib import Path

from rpcprof.analyze.rules import Rules
from rpcprof.analyze.stack_walk import Grouping
from rpcprof.folded import chunks


def label_blocks(folded: Path, rules: Rules):
    """Every stack's label set, a block of records per chunk of the core's rows (folded.chunks; EOFError or
    rpcprof_core.Refused as they raise them)."""
    groupings = [Grouping(rules), Grouping(rules.using(level=2))]
    if rules.tax.groups:
        groupings.append(Grouping(rules.using(view="tax")))
    numbers: dict[tuple, int] = {}          # a stack's groups -> its label set's number (from 1)
    records: list[bytes] = []

    def number(groups: tuple) -> int:
        n = numbers[groups] = len(numbers) + 1
        # a stack's (category, sub-category[, tax group]) as its labels: the sub-category only where it is one
        labels = [(key, grouping.rules.all_categories[g]) for key, grouping, g in zip(("category", "subcategory", "tax"),
                                                                                         groupings, groups)]
        texts = [text.encode("utf-8") for key, name in labels if key != "subcategory" or "/" in name
                 for text in (key, name)]
        records.append(b"L" + struct.pack("<II", n, len(texts) // 2)
                       + b"".join(struct.pack("<I", len(data)) + data for data in texts))
        return n
    for chunk in chunks(folded):
        sets = array("I", [numbers.get(groups) or number(groups)
                           for groups in zip(*(grouping.rows(chunk)[0] for grouping in groupings))])
        if sys.byteorder == "big":
            sets.byteswap()
        yield b"".join(records) + b"R" + struct.pack("<I", len(sets)) + sets.tobytes()
        records.clear()
