"""Ratios of two servers' figures with a 95 % confidence interval, from interleaved rounds.

Rounds are measured in turn (A B A B ..., each server restarted), so round k of A and round k of B
ran back to back on the same machine state. The ratio is computed per adjacent pair, r_k = B_k / A_k,
and the interval is Student's t on the log ratios: exp(mean ± t(0.975, n-1) · sd / sqrt(n)). A drift
of the shared machine that slows both servers alike cancels inside each pair; measured one server
after the other, the same drift would land in the ratio.

A precision target (--precision) is met by Stein's two-stage rule, not by stopping when the interval
looks narrow enough (that is optional stopping: the interval then covers the true ratio less often than
it says; simulated with normal log noise, about 90-92 % instead of 95 %). A pilot of PILOT_ROUNDS pairs
gives the variance s0²; the rounds needed are n = max(n0, ceil((t(n0-1) · s0 / ln(1 + target))²)); the
interval over all n pairs is mean ± t(0.975, n0-1) · s0 / sqrt(n). Given s0, n is fixed, and the mean of
the n pairs is independent of s0, so this interval has exactly 95 % coverage under normal log noise,
also when a time budget stops the rounds before n (the stop depends on s0 only). tests/test_intervals.py
checks the coverage by simulation.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from functools import lru_cache

from rpcprof.analyze.significance import t_quantile
from rpcprof.records import round_of, round_rows, rounds_asked


@lru_cache(maxsize=None)
def t975(df: int) -> float:
    """Student's t 0.975 quantile to three decimals, as a t table gives it."""
    if df < 1:
        raise ValueError("a t interval needs at least two pairs")
    return round(t_quantile(df, 0.95), 3)


@dataclass(frozen=True)
class RatioInterval:
    ratio: float                 # geometric mean of the paired ratios
    low: float | None            # 95 % interval (None with one pair)
    high: float | None
    n: int                       # pairs

    @property
    def significant(self) -> bool | None:
        """False when the interval contains 1 (no difference shown); None without an interval."""
        return None if self.low is None else not (self.low <= 1.0 <= self.high)

    @property
    def half_width(self) -> float | None:
        """Relative half-width: the interval is ratio × (1 ± this), on the log scale."""
        return None if self.low is None else math.sqrt(self.high / self.low) - 1

    def text(self) -> str:
        """`^17.7 [16.9-18.6]`, one decimal (two below 1), the interval only with two pairs or more."""
        d = 1 if self.ratio >= 1 else 2
        return f"^{self.ratio:.{d}f}" + (f" [{self.low:.{d}f}-{self.high:.{d}f}]" if self.low is not None else "")

    def as_dict(self) -> dict:
        return {**asdict(self), "significant": self.significant, "half_width": self.half_width}

    @classmethod
    def of(cls, d: dict) -> RatioInterval:
        """Back from as_dict() (a report's row keeps the figures; its text is made where it is shown)."""
        return cls(d["ratio"], d["low"], d["high"], d["n"])


PILOT_ROUNDS = 3


def paired_ratio(a: list[float], b: list[float], pilot: int | None = None) -> RatioInterval:
    """b over a, pair by pair (a[k] and b[k] measured back to back); 95 % t interval on the log ratios. pilot:
    the two-stage interval of a run made with --precision: the spread of the first `pilot` pairs, t with
    pilot - 1 degrees of freedom, the mean of every pair (see the module's text)."""
    pairs = [(x, y) for x, y in zip(a, b) if x and y and x > 0 and y > 0]
    if not pairs:
        raise ValueError("no pair with both figures")
    logs = [math.log(y / x) for x, y in pairs]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return RatioInterval(math.exp(mean), None, None, 1)
    k = min(pilot, len(logs)) if pilot and pilot >= 2 else len(logs)
    half = t975(k - 1) * statistics.stdev(logs[:k]) / math.sqrt(len(logs))
    return RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


def rounds_needed(pilot_logs: list[list[float]], target: float) -> int:
    """Stein's second stage: the pairs needed so that every ratio's interval is within ±target, from the
    log ratios of the pilot pairs (one list per ratio)."""
    need = [math.ceil((t975(len(logs) - 1) * statistics.stdev(logs) / math.log(1 + target)) ** 2)
            for logs in pilot_logs if len(logs) >= 2]
    return max([len(logs) for logs in pilot_logs] + need)


def pilot_of(parameters: dict | None) -> int | None:
    """The pilot's pairs of a run made with --precision (from its manifest's parameters), else None."""
    p = parameters or {}
    return None if p.get("precision") is None else max(rounds_asked(p), PILOT_ROUNDS)


def log_ratios(base: dict, other: dict) -> list[float]:
    """ln(other / base) of req/s per CPU per round measured by both, in round order."""
    a, b = figure_by_round(base), figure_by_round(other)
    return [math.log(b[k] / a[k]) for k in sorted(a.keys() & b.keys()) if a[k] > 0 and b[k] > 0]


def figure_by_round(result: dict, figure: str = "req_per_cpu_s") -> dict[int, float]:
    """{round k: figure} of one server's result (one measurement: {its round: figure})."""
    return {round_of(r): r[figure] for r in round_rows(result) or [result] if r.get(figure)}


def interleaved(result: dict) -> bool:
    """Whether a result's rounds were measured in turn with the other servers' (each records when it started).
    Runs made before rounds measured one server's measurements after the other: their pairs are not adjacent."""
    rows = round_rows(result)
    return not rows or all(r.get("started") for r in rows)


def server_ratio(base: dict, other: dict, figure: str = "req_per_cpu_s", pilot: int | None = None) -> RatioInterval | None:
    """other's figure over base's, paired by round; None when no round measured both, or when the
    measurements were not made in rounds (no adjacent pairs to take an interval from). pilot: the run
    was made with --precision, its interval is the two-stage one (paired_ratio's)."""
    a, b = figure_by_round(base, figure), figure_by_round(other, figure)
    common = sorted(a.keys() & b.keys())
    if not (common and interleaved(base) and interleaved(other)):
        return None
    return paired_ratio([a[k] for k in common], [b[k] for k in common], pilot)


def profiled_ratio(base: dict, other: dict) -> RatioInterval | None:
    """server_ratio for the profile windows: other's req/s per CPU over base's while both were sampled,
    from each round's profiled CPU per request (base's over other's), paired by round."""
    if not (r := server_ratio(base, other, figure="profiled_cpu_us_per_req")) or not r.ratio:
        return None
    return RatioInterval(1 / r.ratio, None if r.high is None else 1 / r.high, None if r.low is None else 1 / r.low, r.n)


def cv(values: list[float]) -> float | None:
    """Coefficient of variation (sample standard deviation over the mean); None for fewer than two."""
    values = [v for v in values if v is not None]
    return statistics.stdev(values) / statistics.fmean(values) if len(values) >= 2 else None


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The distribution-free interval of the median of what values were drawn from: the k-th lowest and the k-th
    highest value, k the largest whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least level (13 values: the
    3rd of each end, 97.8 %); None where even the lowest and the highest cover less (fewer than 6 values at 95 %)."""
    ordered, n = sorted(values), len(values)
    below, k = 0.0, 0               # P(Binomial(n, 1/2) < k + 1), k + 1 the rank tried next
    while k < n // 2 and 1 - 2 * (below + math.comb(n, k) / 2 ** n) >= level:
        below += math.comb(n, k) / 2 ** n
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k else None
