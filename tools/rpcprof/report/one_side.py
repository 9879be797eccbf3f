"""report.py diff's frames and categories present on one side only. A frame in B's stacks and in none of A's
is new; one in A's and in none of B's has vanished. Each comes with the share of its side's samples whose
stacks hold it (the mean over the side's rounds), largest first; a category is on one side only when its
share is above 0 there and 0 on the other side.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from rpcprof.report.tables import render

if TYPE_CHECKING:
    from rpcprof.report.sigdiff import Diff, Side

SHOWN = 15          # rows of each list in text (json: all)


def inclusive_shares(side: Side) -> dict[str, float]:
    """{frame: share of the side's samples whose stack holds it}, the mean over its rounds."""
    shares: dict[str, float] = defaultdict(float)
    for r in side.rounds:
        total = sum(w for _, w in r.stacks) or 1
        for frames, w in r.stacks:
            for frame in set(frames):
                shares[frame] += w / total / len(side.rounds)
    return shares


def one_side(d: Diff, rows: list[dict]) -> dict:
    """{"frames_only_in_a"/"_b": [{"frame", "share" [%]}], largest first, "categories_only_in_a"/"_b": [names]};
    rows: the diff's category rows (shares of A and B in %)."""
    a, b = inclusive_shares(d.a), inclusive_shares(d.b)

    def only(here: dict[str, float], there: dict[str, float]) -> list[dict]:
        found = sorted(((f, s) for f, s in here.items() if f not in there), key=lambda fs: (-fs[1], fs[0]))
        return [{"frame": f, "share": 100 * s} for f, s in found]

    return {"frames_only_in_a": only(a, b), "frames_only_in_b": only(b, a),
            "categories_only_in_a": [r["category"] for r in rows if r["a"] > 0 and not r["b"]],
            "categories_only_in_b": [r["category"] for r in rows if r["b"] > 0 and not r["a"]]}


def one_side_text(found: dict, fmt: str) -> str:
    """The lists as report.py diff prints them (table or markdown)."""
    text = ""
    for side, what, other in (("b", "new in B", "A"), ("a", "vanished from A", "B")):
        categories = found[f"categories_only_in_{side}"]
        frames = found[f"frames_only_in_{side}"]
        text += (f"\nCategories {what} (share 0 in {other}): {', '.join(categories) or 'none'}. Frames {what} (in no "
                 f"stack of {other}): {len(frames):,}" + (f", the {SHOWN} largest" if len(frames) > SHOWN else "")
                 + (":\n\n" + render(frames[:SHOWN], [("share", f"share of {'B' if side == 'b' else 'A'} [%]"),
                                                      ("frame", "frame")], fmt) if frames else ".\n"))
    return text
