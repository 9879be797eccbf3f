"""The annotated flame graph of a fleet's folded file (a million distinct stacks), drawn without holding its
stacks: inferno-flamegraph draws the file while it is read in blocks and categorised here
(analyze/folded_blocks.py), and each box inferno draws gets its category weights from the sums kept per caller.

The graph is report/flamegraph.render_flamegraph's, byte for byte, or this path gives way to it:
- a plain file whose lines are all drawn as written (printable ASCII, no line that displayable_stack rewrites,
  no count with a leading zero, no `_[k]`-style annotation, which inferno drops from a box's name) is read by
  inferno itself; any other (gzip'd, or names inferno draws otherwise than written) is piped to it as
  displayable_stack writes it, and each box's weights are looked up by the names inferno gives its frames
  (_DrawnNames: displayable, deannotated, the stack's ends as displayable_stack trims and rewrites them);
  a plain file found, past its first block, not drawn as written is drawn in memory;
- inferno runs with a placeholder subtitle (the samples are counted as it reads) and a factor of one: each
  box's hover text, the only place the factor shows, is written again below; the palette map is empty, since
  every box is recoloured (a box not matched would keep its function's colour: the file is drawn in memory);
- a box's category weights are the weights of every stack under its frames: this holds when the stacks
  under a box are all adjacent in inferno's sorted order, which each box's width, equal to their sum, proves
  (else, in memory); the stacks that end at a box add their own weight, from a second reading.
"""
from __future__ import annotations

import html
import re
import subprocess
import tempfile
from bisect import bisect_right
from collections import defaultdict
from itertools import chain
from pathlib import Path
from typing import Callable

from rpcprof.analyze.folded_blocks import Irregular, folded_rows
from rpcprof.analyze.rules import Rules, remember
from rpcprof.analyze.stack_walk import Tally
from rpcprof.pprof_in import is_pprof
from rpcprof.report.diff_stream import SPACE_AT_END, drawn_block
from rpcprof.report.flamegraph import (PALETTE_MAP, category_legend, deannotated, displayable_frame,
                                       displayable_stack, finish_flamegraph, inferno_options, inferno_tool)
from rpcprof.report.svg import SVG_ATTR, ATTR_Y, FRAME_BOX, FRAME_HEIGHT, Box, recolour_frames

STREAM_FROM = 8 << 20            # bytes: a smaller file is drawn in memory, as before
PLACEHOLDER = "rpcprof-subtitle-to-come"
_XML_SPECIAL = set("&<>\"'")


def _drawn_as_read(text: str, rows: list[tuple[str, str, str]]) -> bool:
    """Whether displayable_stack leaves every line of the block as it is, and its count is written as read."""
    return (text.isascii() and text.replace("\n", " ").isprintable() and not text.startswith((" ", "#"))
            and "\n " not in text and "\n#" not in text and " 0" not in text and "_[" not in text
            and (text.count(" ") == len(rows)            # no space but before each count: no leaf ends in one
                 or not SPACE_AT_END.search("\n".join([leaf for _, leaf, _ in rows]))))


class _DrawnNames:
    """The path of boxes (`a;b`, as inferno names them) a stack's frames are drawn under, for a file piped to
    inferno as displayable_stack writes it: each frame displayable and deannotated, the root's leading and the
    leaf's trailing blanks stripped, a root `# ` and a leaf's ` 123` rewritten as displayable_stack rewrites
    them. Each distinct callers text and leaf is worked out once (bounded by the rules' cache limit)."""

    def __init__(self) -> None:
        self.callers: dict[str, str] = {}
        self.leaves: dict[str, str] = {}

    def of_callers(self, callers: str) -> str:
        """The box path of callers `a;b;` (their last ';' kept) at the head of a longer stack."""
        found = self.callers.get(callers)
        if found is None:
            frames = [deannotated(displayable_frame(f)) for f in callers[:-1].split(";")]
            head = ";".join(frames).lstrip()
            head = "#\u00a0" + head[2:] if head.startswith("# ") else head
            found = remember(self.callers, callers, head + ";")
        return found

    def of_stack(self, callers: str, leaf: str) -> str:
        """The box path of the whole stack: the drawn stack, as displayable_stack writes it, deannotated."""
        if not callers:
            return ";".join(deannotated(f) for f in displayable_stack([leaf]).split(";"))
        return self.of_callers(callers) + self.leaf(leaf)

    def leaf(self, leaf: str) -> str:
        """The box name of a leaf under callers."""
        drawn = self.leaves.get(leaf)
        if drawn is None:
            drawn = remember(self.leaves, leaf, deannotated(displayable_stack(["x", leaf])[2:]))
        return drawn


