"""The statistics rpcprof wrote by hand before scipy.stats replaced them, kept as the reference its tests
compare against: Student's t from the incomplete beta function (modified Lentz, as in Numerical Recipes),
its quantile by bisection, a t table's 0.975 quantiles, and Benjamini-Hochberg's step-up."""
from __future__ import annotations

import math
from functools import lru_cache

LEVEL = 0.95
FDR = 0.05

# Student's t, 0.975 quantile, by degrees of freedom (from the t table)
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz, as in Numerical Recipes)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0

    def nonzero(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / nonzero(1.0 - qab * x / qap)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d, c = 1.0 / nonzero(1.0 + aa * d), nonzero(1.0 + aa / c)
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d, c = 1.0 / nonzero(1.0 + aa * d), nonzero(1.0 + aa / c)
        h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df need not be whole)."""
    if math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


@lru_cache(maxsize=4096)
def t_quantile(df: float, level: float = LEVEL) -> float:
    """The two-sided quantile by bisection on t_two_sided_p, degrees of freedom rounded as rpcprof rounds them."""
    df = round(df, 2) if df <= 30 else float(round(df))
    lo, hi = 0.0, 1e4
    for _ in range(64):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > 1 - level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def benjamini_hochberg(pvalues: list[float], q: float = FDR) -> list[bool]:
    """Which of the p-values are discoveries at false discovery rate q (Benjamini-Hochberg step-up)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    cut = 0
    for rank, i in enumerate(order, 1):
        if pvalues[i] <= rank / m * q:
            cut = rank
    found = [False] * m
    for i in order[:cut]:
        found[i] = True
    return found


def bh_adjusted(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values): p_(i) · m / i, made monotone, at most 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i], reverse=True)
    out, low = [1.0] * m, 1.0
    for rank, i in zip(range(m, 0, -1), order):
        low = min(low, pvalues[i] * m / rank)
        out[i] = low
    return out


def t975(df: int) -> float:
    """The table's quantile; beyond 30 degrees of freedom, interpolated toward the normal quantile 1.96."""
    if df < 1:
        raise ValueError("a t interval needs at least two pairs")
    return T975[df - 1] if df <= len(T975) else 1.960 + (2.042 - 1.960) * 30 / df
