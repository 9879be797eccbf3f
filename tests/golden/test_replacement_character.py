"""No U+FFFD where nothing was unreadable: the pages and pictures the published data regenerates (each run
folder's report.html with every picture drawn again as a saved folder's are: the breakdown charts, the
timeline, the flame graphs, the off-CPU graphs) and the documents hold no replacement character. It is
what report/text.py puts in place of a character XML forbids; a title of two lines once showed one, its
line break taken for such a character (timeline.svg: `... (0.5 s slices)\\ufffd20261126-...`)."""
from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, invoke
from rpcprof.cli import report as report_cli
from rpcprof.report.chart import render_timeline_chart

DATA = ROOT / "docs" / "data"
SWEEP = DATA / "20261126-041905-seed-000"
# every published run folder, each a page of its own kind, and of the sweep's twelve cells (pages of one kind) the two
# ends: C=1 S=1 and C=100 S=100000, the stalled one. coverage.py (dynamic contexts, one per test) found that these 17
# pages reach every line of tools/rpcprof that all 27 reach, in half the time
ENDS = ("20261126-041905-C1-S1", "20261126-043822-C100-S100000")
RUNS = sorted(d for d in DATA.iterdir() if (d / "metrics.json").is_file()) + [SWEEP / end for end in ENDS]
TIMELINES = sorted(DATA.glob("20261126-*-rust_tonic_mt-rust_pajamax"))     # the README's first command, with --idle
DATA_URI = re.compile(r'data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)')
SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("run_dir", TIMELINES, ids=lambda d: d.name)
def test_the_timeline_title_is_two_lines_with_the_run_name_whole(run_dir, tmp_path):
    out = tmp_path / "timeline.svg"
    assert render_timeline_chart(run_dir, out)
    svg = out.read_text()
    assert "\ufffd" not in svg
    texts = ["".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert "Each measured window over time (0.5 s slices)" in texts and run_dir.name in texts


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", RUNS, ids=lambda d: d.relative_to(DATA).as_posix())
def test_report_html_and_its_pictures_hold_no_replacement_character(run_dir, tmp_path):
    out = tmp_path / "report.html"
    done = invoke(report_cli.entry, "html", str(run_dir), "-o", str(out))
    assert done.code == 0, done.err
    page = out.read_text()
    pictures = [base64.b64decode(m.group(1)).decode() for m in DATA_URI.finditer(page)]
    assert pictures, "report.html embeds no picture"
    assert "\ufffd" not in page
    assert [p[:200] for p in pictures if "\ufffd" in p] == []


def test_the_pages_hold_no_replacement_character():
    """The README and docs/ (the generated documents among them, which test_published.py regenerates)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), DATA / "README.md"]
    assert [p.name for p in pages if "\ufffd" in p.read_text()] == []
