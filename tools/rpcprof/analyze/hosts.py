"""Runs across hosts: how much of each server's change in CPU per request from one host to another the hosts'
unit costs (each run's host card, measure/hostcard.py) predict from the server's own counts
(report/hosts.py sets it against the change measured, in report.py runs).

The model, for a server measured on host A (the first run) and host B:
  CPU/req = writes/req x write + other syscalls/req x syscall + sleeps/req x wake-up CPU + rest
where writes and other syscalls per request are the run's syscall counts, sleeps per request its
voluntary context switches (each a sleep and a wake-up of a server thread), and the rest what the three
leave of A's measured CPU per request: the server's own code, scaled from A to B by the card's fixed
user-space loop. A wake-up's unit is the card's CPU per round trip on the server's CPU less the two bare
syscalls of that round trip, which the syscall counts already hold. The prediction for B is the same
sum with B's unit costs and A's counts: what the host alone would change, if the server did the same work
per request on both. A measured change far from it says the server's work moved too (its batching, its
pace) or that a cost the card does not hold moved. The share of the change it predicts is given only where
the change lies beyond the runs' own noise (change_noise).

The host model (leave_one_out, below) is fitted instead on the ledger of hosts (report/hosts.py): each
server's CPU per request by category, against each host's unit costs, user-code units included.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from rpcprof.analyze.intervals import figure_by_round, t975
from rpcprof.host_units import FIRST_UNITS, HOST_UNITS
from rpcprof.records import beside_busy


def unit_cost(card: dict, key: str) -> float | None:
    """A host card's unit cost (its median), or None."""
    f = (card or {}).get(key)
    return f.get("median") if isinstance(f, dict) else None


def _counts(m: dict) -> dict | None:
    """A server's per-request counts and mean CPU µs per request over its rounds, from its result."""
    sc, proc = m.get("syscalls") or {}, m.get("proc_per_req") or {}
    cpu = list(figure_by_round(m, "cpu_us_per_req").values())
    total = sc.get("per_req") if sc.get("per_req") is not None else sc.get("named_per_req")
    if not cpu or total is None or sc.get("writes_per_req") is None:
        return None
    writes = sc["writes_per_req"]
    return {"cpu_us": statistics.fmean(cpu), "writes": writes, "syscalls": max(0.0, total - writes),
            "sleeps": proc.get("voluntary_switches") or 0.0}


def _costs(c: dict, card: dict, rest: float | None = None, loop_factor: float = 1.0) -> dict:
    """The model's terms (µs per request) for counts c on a host with card; rest given: scaled by loop_factor."""
    sys_us = unit_cost(card, "syscall_ns") / 1e3
    wake = max(0.0, unit_cost(card, "wake_cpu_us") - 2 * sys_us)
    terms = {"writes": c["writes"] * unit_cost(card, "write_us"), "syscalls": c["syscalls"] * sys_us,
             "sleeps": c["sleeps"] * wake}
    terms["rest"] = max(0.0, c["cpu_us"] - sum(terms.values())) if rest is None else rest * loop_factor
    return terms


def usable_card(card: dict) -> bool:
    """A card to predict with: every unit the model takes, and nothing busy beside it (records.beside_busy)."""
    return all(unit_cost(card, k) is not None for k in FIRST_UNITS) and not beside_busy(card)


def predictions(loaded: list[tuple[Path, dict, dict]], servers: list[str]) -> list[dict]:
    """For each server and each run after the first whose host card and the first's are both there, and
    neither measured beside busy programs: the CPU µs per request measured on each host and the one the
    unit costs predict (module docstring)."""
    (_, m0, metrics0) = loaded[0]
    card0 = m0.get("host") or {}
    if not usable_card(card0):
        return []
    out = []
    for i, (d, manifest, metrics) in enumerate(loaded[1:], 2):
        card = manifest.get("host") or {}
        if not usable_card(card):
            continue
        loop = unit_cost(card, "loop_ns") / unit_cost(card0, "loop_ns")
        for s in servers:
            a, b = _counts(metrics0.get(s) or {}), _counts(metrics.get(s) or {})
            if a is None or b is None:
                continue
            here = _costs(a, card0)
            there = _costs(a, card, here["rest"], loop)
            predicted = sum(there.values())
            noise = change_noise(list(figure_by_round(metrics0[s], "cpu_us_per_req").values()),
                                 list(figure_by_round(metrics[s], "cpu_us_per_req").values()))
            beyond = None if noise is None else abs(b["cpu_us"] - a["cpu_us"]) > noise
            out.append({"server": s, "run": f"#{i}", "measured_a": a["cpu_us"], "measured_b": b["cpu_us"],
                        "predicted_b": predicted, "measured_factor": b["cpu_us"] / a["cpu_us"],
                        "predicted_factor": predicted / a["cpu_us"],
                        "noise_us": noise, "beyond_noise": beyond,
                        "explained_pct": (100 * (predicted - a["cpu_us"]) / (b["cpu_us"] - a["cpu_us"])
                                          if beyond else None),
                        "terms_a": here, "terms_b": there, "counts_a": a, "counts_b": b})
    return out


