"""report.py runs: runs of one setup side by side, each ratio with its interval, whether each interval
holds the other runs' ratios, and the drift between runs that no run's rounds see: the figures are
analyze/agreement.py's, written here."""
from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

from rpcprof.analyze.agreement import Agreement, earlier_peers, setup_agreement
from rpcprof.analyze.intervals import RatioInterval
from rpcprof.errors import UserError
from rpcprof.report.hosts import render_hosts
from rpcprof.report.summary import RATIO_CELL, busy_parts, ratio_text, setup_text
from rpcprof.report.tables import Shown, render
from rpcprof.rundir import load_manifest, load_run


def _manifest(run_dir: Path) -> dict | None:
    try:
        return load_manifest(run_dir)
    except UserError:
        return None


def earlier_runs(run_dir: Path, runs_base: Path) -> list[Path]:
    """The earlier runs in runs_base set beside run_dir (agreement.py's earlier_peers), manifests read as reached."""
    this, base = load_manifest(run_dir), Path(runs_base)
    # folder names begin with their start time: the latest first
    candidates = sorted((d for d in base.iterdir() if d.is_dir() and d.name < run_dir.name), reverse=True) \
        if base.is_dir() else []
    return earlier_peers(this, ((d, _manifest(d)) for d in candidates))


def _pct(sd: float | None) -> str:
    return "-" if sd is None else f"{100 * (math.exp(sd) - 1):.1f} %"


def agreement_lines(name: str, a: Agreement, hosts_differ: bool = False, busy: tuple[str, ...] = ()) -> list[str]:
    """What the figures say, each sentence only when its condition holds (hosts_differ: the runs' hosts do;
    busy: the labels of the runs flagged BUSY-HOST)."""
    lines = []
    if a.checks:
        if a.misses:
            by = {r.label: (f"#{i}", r.interval) for i, r in enumerate(a.runs, 1)}

            def miss(x: str, y: str) -> str:
                (nx, ix), (ny, iy) = by[x], by[y]
                # as many decimals as it takes to show the ratio outside the bounds it passed
                digits = next((d for d in (1, 2, 3)
                               if f"{ix.ratio:.{d}f}" not in (f"{iy.low:.{d}f}", f"{iy.high:.{d}f}")), 4)

                def f(v: float) -> str:
                    return ratio_text(v) if digits == 1 else f"{v:.{digits}f}"
                return f"{nx}'s ^{f(ix.ratio)} is outside {ny}'s [{f(iy.low)}-{f(iy.high)}]"
            shown = "; ".join(miss(x, y) for x, y in a.misses[:4])
            more = f"; {len(a.misses) - 4} more" if len(a.misses) > 4 else ""
            lines.append(f"{name}: the runs disagree: {len(a.misses)} of {a.checks} run-to-run checks fail: "
                         f"{shown}{more}.")
        else:
            lines.append(f"{name}: the runs agree: every run's interval holds every other run's ratio.")
    flagged = " and ".join(f"#{i}" for i, r in enumerate(a.runs, 1) if r.label in busy)
    if a.runs_sd is not None and a.expected_sd is not None:
        line = (f"{name}: the runs' ratios spread by {_pct(a.runs_sd)} (sd); their rounds alone would spread them by "
                f"{_pct(a.expected_sd)}")
        if a.between_sd:
            why = (f"{flagged} ran beside busy programs, below" if flagged else
                   "the runs ran on different hosts, below" if hosts_differ else
                   "the machine drifting between runs, or a round that ran apart")
            line += (f": the runs differ by about {_pct(a.between_sd)} beyond what their rounds predict ({why})"
                     + ("" if flagged else ", so the interval over runs below is the one to quote"))
        lines.append(line + ".")
    if flagged:
        lines.append(f"{name}: {flagged} ran beside busy programs (BUSY-HOST): no interval over runs with "
                     f"{'them' if ' and ' in flagged else 'it'}; give report.py runs the others alone.")
    elif a.over_runs is not None and a.over_runs.low is not None:
        low, high = a.next_run
        lines.append(f"{name}: over the {len(a.runs)} runs (each run one estimate): {a.over_runs.text()} (95 %); "
                     f"a next run's ratio should land in [{ratio_text(low)}-{ratio_text(high)}] (95 % prediction).")
    return lines


