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
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from rpcprof.analyze.categorize import Rules, open_folded
from rpcprof.analyze.per_request import cpu_us_per_req, requests_per_profile
from rpcprof.analyze.significance import FDR
from rpcprof.analyze.sigdiff import MIN_SHARE, Diff, Round, Side, build_diff, category_rows, frame_rows, mean_stacks
from rpcprof.errors import UserError
from rpcprof.folded import weight_unit
from rpcprof.report.compare import round_records
from rpcprof.report.diff_stream import SidesRead, one_side_streamed, render_diff_streamed, scan
from rpcprof.report.flamegraph import Drawing, displayable_stack, inferno_options, render_diff_flamegraph
from rpcprof.report.one_side import MARKS, drawn_names, mark_one_side, one_side, one_side_text, vanished_stacks
from rpcprof.report.sigsvg import recolour_significant
from rpcprof.report.tables import render
from rpcprof.rundir import RESULT_FILE, load_manifest, load_run, profile_folded, run_of_folded

FRAMES_SHOWN = 15         # rows of the frames table in text (json: all)


def drawn_round(k: int, folded: Path, cpu_us: float | None, stacks: list, source: dict) -> Round:
    """A round whose stacks are also given with their frames as inferno draws them (displayable_stack), so
    the tree's boxes match the graph's by name."""
    return Round(k, folded, cpu_us, stacks, source, [(displayable_stack(frames).split(";"), w) for frames, w in stacks])


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
        scanned = None if requests else scan(path)
        if scanned:             # read as it goes (report/diff_stream.py), unless the other side is not
            return Side(str(path), path, rounds=[Round(1, path, None, scanned=scanned)])
        stacks = open_folded(path)
        us = cpu_us_per_req(path, weight_unit(path), sum(w for _, w in stacks), requests) if requests else None
        source = {"file": str(path), "key": f"--requests {requests}"} if requests else {}
        return Side(str(path), path, rounds=[drawn_round(1, path, us, stacks, source)])
    if requests:
        raise UserError(f"--requests: {path} is a server of a run, which brings its own CPU per request: give "
                        "--requests only when both sides are profiles without a run folder")
    run_dir, server = run_server
    _, metrics = load_run(run_dir)
    rounds = [drawn_round(r["round"], Path(r["profile"]), r["cpu_us_per_req"], open_folded(r["profile"]),
                          {"file": r["file"], "key": r["key"]}) for r in round_records(run_dir, server, metrics)]
    if not rounds:
        raise UserError(f"{path}: {server} has no profile in run {run_dir.name} (run without --no-profile)")
    return Side(server, path, run_dir, server, (metrics.get(server) or {}).get("app"), rounds)


def sides_of(a_path: Path, b_path: Path, count_a: int | None, count_b: int | None) -> tuple[Side, Side]:
    """side_of A and B."""
    return side_of(a_path, count_a), side_of(b_path, count_b)


def stream_sides(a: Side, b: Side, rules_a: Rules, rules_b: Rules, normalize: bool, draw,
                 started: SidesRead | None = None) -> SidesRead:
    """Two bare folded files read once each (report/diff_stream.py: started, or started here), each round given
    its Breakdown (draw: as SidesRead.categorize takes it); a UserError when one cannot be read again (changed or
    removed since it was scanned) or the scratch folder written."""
    from rpcprof.analyze.folded_blocks import Irregular
    try:
        read = started or SidesRead(a.path, b.path, normalize)
        read.categorize(rules_a, rules_b, draw)
    except (OSError, EOFError, Irregular) as e:
        raise UserError(f"{a.path}, {b.path}: could not be read as they were a moment ago, or the scratch files "
                        f"written ({e or 'a line changed'}); run the command again") from None
    for side, rules, breakdown in zip((a, b), (rules_a, rules_b), read.breakdowns):
        side.rounds[0].known = rules, breakdown
    return read


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


FRAME_COLUMNS = [("frame", "frame"), ("depth", "depth"), ("delta_us", "B−A [µs/req]"), ("delta_us_pm", "±"),
                 ("q_us", "q"), ("sig_us", ""), ("delta", "B−A [points]"), ("delta_pm", "±"), ("q", "q"), ("sig", ""),
                 ("delta_abs", "B−A [samples]"), ("delta_abs_pm", "±"), ("q_abs", "q"), ("sig_abs", "")]


