"""Per-request CPU by category: the shares of the profile times the CPU µs per request measured in
the window with no profiler attached. The rows of each delta column add up to the total difference.
"""
from __future__ import annotations

import json
from pathlib import Path

from .categorize import Breakdown, Rules, categorize, open_folded
from .errors import UserError
from .tables import render



def profile_folded(run_dir: Path, server: str) -> Path:
    return run_dir / server / "profile.folded"


def load_run(run_dir: Path) -> tuple[dict, dict]:
    """(manifest, metrics) of a run folder; UserError if it is not one."""
    run_dir = Path(run_dir)
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text())
        metrics = json.loads((run_dir / "metrics.json").read_text())
    except FileNotFoundError:
        raise UserError(f"{run_dir}: not a run folder (no manifest.json / metrics.json); "
                        "give a folder under flamegraphs/") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{run_dir}: unreadable run files: {e}") from None
    return manifest, metrics


def run_breakdowns(run_dir: Path, rules: Rules, app_override: str | None = None) -> dict[str, Breakdown]:
    """Breakdown per profiled server of a run, with each server's own app pattern."""
    manifest, metrics = load_run(run_dir)
    out = {}
    for name in manifest["parameters"]["servers"]:
        m = metrics.get(name) or {}
        folded = profile_folded(run_dir, name)
        if m.get("status") not in ("ok", "incomplete") or not folded.exists() or not folded.stat().st_size:
            continue
        r = rules.with_app(app_override or m.get("app"), "--app" if app_override else f"{name}'s app pattern")
        out[name] = categorize(open_folded(folded), r)
    return out


def render_shares(run_dir: Path, rules: Rules, fmt: str = "table") -> str:
    """The category share of each profile of a run (report.py table, for a run folder)."""
    manifest, metrics = load_run(run_dir)
    rows = []
    for name, b in run_breakdowns(run_dir, rules).items():
        prof = (metrics.get(name) or {}).get("profile") or {}
        row = {"profile": name, "samples": b.samples, "event": prof.get("event", "")}
        row.update({c: 100 * b.share(c) for c in rules.all_categories})
        rows.append(row)
    columns = [("profile", "profile"), ("samples", "samples")] + [(c, f"{c} [%]") for c in rules.all_categories]
    return render(rows, columns, fmt)


def compare_rows(run_dir: Path, rules: Rules, app_override: str | None = None) -> tuple[list[dict], list[tuple[str, str]], list[str]]:
    """(rows, columns, header lines) of the per-request comparison of a run's servers."""
    manifest, metrics = load_run(run_dir)
    breakdowns = run_breakdowns(run_dir, rules, app_override)
    servers = [s for s in manifest["parameters"]["servers"] if s in breakdowns and metrics[s].get("cpu_us_per_req")]
    if not servers:
        raise UserError(f"{run_dir}: no server with both a measured window and a profile (run without --no-profile)")
    base = servers[0]
    head = []
    for s in servers:
        m = metrics[s]
        prof = m.get("profile") or {}
        ratio = m["req_per_cpu_s"] / metrics[base]["req_per_cpu_s"]
        note = "  TOO FEW SAMPLES" if prof.get("too_few_samples") else ""
        overhead = prof.get("overhead_pct")
        head.append(f"{s}: {m['req_per_cpu_s']:,.0f} req/s per CPU (x{ratio:.2f} of {base}), "
                    f"{m['cpu_us_per_req']:.2f} CPU µs/req "
                    + ("measured while profiling" if m.get("cpu_note") else "unprofiled")
                    + (f", {overhead:+.0f} % while profiled" if overhead is not None else "")
                    + f", {breakdowns[s].samples:,} samples{note}")
    rows = []
    for cat in rules.all_categories + ["total"]:
        row = {"category": cat}
        for s in servers:
            b, us = breakdowns[s], metrics[s]["cpu_us_per_req"]
            share = 1.0 if cat == "total" else b.share(cat)
            row[f"{s}_us"] = share * us
            row[f"{s}_share"] = 100 * share
        for s in servers[1:]:
            row[f"delta_{s}"] = row[f"{s}_us"] - row[f"{base}_us"]
        rows.append(row)
    columns = [("category", "category")]
    for s in servers:
        columns += [(f"{s}_us", f"{s} [µs/req]"), (f"{s}_share", f"{s} [%]")]
    columns += [(f"delta_{s}", f"Δ {s}−{base} [µs/req]") for s in servers[1:]]
    return rows, columns, head


def render_compare(run_dir: Path, rules: Rules, fmt: str = "table", app_override: str | None = None) -> str:
    rows, columns, head = compare_rows(run_dir, rules, app_override)
    if fmt == "json":
        return json.dumps({"servers": head, "rows": rows}, indent=2, sort_keys=True) + "\n"
    text = render(rows, columns, fmt)
    if fmt in ("table", "markdown"):
        text = "\n".join(head) + "\n\n" + text + (
            "CPU µs per request = category share of the profile × server CPU µs per request of the unprofiled "
            "window.\nShares weigh perf samples by their period (inferno), py-spy samples by count.\n")
    return text
