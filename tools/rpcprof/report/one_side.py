"""report.py diff's frames and categories present on one side only. A frame in B's stacks and in none of A's
is new; one in A's and in none of B's has vanished. Each comes with the share of its side's samples whose
stacks hold it (the mean over the side's rounds), largest first; a category is on one side only when its
share is above 0 there and 0 on the other side.

In the graph of two profiles without rounds (widths are B's), a new frame's boxes are filled teal; a
vanished frame has no width in B, so the stacks of A that hold it are drawn too, at A's width (scaled as A
is), its boxes filled amber; each says so in its hover text. With rounds the graph keeps significance's
colours: a frame seen in one side's rounds only is a box tested like any other (halves of one server's
rounds already differ in their thinnest frames).
"""
from __future__ import annotations

import heapq
import html
import re

from rpcprof.report.flame_rows import deannotated
from rpcprof.report.svg import FRAME_BOX, box_name, filled
from rpcprof.report.tables import render
from rpcprof.report.text import xml_chars

SHOWN = 15          # rows of each list in text
LISTED = 1000       # rows of each list in json (its count says how many there are in all)
NEW_FILL, VANISHED_FILL = "rgb(0,170,170)", "rgb(230,170,0)"
MARKS = "teal: in B only; amber: in A only, drawn at A's width"


def one_side_found(a: tuple[dict[str, float], int], b: tuple[dict[str, float], int], rows: list[dict]) -> dict:
    """{"frames_only_in_a"/"_b": [{"frame", "share" [%]}], the LISTED largest first, "frames_only_in_a_count"/
    "_b_count": how many in all, "categories_only_in_a"/"_b": [names]}; a, b: ({frame: its share (0-1)} holding
    at least the LISTED largest, how many in all); rows: the diff's category rows (shares of A and B in %)."""
    def only(shares: dict[str, float]) -> list[dict]:
        found = heapq.nsmallest(LISTED, shares.items(), key=lambda fs: (-fs[1], fs[0]))
        return [{"frame": f, "share": 100 * s} for f, s in found]

    return {"frames_only_in_a": only(a[0]), "frames_only_in_a_count": a[1],
            "frames_only_in_b": only(b[0]), "frames_only_in_b_count": b[1],
            "categories_only_in_a": [r["category"] for r in rows if r["a"] > 0 and not r["b"]],
            "categories_only_in_b": [r["category"] for r in rows if r["b"] > 0 and not r["a"]]}


def one_side_text(found: dict, fmt: str) -> str:
    """The lists as report.py diff prints them (table or markdown)."""
    text = ""
    for side, what, other in (("b", "new in B", "A"), ("a", "vanished from A", "B")):
        categories = found[f"categories_only_in_{side}"]
        frames, count = found[f"frames_only_in_{side}"], found[f"frames_only_in_{side}_count"]
        text += (f"\nCategories {what} (share 0 in {other}): {', '.join(categories) or 'none'}. Frames {what} (in no "
                 f"stack of {other}): {count:,}" + (f", the {SHOWN} largest" if count > SHOWN else "")
                 + (":\n\n" + render(frames[:SHOWN], [("share", f"share of {'B' if side == 'b' else 'A'} [%]"),
                                                      ("frame", "frame")], fmt) if frames else ".\n"))
    return text


def drawn_names(frames) -> set[str]:
    """The names frames are drawn under (inferno leaves out a _[k]-style annotation from some)."""
    names = {xml_chars(f, lines=True) for f in frames}
    return names | {deannotated(n) for n in names}


def _drawn_in(names, boxes: set[str]):
    """The names' drawn names (drawn_names) that are names of boxes, a name at a time (a fleet's side may have
    a million frames of its own: only those drawn are kept)."""
    for name in names:
        drawn = (name, deannotated(name)) if name.isascii() and name.isprintable() else drawn_names([name])
        yield from (n for n in drawn if n in boxes)


def mark_one_side(svg: str, names: dict) -> str:
    """svg with the boxes of frames on one side only filled apart and named so in their hover text; names:
    {"a", "b": the frames on that side only, an iterable read once}."""
    boxes = {box_name(html.unescape(m.group(1))) for m in FRAME_BOX.finditer(svg)}
    marks = {name: (NEW_FILL, "in B only") for name in _drawn_in(names["b"], boxes)}
    marks |= {name: (VANISHED_FILL, "in A only") for name in _drawn_in(names["a"], boxes)}

    def fix(m: re.Match) -> str:
        hit = marks.get(box_name(html.unescape(m.group(1))))
        if hit is None:
            return m.group(0)
        said = m.group(1)[:-1] + f"; {hit[1]})" if m.group(1).endswith(")") else f"{m.group(1)} ({hit[1]})"
        return f"<g><title>{said}</title><rect {filled(m.group(2), hit[0])}/>"

    return FRAME_BOX.sub(fix, svg)
