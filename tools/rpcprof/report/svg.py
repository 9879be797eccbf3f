"""inferno's SVG, annotated: each box (a frame of the flame graph) coloured by its own category and given
its own hover text, a legend row, headings that fit, search by function name (why by box: report/flamegraph.py).

The cost of that choice: `recolour_frames` and `add_legend` rewrite inferno's SVG with regexes (its frame height,
font width and margin, below), tied to inferno's output format: tools/setup.sh pins inferno INFERNO_VERSION, a
test checks the installed inferno is that version, and the golden-capture tests check that every box of every
server's graph is matched and coloured as its stacks say. Upgrading inferno means changing the pin in both places
and rerunning those tests; a box left unmatched is reported, not hidden.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

from rpcprof.errors import UserError
from rpcprof.report.text import xml
from rpcprof.rundir import write_text

INFERNO_VERSION = "0.12.8"   # the inferno whose SVG and order of lines the code relies on (tools/setup.sh pins it)
FRAME_HEIGHT = 16        # inferno's --height, which the box matching below relies on
FONT_WIDTH = 7.08        # inferno's 12 px monospace (--fontsize 12 x --fontwidth 0.59)
XPAD = 10                # inferno's left margin
LEGEND_HEIGHT = 24       # room made between the subtitle and the frames for the legend row


# --- categories of boxes ---------------------------------------------------------------------------

def dominant(weights: dict[str, int], order: list[str]) -> str:
    """The category with the most weight; ties go to the category listed first (max keeps the first it meets)."""
    return max(order, key=lambda c: weights.get(c, 0))


# --- post-processing inferno's SVG ----------------------------------------------------------------

FRAME_BOX = re.compile(r'<g><title>([^<]*)</title><rect ([^>]*?)/>')
SVG_ATTR = re.compile(r'([\w:]+)="([^"]*)"')


def box_name(title: str) -> str:
    """The frame name of a box's hover text (unescaped): the text without its last parenthesis."""
    return title[:title.rfind(" (")] if " (" in title else title


def filled(attrs: str, color: str) -> str:
    """A box's rect attributes with its fill set to color."""
    return re.sub(r'fill="[^"]*"', f'fill="{color}"', attrs)


def category_text(weights: dict[str, int], order: list[str]) -> str:
    """'recv' when one category owns the box, else the main ones with their share of it."""
    total = sum(weights.values())
    present = sorted((c for c in order if weights.get(c)), key=lambda c: -weights[c])     # ties: in order's order
    if len(present) == 1:
        return present[0]
    parts = [f"{c} {100 * weights[c] / total:.0f}%" for c in present[:3]]
    return ", ".join(parts) + (", ..." if len(present) > 3 else "")


def drawn_boxes(svg: str) -> list[tuple[int, int]]:
    """(fg:x, fg:w) of every box inferno drew: where its stacks start, in inferno's order, and their weight."""
    return [(int(a["fg:x"]), int(a["fg:w"])) for a in (dict(SVG_ATTR.findall(m.group(2))) for m in FRAME_BOX.finditer(svg))]


def recolour_frames(svg: str, boxes: dict[tuple[int, int], dict[str, int]], weight: int, total: int,
                    colors: dict[str, str], order: list[str]) -> tuple[str, int]:
    """inferno's SVG with each box's fill and hover text set from its own stacks (boxes: (fg:x, fg:w) -> weight of
    each category beneath it); (svg, boxes unmatched: those whose weights do not sum to their width).

    Hover text: `NAME (N samples, P%; CATEGORY)`. inferno's script takes the label of a box from its
    title minus the last parenthesis, so the parenthesis holds no '('."""
    unmatched = 0

    def fix(m: re.Match) -> str:
        nonlocal unmatched
        title, attrs = m.group(1), dict(SVG_ATTR.findall(m.group(2)))
        width = int(attrs["fg:w"])
        weights = boxes.get((int(attrs["fg:x"]), width))
        if weights is None or sum(weights.values()) != width:
            unmatched += 1
            return m.group(0)
        n = width // weight
        hover = (f"{box_name(title)} ({n:,} sample{'' if n == 1 else 's'}, {100 * width / total:.2f}%; "
                 f"{xml(category_text(weights, order))})")
        color = colors[dominant(weights, order)]       # '#4caf50' as inferno writes it: 'rgb(76,175,80)'
        rect = filled(m.group(2), f"rgb({int(color[1:3], 16)},{int(color[3:5], 16)},{int(color[5:7], 16)})")
        return f"<g><title>{hover}</title><rect {rect}/>"

    return FRAME_BOX.sub(fix, svg), unmatched


