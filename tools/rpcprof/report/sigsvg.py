"""The differential graph of report.py diff coloured by significance: each box of inferno's SVG matched to
the tree of boxes the tests ran on (analyze/sigdiff.py), by its place (the box of depth - 1 that holds it)
and its name, so nothing depends on the order inferno lays stacks out in.
"""
from __future__ import annotations

import html as html_entities
import re
from bisect import bisect_right
from collections import defaultdict
from typing import TYPE_CHECKING

from rpcprof.analyze.significance import FrameTree
from rpcprof.report.flame_rows import deannotated
from rpcprof.report.svg import SVG_ATTR, FRAME_BOX, FRAME_HEIGHT, box_name, filled
from rpcprof.report.text import xml

if TYPE_CHECKING:
    from rpcprof.analyze.sigdiff import Diff

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
    node_of: dict[int, int] = {}          # match start -> tree node
    for depth in sorted(by_depth):
        parents = sorted((x, w, node_of[m.start()]) for x, w, m in by_depth.get(depth - 1, []) if m.start() in node_of)
        starts = [p[0] for p in parents]
        for x, w, m in by_depth[depth]:
            if depth == 0:
                node_of[m.start()] = 0
                continue
            i = bisect_right(starts, x) - 1
            if i < 0 or not parents[i][0] <= x < parents[i][0] + max(parents[i][1], 1):
                continue
            node = _child(d.tree, parents[i][2], box_name(html_entities.unescape(m.group(1))))
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
        name = box_name(html_entities.unescape(m.group(1)))
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
