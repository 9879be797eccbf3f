"""The documents against the command lines they quote: every `./profile.sh ...` and `./report.py ...` line of
README.md, docs/*.md, docs/data/README.md and servers/README.md (in a fenced block, in inline code, or in a
`lines from:` marker) parsed by the command it names, and every default a page quotes (`OPT VALUE` by
default) against the command's own.

A quoted command line is given to click in-process with `--help` put right after its command's name: click
reads every option before it prints the help, so an option the command does not have fails ("No such
option", exit 2), as does a command that is not there; the help stops it before any value is used, so nothing
runs. A default is stated in a page as "`OPT VALUE` by default", optionally followed by "for COMMAND" (or
"; COMMAND and COMMAND"); without a command named, the page's own (README.md and run.md: run; sweep.md:
sweep; attach.md: attach). profile.sh's --help states the run's load in its example (C=N S=M), checked too.
"""
from __future__ import annotations

import re
import shlex
import subprocess

import click
import pytest

from conftest import ROOT, invoke
from rpcprof.cli import profile as profile_cli
from rpcprof.cli import report as report_cli

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs" / "data" / "README.md",
         ROOT / "servers" / "README.md"]
PROGRAMS = {"./profile.sh": profile_cli, "profile.sh": profile_cli, "./report.py": report_cli, "report.py": report_cli}
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`((?:\./)?(?:profile\.sh|report\.py) [^`]+)`")
MARKER = re.compile(r"<!-- (?:lines|table) from: (\./report\.py [^>]*?) -->")
SHELL_ENDS = {"|", "||", "&&", ";", ">", ">>", "2>", "<"}


def page_name(page) -> str:
    return page.relative_to(ROOT).as_posix()


def command_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command line) of every profile.sh or report.py command the text quotes."""
    found = []
    for m in FENCE.finditer(text):
        first = text.count("\n", 0, m.start(1)) + 1
        lines = m.group(1).split("\n")
        i = 0
        while i < len(lines):
            line, start = lines[i], i
            while line.endswith("\\") and i + 1 < len(lines):       # a command continued on the next line
                i += 1
                line = line[:-1] + " " + lines[i]
            i += 1
            line = line.strip().removeprefix("$ ")
            if line.split(" ", 1)[0] in PROGRAMS:
                found.append((first + start, line))
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)      # line numbers kept
    for pattern in (INLINE, MARKER):
        for m in pattern.finditer(outside):
            found.append((outside.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    return found


def quoted_commands() -> list[tuple[str, str]]:
    """(page:line, command line) of every command the pages quote; a template (`./report.py ... RUN`) names none."""
    return [(f"{page_name(page)}:{n}", line) for page in PAGES for n, line in command_lines(page.read_text())
            if not re.match(r"\S+ (?:\.\.\.|[A-Z]+)(?: |$)", line)]


def with_help(argv: list[str]) -> list[str]:
    """argv with --help right after the command's name (the first word that is not an option)."""
    for i, word in enumerate(argv):
        if not word.startswith("-"):
            return [*argv[:i + 1], "--help", *argv[i + 1:]]
    return [*argv, "--help"]


def words(line: str) -> list[str]:
    """The command line's words up to a pipe, a redirection or a comment."""
    out = []
    for word in shlex.split(line, comments=True):
        if word in SHELL_ENDS:
            break
        out.append(word)
    return out


def test_the_pages_quote_commands_of_both_programs():
    lines = [line for _, line in quoted_commands()]
    assert sum(line.split()[0].endswith("profile.sh") for line in lines) >= 10
    assert sum(line.split()[0].endswith("report.py") for line in lines) >= 50


@pytest.mark.parametrize("where, line", [pytest.param(w, line, id=w) for w, line in quoted_commands()])
def test_every_quoted_command_line_is_one_its_program_takes(where, line):
    argv = words(line)
    program = PROGRAMS[argv[0]]
    r = invoke(program.entry, *with_help(argv[1:]))
    if r.code == 2 and f"Option '{argv[-1]}' requires an argument" in r.err:     # prose naming an option
        r = invoke(program.entry, *with_help([*argv[1:], "VALUE"]))
    assert r.code == 0 and "Usage:" in r.out, f"{where}: `{line}`: {(r.err.strip() or r.out.strip())[-300:]}"


# ----- defaults ----------------------------------------------------------------------------------------

_ITEM = r"`(-{1,2}[\w-]+)[ =]([^`\s]+)`"
_COMMAND = r"(run|sweep|attach)"
DEFAULT = re.compile(rf"((?:{_ITEM}(?:,? and |, ))*{_ITEM})(?: [a-z]+)?\s+by\s+default"
                     rf"(?:(?:\s+for|;|,)\s+{_COMMAND}(?:\s+and\s+{_COMMAND})?\b)?")
PAGE_COMMAND = {"README.md": "run", "docs/run.md": "run", "docs/sweep.md": "sweep", "docs/attach.md": "attach"}


def quoted_defaults() -> list[tuple[str, str, str, str]]:
    """(where, command, option, value) of every default the pages quote."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in DEFAULT.finditer(text):
            where = f"{page_name(page)}:{text.count(chr(10), 0, m.start()) + 1}"
            named = [c for c in m.groups()[-2:] if c]
            commands = named or [PAGE_COMMAND.get(page_name(page), "?")]
            for option, value in re.findall(_ITEM, m.group(1)):
                found += [(where, command, option, value) for command in commands]
    return found


def option_of(command: click.Command, name: str) -> click.Option | None:
    return next((p for p in command.params if isinstance(p, click.Option) and name in p.opts + p.secondary_opts),
                None)


def same(value: str, default) -> bool:
    if isinstance(default, (list, tuple)):
        default = ",".join(map(str, default))
    try:
        return float(value) == float(default)
    except (TypeError, ValueError):
        return value == str(default)


def test_the_pages_quote_defaults():
    assert {(c, o) for _, c, o, _ in quoted_defaults()} >= {("run", "--rounds"), ("sweep", "--rounds"),
                                                             ("run", "-C"), ("run", "-S"), ("run", "-d")}


@pytest.mark.parametrize("where, command, option, value",
                         [pytest.param(*d, id=f"{d[0]}:{d[1]}{d[2]}") for d in quoted_defaults()])
def test_every_quoted_default_is_the_commands_own(where, command, option, value):
    assert command in profile_cli.main.commands, f"{where}: `{option} {value}` by default: say for which command"
    param = option_of(profile_cli.main.commands[command], option)
    assert param is not None, f"{where}: profile.sh {command} has no option {option}"
    assert same(value, param.default), (f"{where}: `{option} {value}` by default, but profile.sh {command}'s "
                                        f"default is {param.default!r}")


def profile_sh_help() -> str:
    return subprocess.run([str(ROOT / "profile.sh"), "--help"], capture_output=True, text=True, check=True).stdout


def test_profile_sh_help_states_the_run_defaults_it_uses():
    run = profile_cli.main.commands["run"]
    defaults = {"C": option_of(run, "-C").default, "S": option_of(run, "-S").default}
    checked = 0
    for line in profile_sh_help().splitlines():
        command, _, comment = line.partition("#")
        if not command.strip().startswith("./profile.sh run "):
            continue
        for letter, value in re.findall(r"\b([CS])=(\d+)", comment):
            if f"-{letter} " not in command:              # a value the example leaves to the default
                assert int(value) == defaults[letter], f"profile.sh --help: {line.strip()}"
                checked += 1
    assert checked >= 2


# ----- versions --------------------------------------------------------------------------------------

def test_the_otlp_schema_named_is_the_proto_release_the_pinned_package_is_generated_from():
    """OTLP's consumers pin opentelemetry-proto's release, not the version of the Python package made from it."""
    from importlib.metadata import metadata
    package = metadata("opentelemetry-proto")
    release = re.search(r"generated using the (v\d+\.\d+\.\d+) release", package.get_payload() or "").group(1)
    fleet = " ".join((ROOT / "docs" / "fleet.md").read_text().split())
    assert f"opentelemetry-proto release {release}, profiles v1development" in fleet
    assert f"opentelemetry-proto {package['Version']}" not in fleet


# ----- what a page names exists ---------------------------------------------------------------------

_PROJECT_PATH = re.compile(r"(?<![\w/.$-])((?:tests|bench|tools|servers|docs)/[\w./-]*[\w/])(?![\w*]|\.\*)")
_PACKAGE_PATH = re.compile(r"(?<![\w/.$-])((?:analyze|report|measure|capture|jobs|cli|documents)/\w+\.py)\b")


def named_paths() -> list[tuple[str, str]]:
    """(page:line, path) of every file or folder of the project a page names (placeholders such as NAME,
    RUN or <run>, and globs, left out)."""
    found = []
    for page in PAGES:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            for pattern, base in ((_PROJECT_PATH, ""), (_PACKAGE_PATH, "tools/rpcprof/")):
                for m in pattern.finditer(line):
                    path = m.group(1).rstrip(".")
                    if re.search(r"/[A-Z_]+(?:/|\.|$)|<|\.\.\.|\*", path) or line[m.end():m.end() + 1] in "*<":
                        continue
                    found.append((f"{page_name(page)}:{n}", base + path))
    return found


def built(path: str) -> bool:
    """A path git ignores: made by a build or a run (servers/target), not in a clone."""
    return any(subprocess.run(["git", "check-ignore", "-q", p], cwd=ROOT).returncode == 0 for p in (path, path + "/"))


def test_every_path_a_page_names_exists():
    missing = [f"{where}: {path}" for where, path in named_paths() if not (ROOT / path).exists() and not built(path)]
    assert len(named_paths()) > 100 and missing == []


def setup_packages() -> tuple[set[str], set[str]]:
    """(the Debian packages every setup installs, those only `--for-tests` adds), from tools/setup.sh."""
    text = (ROOT / "tools" / "setup.sh").read_text()
    deb_for = dict(re.findall(r"\[([^\]\s]+)\]=([\w+.-]+)", text.split("deb_for=(", 1)[1].split(")\n", 1)[0]))
    every = re.search(r"^needed=\(([^)]*)\)", text, re.M).group(1).split()
    tests = re.search(r"^\(\(for_tests\)\) && needed\+=\(([^)]*)\)", text, re.M).group(1).split()
    return {deb_for[c] for c in every}, {deb_for[c] for c in tests}


def test_setup_md_names_what_every_setup_installs_and_what_only_the_tests_get():
    every, tests = setup_packages()
    assert "iproute2" in every and "shellcheck" in tests
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z`])", " ".join((ROOT / "docs" / "setup.md").read_text().split()))
    for package in every:
        assert any(f"`{package}`" in s and "--for-tests" not in s for s in sentences), \
            f"docs/setup.md does not name `{package}`, which every setup installs"
    for package in tests:
        named = [s for s in sentences if f"`{package}`" in s]
        assert named and all("--for-tests" in s for s in named), \
            f"docs/setup.md: `{package}` is installed only for the tests (setup.sh --for-tests): say so where it is named"


def test_a_ratios_interval_is_written_as_run_md_defines_it():
    """[ratio / (1 + h), ratio × (1 + h)] (docs/run.md, "Half-widths, one definition"), never ratio × (1 ± h)."""
    run_md = " ".join((ROOT / "docs" / "run.md").read_text().split())
    assert "[ratio / (1 + h), ratio × (1 + h)]" in run_md
    written = [f"{page_name(page)}: {m.group(0)}" for page in PAGES
               for m in re.finditer(r"\(1 ± [^)]*\)", " ".join(page.read_text().split()))]
    assert written == []
