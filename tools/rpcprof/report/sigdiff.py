"""report.py diff with significance: two profiles, each with its rounds (two servers of one run, two runs,
or two folded files), compared by category and frame by frame in CPU µs per request and in share.

A side given as a run folder (of one profiled server), a server's folder RUN/SERVER, or its
RUN/SERVER/profile.folded brings every round of that server: each round's profile and its unprofiled
CPU µs per request. With two rounds or more on both sides, every category's and every box's difference
is tested across rounds (analyze/significance.py: paired t for two servers of one run, Welch's t for two
runs), the boxes with Benjamini-Hochberg at 5 %, and the graph drawn from the mean over rounds colours
only the boxes whose difference is significant: red more in B, blue less, the rest grey. A side with one
round (or a bare folded file) is drawn as before: inferno's colours, no test.

The sides' tree, the tests and the mean over rounds are analyze/sigdiff.py's; here, which files make a
side, the tables and the graph.

Every round's folded file is read by the compiled core (rpcprof_core): each round categorised from the core's rows
(the walk of stack_walk.categorize_file), and, on a thread of the core's own (rpcprof_core.one_side), both sides'
files read together for the frames on one side only and, for a graph of one round a side, the lines
inferno-flamegraph draws it from (SidesRead). A pprof profile is read as its collapsed stacks (pprof_in.collapsed_file).
"""
from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import rpcprof_core

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.per_request import cpu_us_per_req, requests_per_profile
from rpcprof.analyze.significance import FDR
from rpcprof.analyze.sigdiff import MIN_SHARE, Diff, Round, Side, build_diff, category_rows, frame_rows, mean_stacks
from rpcprof.analyze.stack_walk import read_breakdown
from rpcprof.errors import UserError
from rpcprof.folded import drawn_stacks, sample_weight, weight_unit
from rpcprof.pprof_in import is_pprof
from rpcprof.report.compare import round_records, servers_of
from rpcprof.report.export import core_readable
from rpcprof.report.flamegraph import Drawing, finish_flamegraph, inferno_options, inferno_tool, run_tool
from rpcprof.report.one_side import (LISTED, MARKS, SHOWN, mark_one_side, one_side_found, one_side_text,
                                     recolour_significant)
from rpcprof.report.svg import LegendItem
from rpcprof.report.tables import cell, render
from rpcprof.rundir import RESULT_FILE, load_manifest, load_run, profile_folded, run_of_folded

NAMES, MERGED = "one_side.names", "diff.folded"   # the core's files in the scratch folder


class Changed(Exception):
    """A side's file no longer reads as it did a moment ago."""


class SidesRead:
    """The core's pass over both sides' files (rpcprof_core.one_side), started with the object, and each round's
    Breakdown (categorize). It writes into scratch NAMES, every frame on one side only (`a\\tNAME` or `b\\tNAME` a
    line), and, when merged, MERGED, the lines the graph of one round a side is drawn from (A normalised to B's
    total when normalize); once it ends, draw(found) (given to categorize(), and called between the chunks read
    there) may start the drawing (flamegraph.Drawing) while the sides are still read."""

    def __init__(self, a: list[Path], b: list[Path], scratch: Path, merged: bool, normalize: bool) -> None:
        self.scratch = scratch
        self.drawing = self._draw = None
        self.task = rpcprof_core.one_side([str(p) for p in a], [str(p) for p in b], LISTED, str(scratch / NAMES),
                                          str(scratch / MERGED) if merged else None, normalize)

    def categorize(self, path: Path, rules: Rules, draw=None) -> object:
        """The Breakdown of path (a file the core takes) under rules; Changed when it no longer reads as it did."""
        self._draw = draw
        try:
            return read_breakdown(path, rules, between=self._poll)
        except (EOFError, rpcprof_core.Refused):
            raise Changed from None

    def found(self) -> dict:
        """{"a", "b": {"count": frames on that side only, "frames": [[name, share (0-1)]] the largest}}."""
        try:
            return json.loads(self.task.result())
        except rpcprof_core.Refused:
            raise Changed from None

    def _poll(self) -> None:
        if self.drawing is None and self._draw and self.task.done():
            self.drawing = self._draw(self.found())

    def names(self) -> dict:
        """{"a", "b": the frames on that side only}, each read from NAMES a line at a time."""
        def side(tag: str):
            with open(self.scratch / NAMES, encoding="utf-8", newline="\n") as f:
                for line in f:
                    if line[0] == tag:
                        yield line[2:-1]
        return {"a": side("a"), "b": side("b")}

    def cleanup(self) -> None:
        """Stop the drawing, and wait for the core's pass to end (its files are in scratch)."""
        if self.drawing:
            self.drawing.stop()
        with contextlib.suppress(Exception):       # said by found(), when it is asked
            self.task.result()


