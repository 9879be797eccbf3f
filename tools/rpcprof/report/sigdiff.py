"""report.py diff with significance: two profiles, each with its rounds (two servers of one run, two runs,
or two folded files), compared by category and frame by frame in CPU µs per request and in share.

A side given as a run folder (of one profiled server), a server's folder RUN/SERVER, or its
RUN/SERVER/profile.folded brings every round of that server: each round's profile and its unprofiled
CPU µs per request. With two rounds or more on both sides, every category's and every box's difference
is tested across rounds (analyze/significance.py: paired t for two servers of one run, Welch's t for two
runs), the boxes with Benjamini-Hochberg at 5 %, and the graph drawn from the mean over rounds colours
only the boxes whose difference is significant: red more in B, blue less, the rest grey. A side with one
round (or a bare folded file) is drawn as before: inferno's colours, no test.
"""
from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rpcprof.analyze.categorize import Rules, categorize, open_folded
from rpcprof.analyze.significance import (FDR, FrameTree, benjamini_hochberg, bh_adjusted, boxes_to_test,
                                          frame_tests, gap, sampling_variance)
from rpcprof.errors import UserError
from rpcprof.folded import sample_weight
from rpcprof.report.flamegraph import displayable_stack, render_diff_flamegraph
from rpcprof.report.one_side import MARKS, drawn_names, mark_one_side, one_side, one_side_text, vanished_stacks
from rpcprof.report.per_request import cpu_us_per_req, requests_per_profile
from rpcprof.report.sigsvg import recolour_significant
from rpcprof.report.tables import render
from rpcprof.rundir import RESULT_FILE, load_manifest, load_run, profile_folded, run_of_folded

MIN_SHARE = 0.001         # a box is tested when its mean share over every round of both sides reaches this
FRAMES_SHOWN = 15         # rows of the frames table in text (json: all)


@dataclass
class Round:
    k: int
    folded: Path
    cpu_us_per_req: float | None
    stacks: list = field(default_factory=list)
    source: dict = field(default_factory=dict)        # where cpu_us_per_req is: file and key

    @cached_property
    def displayed(self) -> list[tuple[list[str], int]]:
        """The stacks with their frames as inferno draws them (displayable_stack), so boxes match by name."""
        return [(displayable_stack(frames).split(";"), w) for frames, w in self.stacks]

    @cached_property
    def samples(self) -> int:
        return sum(w for _, w in self.stacks) // sample_weight(self.stacks)


@dataclass
class Side:
    label: str
    path: Path                          # as given
    run_dir: Path | None = None
    server: str | None = None
    app: str | None = None
    rounds: list[Round] = field(default_factory=list)


def round_records(run_dir: Path, server: str, metrics: dict) -> list[dict]:
    """The rounds of a server in a run that have a profile: round, profile file, unprofiled CPU µs per
    request and where that figure is (file and key), oldest first; one round for a run without repeats."""
    m = metrics.get(server) or {}
    rows = m.get("repeats") or [{"repeat": 1, "cpu_us_per_req": m.get("cpu_us_per_req")}]
    out = []
    for row in rows:
        folded = profile_folded(run_dir, server, row["repeat"])
        if folded.exists() and folded.stat().st_size:
            key = (f"repeats[repeat={row['repeat']}].cpu_us_per_req" if m.get("repeats") else "cpu_us_per_req")
            out.append({"round": row["repeat"], "profile": str(folded), "cpu_us_per_req": row.get("cpu_us_per_req"),
                        "file": f"{server}/{RESULT_FILE}", "key": key})
    return out


