"""Annotated flame graphs: inferno draws them, rpcprof colours every frame by its category and writes the
legend, the measured figures and the hover text onto them.

The colour of a frame (a box of the graph) is the category that the leaf-first rule (categorize.yaml)
gives the stacks passing through that box; a box that several categories share takes the one with the
most weight. inferno's palette map (`--cp`) and `--nameattr` are keyed by function name, not by box: a
function called from recv and from protocol code would get one colour and one hover text everywhere
(10-25 % of the boxes of the five servers' captures). So each box gets its own category and hover text,
from the stacks beneath it (box_weights).

One way for every profile, small or a fleet's million distinct stacks, plain, gzip'd or pprof: its rows are
categorised and written as inferno must read them, and inferno draws that file. The compiled core reads the rows
(rpcprof.folded.chunks), a chunk at a time, with their lines as inferno must read them; each chunk is categorised
(stack_walk.Grouping: a leaf asked once, and a stack whose leaf answers no question takes its callers' answer,
asked once per distinct callers) and its lines written to a file and to inferno. inferno sorts the lines it draws as byte strings and
each box spans a run of adjacent lines, so the box at fg:x, fg:w holds the lines whose weights, summed in that
order, run from x to x + w: the core sorts the file's lines as inferno does (rpcprof_core.sorted_lines), and
running sums per category give each box its weights (`box_weights`).

Frame names are made safe before inferno sees them (the core's rows::drawn, as report/text.py's xml_chars with
lines=True: control characters and what XML 1.0 forbids become U+FFFD, as non-UTF-8 bytes already are): inferno
escapes XML itself but rejects non-UTF-8 input and passes control characters through. A line inferno would read
otherwise (trimmed, skipped as a `# ` comment, its last frame's ` 123` read as a second count) is rewritten so that
it draws every frame as written.

The choice, and its cost, are report/svg.py's, which rewrites inferno's SVG.
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from array import array
from bisect import bisect_left
from itertools import accumulate, compress
from pathlib import Path
from typing import Callable

import rpcprof_core

from rpcprof.analyze.categorize import OTHER, Rules, group_of
from rpcprof.analyze.stack_walk import Grouping
from rpcprof.analyze.wakers import split_wake
from rpcprof.errors import UserError
from rpcprof.folded import chunks, refusal
from rpcprof.report.export import core_readable
from rpcprof.report.svg import (FRAME_HEIGHT, LegendItem, add_legend, drawn_boxes, fit_headings, legend_svg,
                                recolour_frames, search_names_only, write_svg)
from rpcprof.report.text import xml_chars
from rpcprof.report.tables import cell    # the legend rounds shares as `report.py table` prints them
from rpcprof.rundir import (FLAME_SVG, OFFCPU_SVG, OFFWAKE_SVG, load_run, offcpu_folded, offwake_folded, profile_folded,
                            read_profile)
from rpcprof.status import Status


# --- the rows inferno draws, and the categories beneath each box ----------------------------------

def deannotated(name: str) -> str:
    """The name inferno gives a frame's box: without a `_[k]`, `_[w]`, `_[i]` or `_[j]` annotation."""
    return name[:-4] if name.endswith(("_[k]", "_[w]", "_[i]", "_[j]")) else name


def write_drawn_rows(folded: Path, rules: Rules, write, classify=None) -> tuple[array, array]:
    """(weights, groups) of a folded file's rows, in order (arrays), each group a number (its place in
    rules.all_categories), by the leaf-first rule (stack_walk.Grouping) or classify(frames); the rows' lines, as
    inferno-flamegraph must read them (the core's), given to write (a function of bytes)."""
    grouping = Grouping(rules)
    number = {c: i for i, c in enumerate(rules.all_categories)}.__getitem__
    weights, groups = array("Q"), array("B")
    try:
        for chunk in chunks(folded, drawn=True):
            write(chunk.drawn)
            weights.extend(chunk.counts)
            if classify:
                stacks = map(str.__add__, map(chunk.callers.__getitem__, chunk.callers_ids),
                             map(chunk.leaves.__getitem__, chunk.leaf_ids))
                groups.extend(number(classify(s.split(";"))) for s in stacks)
            else:
                groups.extend(grouping.rows(chunk)[0])
    except (rpcprof_core.Refused, EOFError) as e:
        raise refusal(folded, e) from None
    return weights, groups


