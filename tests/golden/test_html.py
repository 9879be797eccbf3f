"""report.html: one self-contained page per run, opened in headless Chromium as a reader would."""
import html
import html.parser
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from rpcprof.cli.report import main
from rpcprof.rundir import load_run

RUN = Path(__file__).parents[1] / "data" / "runs" / "seed-001"
CHROMIUM = shutil.which("chromium")
# Chromium (tools/setup.sh --for-tests) and a page built per module: the full suite, not the fast tier
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = CliRunner().invoke(main, ["html", str(RUN), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


class Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.srcs = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.srcs += [v for k, v in attrs if k == "src"]

    def handle_data(self, data):
        self.text.append(data)


def test_page_is_self_contained_and_holds_each_servers_figures(page):
    doc = Collect()
    doc.feed(page.read_text())
    text = " ".join(doc.text)
    _, metrics = load_run(RUN)
    for server, m in metrics.items():
        assert server in text
        assert f"{m['req_per_cpu_s']:,.0f}" in text              # req/s per CPU, as the run table prints it
    assert all(s.startswith("data:") for s in doc.srcs)          # no file or network reference: opens offline
    assert doc.tags.count("iframe") == len(metrics)              # one interactive flame graph per server
    assert "Why, by mechanism" in text and "Kernel, per request" in text


def test_text_from_the_run_is_escaped(tmp_path):
    """A run whose command carries markup shows it as text (frame names reach the page only inside the
    base64 data of the flame graphs, which inferno escapes; test_flamegraph checks that)."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    manifest = (run / "manifest.json").read_text()
    (run / "manifest.json").write_text(manifest.replace('"profile.sh"', '"<script>alert(1)</script>"', 1))
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["html", str(run), "-o", str(out)]).exit_code == 0
    body = out.read_text()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body


# Run in the page once it has loaded: every chart drawn inline from its own data (an <img> hides what its
# SVG draws beyond its edges, but the reader sees it cut), then every text, path and image of each chart
# compared with the chart's box, and the page's width with the window's. The findings go into the DOM.
OVERFLOW_CHECK = """<script>
window.addEventListener("load", () => {
  const found = [];
  for (const img of document.querySelectorAll("img")) {
    const [head, data] = img.src.split(",");
    if (!head.startsWith("data:image/svg+xml;base64")) continue;
    const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
    const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), "image/svg+xml");
    const svg = document.importNode(doc.documentElement, true);
    img.replaceWith(svg);
    const box = svg.getBoundingClientRect();
    for (const el of svg.querySelectorAll("text, path, image, use")) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        found.push(`${img.alt}: <${el.tagName}> ${(el.textContent || "").trim().slice(0, 40)} ` +
                   `[${Math.round(r.left)}-${Math.round(r.right)}] outside [${Math.round(box.left)}-${Math.round(box.right)}]`);
    }
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) found.push(`page: ${page.scrollWidth} px wide in a ${page.clientWidth} px window`);
  const out = document.createElement("pre");
  out.id = "overflow-check";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless Chromium in a 1400 x 2000 window, with a profile folder of its own."""
    profile = tempfile.mkdtemp(prefix="rpcprof-chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                               "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
                               "--enable-logging=stderr", "--v=0", "--window-size=1400,2000", *args],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def dom(page, tmp_path_factory):
    """The page's DOM once Chromium has loaded it, with OVERFLOW_CHECK's findings in it."""
    checked = tmp_path_factory.mktemp("checked") / "report.html"
    body = page.read_text()
    assert body.count('<img class="chart"') == 2                 # breakdown.svg and breakdown-level2.svg
    checked.write_text(body.replace("</body>", OVERFLOW_CHECK + "</body>"))
    return chromium("--dump-dom", f"file://{checked}")


@pytest.mark.skipif(not CHROMIUM, reason="chromium is installed by tools/setup.sh")
def test_chromium_opens_the_page_without_errors_and_shows_the_figures(page, dom, tmp_path):
    shot = chromium(f"--screenshot={tmp_path / 'report.png'}", f"file://{page}")
    assert dom.returncode == 0, dom.stderr[-2000:]
    _, metrics = load_run(RUN)
    for server, m in metrics.items():
        assert f'data-row="{server}"' in dom.stdout and f"{m['req_per_cpu_s']:,.0f}" in dom.stdout
    console = [line for line in dom.stderr.splitlines() if re.search(r"CONSOLE|Uncaught", line)]
    assert not console, console
    assert shot.returncode == 0 and (tmp_path / "report.png").stat().st_size > 10_000


@pytest.mark.skipif(not CHROMIUM, reason="chromium is installed by tools/setup.sh")
def test_no_chart_is_cut_at_its_edges_in_a_1400_px_window(dom):
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="overflow-check">(.*?)</pre>', dom.stdout, re.S)
    assert m, "the check did not run: " + dom.stderr[-2000:]
    assert html.unescape(m.group(1)) == "[]"