def _drawn_boxes(svg: str) -> list[tuple[int, int, int, str]]:
    """(depth, fg:x, fg:w, the frame's name) of every box inferno drew, depth 0 its `all`."""
    found = [(m.group(1), dict(SVG_ATTR.findall(m.group(2)))) for m in FRAME_BOX.finditer(svg)]
    y_all = max((int(a["y"]) for _, a in found), default=0)
    return [((y_all - int(a["y"])) // FRAME_HEIGHT, int(a["fg:x"]), int(a["fg:w"]),
             html.unescape(title[:title.rfind(" (")] if " (" in title else title)) for title, a in found]


def _paths(boxes: list[tuple[int, int, int, str]]) -> dict[tuple[int, int, int], str] | None:
    """Each box's frames, `a;b;c` (the box beneath it is the one at the depth below holding its x); None when
    one has no box beneath it."""
    paths: dict[tuple[int, int, int], str] = {}
    below: list[tuple[int, int, str]] = []
    for depth in range(max((b[0] for b in boxes), default=-1) + 1):
        level = sorted(b for b in boxes if b[0] == depth)
        starts = [x for x, _, _ in below]
        for _, x, w, name in level:
            if depth == 0:
                paths[depth, x, w] = ""
                continue
            i = bisect_right(starts, x) - 1
            if i < 0 or x >= below[i][0] + max(below[i][1], 1):
                return None
            parent = below[i][2]
            paths[depth, x, w] = f"{parent};{name}" if parent else name
        below = [(x, w, paths[depth, x, w]) for _, x, w, _ in level]
    return paths


def _prefix_weights(tally: Tally, names: _DrawnNames | None) -> dict[tuple[str, str], int]:
    """(caller's frames with their last ';', group) -> weight of the stacks under them, for every prefix of every
    caller (`a;`, `a;b;`), from the sums kept per caller, deepest first; worked out while inferno lays out.
    names: the callers' frames as the boxes name them (a file piped as drawn), else as read."""
    depths: dict[int, dict[tuple[str, str], int]] = defaultdict(dict)
    drawn = names.of_callers if names else str
    for callers, w in tally.under_callers.items():
        level = depths[callers.count(";")]
        key = drawn(callers), tally.callers_answer(callers)[0]
        level[key] = level.get(key, 0) + w
    for (callers, group), w in tally.others.items():
        if callers:
            level = depths[callers.count(";")]
            key = drawn(callers), group
            level[key] = level.get(key, 0) + w
    weights: dict[tuple[str, str], int] = {}
    for depth in range(max(depths, default=0), 0, -1):
        up = depths[depth - 1]
        for (callers, group), w in depths.pop(depth, {}).items():
            weights[callers, group] = w
            if depth > 1:
                key = callers[:callers.rfind(";", 0, len(callers) - 1) + 1], group
                up[key] = up.get(key, 0) + w
    return weights


def _add_own_weights(folded: Path, tally: Tally, weights: dict[str, dict[str, int]], boxes: set[str],
                     names: _DrawnNames | None) -> bool:
    """The weights of the stacks that end at one of these boxes (`a;b`, as drawn) added to theirs, from a second
    reading; False when the file changed under it. names: as _prefix_weights's."""
    if not boxes:
        return True
    leaves = {box[box.rfind(";") + 1:] for box in boxes}
    try:
        for _, rows in folded_rows(folded):
            for callers, leaf, w in rows:
                if names is None:
                    if leaf in leaves and (stack := callers + leaf) in boxes:
                        weights[stack][tally.answer(stack)[0]] += int(w)
                elif ((not callers or names.leaf(leaf) in leaves)
                      and (drawn := names.of_stack(callers, leaf)) in boxes):
                    weights[drawn][tally.answer(callers + leaf)[0]] += int(w)
    except (Irregular, OSError, EOFError):
        return False
    return True


