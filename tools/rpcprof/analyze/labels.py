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
from pathlib import Path

from rpcprof.analyze.encoded_rows import chunks
from rpcprof.analyze.rules import Rules
from rpcprof.analyze.stack_walk import Grouping


def label_blocks(folded: Path, rules: Rules):
    """Every stack's label set, a block of records per chunk of the core's rows (encoded_rows.chunks; EOFError or
    rpcprof_core.Refused as they raise them)."""
    import numpy as np
    groupings = [Grouping(rules), Grouping(rules.using(level=2))]
    if rules.tax.groups:
        groupings.append(Grouping(rules.using(view="tax")))
    names = [g.rules.all_categories for g in groupings]
    numbers: dict[int, int] = {}            # a stack's groups, as one integer -> its label set's number (from 1)
    for chunk in chunks(folded):
        key = np.zeros(len(chunk.counts), np.int64)
        for grouping, groups in zip(groupings, names):
            key = key * len(groups) + grouping.rows(chunk)[0]
        new, records = [], []
        distinct, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        for k in distinct[np.argsort(first)].tolist():
            if k not in numbers:
                numbers[k] = len(numbers) + 1
                new.append(k)
        for k in new:
            groups, rest = [], k
            for g in reversed(names):
                rest, i = divmod(rest, len(g))
                groups.append(g[i])
            # a stack's (category, sub-category[, tax group]) as its labels: the sub-category only where it is one
            labels = [(n, g) for n, g in zip(("category", "subcategory", "tax"), reversed(groups))
                      if n != "subcategory" or "/" in g]
            texts = [text.encode("utf-8") for pair in labels for text in pair]
            records.append(b"L" + struct.pack("<II", numbers[k], len(labels))
                           + b"".join(struct.pack("<I", len(data)) + data for data in texts))
        sets = np.array([numbers[k] for k in distinct.tolist()], "<u4")[inverse]
        yield b"".join(records) + b"R" + struct.pack("<I", len(sets)) + sets.tobytes()
