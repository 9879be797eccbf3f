"""Whether a difference between two profiles is real: a test across rounds for one figure, and the false
discovery rate kept at 5 % when many frames are tested at once.

Each round of a server gives one value of a figure (a category's or a frame's CPU µs per request: its
share of that round's profile times that round's unprofiled CPU per request). A round's value is an
average over thousands of samples and requests, so across rounds it is close to normal, and the t test
is what has power with 3-5 rounds:
- two servers of one run: rounds were measured in turn (A B A B ...), so round k of A and of B ran back to
  back; the test is paired (Student's t on the per-round differences, n - 1 degrees of freedom), as
  compare's ratio and gaps are;
- two runs: nothing pairs them; Welch's t (unequal variances, Welch-Satterthwaite degrees of freedom).
A round's figure varies for two reasons: sampling (binomial: share (1 - share) / samples, known) and the
machine between rounds (unknown). The variance a test uses is never below the sampling variance: from
3-5 rounds the spread can come out near 0 by chance, most of all for a thin frame (one sample in every
round of B, none in A), which would then look certain. Where the sampling variance decides, the part
estimated from the rounds is small and its degrees of freedom grow (Satterthwaite), up to the normal:
a frame whose samples alone settle the question gets the power its thousands of samples give, not
that of 4 degrees of freedom, which no frame among hundreds could pass Benjamini-Hochberg with.
A permutation or bootstrap test cannot do it with so few rounds: 5 paired rounds have 2^5 = 32 sign
flips, so no p-value is below 2/32 = 0.0625, and 3 rounds against 3 have 20 arrangements (p >= 0.1).

Many frames tested at once: Benjamini-Hochberg at q = 5 % (FDR): sort the m p-values, find the largest
rank i with p_(i) <= i/m · q, and call the i smallest significant. Nested boxes of a flame graph (a parent
includes its children) are positively dependent, the case BH is proven for (Benjamini & Yekutieli 2001).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from functools import lru_cache

FDR = 0.05            # Benjamini-Hochberg's q over the frames of a diff
LEVEL = 0.95          # the intervals' coverage


# --- Student's t (scipy.stats) ------------------------------------------------------------------

def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df need not be whole)."""
    if math.isnan(t):
        return 1.0
    # scipy.special's stdtr and stdtrit are scipy.stats.t's sf and ppf without importing scipy.stats (seconds)
    from scipy.special import stdtr
    return float(2 * stdtr(df, -abs(t)))


def t_quantile(df: float, level: float = LEVEL) -> float:
    """The t with P(|T| <= t) = level (two-sided); df rounded (to 0.01 up to 30, then to whole numbers: the
    quantile moves by less than 1e-3) so that every box of a graph shares a few values."""
    return _t_quantile(round(df, 2) if df <= 30 else float(round(df)), level)


@lru_cache(maxsize=4096)
def _t_quantile(df: float, level: float) -> float:
    from scipy.special import stdtrit
    return float(stdtrit(df, 0.5 + level / 2))


# --- one figure across rounds -------------------------------------------------------------------

@dataclass(frozen=True)
class Gap:
    """B − A of one figure across rounds: the mean difference, its 95 % interval and the test's p."""
    delta: float
    half: float | None           # half-width of the 95 % interval; None with too few rounds
    p: float | None              # two-sided p of the t test; None with too few rounds
    test: str                    # "paired t" or "Welch t"
    n_a: int
    n_b: int

    @property
    def significant(self) -> bool | None:
        """Whether the interval excludes 0; None without an interval."""
        return None if self.half is None else abs(self.delta) > self.half

    def mark(self) -> str:
        """'*' when significant, 'n.s.' when the interval contains 0, '' without one."""
        return {True: "*", False: "n.s.", None: ""}[self.significant]

    def as_dict(self) -> dict:
        return {**asdict(self), "significant": self.significant}


MAX_DF = 1000.0          # t with 1000 degrees of freedom is the normal distribution to 1e-3


def _floored(values: list[float], floor: float) -> tuple[float, float]:
    """(the variance of values, max(their spread across rounds, floor: the sampling variance), its degrees of
    freedom): n - 1 when the spread decides; when the floor does, the part estimated (the spread beyond sampling)
    is uncertain only as the spread is: Satterthwaite's (n - 1)(var / spread)^2, the normal at most."""
    spread = statistics.variance(values)
    var = max(spread, floor)
    return var, MAX_DF if spread <= 0 else min(MAX_DF, (len(values) - 1) * (var / spread) ** 2)


def paired_gap(a: dict[int, float], b: dict[int, float], floor: float = 0.0) -> Gap:
    """B − A paired by round (the rounds both measured): Student's t on the differences. floor: the least
    variance of one difference (the sampling variance of the two rounds' figures; see sampling_variance)."""
    d = [b[k] - a[k] for k in sorted(a.keys() & b.keys())]
    mean = statistics.fmean(d) if d else math.nan
    if len(d) < 2:
        return Gap(mean, None, None, "paired t", len(d), len(d))
    var, df = _floored(d, floor)
    return _tested(mean, math.sqrt(var / len(d)), df, "paired t", len(d), len(d))


