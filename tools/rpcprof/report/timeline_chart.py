"""The measured windows over time (timeline.svg): each round's window side by side, one line per server,
its CPU µs per request in 0.5 s slices (analyze/timeline.py), on a log scale so that servers 50x apart
share it. A pace that changed between rounds shows as a step from one panel to the next; one that changed
inside a window, as a step within a panel.

Drawn with matplotlib's SVG backend as breakdown.svg is (report/chart.py): deterministic, text kept as text.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from rpcprof.report.chart import STYLE, svg_of
from rpcprof.report.svg import write_svg
from rpcprof.report.text import plot_label
from rpcprof.records import round_of, round_rows
from rpcprof.rundir import load_run

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")


def run_timelines(metrics: dict, servers: list[str]) -> dict[str, dict[int, dict]]:
    """{server: {round: its measured window's timeline}} for the servers and rounds that recorded one."""
    found = {s: {round_of(r): r["timeline"] for r in round_rows(m) or [m] if r.get("timeline")}
             for s, m in ((s, metrics.get(s) or {}) for s in servers)}
    return {s: timelines for s, timelines in found.items() if timelines}


def render_timeline_chart(run_dir: Path, out_svg: Path) -> bool:
    """Write timeline.svg for a run; False (nothing written) when no window recorded a timeline (older runs)."""
    import matplotlib
    manifest, metrics = load_run(run_dir)
    servers = manifest["parameters"]["servers"]
    lines = run_timelines(metrics, servers)
    if not lines:
        return False
    rounds = sorted({k for per in lines.values() for k in per})
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(min(11, max(6.5, 2.2 + 1.9 * len(rounds))), 3.4), layout="constrained")
        axes = fig.subplots(1, len(rounds), sharey=True, squeeze=False)[0]
        for ax, k in zip(axes, rounds):
            for i, s in enumerate(servers):
                t = (lines.get(s) or {}).get(k)
                if not t:
                    continue
                points = [(x, y) for x, y in zip(t["t_s"], t["cpu_us_per_req"]) if y]
                ax.plot([x for x, _ in points], [y for _, y in points], color=COLORS[i % len(COLORS)],
                        marker=".", linewidth=1, label=plot_label(s) if k == rounds[0] else None)
            ax.set_yscale("log")
            ax.set_title(f"round {k}", fontsize=9)
            ax.set_xlabel("s into the window")
            ax.spines[["top", "right"]].set_visible(False)
        axes[0].set_ylabel("server CPU µs per request")
        fig.legend(loc="outside lower center", ncols=min(len(servers), 6), frameon=False)
        fig.suptitle(plot_label(f"Each measured window over time (0.5 s slices)\n{run_dir.name}"), fontsize=10)
        svg = svg_of(fig)
    write_svg(out_svg, svg)
    return True
