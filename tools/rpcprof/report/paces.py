"""What a run says about paces (analyze/paces.py): which rounds of a server ran at which pace, the
ratio within each pace, and which categories and sub-categories changed between the paces.

The pace line and the ratios come from the rounds' figures alone (report.py run, profile.sh run,
report.html); the categories from each round's own profile (report.py compare, report.html), tested
as report.py diff tests two sets of rounds: Welch's t across rounds, each round's sampling variance
the floor under its spread, Benjamini-Hochberg at 5 % over every group tested.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.intervals import paired_ratio, repeats_by_index
from rpcprof.analyze.paces import Paces, find_paces
from rpcprof.analyze.significance import benjamini_hochberg, sampling_variance, welch_gap
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.rundir import profile_folded

MIN_PACE_ROUNDS = 2       # a pace's ratio needs this many rounds of it (an interval needs two pairs)


def server_paces(result: dict) -> Paces | None:
    """The two paces of one server's rounds (CPU µs per request of the unprofiled windows), or None."""
    if not result or result.get("status") != "ok":
        return None
    return find_paces(repeats_by_index(result, "cpu_us_per_req"))


def _rounds(ks) -> str:
    return f"round{'s' * (len(ks) > 1)} {', '.join(map(str, ks))}"


def pace_line(server: str, p: dict) -> str:
    """One line: the server, the rounds in each pace, each pace's CPU µs per request, and the test
    (p: Paces.as_dict())."""
    return (f"{server} ran at two paces: {_rounds(p['fast_rounds'])} at {p['fast_cpu_us_per_req']:.3g} CPU µs/req, "
            f"{_rounds(p['slow_rounds'])} at {p['slow_cpu_us_per_req']:.3g} ({p['apart']:.2f}x; split test t "
            f"{p['t']:.1f} > {p['critical_t']:.1f}, p {p['p']:.3f}): its intervals over all rounds mix the two.")


def pace_ratios(metrics: dict, order: list[str], server: str, p: Paces) -> list[dict]:
    """The ratio (req/s per CPU over the first server's) within each pace of `server` that has at least
    MIN_PACE_ROUNDS rounds, for every pair of the run that involves it."""
    names = [n for n in order if (metrics.get(n) or {}).get("status") == "ok"]
    if len(names) < 2 or server not in names:
        return []
    base = names[0]
    pairs = [(base, server)] if server != base else [(base, o) for o in names[1:]]
    out = []
    for a, b in pairs:
        ra, rb = repeats_by_index(metrics[a]), repeats_by_index(metrics[b])
        for pace, rounds in (("fast", p.fast), ("slow", p.slow)):
            common = [k for k in rounds if k in ra and k in rb]
            if len(common) < MIN_PACE_ROUNDS:
                continue
            interval = paired_ratio([ra[k] for k in common], [rb[k] for k in common])
            out.append({"pair": f"{b} vs {a}", "pace_of": server, "pace": pace, "rounds": common,
                        "ratio": interval.as_dict(), "text": interval.text()})
    return out


def pace_ratio_lines(rows: list[dict]) -> list[str]:
    """`B vs A within S's fast pace (rounds 2, 4): ^60.1 [55.0-65.7]; slow pace (...): ...`, a line per pair."""
    by_pair: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_pair.setdefault((r["pair"], r["pace_of"]), []).append(r)
    return [f"{pair} within {who}'s " + "; ".join(f"{r['pace']} pace ({_rounds(r['rounds'])}): {r['text']}"
                                                  for r in rs) for (pair, who), rs in by_pair.items()]


def _group_values(run_dir: Path, rules: Rules, result: dict, name: str) -> dict[int, tuple[dict, dict]] | None:
    """{round: ({group: CPU µs/req}, {group: sampling variance})} at level 1 and 2 from each round's own
    profile; None when not every round had one (runs made before every round was profiled)."""
    level2 = rules.with_app(result.get("app"), f"{name}'s app pattern").using(level=2)
    out = {}
    for row in result.get("repeats") or []:
        folded = profile_folded(run_dir, name, row["repeat"])
        us = row.get("cpu_us_per_req")
        if not us or not folded.exists() or not folded.stat().st_size:
            return None
        b = categorize_file(folded, level2)
        shares = {g: b.share(g) for g in level2.all_categories}
        for g in list(shares):
            parent = level2.parent(g)
            if parent != g:
                shares[parent] = shares.get(parent, 0.0) + shares[g]
        out[row["repeat"]] = ({g: s * us for g, s in shares.items()},
                              {g: sampling_variance(s, b.samples, us) for g, s in shares.items()})
    return out