def side_of(path: Path, requests: int | None = None) -> Side:
    """What a diff argument names: a run folder of one profiled server, a server's folder, a server's
    profile.folded (each: that server with its rounds), or any other folded file or pprof profile (one round;
    with requests, its CPU µs per request from its CPU nanoseconds)."""
    path = Path(path)
    run_server = None
    if path.is_dir():
        run_server = _run_and_server(path)
    elif path.is_file():
        found = run_of_folded(path)
        if found and profile_folded(*found).resolve() == path.resolve():
            run_server = found
    if not run_server:
        stacks = open_folded(path)
        us = cpu_us_per_req(path, sum(w for _, w in stacks), requests) if requests else None
        return Side(str(path), path, rounds=[Round(1, path, us, stacks, {"file": str(path), "key": f"--requests {requests}"}
                                                   if requests else {})])
    if requests:
        raise UserError(f"--requests: {path} is a server of a run, which brings its own CPU per request: give "
                        "--requests only when both sides are profiles without a run folder")
    run_dir, server = run_server
    _, metrics = load_run(run_dir)
    rounds = [Round(r["round"], Path(r["profile"]), r["cpu_us_per_req"], open_folded(r["profile"]),
                    {"file": r["file"], "key": r["key"]}) for r in round_records(run_dir, server, metrics)]
    if not rounds:
        raise UserError(f"{path}: {server} has no profile in run {run_dir.name} (run without --no-profile)")
    return Side(server, path, run_dir, server, (metrics.get(server) or {}).get("app"), rounds)


def _run_and_server(folder: Path) -> tuple[Path, str]:
    """(run, server) for a server's folder or a run folder of one profiled server; UserError otherwise."""
    found = run_of_folded(folder / "x")
    if found:
        return found
    _, metrics = load_run(folder)          # a UserError naming the folder when it is not a run
    servers = [s for s in load_manifest(folder)["parameters"].get("servers") or metrics
               if profile_folded(folder, s).exists()]
    if len(servers) != 1:
        raise UserError(f"{folder}: a run of {len(servers)} profiled servers ({', '.join(servers) or 'none'}): "
                        f"give one of them as {folder}/SERVER")
    return folder, servers[0]


def label_sides(a: Side, b: Side) -> str:
    """Label each side (server names for two servers of one run, else `SERVER of run RUN` or the path);
    returns where they come from when it is one run."""
    if a.run_dir and b.run_dir and a.run_dir.resolve() == b.run_dir.resolve():
        return f"run {a.run_dir.name}"
    for s in (a, b):
        if s.run_dir:
            s.label = f"{s.server} of run {s.run_dir.name}"
    return ""


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
        return {r.k: ((side.label, r.k), self.total(side, r), r.samples,
                      r.cpu_us_per_req if view == "us" else r.samples if view == "abs" else 1.0) for r in side.rounds}

    def total(self, side: Side, r: Round) -> float:
        return self.tree.weights[0].get((side.label, r.k), 0) or 1

    def test_name(self) -> str:
        n = f"{len(self.a.rounds)} rounds" if self.paired else f"{len(self.a.rounds)} and {len(self.b.rounds)} rounds"
        return f"{'paired t' if self.paired else 'Welch t'} over {n}"


def build_diff(a: Side, b: Side, absolute: bool = False) -> Diff:
    """The two sides' boxes in one tree, and each box tested across rounds in share, in µs per request when
    both sides have it, and in samples when absolute, when it can be."""
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
        totals = {(s.label, r.k): d.total(s, r) for s in (a, b) for r in s.rounds}
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
    per = {}
    for side, rules in ((d.a, rules_a), (d.b, rules_b)):
        per[side.label] = {r.k: (categorize(r.stacks, rules), r.cpu_us_per_req) for r in side.rounds}
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
        pvalues = [gaps[i].p for i in tested]
        adjusted = dict(zip(tested, zip(benjamini_hochberg(pvalues), bh_adjusted(pvalues))))
        for i, (row, g) in enumerate(zip(rows, gaps)):
            found, q = adjusted.get(i, (False, None))
            row.update({f"{names[2]}_pm": g.half, f"{names[2]}_q": q, f"{names[2]}_sig": "*" if found else "n.s.",
                        f"{names[2]}_test": g.as_dict()})
    return rows


def category_columns(d: Diff) -> list[tuple[str, str]]:
    cols = [("category", "category")]
    for names, unit in ((("a_us", "b_us", "delta_us"), "µs/req"), (("a", "b", "delta"), "%")):
        if names[0] == "a_us" and not d.per_request:
            continue
        cols += [(names[0], f"A [{unit}]"), (names[1], f"B [{unit}]"),
                 (names[2], f"B−A [{'points' if unit == '%' else unit}]")]
        if d.tested:
            cols += [(f"{names[2]}_pm", "±"), (f"{names[2]}_q", "q"), (f"{names[2]}_sig", "")]
    return cols


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