def box_weights(boxes: set[tuple[int, int]], ranked, weights, groups, order: list[str]) -> dict:
    """(fg:x, fg:w) -> {group: weight} of each box: the lines whose weights, summed in inferno's order (ranked: the
    lines' numbers in that order, rpcprof_core.sorted_lines), run from x to x + w."""
    weights, groups = list(map(weights.__getitem__, ranked)), bytes(map(groups.__getitem__, ranked))
    ends = list(accumulate(weights, initial=0))
    cuts = sorted({bisect_left(ends, at) for x, w in boxes for at in (x, x + w)})
    # each group's weight from the first line up to each cut, summed from cut to cut
    running = dict.fromkeys(set(groups), 0)
    upto = {cuts[0]: dict(running)} if cuts else {}
    for start, end in zip(cuts, cuts[1:]):
        these, ws = groups[start:end], weights[start:end]
        for g in running:
            n = these.count(g)
            if n:
                running[g] += sum(ws) if n == len(these) else sum(compress(ws, map(g.__eq__, these)))
        upto[end] = dict(running)
    found: dict[tuple[int, int], dict[str, int]] = {}
    for x, w in boxes:
        first, last = upto[bisect_left(ends, x)], upto[bisect_left(ends, x + w)]
        found[x, w] = {order[g]: last[g] - first[g] for g in sorted(running) if last[g] > first[g]}
    return found


# --- running inferno -----------------------------------------------------------------------------

def inferno_tool(name: str) -> str:
    """Path of an inferno binary: on PATH, or where cargo installs it (report.py's PATH may lack it)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path.home() / ".cargo" / "bin"))
    if not found:
        raise UserError(f"{name} not found: run tools/setup.sh (it installs inferno with cargo)")
    return found


def run_tool(argv: list[str], cwd: Path) -> bytes:
    """The tool's output; a UserError with its last line of error when it fails."""
    proc = subprocess.run(argv, cwd=cwd, capture_output=True)
    if proc.returncode != 0:
        raise tool_failed(argv[0], proc.returncode, proc.stderr)
    return proc.stdout


def tool_failed(tool: str, status: int, stderr: bytes) -> UserError:
    """The error of a tool that exited with status: its name and the last line it wrote to stderr."""
    err = stderr.decode(errors="replace").strip().splitlines()
    return UserError(f"{Path(tool).name} failed (exit {status}): {err[-1] if err else 'no message'}")


def inferno_options(title: str, subtitle: str, weight: int, countname: str = "samples") -> list[str]:
    # --factor: inferno sums weights (perf: the sample period in ns); dividing by the weight of one
    # sample makes its "N samples" real sample counts. --hash: a colour inferno must pick itself
    # (no palette entry) is a hash of the name, so the output is deterministic.
    return ["--title", xml_chars(title, lines=True), "--subtitle", xml_chars(subtitle, lines=True),
            "--hash", "--height", str(FRAME_HEIGHT), "--countname", countname, "--factor", repr(1 / weight)]


# --- the two graphs --------------------------------------------------------------------------------

