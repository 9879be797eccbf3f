"""One row generator, four formats: table (aligned text), markdown, json, csv.

Columns are (key, header) pairs; headers carry units. Text columns align left, numbers right. Names
from profiles and run files go through report/text.py's sink for the format (terminal escapes, markdown
cells, csv fields); json escapes them itself.
"""
from __future__ import annotations

import csv
import io
import json
import math

from rpcprof.report.text import csv_field, markdown_cell, terminal

FORMATS = ("table", "markdown", "json", "csv")


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render(rows: list[dict], columns: list[tuple[str, str]], fmt: str = "table") -> str:
    """Rows rendered in fmt; json keeps every key of every row, the others show the columns."""
    if fmt == "json":
        return json.dumps(rows, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([csv_field(h) for _, h in columns])
        for r in rows:
            w.writerow(["" if r.get(k) is None else csv_field(r.get(k)) for k, _ in columns])
        return buf.getvalue()
    sink = markdown_cell if fmt == "markdown" else terminal
    cells = [[sink(cell(r.get(k))) for k, _ in columns] for r in rows]
    heads = [sink(h) for _, h in columns]
    numeric = [all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) or r.get(k) is None
                   for r in rows) for k, _ in columns]
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
