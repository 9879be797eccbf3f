"""report.py diff's frames and categories present on one side only. A frame in B's stacks and in none of A's
is new; one in A's and in none of B's has vanished. Each comes with the share of its side's samples whose
stacks hold it (the mean over the side's rounds), largest first; a category is on one side only when its
share is above 0 there and 0 on the other side.

In the graph of two profiles without rounds (widths are B's), a new frame's boxes are filled teal; a
vanished frame has no width in B, so the stacks of A that hold it are drawn too, at A's width (scaled as A
is), its boxes filled amber; each says so in its hover text. With rounds the graph is coloured by significance
(recolour_significant), and a frame seen in one side's rounds only is a box tested like any other (halves of
one server's rounds already differ in their thinnest frames): each box of inferno's SVG is matched to the tree
of boxes the tests ran on (analyze/sigdiff.py) by its place (the box of depth - 1 that holds it) and its name,
so nothing depends on the order inferno lays stacks out in.
"""
from __future__ import annotations

import heapq
import html
import re
from bisect import bisect_right
from collections import defaultdict
from typing import TYPE_CHECKING

from rpcprof.analyze.significance import FrameTree
from rpcprof.report.flamegraph import deannotated
from rpcprof.report.svg import FRAME_BOX, FRAME_HEIGHT, SVG_ATTR, box_name, filled
from rpcprof.report.tables import render
from rpcprof.report.text import xml, xml_chars

if TYPE_CHECKING:
    from rpcprof.analyze.sigdiff import Diff

SHOWN = 15          # rows of each list, and of diff's table of frames, in text
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


GREY = "rgb(215,215,215)"                 # a box whose difference is not significant, or not tested


def recolour_significant(svg: str, d: Diff, view: str) -> str:
    """Each box of inferno's differential graph matched to the tree by its place (the box of depth - 1
    that holds it) and its name: red (more in B) or blue (less) in proportion to its difference where
    the test found it significant, grey elsewhere; its hover gives both sides' figures and the test's."""
    tests = d.frames.get(view, {})
    boxes = [(dict(SVG_ATTR.findall(m.group(2))), m) for m in FRAME_BOX.finditer(svg)]
    y_all = max((int(a["y"]) for a, _ in boxes), default=0)
    by_depth: dict[int, list] = defaultdict(list)
    for a, m in boxes:
        by_depth[(y_all - int(a["y"])) // FRAME_HEIGHT].append((int(a["fg:x"]), int(a["fg:w"]), m))
    node_of = {m.start(): 0 for _, _, m in by_depth[0]}       # match start -> tree node; the root's box is node 0
    for depth in sorted(by_depth)[1:]:
        parents = sorted((x, w, node_of[m.start()]) for x, w, m in by_depth.get(depth - 1, []) if m.start() in node_of)
        starts = [p[0] for p in parents]
        for x, w, m in by_depth[depth]:
            i = bisect_right(starts, x) - 1
            if i < 0 or not parents[i][0] <= x < parents[i][0] + max(parents[i][1], 1):
                continue
            node = _child(d.tree, parents[i][2], box_name(html.unescape(m.group(1))))
            if node is not None:
                node_of[m.start()] = node

    drawn = [tests[n] for n in node_of.values() if n in tests and tests[n].discovery]
    largest = max((abs(t.gap.delta) for t in drawn), default=0.0) or 1.0      # the boldest colour: of those drawn

    def fix(m: re.Match) -> str:
        node = node_of.get(m.start())
        if node is None:        # not matched to the boxes tested (a name drawn ambiguously): not coloured
            return f"<g><title>{m.group(1)}</title><rect {filled(m.group(2), GREY)}/>"
        t = tests.get(node)
        fill = GREY
        if t and t.discovery:
            shade = int(225 - 185 * min(1.0, abs(t.gap.delta) / largest))
            fill = f"rgb(255,{shade},{shade})" if t.gap.delta > 0 else f"rgb({shade},{shade},255)"
        name = box_name(html.unescape(m.group(1)))
        return f"<g><title>{xml(name)} ({xml(box_text(d, node, view, t))})</title><rect {filled(m.group(2), fill)}/>"

    return FRAME_BOX.sub(fix, svg)


def _child(tree: FrameTree, parent: int, name: str) -> int | None:
    """The child of parent drawn as name (inferno drops a _[k]-style annotation from the label)."""
    kids = tree.children[parent]
    if name in kids:
        return kids[name]
    hits = [n for k, n in kids.items() if deannotated(k) == name]
    return hits[0] if len(hits) == 1 else None


def box_text(d: Diff, node: int, view: str, t) -> str:
    """`B 1.234 µs/req, A 0.987; B−A +0.247 ± 0.050, q 0.003 significant` (no parenthesis: inferno's
    script takes a box's label from its title minus the last one)."""
    unit, scale = {"us": ("µs/req", 1.0), "share": ("% of samples", 100.0), "abs": ("samples", 1.0)}[view]
    weights = d.tree.weights[node]
    mean = {s.label: scale * sum(weights.get(key, 0.0) / total * f for key, total, _, f in d.scales(s, view).values())
            / len(s.rounds) for s in (d.a, d.b)}
    text = f"B {mean[d.b.label]:.3f} {unit}, A {mean[d.a.label]:.3f}"
    if t is None:
        return text + ("; not tested: too thin" if d.tested else "")
    verdict = "significant" if t.discovery else "not significant"
    return text + f"; B−A {t.gap.delta * scale:+.3f} ± {t.gap.half * scale:.3f}, q {t.q:.2g} {verdict}"