def side_of(path: Path, requests: int | None = None) -> Side:
    """What a diff argument names: a run folder of one profiled server, a server's folder, a server's
    profile.folded (each: that server with its rounds), or any other folded file or pprof profile (one round;
    with requests, its CPU µs per request from its CPU nanoseconds). Each round's file is scanned (export.core_readable:
    a pprof profile's collapsed stacks are what the core reads)."""
    path = Path(path)
    run_server = _run_and_server(path) if path.is_dir() else run_profile(path)
    if not run_server:
        r = scanned(Round(1, path, None))
        if requests:
            r.cpu_us_per_req = cpu_us_per_req(path, weight_unit(path), r.total, requests)
            r.source = {"file": str(path), "key": f"--requests {requests}"}
        return Side(str(path), path, rounds=[r])
    if requests:
        raise UserError(f"--requests: {path} is a server of a run, which brings its own CPU per request: give "
                        "--requests only when both sides are profiles without a run folder")
    run_dir, server = run_server
    _, metrics = load_run(run_dir)
    rounds = [scanned(Round(r["round"], Path(r["profile"]), r["cpu_us_per_req"], {"file": r["file"], "key": r["key"]}))
              for r in round_records(run_dir, server, metrics)]
    if not rounds:
        raise UserError(f"{path}: {server} has no profile in run {run_dir.name} (run without --no-profile)")
    return Side(server, path, run_dir, server, (metrics.get(server) or {}).get("app"), rounds)


def run_profile(path: Path) -> tuple[Path, str] | None:
    """(run, server) when path is a server's profile.folded in a run folder."""
    found = run_of_folded(path) if path.is_file() else None
    return found if found and profile_folded(*found).resolve() == path.resolve() else None


def scanned(r: Round) -> Round:
    """r with the file the core reads, its total weight and the gcd of its weights."""
    r.read, r.total, r.unit = core_readable(r.folded)
    return r


def sides_of(a_path: Path, b_path: Path, requests: tuple = (None, None),
             per_request: bool = False) -> tuple[Side, Side]:
    """side_of A and B, and, when the graph is drawn from the mean over rounds (rounds on either side, or CPU µs per
    request), each round's displayed stacks."""
    a, b = side_of(a_path, requests[0]), side_of(b_path, requests[1])
    if per_request or len(a.rounds) > 1 or len(b.rounds) > 1:
        for r in a.rounds + b.rounds:       # frames as inferno draws them, so the tree's boxes match the graph's
            r.displayed = drawn_stacks(r.read)
    return a, b


def _run_and_server(folder: Path) -> tuple[Path, str]:
    """(run, server) for a server's folder or a run folder of one profiled server; UserError otherwise."""
    if found := run_of_folded(folder / "x"):
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


def category_columns(d: Diff) -> list[tuple[str, str]]:
    cols = [("category", "category")]
    # in µs/req where both sides have it, then in shares
    for key, unit, delta_unit in (("_us", "µs/req", "µs/req"), ("", "%", "points"))[0 if d.per_request else 1:]:
        cols += [(f"a{key}", f"A [{unit}]"), (f"b{key}", f"B [{unit}]"), (f"delta{key}", f"B−A [{delta_unit}]")]
        if d.tested:
            cols += [(f"delta{key}_pm", "±"), (f"delta{key}_q", "q"), (f"delta{key}_sig", "")]
    return cols


FRAME_COLUMNS = [("frame", "frame"), ("depth", "depth"), ("delta_us", "B−A [µs/req]"), ("delta_us_pm", "±"),
                 ("q_us", "q"), ("sig_us", ""), ("delta", "B−A [points]"), ("delta_pm", "±"), ("q", "q"), ("sig", ""),
                 ("delta_abs", "B−A [samples]"), ("delta_abs_pm", "±"), ("q_abs", "q"), ("sig_abs", "")]


# --- the graph -----------------------------------------------------------------------------------

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
    return "" if d.tested else (f"Significance needs rounds: A has {len(d.a.rounds)}, B {len(d.b.rounds)} (profile.sh "
                                "run --rounds 3 or more); drawn as before, no difference tested.")


