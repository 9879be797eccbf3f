"""The published documents regenerate from the data in the repository, byte for byte.

docs/results.md and docs/seeds.md name, in their header, the report.py command that made them from the
trimmed run folders in docs/data/ (tools/publish.sh). Each is run here as a reader of the clone would run
it from the checkout's root, and its output must be the committed document.

The README and the pages of docs/ quote measured output in blocks introduced by a comment naming the
command that printed it, `<!-- lines from: ./report.py ... docs/data/RUN -->`: each quoted line must be a
line that command prints today from the published folder. Every docs/data/ folder a page names exists.
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

DATA = ROOT / "docs" / "data"
DOCUMENTS = ["docs/results.md", "docs/seeds.md"]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
QUOTE = re.compile(r"<!-- lines from: (\./report\.py [^>]*?) -->\n```\n(.*?)```", re.S)
FOLDER = re.compile(r"docs/data/\d{8}-\d{6}[\w.-]*\w")
MAX_BYTES = 10 * 1024 * 1024


def regenerating_command(doc: Path) -> list[str]:
    head = doc.read_text().splitlines()[:6]
    line = next((x for x in head if x.startswith("Regenerate with `")), None)
    assert line, f"{doc}: no 'Regenerate with `...`' line in its header"
    return shlex.split(re.match(r"Regenerate with `(.*)`\.$", line).group(1))


@pytest.mark.parametrize("name", DOCUMENTS)
@pytest.mark.slow
def test_a_published_document_regenerates_byte_for_byte(name, tmp_path):
    doc = ROOT / name
    argv = regenerating_command(doc)
    assert argv[0] == "report.py" and argv[argv.index("-o") + 1] == name, argv
    sources = [a for a in argv[2:] if a.startswith("docs/data/")]
    assert sources, f"{name} is not generated from docs/data/: {argv}"
    # the command as typed at the checkout's root, writing into a scratch copy of the tree's layout
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "data").symlink_to(DATA)
    done = subprocess.run([sys.executable, str(ROOT / "report.py"), *argv[1:]], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / name).read_bytes() == doc.read_bytes(), (
        f"{name} differs from what its data gives: regenerate it with `{shlex.join(argv)}` and review the diff")


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_published_document_says_where_its_figures_come_from(name):
    text = (ROOT / name).read_text()
    sources = [a for a in regenerating_command(ROOT / name) if a.startswith("docs/data/")]
    for source in sources:
        manifest = json.loads((ROOT / source / "manifest.json").read_text())
        assert f"`{source}`: measured by `{shlex.join(manifest['command'])}` at git {manifest['git']['commit'][:12]}" in text
        if manifest["git"].get("dirty"):
            assert text.startswith("**Measured on an uncommitted tree")


def test_the_published_data_is_trimmed_and_small():
    files = [p for p in DATA.rglob("*") if p.is_file()]
    assert files, "docs/data/ is empty"
    assert sum(p.stat().st_size for p in files) <= MAX_BYTES
    for p in files:
        assert p.suffix in (".json", ".gz", ".md"), f"{p.relative_to(ROOT)}: docs/data keeps JSON and gzip'd files"


def quotes() -> list[tuple[str, str, list[str]]]:
    found = []
    for page in PAGES:
        for m in QUOTE.finditer(page.read_text()):
            found.append((page.relative_to(ROOT).as_posix(), m.group(1), m.group(2).splitlines()))
    return found


def test_the_readme_quotes_a_published_run():
    assert any(page == "README.md" for page, _, _ in quotes()), "README.md quotes no measured output"


@pytest.mark.parametrize("page,command,lines", quotes(), ids=[f"{p}:{c}" for p, c, _ in quotes()])
@pytest.mark.slow
def test_quoted_output_is_what_its_command_prints_from_the_published_data(page, command, lines):
    argv = shlex.split(command)
    assert any(a.startswith("docs/data/") for a in argv), f"{page}: `{command}` reads no published folder"
    done = subprocess.run([sys.executable, str(ROOT / "report.py"), *argv[1:]], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    printed = {line.rstrip() for line in done.stdout.splitlines()}
    missing = [line for line in lines if line.rstrip() not in printed]
    assert not missing, f"{page}: `{command}` no longer prints: {missing}"


def test_every_published_folder_a_page_names_exists():
    for page in PAGES:
        for name in FOLDER.findall(page.read_text()):
            assert (ROOT / name / "manifest.json").is_file(), f"{page.relative_to(ROOT)} names {name}, not in the repository"


def test_seeds_gives_each_pair_one_ratio():
    """The ratio section and the ruler's check quote the same ratio (one definition in a document)."""
    text = (ROOT / "docs/seeds.md").read_text()
    stated = dict(re.findall(r"^- over (\S+): \*\*(\^[\d.]+ \[[\d.]+-[\d.]+\])\*\*", text, re.M))
    checked = dict(re.findall(r"^- \S+ over (\S+): ruler shares .*?measured req/s per CPU (\^[\d.]+ \[[\d.]+-[\d.]+\]) "
                              r"unprofiled", text, re.M))
    assert stated and checked, "docs/seeds.md: no ratio or no ruler check found"
    for server, ratio in checked.items():
        assert stated.get(server) == ratio, f"docs/seeds.md gives {server} two ratios: {stated.get(server)}, {ratio}"


@pytest.mark.slow
def test_the_level2_chart_of_three_servers_draws_without_a_layout_warning(tmp_path):
    """Seven legend columns collapse the axes of seed 001's level-2 chart: the narrower legend that fits is
    drawn, and the trial's warning is not printed (it was, once per run)."""
    out = tmp_path / "chart.svg"
    done = subprocess.run([sys.executable, str(ROOT / "report.py"), "chart", "docs/data/20261124-074115-seed-001",
                           "--level", "2", "-o", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    assert out.read_text().count("<svg") == 1