# --- the graph -----------------------------------------------------------------------------------

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
                per_request: bool, title: str, fmt: str, requests: tuple[int, ...] = (),
                started: SidesRead | None = None) -> str:
    """Write the differential graph of B against A to out and return the report of the differences.
    requests: A's and B's request counts, for two profiles without a run folder (per_request.py); started:
    start_sides' of A and B, used when they are read as they go (the caller stops it)."""
    count_a, count_b = requests_per_profile(requests, [a_path, b_path])
    a, b = sides_of(a_path, b_path, count_a, count_b)
    streamed = all(r.scanned for s in (a, b) for r in s.rounds)
    if not streamed:
        for r in (r for s in (a, b) for r in s.rounds if r.scanned):
            r.stacks, r.scanned = open_folded(r.folded), None
            r.displayed = drawn_round(r.k, r.folded, None, r.stacks, {}).displayed
    origin = label_sides(a, b)
    d = build_diff(a, b, absolute=not normalize and not per_request)
    if per_request and not d.per_request:
        raise UserError("--per-request needs both sides' CPU µs per request: give RUN/SERVER or its profile.folded "
                        "(from run folders), or two profiles with --requests A_N --requests B_N, or leave --per-request out")
    rules_a = rules.with_app(app or a.app, "--app" if app else RESULT_FILE)
    rules_b = rules.with_app(app or b.app, "--app" if app else RESULT_FILE)
    view = "us" if per_request else "share" if normalize else "abs"
    means = d.tested or per_request or len(a.rounds) > 1 or len(b.rounds) > 1      # drawn: the mean over rounds
    if means:
        scaling = {"us": "CPU µs per request", "share": "shares of samples", "abs": "samples, not normalised"}[view] + (
            ", mean over each side's rounds")
    else:
        scaling = "normalised: A scaled to B's total" if normalize else "not normalised: raw weights"
    sig = significance_line(d, view)

    def subtitle_of(one_sided) -> str:
        return " · ".join(x for x in (f"A = {a.label} → B = {b.label}", origin, "widths: B",
                                      "red: more in B, blue: less", sig, scaling,
                                      MARKS if not means and one_sided else "") if x)
    def draw(scratch: Path, found: dict) -> Drawing:     # two bare files: drawn once merged, while categorised
        one_sided = found["a"]["count"] or found["b"]["count"]
        return Drawing(scratch, "diff.folded", inferno_options(title, subtitle_of(one_sided), b.rounds[0].scanned[1] or 1))
    read = stream_sides(a, b, rules_a, rules_b, normalize, draw, started) if streamed else None
    try:
        rows = category_rows(d, rules_a, rules_b)
        if read:
            found = one_side_streamed(read, rows)
        else:
            found, held = one_side(d, rows)      # held: every frame on each side only
        subtitle = subtitle_of(found["frames_only_in_a_count"] or found["frames_only_in_b_count"])
        legend = [{"category": r["category"], "a": r["a"], "b": r["b"]} for r in rows]
        if means:
            with tempfile.TemporaryDirectory(prefix="rpcprof-sigdiff-") as scratch:
                files = [Path(scratch) / "a.folded", Path(scratch) / "b.folded"]
                for side, f in zip((a, b), files):
                    write_stacks(mean_stacks(d, side, view), f)
                render_diff_flamegraph(*files, out, title, subtitle, False, legend,
                                       countname={"us": "ps/req", "share": "ppb", "abs": "samples"}[view],
                                       recolour=(lambda svg: recolour_significant(svg, d, view)) if d.tested else None)
        elif read:
            render_diff_streamed(read, out, title, subtitle, normalize, legend, lambda svg: mark_one_side(svg, read.names()),
                                 bool(found["frames_only_in_a_count"]), (a.rounds[0].scanned, b.rounds[0].scanned))
        else:
            render_diff_flamegraph(a.rounds[0].folded, b.rounds[0].folded, out, title, subtitle, normalize, legend,
                                   recolour=lambda svg: mark_one_side(svg, held),
                                   also_in_b=lambda stacks: vanished_stacks(stacks, drawn_names(held["a"]) | held["a"]))
    finally:
        if read:
            read.cleanup()
    return diff_report(a, b, d, rows, found, out, fmt, origin, sig or scaling)


def diff_report(a: Side, b: Side, d: Diff, rows: list[dict], found: dict, out: Path, fmt: str, origin: str,
                said: str) -> str:
    """render_diff's report in fmt: the categories, the significant frames, the frames on one side only."""
    import json
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