class LegendItem(NamedTuple):
    label: str
    color: str | None = None     # a swatch before the label
    hover: str = ""


def legend_svg(items: list[LegendItem], heading: str, y: int) -> str:
    """A row of swatches and labels, left-aligned like inferno's details line."""
    x = float(XPAD)
    out = [f'<g id="legend"><text x="{x:.0f}" y="{y}">{xml(heading)}</text>']
    x += (len(heading) + 2) * FONT_WIDTH
    for item in items:
        out.append("<g>")
        if item.hover:
            out.append(f"<title>{xml(item.hover)}</title>")
        if item.color:
            out.append(f'<rect x="{x:.1f}" y="{y - 10}" width="12" height="12" fill="{xml(item.color)}" '
                       'stroke="rgb(90,90,90)" stroke-width="0.5"/>')
            x += 16
        out.append(f'<text x="{x:.1f}" y="{y}">{xml(item.label)}</text></g>')
        x += (len(item.label) + 2) * FONT_WIDTH
    out.append("</g>")
    return "".join(out)


def add_legend(svg: str, legend: str) -> str:
    """Make LEGEND_HEIGHT px of room under the subtitle (the frames container moves down, and with it
    the details line) and put the legend there. inferno's script only reads positions inside #frames."""
    def grow(m: re.Match) -> str:
        return f'{m.group(1)}{int(m.group(2)) + LEGEND_HEIGHT}{m.group(3)}'

    head_end = svg.index("<defs>") if "<defs>" in svg else svg.index(">", svg.index("<svg")) + 1
    head = re.sub(r'(\bheight=")(\d+)(")', grow, svg[:head_end], count=1)
    head = re.sub(r'(viewBox="0 0 \d+ )(\d+)(")', grow, head, count=1)
    body = svg[head_end:]
    body = re.sub(r'(<rect x="0" y="0" width="100%" height=")(\d+)(" fill="url\(#background\)")', grow, body, count=1)
    for text_id in ("details", "matched"):
        body = re.sub(rf'(<text id="{text_id}"[^>]*? y=")([\d.]+)(")',
                      lambda m: f'{m.group(1)}{float(m.group(2)) + LEGEND_HEIGHT:.2f}{m.group(3)}', body, count=1)
    frames_tag = '<svg id="frames" '
    if frames_tag not in body:
        raise UserError("inferno's SVG has no frames container: is inferno 0.12.8 installed (tools/setup.sh)?")
    body = body.replace(frames_tag, legend + f'<svg id="frames" y="{LEGEND_HEIGHT}" ', 1)
    return head + body


# inferno's search matches a box's whole hover text; its script leaves a hook (g_to_func) to trim it.
# Trimmed to the name, searching "recv" finds recv functions, not every box with recv stacks beneath.
_SEARCH_HOOK = "    return (func);\n"
_SEARCH_NAME_ONLY = '    return (func.replace(/ \\([^(]*\\)$/, ""));\n'


def search_names_only(svg: str) -> str:
    return svg.replace(_SEARCH_HOOK, _SEARCH_NAME_ONLY, 1)


def fit_headings(svg: str, title: str, subtitle: str, width: int = 1200) -> str:
    """Shrink the title (17 px) and subtitle (12 px) font so a long command line or figure line fits the
    default width, down to 8 px; inferno centres them and lets them run off both edges otherwise."""
    for text_id, text, size in (("title", title, 17), ("subtitle", subtitle, 12)):
        fit = min(size, int((width - 2 * XPAD) / (0.6 * max(len(text), 1))))
        if fit < size:
            svg = svg.replace(f'<text id="{text_id}" ', f'<text id="{text_id}" style="font-size:{max(fit, 8)}px" ', 1)
    return svg


def write_svg(path: Path, svg: str) -> None:
    """Write an SVG file once it parses as XML, whole or not at all (rename of a temporary file); a device or
    pipe (/dev/stdout, /dev/null) is written in place, never replaced."""
    try:
        ET.fromstring(svg.encode("utf-8"))
    except ET.ParseError as e:
        raise UserError(f"{path}: the SVG written is not valid XML ({e}); please report this with the folded file")
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a directory; give the name of the SVG file to write")
    write_text(path, svg)