def render_diff(a_path: Path, b_path: Path, out: Path, rules: Rules, app: str | None, normalize: bool,
                per_request: bool, title: str, fmt: str, requests: tuple[int, ...] = ()) -> str:
    """Write the differential graph of B against A to out and return the report of the differences.
    requests: A's and B's request counts, for two profiles without a run folder (per_request.py)."""
    count_a, count_b = requests_per_profile(requests, [a_path, b_path])
    with tempfile.TemporaryDirectory(prefix="rpcprof-diff-") as scratch:
        scratch = Path(scratch)
        # two bare folded files: the core's pass over them starts now, while they are scanned
        bare = [Path(p) for p in (a_path, b_path) if Path(p).is_file() and not is_pprof(p) and not run_profile(Path(p))]
        early = SidesRead(bare[:1], bare[1:], scratch, not per_request, normalize) if len(bare) == 2 else None
        try:
            a, b = sides_of(a_path, b_path, (count_a, count_b), per_request)
        except BaseException:
            if early:
                early.cleanup()
            raise
        means = bool(a.rounds[0].displayed)
        origin = label_sides(a, b)
        d = build_diff(a, b, absolute=not normalize and not per_request)
        if per_request and not d.per_request:
            raise UserError("--per-request needs both sides' CPU µs per request: give RUN/SERVER or its profile.folded "
                            "(from run folders), or two profiles with --requests A_N --requests B_N, or leave --per-request out")
        rules_a, rules_b = (rules.with_app(app or s.app, "--app" if app else RESULT_FILE) for s in (a, b))
        view = "us" if per_request else "share" if normalize else "abs"
        scaling = ({"us": "CPU µs per request", "share": "shares of samples", "abs": "samples, not normalised"}[view]
                   + ", mean over each side's rounds" if means else
                   "normalised: A scaled to B's total" if normalize else "not normalised: raw weights")
        sig = significance_line(d, view)

        def subtitle_of(found: dict) -> str:
            one_sided = found["a"]["count"] or found["b"]["count"]
            return " · ".join(x for x in (f"A = {a.label} → B = {b.label}", origin, "widths: B",
                                          "red: more in B, blue: less", sig, scaling,
                                          MARKS if not means and one_sided else "") if x)

        def draw(found: dict) -> Drawing:     # one round a side: drawn once merged, while categorised
            return Drawing(scratch, MERGED, inferno_options(title, subtitle_of(found), b.rounds[0].unit or 1))

        files = [r.read for r in a.rounds], [r.read for r in b.rounds]
        read = early if early and [bare[:1], bare[1:]] == list(files) else SidesRead(*files, scratch, not means, normalize)
        if early and read is not early:
            early.cleanup()
        try:
            try:
                for side, rules_side in ((a, rules_a), (b, rules_b)):
                    for r in side.rounds:
                        r.known = rules_side, read.categorize(r.read, rules_side, None if means else draw)
                found = read.found()
            except (OSError, EOFError, Changed) as e:
                raise UserError(f"{a.path}, {b.path}: could not be read as they were a moment ago, or the scratch "
                                f"files written ({e or 'a line changed'}); run the command again") from None
            rows = category_rows(d, rules_a, rules_b)
            if means:       # B's mean stacks against A's, drawn at B's widths
                stacks = [mean_stacks(d, side, view) for side in (a, b)]
                for side_stacks, name in zip(stacks, ("a.mean", "b.mean")):
                    with open(scratch / name, "w", encoding="utf-8") as f:
                        f.writelines(f"{';'.join(frames)} {w}\n" for frames, w in side_stacks)
                diff = run_tool([inferno_tool("inferno-diff-folded"), "a.mean", "b.mean"], scratch)
                (scratch / "mean.diff").write_bytes(diff)
                read.drawing = Drawing(scratch, "mean.diff", inferno_options(title, subtitle_of(found), sample_weight(
                    stacks[1]), {"us": "ps/req", "share": "ppb", "abs": "samples"}[view]))
            elif read.drawing is None:      # the core's pass ended after the sides were categorised
                read.drawing = draw(found)
            # inferno-flamegraph of the lines (widths are B's, red = more samples in B, blue = fewer), recoloured by
            # significance (rounds, tested) or for the frames on one side only (one round a side), with the legend of
            # the rows (each category's share of A and of B, in %)
            svg = read.drawing.svg()
            if not means:
                svg = mark_one_side(svg, read.names())
            elif d.tested:
                svg = recolour_significant(svg, d, view)
            legend = [LegendItem(f"{r['category']} {cell(r['a'])}→{cell(r['b'])}") for r in rows]
            finish_flamegraph(svg, out, title, subtitle_of(found), legend, "category share A→B [%]:")
        finally:
            read.cleanup()
    found = one_side_found(*((dict(found[s]["frames"]), found[s]["count"]) for s in "ab"), rows)
    return diff_report(a, b, d, rows, found, out, fmt, origin, sig or scaling)


def diff_report(a: Side, b: Side, d: Diff, rows: list[dict], found: dict, out: Path, fmt: str, origin: str,
                said: str) -> str:
    """render_diff's report in fmt: the categories, the significant frames, the frames on one side only."""
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
                 + (f", the {SHOWN} largest differences here" if len(frames) > SHOWN else "") + ":\n\n")
        text += render(frames[:SHOWN], cols, fmt) if frames else "(none)\n"
    else:
        text += rounds_note(d) + "\n"
    return text + one_side_text(found, fmt) + f"\nWrote {out} ({said}).\n"


def side_record(s: Side) -> dict:
    """A side for --format json: what was given, its run and server, and each round's file and key."""
    rounds = [{"round": r.k, "profile": str(r.folded), "cpu_us_per_req": r.cpu_us_per_req, **r.source}
              for r in s.rounds]
    return {"label": s.label, "given": str(s.path), "run": str(s.run_dir) if s.run_dir else None, "server": s.server,
            "rounds": rounds}


def gap_lines(rows: list[dict], columns: list[tuple[str, str]]) -> list[str]:
    """compare_rows' gaps as sentences, one per server after the first, for a document (report.py results):
    `rust_pajamax − rust_tonic_mt, µs/req: recv -1.23 ± 0.10 *, send ... n.s.`."""
    servers = servers_of(columns)
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
