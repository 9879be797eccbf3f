"""report.py whatif RUN A B: B's CPU µs per request if it wrote as A does (A's requests per write), with a
95 % interval, checked against A's measured figures category by category (analyze/whatif.py's model, of the rounds
read here from the run folder).

Where A and B run the same code and differ only in how they write (rust_tonic_st and rust_tonic_mt), A's
measured CPU µs/req is what B would need: the interval containing it validates the model; a miss is
reported with its size and the category the model gets most wrong.
"""
from __future__ import annotations

import json
from pathlib import Path

from rpcprof.analyze.breakdowns import round_breakdowns
from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.indirect import IndirectCost
from rpcprof.analyze.mechanism import kernel_figures
from rpcprof.analyze.whatif import Round, WhatIf, predict, solve_writes
from rpcprof.errors import UserError
from rpcprof.records import kernel_blind
from rpcprof.report.compare import round_profiles
from rpcprof.report.mechanism import summary_line
from rpcprof.report.tables import render
from rpcprof.rundir import RESULT_FILE, load_run, read_server_result, server_path


# --- a run's rounds of A and B, read from its folder ------------------------------------------------

def server_rounds(run_dir: Path, rules: Rules, metrics: dict, name: str) -> tuple[list[Round], list[dict]]:
    """(rounds, the files and keys behind them) of a server: CPU µs/req, µs/req by category, writes per request."""
    rounds, sources = [], []
    profiles = round_profiles(run_dir, name, metrics[name])
    for k, (cpu, b) in sorted(round_breakdowns(profiles, rules, metrics[name], name).items()):
        folder = server_path(run_dir, name, k)
        result = read_server_result(folder)
        writes = kernel_figures(result.figures.get("syscalls") if result else None)["writes_per_req"]
        if writes.value is None:
            raise UserError(f"{run_dir}: {name} has no write counts in round {k} (its syscalls were not counted "
                            "by name): measure the run again with syscall tracepoints (profile.sh run, as root)")
        if isinstance(writes.value, bool) or not isinstance(writes.value, (int, float)) or not 0 <= writes.value < 1e6:
            raise UserError(f"{folder / RESULT_FILE}: {writes.key} is {writes.value!r}, not a count per request: "
                            "the file is damaged; measure the run again")
        rounds.append(Round(cpu, {c: b.share(c) * cpu for c in rules.all_categories}, writes.value))
        sources.append({"server": name, "round": k, "file": str(folder.relative_to(run_dir) / RESULT_FILE),
                        "writes_per_req": writes.key, "cpu_us_per_req": "cpu_us_per_req",
                        "us_per_req": "CPU µs/req × share of each category"})
    return rounds, sources


def both_rounds(run_dir: Path, rules: Rules, a: str, b: str) -> dict[str, tuple[list[Round], list[dict]]]:
    """{server: (rounds, sources)} of A and B, checked: two servers of the run, each with 2+ profiled rounds."""
    manifest, metrics = load_run(run_dir)
    servers = manifest["parameters"]["servers"]
    for s in (a, b):
        if s not in servers:
            raise UserError(f"{run_dir}: no server {s!r} in this run (it has {', '.join(servers)}): name two of them")
    if a == b:
        raise UserError(f"whatif: A and B are both {a}: name two servers of the run")
    if profiler := kernel_blind(metrics[b]):
        raise UserError(f"{run_dir}: {b} was profiled by {profiler}, which sees no kernel time: its send cost per write "
                        "is not in its profile; name as B a server profiled by perf")
    got = {}
    for s in (a, b):
        got[s] = server_rounds(run_dir, rules, metrics, s)
        if len(got[s][0]) < 2:
            raise UserError(f"{run_dir}: {s} has {len(got[s][0])} profiled round(s): an interval needs two or more "
                            "(profile.sh run --rounds 3)")
    return got


def whatif(run_dir: Path, rules: Rules, a: str, b: str, cost: IndirectCost) -> tuple[WhatIf, list[dict]]:
    """The model's prediction for b writing as a does, and the files behind each round's figures."""
    got = both_rounds(run_dir, rules, a, b)
    if not all(r.writes for r in got[b][0]):
        raise UserError(f"{run_dir}: {b} made no write syscall in a round: no write to save; name as B the server "
                        "that writes more")
    return predict(got[b][0], got[a][0], cost, rules.groups), got[a][1] + got[b][1]


def verdict(w: WhatIf, a: str) -> str:
    """Whether the predicted interval holds A's measured CPU µs/req; if not, by how much and where."""
    measured = f"{a} measured {w.measured_a.value:.2f} CPU µs/req"
    if w.contains:
        return f"{measured}: inside the predicted interval."
    c = w.missed_category()
    miss = w.categories[c]["miss"]
    return (f"{measured}: outside the predicted interval, {abs(w.outside_by):.2f} µs/req "
            f"{'above' if w.outside_by > 0 else 'below'} it ({100 * w.miss / w.predicted.value:+.0f} % of the "
            f"prediction); the category the model misses most is {c}: {w.categories[c]['a']:.2f} measured against "
            f"{w.categories[c]['predicted']:.2f} predicted ({miss:+.2f} µs/req of the {w.miss:+.2f}).")