def welch_gap(a: list[float], b: list[float], floor_a: float = 0.0, floor_b: float = 0.0) -> Gap:
    """mean(B) − mean(A) of two independent sets of rounds: Welch's t. floor_a, floor_b: the least
    variance of one round's figure on each side (its sampling variance)."""
    mean = (statistics.fmean(b) if b else math.nan) - (statistics.fmean(a) if a else math.nan)
    if len(a) < 2 or len(b) < 2:
        return Gap(mean, None, None, "Welch t", len(a), len(b))
    (va, dfa), (vb, dfb) = _floored(a, floor_a), _floored(b, floor_b)
    va, vb = va / len(a), vb / len(b)
    se = math.sqrt(va + vb)
    # Welch-Satterthwaite; with no spread at all the test has nothing to say beyond the means
    df = min(MAX_DF, (va + vb) ** 2 / (va ** 2 / dfa + vb ** 2 / dfb)) if se else len(a) + len(b) - 2
    return _tested(mean, se, df, "Welch t", len(a), len(b))


def _tested(mean: float, se: float, df: float, test: str, n_a: int, n_b: int) -> Gap:
    """The Gap of a mean difference with standard error se: its interval, and the t test's p (with no spread
    at all, 1 where the means agree, else 0)."""
    p = t_two_sided_p(mean / se, df) if se else 1.0 if mean == 0 else 0.0
    return Gap(mean, t_quantile(df) * se, p, test, n_a, n_b)


def sampling_variance(share: float, samples: int, scale: float) -> float:
    """The variance of a figure (share × scale) from sampling alone, share (1 − share) / samples: the floor
    under the spread across rounds (the module's docstring says why)."""
    return scale * scale * share * (1 - share) / samples if samples else 0.0


def gap(a: dict[int, float], b: dict[int, float], paired: bool, var_a: dict[int, float] | None = None,
        var_b: dict[int, float] | None = None) -> Gap:
    """B − A of a figure given per round ({round: value}), paired by round or not; var_a, var_b: each
    round's sampling variance, the floor under the variance the test estimates."""
    fa, fb = (statistics.fmean(v.values()) if v else 0.0 for v in (var_a, var_b))
    if paired:
        return paired_gap(a, b, fa + fb)
    return welch_gap([a[k] for k in sorted(a)], [b[k] for k in sorted(b)], fa, fb)


def benjamini_hochberg(pvalues: list[float], q: float = FDR) -> list[bool]:
    """Which p-values are discoveries at false discovery rate q (Benjamini-Hochberg step-up): adjusted p at most q."""
    return [adjusted <= q for adjusted in bh_adjusted(pvalues)]


def bh_adjusted(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values): p_(i) · m / i, made monotone, at most 1."""
    if not pvalues:
        return []
    from scipy.stats import false_discovery_control     # imported here: it takes over half a second
    return [float(x) for x in false_discovery_control(pvalues, method="bh")]


# --- every box of a flame graph, per round --------------------------------------------------------

class FrameTree:
    """The boxes of a flame graph (stack prefixes, root first) with their weight in each profile added:
    node 0 is the root; each node has its name, parent and weight per profile."""

    def __init__(self) -> None:
        self.names: list[str] = [""]
        self.parents: list[int] = [-1]
        self.children: list[dict[str, int]] = [{}]
        self.weights: list[dict[object, float]] = [{}]

    def add(self, profile, stacks: list[tuple[list[str], float]]) -> None:
        """Add a profile's stacks (frames root first, weight), keyed as `profile`."""
        for frames, w in stacks:
            node = 0
            self.weights[0][profile] = self.weights[0].get(profile, 0) + w
            for name in frames:
                child = self.children[node].get(name)
                if child is None:
                    child = self.children[node][name] = len(self.names)
                    self.names.append(name)
                    self.parents.append(node)
                    self.children.append({})
                    self.weights.append({})
                node = child
                self.weights[node][profile] = self.weights[node].get(profile, 0) + w

    def path(self, node: int) -> list[str]:
        out = []
        while node > 0:
            out.append(self.names[node])
            node = self.parents[node]
        return out[::-1]

    def __len__(self) -> int:
        return len(self.names)


@dataclass
class FrameTest:
    node: int
    gap: Gap
    discovery: bool = False
    q: float | None = None


def frame_tests(tree: FrameTree, a: dict, b: dict, paired: bool, nodes) -> list[FrameTest]:
    """The boxes `nodes` of tree tested across rounds, BH at FDR over all of them. a, b: {round: (profile
    key in the tree, its total weight, its samples, scale)}: a box's figure in a round is its share of
    the profile times scale (1 for shares, the round's CPU µs per request for µs per request)."""
    tests = []
    for node in nodes:
        w = tree.weights[node]
        figures = []
        for side in (a, b):
            shares = {k: w.get(key, 0.0) / total for k, (key, total, _, _) in side.items()}
            figures.append(({k: shares[k] * side[k][3] for k in side},
                            {k: sampling_variance(shares[k], side[k][2], side[k][3]) for k in side}))
        g = gap(figures[0][0], figures[1][0], paired, figures[0][1], figures[1][1])
        if g.p is not None:
            tests.append(FrameTest(node, g))
    for t, adjusted in zip(tests, bh_adjusted([t.gap.p for t in tests])):
        t.discovery, t.q = adjusted <= FDR, adjusted
    return tests


def boxes_to_test(tree: FrameTree, totals: dict, min_share: float) -> list[int]:
    """The boxes whose mean share over every profile (totals: {profile key: its total weight}) is at
    least min_share: blind to which side is larger, so BH over the boxes kept stays valid; thinner
    boxes are slivers of the graph whose tests would only dilute the others'."""
    return [node for node in range(1, len(tree))
            if statistics.fmean(tree.weights[node].get(key, 0.0) / total for key, total in totals.items())
            >= min_share]
