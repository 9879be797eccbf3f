"""What a run says about paces, in words: which rounds of a server ran at which pace, the ratio within
each pace, and which categories and sub-categories changed between the paces (the figures and their
tests: analyze/paces.py).

The pace line and the ratios come from the rounds' figures alone (report.py run, profile.sh run,
report.html); the categories from each round's own profile (report.py compare, report.html).
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.analyze.breakdowns import round_numbers
from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.intervals import RatioInterval
from rpcprof.analyze.paces import pace_categories, server_paces
from rpcprof.rundir import profile_folded


def _rounds(ks) -> str:
    return f"round{'s' * (len(ks) > 1)} {', '.join(map(str, ks))}"


def pace_line(server: str, p: dict) -> str:
    """One line: the rounds in each pace, each pace's CPU µs per request, and the test (p: Paces.as_dict())."""
    noise = f", noise from the rounds and their {p['slices']} slices" if p.get("slices") else ""
    return (f"{server} ran at two paces: {_rounds(p['fast_rounds'])} at {p['fast_cpu_us_per_req']:.3g} CPU µs/req, "
            f"{_rounds(p['slow_rounds'])} at {p['slow_cpu_us_per_req']:.3g} ({p['apart']:.2f}x; split test t "
            f"{p['t']:.1f} > {p['critical_t']:.1f}{noise}, p {p['p']:.3f}): its intervals over all rounds mix the two.")


def pace_ratio_lines(rows: list[dict]) -> list[str]:
    """`B vs A within S's fast pace (rounds 2, 4): ^60.1 [55.0-65.7]; slow pace (...): ...`, a line per pair."""
    by_pair: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_pair.setdefault((r["pair"], r["pace_of"]), []).append(r)
    return [f"{pair} within {who}'s " + "; ".join(f"{r['pace']} pace ({_rounds(r['rounds'])}): "
                                                  f"{RatioInterval.of(r['ratio']).text()}"
                                                  for r in rs) for (pair, who), rs in by_pair.items()]


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
    """Per server whose rounds fell into two paces: the paces, its lines, what changed between them by category."""
    out = []
    for name in servers:
        p = server_paces(metrics.get(name) or {})
        if p is None:
            continue
        profiles = {k: profile_folded(run_dir, name, k) for k in round_numbers(metrics[name])}
        rows = pace_categories(profiles, rules, metrics[name], name, p)
        lines = [pace_line(name, p.as_dict())] + [x for x in (pace_category_line(name, rows),) if x]
        out.append({"server": name, "paces": p.as_dict(), "categories": rows, "lines": lines})
    return out
