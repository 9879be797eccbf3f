"""Why a server stalled in a sweep, from a run that stalled it again (report.py results --stall): the run
whose stalled window its replays named (analyze/stall.py SPLIT), said beside the sweep's STALLED cells of
that server in docs/results.md."""
from __future__ import annotations

import shlex
from pathlib import Path

from rpcprof.analyze.stall import SPLIT
from rpcprof.report.stall import describe
from rpcprof.documents.provenance import source_path
from rpcprof.errors import UserError
from rpcprof.rundir import load_run


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
    """Per server that stalled in the sweep, the run that measured why (stall_causes), its command and its
    stall record said."""
    out = []
    for name in sorted(stalled & set(causes)):
        run, manifest, record = causes[name]
        par = manifest.get("parameters") or {}
        out.append(f"{name}'s stall, measured again by `{shlex.join(manifest.get('command') or [])}` "
                   f"(`{source_path(run)}`, C={par.get('connections')} S={par.get('streams')}): {describe(record)}.")
    return out