FRAME_COLUMNS = [("frame", "frame"), ("depth", "depth"), ("delta_us", "B−A [µs/req]"), ("delta_us_pm", "±"),
                 ("q_us", "q"), ("sig_us", ""), ("delta", "B−A [points]"), ("delta_pm", "±"), ("q", "q"), ("sig", ""),
                 ("delta_abs", "B−A [samples]"), ("delta_abs_pm", "±"), ("q_abs", "q"), ("sig_abs", "")]


# --- the graph -----------------------------------------------------------------------------------

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


def write_stacks(stacks, path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{';'.join(frames)} {w}\n" for frames, w in stacks)


def significance_line(d: Diff, view: str) -> str:
    """What the colours mean: the test, the correction and how many boxes it found."""
    if not d.tested:
        return ""
    n = sum(t.discovery for t in d.frames[view].values())
    what = {"us": "µs/req", "share": "share", "abs": "samples"}[view]
    return (f"coloured where B−A in {what} is significant ({d.test_name()}, Benjamini–Hochberg at "
            f"{100 * FDR:.0f} % over {len(d.frames[view])} frames: {n}), grey where not")


def rounds_note(d: Diff) -> str:
    """The line said when a side has fewer than two rounds."""
    if d.tested:
        return ""
    return (f"Significance needs rounds: A has {len(d.a.rounds)}, B {len(d.b.rounds)} (profile.sh run --rounds 3 "
            "or more); drawn as before, no difference tested.")


def render_diff(a_path: Path, b_path: Path, out: Path, rules: Rules, app: str | None, normalize: bool,
                per_request: bool, title: str, fmt: str, requests: tuple[int, ...] = ()) -> str:
    """Write the differential graph of B against A to out and return the report of the differences.
    requests: A's and B's request counts, for two profiles without a run folder (per_request.py)."""
    import json
    count_a, count_b = requests_per_profile(requests, [a_path, b_path])
    a, b = side_of(a_path, count_a), side_of(b_path, count_b)
    origin = label_sides(a, b)
    d = build_diff(a, b, absolute=not normalize and not per_request)
    if per_request and not d.per_request:
        raise UserError("--per-request needs both sides' CPU µs per request: give RUN/SERVER or its profile.folded "
                        "(from run folders), or two profiles with --requests A_N --requests B_N, or leave --per-request out")
    rules_a = rules.with_app(app or a.app, "--app" if app else RESULT_FILE)
    rules_b = rules.with_app(app or b.app, "--app" if app else RESULT_FILE)
    rows = category_rows(d, rules_a, rules_b)
    view = "us" if per_request else "share" if normalize else "abs"
    means = d.tested or per_request or len(a.rounds) > 1 or len(b.rounds) > 1      # drawn: the mean over rounds
    if means:
        scaling = {"us": "CPU µs per request", "share": "shares of samples", "abs": "samples, not normalised"}[view] + (
            ", mean over each side's rounds")
    else:
        scaling = "normalised: A scaled to B's total" if normalize else "not normalised: raw weights"
    sig, found = significance_line(d, view), one_side(d, rows)
    vanished = drawn_names(r["frame"] for r in found["frames_only_in_a"]) | {r["frame"] for r in found["frames_only_in_a"]}
    subtitle = " · ".join(x for x in (f"A = {a.label} → B = {b.label}", origin, "widths: B",
                                      "red: more in B, blue: less", sig, scaling,
                                      MARKS if not means and (found["frames_only_in_a"] or found["frames_only_in_b"])
                                      else "") if x)
    legend = [{"category": r["category"], "a": r["a"], "b": r["b"]} for r in rows]
    if means:
        with tempfile.TemporaryDirectory(prefix="rpcprof-sigdiff-") as scratch:
            files = [Path(scratch) / "a.folded", Path(scratch) / "b.folded"]
            for side, f in zip((a, b), files):
                write_stacks(mean_stacks(d, side, view), f)
            render_diff_flamegraph(*files, out, title, subtitle, False, legend,
                                   countname={"us": "ps/req", "share": "ppb", "abs": "samples"}[view],
                                   recolour=(lambda svg: recolour_significant(svg, d, view)) if d.tested else None)
    else:
        render_diff_flamegraph(a.rounds[0].folded, b.rounds[0].folded, out, title, subtitle, normalize, legend,
                               recolour=lambda svg: mark_one_side(svg, found),
                               also_in_b=lambda stacks: vanished_stacks(stacks, vanished))
    frames = frame_rows(d)
    if fmt == "json":
        return json.dumps({"a": side_record(a), "b": side_record(b), "categories": rows, "frames": frames, "one_side": found,
                           "test": d.test_name() if d.tested else None, "fdr": FDR, "frames_tested": d.tested_boxes,
                           "min_share": MIN_SHARE, "note": rounds_note(d) or None, "svg": str(out)},
                          indent=2, sort_keys=True, default=str) + "\n"
    text = render(rows, category_columns(d), fmt)
    if fmt not in ("table", "markdown"):
        return text
    head = f"A = {a.label}\nB = {b.label}" + (f" ({origin})" if origin else "") + "\n\n"
    text = head + text + "\nShare of samples per category (the differences sum to 0)" + (
        ", and CPU µs per request (share × the round's unprofiled CPU per request)" if d.per_request else "") + (
        f"; mean over rounds, ± the half-width of the 95 % interval of B−A ({d.test_name()}); q: its p "
        f"adjusted for the {len(rows)} categories (Benjamini–Hochberg): * where q ≤ {FDR:g} (the interval then "
        "excludes 0), n.s. elsewhere.\n" if d.tested else ".\n")
    if d.tested:
        cols = [c for c in FRAME_COLUMNS
                if (d.per_request or not c[0].endswith("_us")) and ("abs" in d.frames or "_abs" not in c[0])]
        text += (f"\nFrames whose difference is significant ({d.test_name()}, Benjamini–Hochberg at "
                 f"{100 * FDR:.0f} % over the {d.tested_boxes} boxes with {100 * MIN_SHARE:.1f} % of the samples or "
                 f"more; q: adjusted p): {len(frames)} of them significant"
                 + (f", the {FRAMES_SHOWN} largest differences here" if len(frames) > FRAMES_SHOWN else "") + ":\n\n")
        text += render(frames[:FRAMES_SHOWN], cols, fmt) if frames else "(none)\n"
    else:
        text += rounds_note(d) + "\n"
    return text + one_side_text(found, fmt) + f"\nWrote {out} ({sig or scaling}).\n"


def side_record(s: Side) -> dict:
    """A side for --format json: what was given, its run and server, and each round's file and key."""
    rounds = [{"round": r.k, "profile": str(r.folded), "cpu_us_per_req": r.cpu_us_per_req, **r.source}
              for r in s.rounds]
    return {"label": s.label, "given": str(s.path), "run": str(s.run_dir) if s.run_dir else None, "server": s.server,
            "rounds": rounds}


def gap_lines(rows: list[dict], columns: list[tuple[str, str]]) -> list[str]:
    """compare_rows' gaps as sentences, one per server after the first, for a document (report.py results):
    `rust_pajamax − rust_tonic_mt, µs/req: recv -1.23 ± 0.10 *, send ... n.s.`."""
    servers = [k[:-3] for k, _ in columns if k.endswith("_us") and not k.startswith("delta_")]
    lines = []
    for s in servers[1:]:
        parts = []
        for r in rows:
            delta, half = r.get(f"delta_{s}"), r.get(f"delta_{s}_pm")
            if delta is None or (not delta and r["category"] != "total"):
                continue
            parts.append(f"{r['category']} {delta:+.2f}" + (f" ± {half:.2f} {r[f'delta_{s}_sig']}" if half is not None else ""))
        rounds = ("95 % interval across rounds, * where it excludes 0, n.s. where it contains 0"
                  if any(r.get(f"delta_{s}_pm") is not None for r in rows) else "one round: significance needs rounds")
        text = f"{s} − {servers[0]}, CPU µs/req ({rounds}): " + ", ".join(parts)
        lines.append(text if text.endswith(".") else text + ".")
    return lines