def render_flamegraph(folded: Path, rules: Rules, out_svg: Path, title: str, subtitle: str | Callable[[int], str],
                      countname: str = "samples", classify=None) -> None:
    """Write the annotated flame graph of a folded file (or pprof profile) to out_svg. rules: with the app pattern
    added. subtitle: the text, or a function of the samples counted. countname: what a weight of 1 is (off-CPU
    graphs: µs). classify: frames -> category, when not the rules' leaf-first walk over the whole stack."""
    order = rules.all_categories
    with tempfile.TemporaryDirectory(prefix="rpcprof-flame-") as scratch:
        read, total, unit = core_readable(Path(folded))     # a pprof profile as collapsed lines
        weight = unit if countname == "samples" else 1
        if not isinstance(subtitle, str):
            subtitle = subtitle(total // unit)
        lines = Path(scratch) / "stacks.folded"
        # inferno draws the lines as they are written (to the file the core sorts afterwards, and to its input)
        drawing = Drawing(Path(scratch), lines.name, inferno_options(title, subtitle, weight, countname), piped=True)
        try:
            with open(lines, "wb") as out:
                def write(data: bytes) -> None:
                    out.write(data)
                    try:
                        drawing.proc.stdin.write(data)
                    except BrokenPipeError:
                        pass                        # inferno stopped: svg() says why
                weights, groups = write_drawn_rows(read, rules, write, classify)
            drawing.proc.stdin.close()
            ranked = array("I", rpcprof_core.sorted_lines(str(lines)))       # while inferno lays the lines out
            svg = drawing.svg()
            if sys.byteorder == "big":
                ranked.byteswap()
            by_box = box_weights({*drawn_boxes(svg), (0, total)}, ranked, weights, groups, order)
        finally:
            drawing.stop()
    svg, unmatched = recolour_frames(svg, by_box, weight, total, rules.colors, order)
    if unmatched:
        print(f"rpcprof: warning: {unmatched} frames of {folded} could not be matched to their stacks; "
              "they keep inferno's colour", file=sys.stderr)
    # one item per category, the share rounded as `report.py table` prints it
    legend = [LegendItem(f"{c} {cell(100 * (by_box[0, total].get(c, 0) / total))}%", rules.colors[c],
                         rules.descriptions.get(c) or "stacks that no rule matched") for c in order]
    finish_flamegraph(svg, out_svg, title, subtitle, legend,
                      "share of samples:" if countname == "samples" else f"share of {countname}:")


def finish_flamegraph(svg: str, out_svg: Path, title: str, subtitle: str, legend: list[LegendItem],
                      heading: str) -> None:
    """inferno's SVG, recoloured, with headings that fit and the legend (none without items), checked and written."""
    svg = fit_headings(search_names_only(svg), title, subtitle)
    if legend:
        svg = add_legend(svg, legend_svg(legend, heading, 72))
    write_svg(out_svg, svg)


class Drawing:
    """inferno-flamegraph of a file of scratch (inferno-diff-folded's lines), started now to run beside what
    report.py does meanwhile; svg() waits for it and gives its SVG, or a UserError as run_tool says it. The
    caller owns the process: stop(), in a `finally`, kills it (by PID) if it still runs."""

    def __init__(self, scratch: Path, name: str, options: list[str], piped: bool = False) -> None:
        tool = self.tool = inferno_tool("inferno-flamegraph")
        self.out = open(scratch / (name + ".svg"), "w+b")
        self.err = open(scratch / (name + ".err"), "w+b")
        # piped: the lines are written to the process's input (proc.stdin) rather than read from the file
        self.proc = subprocess.Popen([tool, *options, "-" if piped else name], cwd=scratch, stdout=self.out,
                                     stderr=self.err, stdin=subprocess.PIPE if piped else None)

    def svg(self) -> str:
        if self.proc.stdin:
            self.proc.stdin.close()
        status = self.proc.wait()
        if status != 0:
            self.err.seek(0)
            raise tool_failed(self.tool, status, self.err.read())
        self.out.seek(0)
        return self.out.read().decode("utf-8")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in filter(None, (self.proc.stdin, self.out, self.err)):
            f.close()


# --- figures from a run folder ----------------------------------------------------------------------

def subtitle_for_run(run_dir: Path, server: str) -> str:
    """The measured figures of one server of a run as one line, the unprofiled window's then the profile's; a figure
    the run did not measure (e.g. req/s when attached without a request count) is left out."""
    run_dir = Path(run_dir)
    manifest, metrics = load_run(run_dir)
    m = metrics.get(server)
    if not m:
        raise UserError(f"{run_dir}: no server {server!r} in metrics.json (servers: {', '.join(sorted(metrics))})")
    p = manifest.get("parameters", {})
    prof = m.get("profile") or read_profile(run_dir / server)
    scenario = (manifest.get("scenario") or {}).get("name") or p.get("scenario")
    parts = [server, scenario, f"C={p['connections']} S={p['streams']}" if "connections" in p and "streams" in p else None]
    figures = (("req_per_s", "{:,.0f} req/s"), ("server_cpu_cores", "server CPU {:.2f} cores"),
               ("req_per_cpu_s", "{:,.0f} req/s per CPU"), ("cpu_us_per_req", "{:.2f} CPU µs/req"))
    parts += [fmt.format(m[key]) for key, fmt in figures if m.get(key) is not None]
    parts += ["CPU measured while profiling" if m.get("cpu_note") else None,
              f"{prof['samples']:,} samples of {prof.get('event', '?')} ({prof.get('profiler', '?')})"
              + (" TOO FEW" if prof.get("too_few_samples") else "") if prof.get("samples") is not None else None,
              f"status {m['status']}" if m.get("status") not in (None, Status.OK) else None]
    return " · ".join(x for x in parts if x)


def run_graph(run_dir: Path, server: str, out_svg: Path | None, name: str) -> tuple[Path, dict, str]:
    """(where a run's server's graph goes: out_svg or RUN/SERVER/name, its figures, the run's command for the title)."""
    manifest, metrics = load_run(run_dir)
    return (Path(out_svg) if out_svg else Path(run_dir) / server / name, metrics.get(server) or {},
            shlex.join(manifest.get("command") or ["profile.sh"]))


def render_offcpu_flamegraph(run_dir: Path, server: str, rules: Rules, out_svg: Path | None = None) -> Path:
    """RUN/SERVER/offcpu.svg (or out_svg, returned): each wait as wide as its time off CPU, coloured by reason."""
    out, m, command = run_graph(run_dir, server, out_svg, OFFCPU_SVG)
    rec = m.get("offcpu") or {}
    rps = f" · {rec['req_per_s']:,.0f} req/s" if rec.get("req_per_s") else ""
    subtitle = (f"{server} · off-CPU time, µs (sched_switch stacks, weighted by the time until the thread ran "
                f"again) · {rec.get('waits') or 0:,} waits, {rec.get('off_cpu_s') or 0:.2f} s off CPU in "
                f"{rec.get('window_s') or 0:.1f} s{rps}")
    render_flamegraph(offcpu_folded(run_dir, server), rules.using(view="waits"), out, command, subtitle,
                      countname="µs")
    return out


def render_offwake_flamegraph(run_dir: Path, server: str, rules: Rules, out_svg: Path | None = None) -> Path:
    """RUN/SERVER/offwake.svg (or out_svg): who woke its threads, each wait as wide as its time off CPU,
    the waker's stack below `--` and the sleeper's above it (upside down, its thread name on top),
    coloured by the sleeper's wait reason. Returns the path written."""
    out, m, command = run_graph(run_dir, server, out_svg, OFFWAKE_SVG)
    wakes = (m.get("offcpu") or {}).get("wakes") or {}
    waits = rules.using(view="waits")

    def reason(frames: list[str]) -> str:
        halves = split_wake(frames)
        return group_of(halves[1], waits) if halves else OTHER

    subtitle = (f"{server} · who woke its threads: waker below --, sleeper above (sched_waking stacks paired "
                f"with the waits they ended), µs off CPU · {wakes.get('paired') or 0:,} waits paired")
    render_flamegraph(offwake_folded(run_dir, server), waits, out, command, subtitle, countname="µs", classify=reason)
    return out


def render_run_flamegraph(run_dir: Path, server: str, rules: Rules, out_svg: Path | None = None) -> Path:
    """RUN/SERVER/flame.svg (or out_svg), titled with the run's command; rules without the app pattern
    (the server's own is added). Returns the path written."""
    out, m, command = run_graph(run_dir, server, out_svg, FLAME_SVG)
    render_flamegraph(profile_folded(run_dir, server), rules.with_app(m.get("app"), f"{server}'s app pattern"),
                      out, command, subtitle_for_run(run_dir, server))
    return out
