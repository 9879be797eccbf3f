"""The pictures of a run drawn with matplotlib's SVG backend (no pyplot state, no display), deterministic: fixed
hash salt for element ids, no date, text kept as text.

breakdown.svg, the per-request picture: one stacked bar per server of CPU µs per request by category, in the
categories' colours, with each server's req/s per CPU and its ratio to the first server.

timeline.svg, the measured windows over time: each round's window side by side, one line per server, its CPU µs
per request in 0.5 s slices (analyze/timeline.py), on a log scale so that servers 50x apart share it. A pace that
changed between rounds shows as a step from one panel to the next; one that changed inside a window, as a step
within a panel.
"""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("svg")
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import LogFormatter  # noqa: E402

from rpcprof.analyze.categorize import Rules  # noqa: E402
from rpcprof.report.compare import compare_rows, servers_of  # noqa: E402
from rpcprof.records import round_of, round_rows  # noqa: E402
from rpcprof.rundir import load_run  # noqa: E402
from rpcprof.report.svg import write_svg  # noqa: E402
from rpcprof.report.text import plot_label  # noqa: E402

STYLE = {"svg.hashsalt": "rpcprof", "svg.fonttype": "none", "font.size": 9}
# the breakdown's legend, above its left axes (in as many columns as fit: columns_that_fit)
LEGEND = {"loc": "lower left", "bbox_to_anchor": (0, 1.0), "frameon": False, "fontsize": 8.5, "handlelength": 1.0,
          "handleheight": 1.0}


