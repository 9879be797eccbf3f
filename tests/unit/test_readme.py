"""README.md: short, the two commands a newcomer types first, every link to the manual resolving, and the
test commands it names being the ones CI and the tiers use."""
import re
import tomllib

from conftest import ROOT

README = (ROOT / "README.md").read_text()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def code_blocks(text: str) -> list[list[str]]:
    return [block.strip().splitlines() for block in re.findall(r"^```\n(.*?)^```", text, re.S | re.M)]


def test_readme_is_short_and_starts_with_the_two_commands():
    assert len(README.splitlines()) < 150
    assert code_blocks(README)[0] == ["./profile.sh run rust_tonic_mt rust_pajamax", "./tests/run.sh"]


def test_every_relative_link_of_the_readme_and_the_manual_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [f"{page.relative_to(ROOT)}: {target}" for page in pages for target in LINK.findall(page.read_text())
              if "://" not in target and not (page.parent / target).exists()]
    assert broken == []
    linked = {(ROOT / target).resolve() for target in LINK.findall(README) if "://" not in target}
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert unlinked == [], "docs pages the README does not link"


def test_ci_runs_the_readmes_test_command_and_the_fast_tier_is_a_registered_marker():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec \./tests/run\.sh\b", ci, re.M)
    fast = [line for block in code_blocks(README) for line in block if line.startswith("./tests/run.sh -m ")]
    assert fast == ["./tests/run.sh -m fast"]
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("fast:") for m in markers)