def pace_units(card: dict | None, fast: tuple[int, ...], slow: tuple[int, ...]) -> list[dict] | None:
    """The units of the host cards taken before a server's rounds (a run's card's `cards`, one before each round)
    that moved with its paces: dearer before every slow-pace round than before every fast-pace one, beyond their
    batches' spread (the lowest batch of every slow-pace card above the highest of every fast-pace card); each
    with the median of each pace's cards, the most apart first. None where either pace has no card, or the card
    is another run's (taken_from: a sweep's later cells, --host-card), its cards before that run's rounds."""
    if (card or {}).get("taken_from"):
        return None
    cards = {c.get("round"): c for c in (card or {}).get("cards") or []}
    before = [[cards[k] for k in rounds if k in cards] for rounds in (fast, slow)]
    if not all(before):
        return None
    out = []
    for key, *_ in HOST_UNITS:
        a, b = ([c[key] for c in group if isinstance(c.get(key), dict)] for group in before)
        if a and b and lies_above([(f["min"], f["max"]) for f in b], [(f["min"], f["max"]) for f in a]):
            low, high = statistics.median(f["median"] for f in a), statistics.median(f["median"] for f in b)
            out.append({"unit": key, "fast": low, "slow": high, "apart": high / low,
                        "fast_cards": len(a), "slow_cards": len(b)})
    return sorted(out, key=lambda u: -u["apart"])


def change_noise(a: list[float], b: list[float]) -> float | None:
    """How far two runs' mean CPU µs per request may lie apart by their rounds' spread alone: the half-width
    of the 95 % Welch interval of the difference of their means (a, b: each run's rounds); None with fewer
    than two rounds in either run."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return t975(max(1, round(df))) * (va + vb) ** 0.5


# The host model (report.py hosts): per category, log CPU µs/req = a server's own constant + slopes x log unit
# costs, least squares over the ledger's hosts (report/hosts.py reads docs/data/hosts.jsonl), the slopes shared
# by the servers. Each category's candidate units, most likely first: with n hosts to fit on, the first
# n - 1 (at most MAX_SLOPES) that every one of them and the host predicted have.
CATEGORY_UNITS = {
    "send": ("write_us", "syscall_ns"),
    "recv": ("syscall_ns", "write_us"),
    "protocol": ("mem_l2_ns", "indirect_ns", "alloc_ns", "loop_ns"),
    "app": ("alloc_ns", "mem_l2_ns", "loop_ns"),
    "runtime": ("wake_cpu_us", "indirect_ns", "loop_ns"),
}
OTHER_UNITS = ("loop_ns",)
MAX_SLOPES = 2
TARGET_PCT = 15.0           # the model's goal: each server's total within this, leaving each host out in turn
HOSTS_TO_SCORE = 4          # ... once this many hosts are in the ledger


@dataclass(frozen=True)
class LedgerHost:
    """One host of the ledger: its name (boot), kernel, unit costs (medians), each server's CPU µs/req by category."""
    host: str
    kernel: str
    units: dict[str, float]
    servers: dict[str, dict[str, float]]
    spans: dict[str, tuple[float, float]]   # each unit's lowest and highest batch


def lies_above(high: list[tuple[float, float]], low: list[tuple[float, float]]) -> bool:
    """Whether every (lowest, highest) batch range in high lies wholly above every one in low: dearer beyond the
    batches' spread."""
    return min(h[0] for h in high) > max(lo[1] for lo in low)


def apart(hosts: list[LedgerHost], unit: str) -> bool:
    """Whether the unit's cost differs between some two of the hosts beyond its batches' spread (their ranges
    do not meet): otherwise a slope fitted on it would be a slope through noise, and a category takes its next
    candidate unit (two hosts' wake-ups 10 % apart, within their spread, once fitted a slope of 8)."""
    spans = [h.spans.get(unit, (h.units[unit], h.units[unit])) for h in hosts]
    return any(lies_above([a], [b]) or lies_above([b], [a]) for i, a in enumerate(spans) for b in spans[i + 1:])


@dataclass(frozen=True)
class HostMiss:
    """One server on a host left out of the fit: its CPU µs/req measured and predicted from the other hosts,
    and the category whose prediction missed by the most µs/req."""
    host: str
    server: str
    measured: float
    predicted: float
    error_pct: float
    category: str
    category_measured: float
    category_predicted: float
    units: dict[str, tuple[str, ...]]       # category -> the units its fit used


