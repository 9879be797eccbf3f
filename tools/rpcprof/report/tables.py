"""One row generator, four formats: table (aligned text), markdown, json, csv.

Columns are (key, header) pairs; headers carry units. Text columns align left, numbers right. Names
from profiles and run files go through report/text.py's sink for the format (terminal escapes, markdown
cells, csv fields); json escapes them itself.

Rows hold figures, never text made of them: where the table shows several figures in one cell
(`^54.7 [54.3-55.1]`), a Shown column makes that cell for table and markdown, and csv gets the figures in
columns of their own, as json has them as keys of the row.
"""
from __future__ import annotations

import csv
import io
import json
import math
from typing import Callable, NamedTuple

from rpcprof.report.text import csv_field, markdown_cell, terminal

FORMATS = ("table", "markdown", "json", "csv")


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:{',.0f' if abs(value) >= 1000 else '.1f' if abs(value) >= 100 else '.2f'}}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


class Shown(NamedTuple):
    """A table cell made of several figures of a row: text(row) in table and markdown (None: `-`); in csv,
    the figures' own columns (key, header)."""
    text: Callable[[dict], str | None]
    parts: tuple[tuple[str, str], ...]


def render(rows: list[dict], columns: list[tuple[str, str]], fmt: str = "table",
           shown: dict[str, Shown] | None = None) -> str:
    """Rows in fmt (json: every key of every row); shown: columns that table and markdown make of several figures."""
    shown = shown or {}
    if fmt == "json":
        return json.dumps(rows, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "csv":
        columns = [c for k, h in columns for c in (shown[k].parts if k in shown else [(k, h)])]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([csv_field(h) for _, h in columns])
        for r in rows:
            w.writerow(["" if r.get(k) is None else csv_field(r.get(k)) for k, _ in columns])
        return buf.getvalue()
    values = [[shown[k].text(r) if k in shown else r.get(k) for k, _ in columns] for r in rows]
    sink = markdown_cell if fmt == "markdown" else terminal
    cells = [[sink(cell(v)) for v in vs] for vs in values]
    heads = [sink(h) for _, h in columns]
    numeric = [all(isinstance(vs[i], (int, float)) and not isinstance(vs[i], bool) or vs[i] is None for vs in values)
               for i in range(len(columns))]
    if fmt == "markdown":
        lines = ["| " + " | ".join(heads) + " |",
                 "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
        return "\n".join(lines) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt}")
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(heads)]

    def line(vals):
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(vals, widths, numeric)).rstrip()

    out = [line(heads), line(["-" * w for w in widths])] + [line(c) for c in cells]
    return "\n".join(out) + "\n"