def render_breakdown_chart(run_dir: Path, rules: Rules, out_svg: Path, app_override: str | None = None) -> None:
    """Write breakdown.svg for a run: a horizontal stacked bar per server with both a measured window and
    a profile (the same figures as `report.py compare`), the first server on top."""
    run_dir = Path(run_dir)
    rows, columns, _, figures = compare_rows(run_dir, rules, app_override)
    ratios = {f["server"]: f["ratio"] for f in figures}      # as the run table and compare give it (None: a view)
    manifest, metrics = load_run(run_dir)
    servers = servers_of(columns)
    by_cat = {r["category"]: r for r in rows}
    totals = [by_cat["total"][f"{s}_us"] for s in servers]
    groups = [c for c in rules.all_categories if any(by_cat[c][f"{s}_us"] > 0 for s in servers)]
    grouping = {"tax": "kind of work at the leaf (tax view)"}.get(rules.view) or \
        ("sub-category" if rules.level == 2 else "category")
    xmax = max(totals)

    def draw(ncols: int) -> Figure:
        legend_rows = max(len(groups) // 7, -(-len(groups) // ncols) - 1)    # beyond the first
        fig = Figure(figsize=(11, 1.9 + 0.6 * len(servers) + 0.2 * legend_rows), layout="constrained")
        absolute, shares = fig.subplots(1, 2, sharey=True, width_ratios=[3, 2])
        ys = list(range(len(servers)))
        for ax, key, scale, limit in ((absolute, "_us", xmax, xmax * 1.12), (shares, "_share", 100.0, 100.0)):
            left = [0.0] * len(servers)
            for cat in groups:
                widths = [by_cat[cat][f"{s}{key}"] for s in servers]
                ax.barh(ys, widths, left=left, height=0.6, color=rules.colors[cat], label=plot_label(cat),
                        edgecolor="white", linewidth=0.5)
                for y, x0, w in zip(ys, left, widths):
                    if w >= 0.08 * scale:      # a value only where it fits
                        ax.text(x0 + w / 2, y, f"{w:.2f}" if key == "_us" else f"{w:.0f}%", ha="center",
                                va="center", color="white", fontsize=8)
                left = [a + b for a, b in zip(left, widths)]
            ax.set_xlim(0, limit)
            ax.spines[["top", "right"]].set_visible(False)
        labels = []
        for y, s, total in zip(ys, servers, totals):
            rate = metrics[s]["req_per_cpu_s"]
            ratio = "" if ratios.get(s) is None else f"\n×{ratios[s]:.2f}"      # a second view of one process: none
            absolute.text(total + 0.01 * xmax, y, f"{total:.2f} µs{ratio}", va="center",
                          ha="left", fontsize=8.5)
            few = " (too few samples)" if (metrics[s].get("profile") or {}).get("too_few_samples") else ""
            labels.append(f"{plot_label(s)}{few}\n{rate:,.0f} req/s per CPU")
        absolute.set_yticks(ys, labels)
        absolute.invert_yaxis()
        absolute.set_xlabel(f"server CPU µs per request\n(unprofiled window × {grouping} share of the profile)")
        shares.set_xlabel(f"share of the profile [%]\n(by {grouping})")
        absolute.legend(ncols=ncols, **LEGEND)
        p = manifest.get("parameters", {})
        scenario = (manifest.get("scenario") or {}).get("name") or p.get("scenario", "?")
        fig.suptitle(plot_label(f"Where each request's CPU goes, by {grouping} · {run_dir.name}") + "\n" +
                     plot_label(f"{scenario} · C={p.get('connections', '?')} S={p.get('streams', '?')} · "
                                f"driver {p.get('driver', '?')} · ×: req/s per CPU over {servers[0]}'s, the run's ratio"),
                     fontsize=10)
        return fig

    write_svg(out_svg, _svg_with_a_legend_that_fits(draw, min(len(groups), 7)))


def svg_of(fig: Figure) -> str:
    """fig as SVG text, dated nowhere (the same figures draw the same file)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _svg_with_a_legend_that_fits(draw, ncols: int) -> str:
    """The SVG of draw(n), n the most legend columns (up to ncols) that fit (columns_that_fit)."""
    with matplotlib.rc_context(STYLE):
        fig = draw(ncols)
        if ncols > 1 and (fits := columns_that_fit(fig, ncols)) != ncols:
            fig = draw(fits)            # anew: a legend of more rows makes the figure taller
            # laid out once without its legend, as columns_that_fit measured it: the SVG's layout then starts from
            # those axes, not from matplotlib's narrower defaults, whose first pass squeezes them for the legend
            # (seed 000's C=10 S=10 level 2: its legend ran 26 px past its axes in the SVG)
            laid_out_without_its_legend(fig)
        return svg_of(fig)


def laid_out_without_its_legend(fig: Figure) -> Axes:
    """Lay fig out once with its legend left out of the layout (it stays on the figure); the axes it is on."""
    ax = next(a for a in fig.axes if a.get_legend())
    ax.get_legend().set_in_layout(False)
    fig.draw_without_rendering()
    ax.get_legend().set_in_layout(True)
    return ax


def columns_that_fit(fig: Figure, ncols: int) -> int:
    """The most columns, up to ncols, in which the legend above fig's left axes ends within those axes' right edge.
    The constrained layout makes room for a wider legend by squeezing the axes and pushing the right ones past the
    figure's edge, where the SVG's box cuts them (level 2's eighteen sub-categories). So fig is laid out once with
    its legend left out of the layout, and legends of fewer columns are set above the axes, each measured alone (a
    legend lays out its own box), until one ends within their right edge."""
    ax = laid_out_without_its_legend(fig)
    right = ax.get_window_extent().x1 + 1
    while ncols > 1 and ax.legend(ncols=ncols, **LEGEND).get_window_extent().x1 > right:
        ncols -= 1
    return ncols


COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")


class PlainLog(LogFormatter):
    """A log axis's labels, the ticks matplotlib picks, as plain numbers: 220 and 0.4, not 2.2×10² and 4e−01."""

    def _num_to_string(self, x, vmin, vmax):        # LogFormatter's one hook for the text (matplotlib pinned)
        return f"{x:g}"


def render_timeline_chart(run_dir: Path, out_svg: Path) -> bool:
    """Write timeline.svg for a run; False (nothing written) when no window recorded a timeline (older runs)."""
    manifest, metrics = load_run(run_dir)
    servers = manifest["parameters"]["servers"]
    # {server: {round: its measured window's timeline}} for the rounds that recorded one
    lines = {s: {round_of(r): r["timeline"] for r in round_rows(m) or [m] if r.get("timeline")}
             for s, m in ((s, metrics.get(s) or {}) for s in servers)}
    if not any(lines.values()):
        return False
    rounds = sorted({k for per in lines.values() for k in per})
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(min(11, max(6.5, 2.2 + 1.9 * len(rounds))), 3.4), layout="constrained")
        axes = fig.subplots(1, len(rounds), sharey=True, squeeze=False)[0]
        for ax, k in zip(axes, rounds):
            for i, s in enumerate(servers):
                t = lines[s].get(k)
                if not t:
                    continue
                points = [(x, y) for x, y in zip(t["t_s"], t["cpu_us_per_req"]) if y]
                ax.plot([x for x, _ in points], [y for _, y in points], color=COLORS[i % len(COLORS)],
                        marker=".", linewidth=1, label=plot_label(s) if k == rounds[0] else None)
            ax.set_yscale("log")
            for axis_ticks in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
                axis_ticks(PlainLog(labelOnlyBase=False, minor_thresholds=(2, 0.4)))
            ax.set_title(f"round {k}", fontsize=9)
            ax.set_xlabel("s into the window")
            ax.spines[["top", "right"]].set_visible(False)
        axes[0].set_ylabel("server CPU µs per request")
        fig.legend(loc="outside lower center", ncols=min(len(servers), 6), frameon=False)
        fig.suptitle(plot_label(f"Each measured window over time (0.5 s slices)\n{run_dir.name}"), fontsize=10)
        svg = svg_of(fig)
    write_svg(out_svg, svg)
    return True