def category_prediction(train: list[LedgerHost], target: dict[str, float], server: str,
                        category: str) -> tuple[float, tuple[str, ...]]:
    """(server's CPU µs/req in category on a host with unit costs target, the units used) fitted on train."""
    import numpy as np
    from scipy.optimize import lsq_linear
    points = [(h, s, h.servers[s][category]) for h in train for s in h.servers if category in h.servers[s]]
    mine = [y for h, s, y in points if s == server]
    if not mine:
        return 0.0, ()
    # a server whose category is empty on some host has no logarithm there: it is left out of the fit
    servers = sorted({s for _, s, _ in points} - {s for _, s, y in points if y <= 0})
    if server not in servers:
        return float(np.mean(mine)), ()
    points = [p for p in points if p[1] in servers]
    candidates = CATEGORY_UNITS.get(category, OTHER_UNITS)
    usable = [u for u in candidates
              if u in target and all(u in h.units and h.units[u] > 0 for h in train) and apart(train, u)]
    units = tuple(usable[:min(MAX_SLOPES, len(train) - 1)])
    x = np.array([[float(s == t) for t in servers] + [np.log(h.units[u]) for u in units] for h, s, _ in points])
    # no slope below 0: a cost does not fall as a unit it is made of grows dearer (left free, a fit can take a
    # negative one where its hosts' noise points that way, and predict a host whose unit lies beyond theirs the
    # wrong way round: tests/unit/test_hosts.py)
    coef = lsq_linear(x, np.log([y for _, _, y in points]), method="bvls",
                      bounds=([-np.inf] * len(servers) + [0.0] * len(units), np.inf)).x
    row = [float(s == server) for s in servers] + [np.log(target[u]) for u in units]
    return float(np.exp(np.dot(row, coef))), units


def leave_one_out(ledger: list[LedgerHost]) -> list[HostMiss]:
    """Each server on each host, predicted by category from its card with the model fitted on the other hosts."""
    out = []
    for i, h in enumerate(ledger):
        train = ledger[:i] + ledger[i + 1:]
        for server, cats in h.servers.items():
            if not any(server in t.servers for t in train):
                continue
            fits = {c: category_prediction(train, h.units, server, c) for c in cats}
            measured, predicted = sum(cats.values()), sum(p for p, _ in fits.values())
            worst = max(cats, key=lambda c: abs(fits[c][0] - cats[c]))
            out.append(HostMiss(h.host, server, measured, predicted, 100 * (predicted / measured - 1), worst,
                                cats[worst], fits[worst][0], {c: u for c, (_, u) in fits.items()}))
    return out


@dataclass(frozen=True)
class AlikeCards:
    """Two hosts a server costs apart on whose cards tell them apart in no unit the right way: no unit of the dearer
    host's card is dearer than the cheaper's beyond their batches' spread. A model whose slopes are all ≥ 0
    then has nothing to predict the dearer host dearer with; predicting the two alike misses one of them by
    floor_pct or more (the miss is least at the harmonic mean of the two)."""
    server: str
    cheap: str
    dear: str
    cheap_us: float
    dear_us: float
    apart: float                # dear_us / cheap_us
    floor_pct: float            # 100 (dear - cheap) / (dear + cheap)
    closest: str                # the unit dearer on the dear host by the most, within its spread
    closest_apart: float        # its ratio (≤ 1 where every unit is cheaper there)


def alike_cards(ledger: list[LedgerHost]) -> list[AlikeCards]:
    """Per server, the pairs of hosts whose costs differ by more than the model's target allows for alike
    predictions (floor_pct above TARGET_PCT) while no unit both cards have is dearer on the dearer host beyond
    the batches' spread; the most apart first."""
    out = []
    for a in ledger:
        for b in ledger:
            units = [u for u in a.units if u in b.units]
            if a is b or not units:
                continue
            if any(lies_above([b.spans.get(u, (b.units[u],) * 2)], [a.spans.get(u, (a.units[u],) * 2)]) for u in units):
                continue
            closest = max(units, key=lambda u: b.units[u] / a.units[u])
            for server in a.servers.keys() & b.servers.keys():
                ta, tb = sum(a.servers[server].values()), sum(b.servers[server].values())
                floor = 100 * (tb - ta) / (tb + ta)
                if floor > TARGET_PCT:
                    out.append(AlikeCards(server, a.host, b.host, ta, tb, tb / ta, floor, closest,
                                          b.units[closest] / a.units[closest]))
    return sorted(out, key=lambda x: -x.apart)
