"""Where a generated document's figures come from: the header of docs/results.md and docs/seeds.md.

A published document names the folder it was generated from as a reader of the clone finds it
(docs/data/NAME, relative to the checkout), the command that regenerates it, the command that measured
the run, the commit it was measured at and the machine. A run measured on a tree with uncommitted
changes says so in the document's first line: its figures come from code that no commit holds.

Why a server stalled in a sweep, from a run that stalled it again (report.py results --stall): the run
whose stalled window its replays named (analyze/stall.py SPLIT), said beside the sweep's STALLED cells of
that server in docs/results.md.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from rpcprof.analyze.stall import SPLIT
from rpcprof.errors import UserError
from rpcprof.paths import ROOT
from rpcprof.report.mechanism import describe
from rpcprof.rundir import load_run


def source_path(folder: Path | str) -> str:
    """The folder as the reader of a clone names it: relative to the checkout when inside it."""
    p = Path(folder).resolve()
    return str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else folder)


def generator_command(command: str, *parts: Path | str, output: Path | None = None,
                      options: tuple[tuple[str, Path | str | None], ...] = ()) -> str:
    """The report.py command line regenerating a document, paths as source_path gives them, valueless options out."""
    argv = ["report.py", command, *(source_path(p) for p in parts)]
    for flag, value in (*options, ("-o", output)):
        argv += [flag, source_path(Path(value))] if value else []
    return shlex.join(argv)


def machine_text(manifest: dict) -> str:
    m = manifest.get("machine") or {}
    return (f"{m.get('cpu_model')}, {m.get('cpus')} CPUs, {m.get('memory_gib')} GiB, {m.get('os')}, "
            f"kernel {m.get('kernel')}")


def _dirty_cells(cells: list[dict]) -> str:
    """' in N of its M cells' when some of a sweep's cells were measured on an uncommitted tree."""
    n = sum(bool((c.get("git") or {}).get("dirty")) for c in cells)
    return f" in {n} of its {len(cells)} cells" if n else ""


def _changes(manifests: list[dict]) -> str:
    """The paths that differed from the commit, where the manifests recorded them."""
    paths = sorted({p for m in manifests for p in (m.get("git") or {}).get("changed") or []})
    return f"; the changed files: {', '.join(paths[:12])}{', ...' if len(paths) > 12 else ''}" if paths else ""


def header(title: str, generated_by: str, folders: list[Path], manifests: list[dict],
           cells: list[list[dict]] | None = None) -> list[str]:
    """The first lines of a generated document: a warning first when a run (or a sweep's cell) was
    measured on an uncommitted tree, then the title, the regenerating command, and per folder its
    measuring command, commit, status and machine. cells: per folder, its cells' manifests (a sweep)."""
    cells = cells or [[] for _ in folders]
    unique = {source_path(f): (f, m, c) for f, m, c in zip(folders, manifests, cells)}   # a folder given twice is one source
    sources = list(unique.values())
    def dirty(m: dict, c: list[dict]) -> str:
        return " plus uncommitted changes" + _dirty_cells(c) if (m.get("git") or {}).get("dirty") or _dirty_cells(c) else ""
    marked = [(f, m, c) for f, m, c in sources if dirty(m, c)]
    which = ", ".join(f"`{source_path(f)}` (git {m['git']['commit'][:12]}{dirty(m, c)})" for f, m, c in marked)
    out = [f"**Measured on an uncommitted tree:** {which}; no commit holds the code that measured these "
           f"figures{_changes([x for _, m, c in marked for x in (m, *c)])}.", ""] if marked else []
    out += [f"# {title}", "", f"Regenerate with `{generated_by}`.", ""]
    return out + [f"- `{source_path(folder)}`: measured by `{shlex.join(manifest.get('command') or [])}` at git "
                  f"{((manifest.get('git') or {}).get('commit') or '?')[:12]}{dirty(manifest, c)}, "
                  f"started {manifest.get('started', '?')}, status {manifest.get('status')}; "
                  f"{machine_text(manifest)}." for folder, manifest, c in sources] + [""]


def stall_causes(stall_runs: list[Path], scenario: str) -> dict[str, tuple[Path, dict, dict]]:
    """Per server, the run (of the sweep's scenario) whose stalled window named its mechanism by replaying it
    (analyze/stall.py SPLIT): (folder, manifest, its stall record)."""
    causes = {}
    for run in stall_runs:
        manifest, metrics = load_run(run)
        theirs = (manifest.get("parameters") or {}).get("scenario")
        if theirs != scenario:
            raise UserError(f"{run}: scenario {theirs}, not the sweep's {scenario}")
        for name, m in metrics.items():
            if (m.get("stalled") or {}).get("mechanism") == SPLIT:
                causes.setdefault(name, (run, manifest, m["stalled"]))
    return causes


def stall_cause_lines(causes: dict, stalled: set[str]) -> list[str]:
    """Per server that stalled in the sweep, the run that measured why (stall_causes): its command and stall record."""
    return [f"{name}'s stall, measured again by `{shlex.join(manifest.get('command') or [])}` (`{source_path(run)}`, "
            f"C={manifest['parameters'].get('connections')} S={manifest['parameters'].get('streams')}): "
            f"{describe(record)}." for name, (run, manifest, record) in sorted(causes.items()) if name in stalled]
