"""report.html: one self-contained page per run folder that opens offline.

It holds the run table, the ratio lines with their intervals, every flag with its explanation, the
per-request charts, every flame graph (interactive: each is its own SVG document in an iframe, so their
scripts and ids never meet), the compare table with the mechanism explanation and the kernel figures,
and the manifest. Every text that comes from a run (frame names, server names, commands) is escaped;
pictures are embedded as base64 data, so nothing in them is parsed as this page's HTML.
"""
from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.errors import UserError
from rpcprof.report.compare import compare_rows, counted_in, explanations, kernel_rows, servers_of
from rpcprof.report.chart import render_breakdown_chart, render_timeline_chart
from rpcprof.report.flamegraph import render_offcpu_flamegraph, render_offwake_flamegraph, render_run_flamegraph
from rpcprof.analyze.intervals import pilot_of
from rpcprof.analyze.stack_walk import breakdowns_kept
from rpcprof.report.summary import ratio_lines, run_columns, run_pace_findings, run_rows
from rpcprof.report.text import html as esc      # every text from a run, escaped
from rpcprof.report.tables import cell
from rpcprof.rundir import (TIMELINE_SVG, BREAKDOWN_LEVEL2_SVG, BREAKDOWN_SVG, FLAME_SVG, OFFCPU_SVG, OFFWAKE_SVG, load_run,
                            offcpu_folded, offwake_folded, profile_folded)

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .6em; }
th { text-align: left; background: #f4f4f4; } td.n { text-align: right; }
iframe { width: 100%; height: 640px; border: 1px solid #ccc; }
img.chart { max-width: 100%; } pre { background: #f7f7f7; padding: .8em; overflow: auto; }
ul.flags li { margin: .2em 0; }
"""


def table(rows: list[dict], columns: list[tuple[str, str]], row_id: str | None = None) -> str:
    """An HTML table; numbers right-aligned and formatted as the text tables do."""
    def td(v) -> str:
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        return ('<td class="n">' if numeric else "<td>") + f"{esc(cell(v))}</td>"

    head = "".join(f"<th>{esc(h)}</th>" for _, h in columns)
    body = "".join("<tr" + (f' data-row="{esc(r.get(row_id))}"' if row_id else "") + ">"
                   + "".join(td(r.get(k)) for k, _ in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def bullets(texts, attrs: str = "") -> str:
    """A list of the texts, escaped; attrs: the list's attributes."""
    return f"<ul{attrs}>" + "".join(f"<li>{esc(x)}</li>" for x in texts) + "</ul>"


def svg_uri(path: Path, drawn: Path, draw, errors: tuple = ()) -> str | None:
    """The SVG at path as a data URI; where the run folder keeps none (a saved folder keeps no pictures), the one
    draw() writes to drawn (errors: those that leave it undrawn); None when there is neither."""
    if not path.exists():
        path = drawn
        drawn.unlink(missing_ok=True)       # a picture of another section drawn there: read already
        try:
            draw()
        except errors:
            return None
    return "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode() if path.exists() else None


def waits_section(run_dir: Path, rules: Rules, servers: list[str], scratch: Path) -> list[str]:
    """The off-CPU window, where there is one: wait reasons, notes and verdict, offcpu.svg per server."""
    from rpcprof.report.waits import COLUMNS, notes, offcpu_records, table_rows
    records = offcpu_records(run_dir, rules)
    if not records:
        return []
    parts = ["<h2>Where the threads waited (off-CPU window)</h2>", table(table_rows(records), COLUMNS, "reason"),
             bullets((x for n, r in records.items() for x in notes(n, r)), ' class="flags"')]
    for name in (s for s in servers if s in records):
        for svg, folded_of, render, heading in (
                (OFFCPU_SVG, offcpu_folded, render_offcpu_flamegraph, "off-CPU"),
                (OFFWAKE_SVG, offwake_folded, render_offwake_flamegraph, "who woke its threads")):
            drawn = scratch / f"{name}-{svg}"
            uri = svg_uri(run_dir / name / svg, drawn,
                          lambda: folded_of(run_dir, name).exists() and render(run_dir, name, rules, drawn))
            if uri:
                parts.append(f"<h3>{esc(name)}: {heading}</h3><iframe title=\"{esc(name)} {heading} flame graph\" "
                             f"src=\"{uri}\"></iframe>")
    return parts


def whatif_section(run_dir: Path, rules: Rules, servers: list[str], indirect) -> list[str]:
    """With the indirect cost: per server after the first, the one of the pair that writes more, predicted
    writing as the other does (report.py whatif), where both have write counts and rounds."""
    from rpcprof.report.whatif import CATEGORY_COLUMNS, lines, whatif
    parts = []
    for other in servers[1:]:
        try:
            w, sources = whatif(run_dir, rules, servers[0], other, indirect)
            a, b = (servers[0], other) if w.fewer_writes >= 0 else (other, servers[0])
            if (a, b) != (servers[0], other):
                w, sources = whatif(run_dir, rules, a, b, indirect)
        except UserError:
            continue
        rows = [{"category": c, **v} for c, v in sorted(w.categories.items(), key=lambda kv: -abs(kv[1]["miss"]))]
        parts += [f"<h3>What if {esc(b)} wrote as {esc(a)} does?</h3>",
                  bullets(x.strip() for x in lines(w, a, b, indirect, sources)[1:]),
                  table(rows, CATEGORY_COLUMNS, "category")]
    return parts


def build_html(run_dir: Path, rules: Rules, indirect=None) -> str:
    """The page for a run folder (mode run or attach); with indirect (analyze/indirect.py), the user code
    slowed by the extra writes in the mechanism and a what-if per pair of servers."""
    # each profile categorised once per grouping, whichever section asks; the pictures drawn into scratch
    with breakdowns_kept(), tempfile.TemporaryDirectory(prefix="rpcprof-html-") as scratch:
        return _page(Path(run_dir), rules, indirect, Path(scratch))


def _page(run_dir: Path, rules: Rules, indirect, scratch: Path) -> str:
    manifest, metrics = load_run(run_dir)
    servers = manifest["parameters"]["servers"]
    rows = run_rows(metrics, servers, pilot_of(manifest["parameters"]), manifest.get("host"))
    parts = [f"<h1>rpcprof run {esc(run_dir.name)}</h1>",
             f"<p>status <b>{esc(manifest.get('status'))}</b> · mode {esc(manifest.get('mode', 'run'))} · "
             f"command <code>{esc(' '.join(manifest.get('command') or []))}</code></p>",
             "<h2>Run</h2>", table(rows, run_columns("seed"), "server")]
    if lines := ratio_lines(rows):
        parts.append(bullets(lines, ' class="flags"'))
    charts = []
    for name, grouping in ((BREAKDOWN_SVG, rules), (BREAKDOWN_LEVEL2_SVG, rules.using(level=2))):
        uri = svg_uri(run_dir / name, scratch / name, lambda: render_breakdown_chart(run_dir, grouping, scratch / name),
                      (UserError, OSError, ValueError, KeyError))
        charts += [f'<p><img class="chart" alt="{esc(name)}" src="{uri}"></p>'] if uri else []
    timeline = svg_uri(run_dir / TIMELINE_SVG, scratch / TIMELINE_SVG,
                       lambda: render_timeline_chart(run_dir, scratch / TIMELINE_SVG), (UserError, OSError, ValueError))
    if timeline:
        parts += ["<h2>Each measured window over time</h2>",
                  "<p>Server CPU µs per request in 0.5 s slices, each round side by side: a pace that changed "
                  "shows as a step.</p>", f'<p><img class="chart" alt="{TIMELINE_SVG}" src="{timeline}"></p>']
    if charts:
        parts += ["<h2>Where each request's CPU goes</h2>", *charts]
    try:
        crow, ccols, head, _ = compare_rows(run_dir, rules)
        parts += ["<h2>CPU µs per request by category</h2>", bullets(head), table(crow, ccols, "category")]
        if found := run_pace_findings(run_dir, rules, metrics, servers):
            parts += ["<h3>Paces</h3>", bullets(x for f in found for x in f["lines"])]
        if explained := explanations(run_dir, rules, indirect=indirect):
            parts.append("<h3>Why, by mechanism</h3>")
            parts += [f"<p>{esc(e['headline'])}</p>" + bullets(f["text"] for f in e["findings"]) for e in explained]
        if indirect is not None:
            parts += whatif_section(run_dir, rules, servers, indirect)
        if kernel := kernel_rows(metrics, servers_of(ccols)):
            parts += [f"<h3>Kernel, per request ({counted_in(metrics, servers)} window)</h3>",
                      table(kernel, [("figure", "figure")] + [(s, s) for s in servers if s in kernel[0]])]
    except UserError as e:
        parts.append(f"<p>No per-request breakdown: {esc(e)}</p>")
    flames = []
    for name in servers:
        folded, drawn = profile_folded(run_dir, name), scratch / f"{name}.svg"
        uri = svg_uri(run_dir / name / FLAME_SVG, drawn, lambda: folded.exists() and folded.stat().st_size
                      and render_run_flamegraph(run_dir, name, rules, drawn))
        flames += [f'<h3>{esc(name)}</h3><iframe title="{esc(name)} flame graph" src="{uri}"></iframe>'] if uri else []
    if flames:
        parts += ["<h2>Flame graphs</h2>", *flames]
    parts += waits_section(run_dir, rules, servers, scratch)
    parts += ["<h2>Manifest</h2>", f"<pre>{esc(json.dumps(manifest, indent=2, sort_keys=True, default=str))}</pre>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rpcprof {esc(run_dir.name)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