def took_s(manifest: dict) -> float | None:
    """A run's seconds from its manifest's start to its end (its builds and host card in them, the setup
    profile.sh runs before it not); None for a run without an end."""
    try:
        start, end = (datetime.fromisoformat(manifest[k]) for k in ("started", "finished"))
    except (KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds()


def duration_text(s: float | None) -> str:
    return "-" if s is None else f"{int(s) // 60} min {int(s) % 60:02d} s" if s >= 60 else f"{s:.0f} s"


def took_line(took: dict[str, float | None]) -> str:
    """How long the runs took, from their manifests (those that record an end)."""
    known = sorted(s for s in took.values() if s is not None)
    if not known:
        return ""
    span = duration_text(known[0]) + (f" to {duration_text(known[-1])}" if known[-1] != known[0] else "")
    many = len(known) > 1
    return (f"The {len(known)} run{'s' * many} took {span}{' each' * many} from start to end, as "
            f"{'their manifests record' if many else 'its manifest records'} (the servers' builds and the host card "
            "in that time, the setup profile.sh runs first not).\n")


# the table's cells of several figures, or of one rounded as the table shows it; csv has the figures
RUNS_CELLS = {
    "ratio_text": Shown(lambda r: RatioInterval(r["ratio"], r["ratio_low"], r["ratio_high"], r["pairs"]).text(),
                        RATIO_CELL.parts),
    "took": Shown(lambda r: duration_text(r["took_s"]), (("took_s", "took [s]"),)),
    "half_width_pct": Shown(lambda r: None if r["half_width_pct"] is None else f"{r['half_width_pct']:.1f}",
                            (("half_width_pct", "± [%]"),)),
    "holds": Shown(lambda r: "-" if r["holds"] is None else f"{r['holds']} of {r['others']}",
                   (("holds", "holds the others' ratios"), ("others", "others"))),
}


def render_runs(run_dirs: list[Path], fmt: str = "table") -> str:
    # each run read once, none when fewer than two are given (setup_agreement says so)
    loaded = [(Path(d), *load_run(d)) for d in run_dirs] if len(run_dirs) >= 2 else []
    setup, pairs, started = setup_agreement([(d.name, manifest, metrics) for d, manifest, metrics in loaded])
    took = {d.name: took_s(manifest) for d, manifest, _ in loaded}
    busy = tuple(d.name for d, manifest, metrics in loaded if busy_parts(manifest, metrics))
    hosts, host_record = render_hosts(loaded, setup["servers"], fmt)
    if fmt == "json":
        return json.dumps({"setup": setup, "pairs": {k: v.as_dict() for k, v in pairs.items()}, "took_s": took,
                           "busy": list(busy), **host_record}, indent=2, sort_keys=True) + "\n"
    columns = [("#", "#"), ("run", "run"), ("started", "started"), ("took", "took"), ("pairs", "pairs"),
               ("ratio_text", "ratio [95 % interval]"), ("half_width_pct", "± [%]"), ("holds", "holds the others' ratios")]
    blocks = []
    for name, a in pairs.items():
        rows = [{"pair": name, "#": i, "run": r.label, "started": started[r.label], "took_s": took.get(r.label),
                 "pairs": len(r.logs), "ratio": r.interval.ratio, "ratio_low": r.interval.low,
                 "ratio_high": r.interval.high,
                 "half_width_pct": None if r.interval.half_width is None else 100 * r.interval.half_width,
                 "holds": (sum(1 for o in a.runs if o is not r and r.holds(o.interval.ratio))
                           if r.interval.low is not None else None),
                 "others": len(a.runs) - 1 if r.interval.low is not None else None} for i, r in enumerate(a.runs, 1)]
        table = render(rows, [("pair", "pair")] * (fmt == "csv") + columns, fmt, RUNS_CELLS)
        if fmt == "csv":
            blocks.append(table if not blocks else table.split("\n", 1)[1])
            continue
        blocks.append(f"{name}, {len(a.runs)} runs of one setup ({setup_text(setup, setup['scenario'], 'windows')}):"
                      f"\n\n{table}\n" + "\n".join(agreement_lines(name, a, bool(host_record), busy)) + "\n")
    return ("".join(blocks) if fmt == "csv" else "\n".join([*blocks, took_line(took)])) + hosts


def earlier_lines(run_dir: Path, runs_base: Path) -> list[str]:
    """Beside a new run's ratios: the interval over it and the earlier runs of its setup here, a line per ratio."""
    try:
        runs = [(Path(d).name, *load_run(d)) for d in [*earlier_runs(run_dir, runs_base), run_dir]]
    except UserError:
        return []
    # an earlier run beside busy programs is not pooled: its figures are not this host's alone
    earlier = [run for run in runs[:-1] if not busy_parts(*run[1:])]
    if not earlier:
        return []
    try:
        _, pairs, _ = setup_agreement([*earlier, runs[-1]])
    except UserError:
        return []
    return [f"{name} over this run and {len(earlier)} earlier one{'s' * (len(earlier) > 1)} of this setup here: "
            f"{a.over_runs.text()} (95 %, each run one estimate; report.py runs for each)"
            + (f"; the runs differ by about {_pct(a.between_sd)} beyond what their rounds predict"
               if a.between_sd else "")
            for name, a in pairs.items() if a.over_runs is not None and a.over_runs.low is not None]
