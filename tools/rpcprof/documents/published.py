"""The published documents against the data they come from (tools/publish.sh --check, tests/golden/
test_published.py): each generated document (its header's `Regenerate with` command), each quoted block
(`<!-- lines from: ./report.py ... -->`) and each table from a command (`<!-- table from: ./report.py ... -->`)
regenerated from docs/data, and every difference named.

A generated document must come out byte for byte; a quoted block's lines must each be a line its command
prints today (a block may quote some of the lines, in any order); a table from a command must be, line for
line, one of the tables the command prints with `--format markdown`.

    python -m rpcprof.documents.published [ROOT]     # one line per difference; exit 1 if any
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from itertools import groupby
from pathlib import Path

DOCUMENTS = ("docs/results.md", "docs/seeds.md")
QUOTE = re.compile(r"<!-- lines from: (\./report\.py [^>]*?) -->\n```\n(.*?)```", re.S)
TABLE = re.compile(r"<!-- table from: (\./report\.py [^>]*?) -->\n((?:\|.*(?:\n|$))+)")
REGENERATE = re.compile(r"Regenerate with `(.*)`\.$")


def pages(root: Path) -> list[Path]:
    """README.md and every page of docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def regenerating_command(doc: Path) -> list[str] | None:
    """The argv of a generated document's `Regenerate with` line (in its first 6 lines), or None."""
    m = next(filter(None, map(REGENERATE.match, doc.read_text().splitlines()[:6])), None)
    return shlex.split(m.group(1)) if m else None


def blocks(root: Path, pattern: re.Pattern) -> list[tuple[str, str, list[str]]]:
    """(page, command, lines) of every `lines from:` block (QUOTE) or `table from:` table (TABLE) of the pages."""
    return [(page.relative_to(root).as_posix(), m.group(1), m.group(2).splitlines())
            for page in pages(root) for m in pattern.finditer(page.read_text())]


def _report(root: Path, argv: list[str], cwd: Path, what: str) -> tuple[str, str | None]:
    """(what report.py ARGV prints in cwd, None), or ("", `WHAT failed: the last line of its errors`)."""
    done = subprocess.run([sys.executable, str(root / "report.py"), *argv], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        return "", f"{what} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    return done.stdout, None


def document_problem(root: Path, name: str) -> str | None:
    """Why a generated document does not regenerate byte for byte from docs/data, or None."""
    argv = regenerating_command(root / name)
    if not argv or argv[0] != "report.py" or "-o" not in argv or argv[argv.index("-o") + 1] != name:
        return f"{name}: no `Regenerate with \\`report.py ... -o {name}\\`` line in its header"
    with tempfile.TemporaryDirectory(prefix="rpcprof-publish-") as tmp:
        (Path(tmp) / "docs").mkdir()
        (Path(tmp) / "docs" / "data").symlink_to(root / "docs" / "data")
        _, problem = _report(root, argv[1:], Path(tmp), f"{name}: `{shlex.join(argv)}`")
        if problem or (Path(tmp) / name).read_bytes() == (root / name).read_bytes():
            return problem
    return f"{name}: differs from what docs/data gives: run `{shlex.join(argv)}` and review the diff"


def _printed(root: Path, page: str, command: str, extra: list[str]) -> tuple[str, str | None]:
    """(what a page's `./report.py ...` command prints from docs/data, None), or ("", why it cannot be run)."""
    argv = shlex.split(command)
    if not any(a.startswith("docs/data/") for a in argv):
        return "", f"{page}: `{command}` reads no published folder"
    return _report(root, [*argv[1:], *extra], root, f"{page}: `{command}`")


def quote_problem(root: Path, page: str, command: str, lines: list[str]) -> str | None:
    """Why a quoted block is not what its command prints from docs/data today, or None."""
    out, problem = _printed(root, page, command, [])
    if problem:
        return problem
    printed = {line.rstrip() for line in out.splitlines()}
    missing = [line for line in lines if line.rstrip() not in printed]
    return f"{page}: `{command}` no longer prints: {missing[0]}" + (
        f" (and {len(missing) - 1} more lines)" if len(missing) > 1 else "") if missing else None


def markdown_tables(text: str) -> list[list[str]]:
    """The markdown tables of a command's output: each run of lines that start with `|`."""
    return [[line.rstrip() for line in run]
            for is_table, run in groupby(text.splitlines(), lambda line: line.startswith("|")) if is_table]


def table_problem(root: Path, page: str, command: str, lines: list[str]) -> str | None:
    """Why a table from a command is not one of the tables it prints with `--format markdown`, or None."""
    if "--format" in shlex.split(command):
        return f"{page}: `{command}`: a table from a command names no --format (markdown is added)"
    out, problem = _printed(root, page, command, ["--format", "markdown"])
    if problem:
        return problem
    table = [line.rstrip() for line in lines]
    printed = markdown_tables(out)
    if table in printed:
        return None
    same_header = next((t for t in printed if t[:1] == table[:1]), None)
    if same_header is None:
        return f"{page}: `{command} --format markdown` prints no table headed: {table[0] if table else '(empty)'}"
    diff = next((line for line in table if line not in same_header), None) or "(rows missing or in another order)"
    return f"{page}: `{command} --format markdown` no longer prints this table: {diff}"


def problems(root: Path) -> tuple[list[str], int]:
    """Every difference between the published pages and what docs/data gives today, in the pages' order, and how
    many documents, blocks and tables were checked; the commands run side by side, one per CPU (each is a report.py
    process of its own)."""
    from concurrent.futures import ThreadPoolExecutor
    checks = ([(document_problem, root, name) for name in DOCUMENTS]
              + [(quote_problem, root, *q) for q in blocks(root, QUOTE)]
              + [(table_problem, root, *t) for t in blocks(root, TABLE)])
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return [p for p in pool.map(lambda check: check[0](*check[1:]), checks) if p], len(checks)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[3]
    found, n = problems(root)
    for p in found:
        print(f"publish.sh: {p}", file=sys.stderr)
    print(f"publish.sh: {n - len(found)} of {n} published documents, quoted blocks and tables regenerate from "
          "docs/data")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
