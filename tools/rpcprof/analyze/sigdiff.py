"""The figures of report.py diff with significance: two sides (two servers of one run, two runs, or two folded
files), each with its rounds, their boxes in one tree, and each category's and each box's difference tested
across rounds (analyze/significance.py: paired t for two servers of one run, Welch's t for two runs), the boxes
with Benjamini-Hochberg; the mean over each side's rounds that the graph is drawn from. Which files make a side,
and the drawing, are report/sigdiff.py's.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.significance import (FDR, FrameTree, bh_adjusted, boxes_to_test, frame_tests, gap,
                                          sampling_variance)
from rpcprof.analyze.stack_walk import categorize_file

MIN_SHARE = 0.001         # a box is tested when its mean share over every round of both sides reaches this


@dataclass
class Round:
    k: int
    folded: Path                        # as given
    cpu_us_per_req: float | None
    source: dict = field(default_factory=dict)        # where cpu_us_per_req is: file and key
    read: Path | None = None            # the file the compiled core reads (report/export.core_readable)
    total: int = 0                      # its total weight
    unit: int = 1                       # the gcd of its weights (perf's period; 1 for counts)
    # the stacks with their frames as the graph draws them, so boxes match by name (report/sigdiff.py gives them,
    # when the graph is drawn from the mean over rounds)
    displayed: list[tuple[list[str], int]] = field(default_factory=list)
    known: tuple | None = None          # (rules, the Breakdown of the file under them), when read already

    def breakdown(self, rules: Rules):
        if self.known and self.known[0] is rules:
            return self.known[1]
        return categorize_file(self.read or self.folded, rules, keep_frames=False)

    @property
    def samples(self) -> int:
        return self.total // (self.unit or 1)


@dataclass
class Side:
    label: str
    path: Path                          # as given
    run_dir: Path | None = None
    server: str | None = None
    app: str | None = None
    rounds: list[Round] = field(default_factory=list)


@dataclass
class Diff:
    a: Side
    b: Side
    paired: bool
    per_request: bool                   # every round of both sides has its CPU µs per request
    tested: bool                        # two rounds or more on both sides
    tree: FrameTree = field(default_factory=FrameTree)
    frames: dict = field(default_factory=dict)       # view ("us", "share", "abs") -> {node: FrameTest}
    tested_boxes: int = 0

    def scales(self, side: Side, view: str) -> dict:
        """{round: (its key in the tree, total weight, samples, scale)}: a box's figure is its share × scale (µs
        per request in view "us", samples in view "abs")."""
        return {r.k: ((side.label, r.k), r.total or 1, r.samples,
                      r.cpu_us_per_req if view == "us" else r.samples if view == "abs" else 1.0) for r in side.rounds}

    def test_name(self) -> str:
        n = f"{len(self.a.rounds)} rounds" if self.paired else f"{len(self.a.rounds)} and {len(self.b.rounds)} rounds"
        return f"{'paired t' if self.paired else 'Welch t'} over {n}"


def build_diff(a: Side, b: Side, absolute: bool = False) -> Diff:
    """The two sides' boxes in one tree (of their rounds' displayed stacks), and each box tested across rounds in
    share, in µs per request when both sides have it, and in samples when absolute, when it can be."""
    common = {r.k for r in a.rounds} & {r.k for r in b.rounds}
    paired = bool(a.run_dir and b.run_dir and a.run_dir.resolve() == b.run_dir.resolve() and len(common) >= 2)
    if paired:
        a.rounds = [r for r in a.rounds if r.k in common]
        b.rounds = [r for r in b.rounds if r.k in common]
    per_request = all(r.cpu_us_per_req for s in (a, b) for r in s.rounds)
    d = Diff(a, b, paired, per_request, len(a.rounds) >= 2 and len(b.rounds) >= 2)
    if a.label == b.label:
        a.label, b.label = f"A: {a.label}", f"B: {b.label}"
    for side in (a, b):
        for r in side.rounds:
            d.tree.add((side.label, r.k), r.displayed)
    if d.tested:
        totals = {(s.label, r.k): r.total or 1 for s in (a, b) for r in s.rounds}
        nodes = boxes_to_test(d.tree, totals, MIN_SHARE)
        d.tested_boxes = len(nodes)
        for view in (["us"] if per_request else []) + ["share"] + (["abs"] if absolute else []):
            d.frames[view] = {t.node: t for t in frame_tests(d.tree, d.scales(a, view), d.scales(b, view), paired, nodes)}
    return d


def category_rows(d: Diff, rules_a: Rules, rules_b: Rules) -> list[dict]:
    """Per category: mean share of A and B over rounds [%], B − A [points]; with CPU per request, the same
    in µs/req. With rounds, each difference's 95 % interval (half-width), its test, the Benjamini-Hochberg
    adjusted p over the categories (q) and its mark: `*` where significant after that correction (its
    interval then excludes 0), `n.s.` elsewhere (every gap whose interval contains 0 among them)."""
    per = {side.label: {r.k: (r.breakdown(rules), r.cpu_us_per_req) for r in side.rounds}
           for side, rules in ((d.a, rules_a), (d.b, rules_b))}
    rows = [{"category": c} for c in rules_a.all_categories]
    for view in ("us", "share") if d.per_request else ("share",):
        names = ("a", "b", "delta") if view == "share" else ("a_us", "b_us", "delta_us")
        gaps = []
        for row in rows:
            c = row["category"]
            va, vb = ({k: b.share(c) * (us if view == "us" else 100) for k, (b, us) in per[s.label].items()}
                      for s in (d.a, d.b))
            var_a, var_b = ({k: sampling_variance(b.share(c), b.samples, us if view == "us" else 100)
                             for k, (b, us) in per[s.label].items()} for s in (d.a, d.b))
            gaps.append(gap(va, vb, d.paired, var_a, var_b))
            row.update({names[0]: sum(va.values()) / len(va), names[1]: sum(vb.values()) / len(vb),
                        names[2]: gaps[-1].delta})
        if not d.tested:
            continue
        tested = [i for i, g in enumerate(gaps) if g.p is not None]
        adjusted = dict(zip(tested, bh_adjusted([gaps[i].p for i in tested])))
        for i, (row, g) in enumerate(zip(rows, gaps)):
            q = adjusted.get(i)
            found = q is not None and q <= FDR
            row.update({f"{names[2]}_pm": g.half, f"{names[2]}_q": q, f"{names[2]}_sig": "*" if found else "n.s.",
                        f"{names[2]}_test": g.as_dict()})
    return rows


def frame_rows(d: Diff) -> list[dict]:
    """The boxes significant in either view, largest difference first: leaf frame, depth, path, and per
    view B − A, its interval half-width and BH-adjusted p (q)."""
    found = {n for tests in d.frames.values() for n, t in tests.items() if t.discovery}
    rows = []
    for node in found:
        path = d.tree.path(node)
        row = {"frame": path[-1], "depth": len(path), "path": path}
        for view, tests in d.frames.items():
            t = tests.get(node)
            suffix = {"us": "_us", "share": "", "abs": "_abs"}[view]
            scale = 100 if view == "share" else 1
            row.update({f"delta{suffix}": t.gap.delta * scale, f"delta{suffix}_pm": t.gap.half * scale,
                        f"q{suffix}": t.q, f"sig{suffix}": "*" if t.discovery else "n.s."} if t else {})
        rows.append(row)
    key = "delta_us" if d.per_request else "delta"
    return sorted(rows, key=lambda r: (-abs(r.get(key) or 0), r["path"]))


def mean_stacks(d: Diff, side: Side, view: str) -> list[tuple[list[str], int]]:
    """The side's stacks averaged over its rounds, in integer units inferno can sum: ps per request
    (view "us"), parts per 10^9 of the samples (view "share") or samples (view "abs")."""
    unit = {"us": 1e6, "share": 1e9, "abs": 1}[view]
    scales = d.scales(side, view)
    mean: dict[str, float] = defaultdict(float)
    for r in side.rounds:
        _, total, _, figure = scales[r.k]
        scale = figure / total * unit / len(side.rounds)
        for frames, w in r.displayed:
            mean[";".join(frames)] += w * scale
    return [(text.split(";"), round(w)) for text, w in sorted(mean.items()) if round(w) > 0]
