"""What if server B wrote as server A does? A per-write cost model with a 95 % interval.

The model: each write syscall B saves costs it, per request,
  - directly, B's own send µs per write: send µs/req over write syscalls per request, per round;
  - indirectly, the user code a syscall slows down (analyze/indirect.py: µs/req per extra syscall per
    request, measured on the calibration server, per user-space category).
B's predicted CPU µs/req, round by round, is its measured CPU µs/req minus (its writes per request − A's)
× (its send µs per write + the indirect cost); the interval is the rounds' t interval, widened by the
indirect cost's own (added in quadrature: the two were measured apart). Each category is predicted the
same way (send by the direct cost, protocol/runtime/app by their own indirect slopes, the rest unchanged),
so a miss can be placed in a category by comparing with A's measured figures. The rounds of A and B are read
from the run folder by report/whatif.py, which says the prediction.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from rpcprof.analyze.indirect import IndirectCost
from rpcprof.analyze.intervals import t975
from rpcprof.analyze.rules_file import Groups


@dataclass
class Estimate:
    value: float
    half: float | None                  # 95 % half-width; None with one value

    @property
    def low(self) -> float | None:
        return None if self.half is None else self.value - self.half

    @property
    def high(self) -> float | None:
        return None if self.half is None else self.value + self.half

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high}


def estimate(values: list[float]) -> Estimate:
    """The mean with its 95 % t half-width across values."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Estimate(mean, None)
    return Estimate(mean, t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values)))


@dataclass
class Round:
    """One round of a server: its unprofiled CPU µs/req, µs/req by category, write syscalls per request."""
    cpu: float
    us: dict[str, float]
    writes: float


@dataclass
class WhatIf:
    a_writes: float                     # A's write syscalls per request
    fewer_writes: float                 # B's write syscalls per request − A's (positive: B writes more)
    direct: Estimate                    # B's send µs per write
    predicted: Estimate                 # B's CPU µs/req, writing as A does
    measured_b: Estimate
    measured_a: Estimate
    categories: dict[str, dict] = field(default_factory=dict)   # category: b, predicted, a, miss (a − predicted)

    @property
    def contains(self) -> bool:
        return self.predicted.low <= self.measured_a.value <= self.predicted.high

    @property
    def miss(self) -> float:
        """A's measured − predicted, µs/req."""
        return self.measured_a.value - self.predicted.value

    @property
    def outside_by(self) -> float:
        """How far A's measured figure lies outside the predicted interval (0 inside it), µs/req, signed."""
        if self.contains:
            return 0.0
        edge = self.predicted.high if self.measured_a.value > self.predicted.high else self.predicted.low
        return self.measured_a.value - edge

    def missed_category(self) -> str:
        """The category whose prediction is furthest from A's measured figure."""
        return max(self.categories, key=lambda c: abs(self.categories[c]["miss"]))


def predict(b_rounds: list[Round], a_rounds: list[Round], cost: IndirectCost, groups: Groups) -> WhatIf:
    """B's CPU µs/req if it made A's write syscalls per request, from B's rounds (each its own per-write
    cost) and the indirect cost; the categories alike, and A's measured figures beside them. groups: the
    rules file's, which name the category of the writes and the user-space categories."""
    a_writes = statistics.fmean(r.writes for r in a_rounds)
    user, send = groups.user_space, groups.writes
    slopes = {c: cost.categories[c].slope if c in cost.categories else 0.0 for c in user}
    if user and not set(user) <= set(cost.categories):     # a record without categories: all in the first
        slopes = {c: 0.0 for c in user} | {user[0]: cost.user.slope}
    cats = sorted(set().union(*(r.us for r in b_rounds + a_rounds)))
    per_round, per_cat = [], {c: [] for c in cats}
    for r in b_rounds:
        d = r.writes - a_writes
        direct = r.us.get(send, 0.0) / r.writes if r.writes else 0.0
        per_round.append(r.cpu - d * (direct + cost.user.slope))
        for c in cats:
            per_cat[c].append(r.us.get(c, 0.0) - d * (direct if c == send else slopes.get(c, 0.0)))
    fewer = statistics.fmean(r.writes for r in b_rounds) - a_writes
    direct = estimate([r.us.get(send, 0.0) / r.writes for r in b_rounds if r.writes])
    rounds = estimate(per_round)
    half = None if rounds.half is None else math.hypot(rounds.half, fewer * cost.user.half)
    categories = {c: {"b": statistics.fmean(r.us.get(c, 0.0) for r in b_rounds), "predicted": statistics.fmean(ps),
                      "a": statistics.fmean(r.us.get(c, 0.0) for r in a_rounds)} for c, ps in per_cat.items()}
    for v in categories.values():
        v["miss"] = v["a"] - v["predicted"]
    return WhatIf(a_writes, fewer, direct, Estimate(rounds.value, half), estimate([r.cpu for r in b_rounds]),
                  estimate([r.cpu for r in a_rounds]), categories)


@dataclass
class Solved:
    """The writes per request at which B's predicted req/s per CPU is `ratio` times A's measured."""
    ratio: float
    writes: Estimate                    # B's write syscalls per request at that ratio
    b_writes: float                     # B's measured write syscalls per request
    target_cpu: float                   # A's CPU µs/req over ratio: B's CPU µs/req at that ratio

    @property
    def requests_per_write(self) -> tuple[float | None, float | None, float | None]:
        """(value, low, high) requests per write; None where the writes per request are not positive."""
        w = self.writes
        return tuple(1 / x if x and x > 0 else None for x in (w.value, w.high, w.low))


def solve_writes(b_rounds: list[Round], a_rounds: list[Round], cost: IndirectCost, ratio: float,
                 groups: Groups) -> Solved:
    """The model of predict() run backwards: round by round (B's round k beside A's), the writes per
    request w at which B's CPU µs/req, its measured one plus (w − its writes) × (its µs per write in the
    writes' category + the indirect cost), equals A's CPU µs/req over ratio; the t interval across rounds,
    widened by the indirect cost's own interval (in quadrature, as predict's)."""
    per_round, sens = [], []
    for b, a in zip(b_rounds, a_rounds):
        per_write = (b.us.get(groups.writes, 0.0) / b.writes if b.writes else 0.0) + cost.user.slope
        gap = a.cpu / ratio - b.cpu
        per_round.append(b.writes + gap / per_write)
        sens.append(abs(gap) / per_write ** 2)      # d w / d (indirect slope)
    w = estimate(per_round)
    half = None if w.half is None else math.hypot(w.half, statistics.fmean(sens) * cost.user.half)
    return Solved(ratio, Estimate(w.value, half), statistics.fmean(r.writes for r in b_rounds),
                  statistics.fmean(a.cpu for a in a_rounds) / ratio)