def lines(w: WhatIf, a: str, b: str, cost: IndirectCost, sources: list[dict]) -> list[str]:
    """The prediction in words: the writes, the two costs per write (sources: whatif's), the sum and the verdict."""
    per = f"{1 / w.a_writes:.1f}" if w.a_writes else "no"
    p = w.predicted
    interval = f"[{p.low:.2f}{' to ' if p.low < 0 else '-'}{p.high:.2f}]"      # a low below 0 keeps its sign apart
    n_rounds = len({s["round"] for s in sources if s["server"] == b})
    return [
        f"What if {b} wrote as {a} does? Write syscalls per request: {b} {w.a_writes + w.fewer_writes:.3f}, "
        f"{a} {w.a_writes:.3f} ({per} requests per write).",
        f"  direct: {b}'s send costs {w.direct.value:.2f} ± {w.direct.half:.2f} µs per write (send µs/req over write "
        f"syscalls/req, {n_rounds} rounds)",
        f"  indirect: {summary_line(cost)}",
        f"  predicted {b}: {w.measured_b.value:.2f} − {w.fewer_writes:.3f} writes/req × ({w.direct.value:.2f} + "
        f"{cost.user.slope:.2f}) µs = {p.value:.2f} {interval} "
        "CPU µs/req",
        f"  {verdict(w, a)}",
    ]


CATEGORY_COLUMNS = [("category", "category"), ("b", "B measured [µs/req]"), ("predicted", "B predicted [µs/req]"),
                    ("a", "A measured [µs/req]"), ("miss", "A − predicted [µs/req]")]


def render_whatif(run_dir: Path, rules: Rules, a: str, b: str, cost: IndirectCost, fmt: str = "table") -> str:
    w, sources = whatif(run_dir, rules, a, b, cost)
    rows = [{"category": c, **v} for c, v in sorted(w.categories.items(), key=lambda kv: -abs(kv[1]["miss"]))]
    text = lines(w, a, b, cost, sources)
    if fmt == "json":
        return json.dumps({
            "a": a, "b": b, "lines": text,
            "a_writes_per_req": w.a_writes, "b_writes_per_req": w.a_writes + w.fewer_writes,
            "direct_us_per_write": w.direct.as_dict(), "predicted_cpu_us_per_req": w.predicted.as_dict(),
            "measured_b_cpu_us_per_req": w.measured_b.as_dict(), "measured_a_cpu_us_per_req": w.measured_a.as_dict(),
            "indirect_us_per_syscall": {**cost.user.as_dict(), "key": cost.key()},
            "contains": w.contains, "outside_by": w.outside_by, "missed_category": w.missed_category(),
            "categories": rows, "sources": sources}, indent=2, sort_keys=True) + "\n"
    body = render(rows, CATEGORY_COLUMNS, fmt)
    return body if fmt == "csv" else ("\n".join(text) + f"\n\nBy category (B = {b}, A = {a}; largest miss first):\n\n"
                                      + body)


def render_ratio(run_dir: Path, rules: Rules, a: str, b: str, cost: IndirectCost, ratio: float,
                 fmt: str = "table") -> str:
    """report.py whatif RUN A B --ratio R: the requests per write at which B would serve R times A's
    requests per CPU-second, by the same model run backwards (analyze/whatif.solve_writes)."""
    if not ratio > 0:
        raise UserError(f"--ratio must be a positive number, e.g. 9.5 (got {ratio:g})")
    got = both_rounds(run_dir, rules, a, b)
    s = solve_writes(got[b][0], got[a][0], cost, ratio, rules.groups)
    value, low, high = s.requests_per_write
    w = s.writes
    line = (f"{b} at ^{ratio:g} over {a}: {s.target_cpu:.2f} CPU µs/req, which the model gives at {w.value:.3f} "
            f"[{w.low:.3f}-{w.high:.3f}] write syscalls per request" if w.half is not None else
            f"{b} at ^{ratio:g} over {a}: {s.target_cpu:.2f} CPU µs/req, at {w.value:.3f} write syscalls per request")
    if value is None:
        line += f" (none: even writing never, {b} would not come down to it)."
    else:
        line += (f": one write per {value:.1f} requests" + (f" [{low:.1f}-{high:.1f}]" if low and high else
                                                            " (the interval reaches 0 writes)" if w.half else "")
                 + f"; {b} measured {1 / s.b_writes:.1f} requests per write." if s.b_writes else ".")
    if fmt == "json":
        return json.dumps({"a": a, "b": b, "ratio": ratio, "line": line, "target_cpu_us_per_req": s.target_cpu,
                           "writes_per_req": w.as_dict(), "b_writes_per_req": s.b_writes,
                           "requests_per_write": {"value": value, "low": low, "high": high},
                           "indirect_us_per_syscall": {**cost.user.as_dict(), "key": cost.key()},
                           "sources": got[a][1] + got[b][1]}, indent=2, sort_keys=True) + "\n"
    return line + "\n"