def pace_categories(run_dir: Path, rules: Rules, result: dict, name: str, p: Paces) -> list[dict]:
    """Each category and level-2 group: its CPU µs/req in the slow pace minus the fast, with Welch's t
    across the paces' rounds and Benjamini-Hochberg over every group tested; [] when the rounds lack
    profiles. A pace of one round gives point estimates with no test (significant None)."""
    values = _group_values(run_dir, rules, result, name)
    if not values:
        return []
    groups = sorted({g for v, _ in values.values() for g in v})
    rows = []
    for g in groups:
        fast = [values[k][0].get(g, 0.0) for k in p.fast if k in values]
        slow = [values[k][0].get(g, 0.0) for k in p.slow if k in values]
        floor_fast = statistics.fmean(values[k][1].get(g, 0.0) for k in p.fast if k in values)
        floor_slow = statistics.fmean(values[k][1].get(g, 0.0) for k in p.slow if k in values)
        gap = welch_gap(fast, slow, floor_fast, floor_slow)
        rows.append({"group": g, "level": 2 if "/" in g else 1, "fast_us": statistics.fmean(fast),
                     "slow_us": statistics.fmean(slow), "delta_us": gap.delta, "half": gap.half, "p": gap.p})
    tested = [r for r in rows if r["p"] is not None]
    for r, found in zip(tested, benjamini_hochberg([r["p"] for r in tested])):
        r["significant"] = found
    for r in rows:
        r.setdefault("significant", None)
    return rows


def pace_category_line(name: str, rows: list[dict]) -> str | None:
    """`S's slow pace against its fast, by category (...): send +8.10 µs/req ± 2.00 * (of which send/loopback
    +5.20 *, ...); ...`: the level-1 categories that moved most, each marked * when significant after
    Benjamini-Hochberg, n.s. when not; with a pace of one round, point estimates only."""
    if not rows:
        return None
    tested = any(r["significant"] is not None for r in rows)

    def mark(r: dict) -> str:
        return {True: " *", False: " n.s.", None: ""}[r["significant"]]

    def subs(cat: str) -> str:
        kids = [r for r in rows if r["level"] == 2 and r["group"].startswith(cat + "/") and abs(r["delta_us"]) >= 0.005]
        kids.sort(key=lambda r: -abs(r["delta_us"]))
        shown = ", ".join(f"{k['group']} {k['delta_us']:+.2f}{mark(k)}" for k in kids[:3])
        return f" (of which {shown})" if kids else ""

    def one(r: dict) -> str:
        pm = f" ± {r['half']:.2f}" if r["half"] is not None else ""
        return f"{r['group']} {r['delta_us']:+.2f} µs/req{pm}{mark(r)}{subs(r['group'])}"
    top = sorted((r for r in rows if r["level"] == 1 and abs(r["delta_us"]) >= 0.005), key=lambda r: -abs(r["delta_us"]))
    how = ("Welch t across rounds, * significant after Benjamini-Hochberg at 5 %" if tested else
           "a pace of one round: point estimates, no test")
    return f"{name}'s slow pace against its fast, by category ({how}): " + "; ".join(one(r) for r in top[:4]) + "."


def run_pace_findings(run_dir: Path, rules: Rules, metrics: dict, servers: list[str]) -> list[dict]:
    """For each server of the run whose rounds fell into two paces: the paces, its pace line and what
    changed between them by category (empty when its rounds had no profiles of their own)."""
    out = []
    for name in servers:
        p = server_paces(metrics.get(name) or {})
        if p is None:
            continue
        rows = pace_categories(run_dir, rules, metrics[name], name, p)
        lines = [pace_line(name, p.as_dict())] + [x for x in (pace_category_line(name, rows),) if x]
        out.append({"server": name, "paces": p.as_dict(), "categories": rows, "lines": lines})
    return out