def streamed_flamegraph(folded: Path, rules: Rules, out_svg: Path, title: str, subtitle: str | Callable[[int], str],
                        countname: str = "samples") -> bool:
    """render_flamegraph's graph of folded (subtitle: the text, or a function of the samples counted), drawn
    as it is read; False, having written nothing, when the file is one to draw in memory (see the module)."""
    folded = Path(folded)
    if countname != "samples" or is_pprof(folded) or not folded.is_file() or folded.stat().st_size < STREAM_FROM:
        return False
    tally = Tally(rules, keep_frames=False)
    tally.by_callers_weights()
    with tempfile.TemporaryDirectory(prefix="rpcprof-flame-") as scratch:
        (Path(scratch) / PALETTE_MAP).touch()
        head = subtitle if isinstance(subtitle, str) else PLACEHOLDER
        # a plain file whose first block is drawn as read is drawn by inferno from the file itself, on the other
        # CPU, while it is categorised here (every block then found drawn as read: the same lines inferno would
        # have been given); any other (gzip'd, or names inferno draws otherwise than written) is piped to it as
        # displayable_stack writes it, and its boxes' names worked out from the frames' (_DrawnNames)
        blocks = folded_rows(folded)
        try:
            first = next(blocks, None)
        except (Irregular, OSError, EOFError):
            return False
        piped = folded.suffix == ".gz" or first is None or not _drawn_as_read(*first)
        names = _DrawnNames() if piped else None
        with open(Path(scratch) / "out.svg", "wb+") as out, open(Path(scratch) / "err", "wb") as err:
            proc = subprocess.Popen([inferno_tool("inferno-flamegraph"), "--cp", *inferno_options(title, head, 1, countname),
                                     "-" if piped else str(folded.resolve())], cwd=scratch,
                                    stdin=subprocess.PIPE if piped else subprocess.DEVNULL, stdout=out, stderr=err)
            read = True
            try:
                for text, rows in chain([first] if first else [], blocks):
                    if piped:
                        proc.stdin.write(drawn_block(text, rows).encode())
                    elif not _drawn_as_read(text, rows):
                        read = False
                        break
                    tally.add_rows(rows)
            except (Irregular, OSError, EOFError):
                read = False
            finally:
                if not read:
                    proc.kill()
                if piped:
                    proc.stdin.close()
            under = _prefix_weights(tally, names) if read else {}
            if proc.wait() or not read:
                return False
            out.seek(0)
            svg = out.read().decode("utf-8")
    group_weights = tally.group_weights()
    total = sum(group_weights.values())
    if not total:
        return False
    weight = tally.unit or 1
    if not isinstance(subtitle, str):
        subtitle = subtitle(total // weight)
        drawn = displayable_frame(subtitle)
        if _XML_SPECIAL & set(drawn) or svg.count(f">{PLACEHOLDER}</text>") != 1:
            return False
        svg = svg.replace(f">{PLACEHOLDER}</text>", f">{drawn}</text>", 1)
    boxes = _drawn_boxes(svg)
    paths = _paths(boxes)
    if paths is None:
        return False
    groups = set(group_weights)
    weights = {p: defaultdict(int, {g: under[p + ";", g] for g in groups if (p + ";", g) in under})
               for p in paths.values() if p}
    ends = {c.count(";") + 1 for c in tally.under_callers} | {c.count(";") + 1 for c, _ in tally.others}
    if not _add_own_weights(folded, tally, weights, {paths[d, x, w] for d, x, w, _ in boxes if d in ends}, names):
        return False
    weights[""] = defaultdict(int, group_weights)
    if any(sum(weights[paths[d, x, w]].values()) != w for d, x, w, _ in boxes):
        return False
    order = rules.all_categories
    svg, unmatched = recolour_frames(svg, [Box(d, name, x, x + w, weights[paths[d, x, w]]) for d, x, w, name in boxes],
                                     weight, total, rules.colors, order)
    if unmatched:
        return False
    shares = {c: group_weights.get(c, 0) / total for c in order}
    finish_flamegraph(svg, out_svg, title, subtitle, category_legend(shares, rules), countname)
    return True
