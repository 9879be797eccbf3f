"""Frame shares: the share of samples whose stack holds a frame matching a regex (a flame graph box's
width), with its sampling error; and seed 001's ruler, frames that do the same work per request in
every server compared.

A ruler checks attribution. If frames R do the same absolute work per request in servers A and B,
R's share of each profile is (R's µs per request) / (CPU µs per request), so the ratio of R's shares,
B over A, equals A's CPU per request over B's: the req/s-per-CPU ratio measured with no profiler. Seed
001 did this by hand with `alloc::fmt::format::format_inner` (0.31 % of tonic, 2.90 % of pajamax: 9.4x
against a measured 9.5x). When the two disagree beyond the sampling error, the profile's attribution
(or the premise that the work is the same) is off, and the per-category figures deserve doubt.

Sampling error: a share p estimated from n samples has a binomial standard error sqrt(p (1 - p) / n);
a ratio of two independent shares gets its 95 % interval on the log scale (delta method).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from rpcprof.analyze.categorize import normalize_frame
from rpcprof.analyze.patterns import UserRegex
from rpcprof.folded import sample_weight

Z95 = 1.959964


@dataclass(frozen=True)
class FrameShare:
    weight: int          # weight of the stacks holding a matching frame
    total: int           # weight of all stacks
    samples: int         # matching samples (weight / one sample's weight)
    total_samples: int

    @property
    def share(self) -> float:
        return self.weight / self.total if self.total else math.nan

    @property
    def stderr(self) -> float:
        """Binomial standard error of the share."""
        p, n = self.share, self.total_samples
        return math.sqrt(p * (1 - p) / n) if n else math.nan


def frame_share(stacks: list[tuple[list[str], int]], pattern: UserRegex) -> FrameShare:
    """The share of samples with at least one frame matching pattern (names as the rules see them:
    generic arguments stripped, inferno's _[k]/_[j] suffixes removed)."""
    hit = functools.cache(lambda frame: pattern.search(normalize_frame(frame)[0]) is not None)     # once a frame
    weight = sum(w for frames, w in stacks if any(map(hit, frames)))
    total = sum(w for _, w in stacks)
    unit = sample_weight(stacks)
    return FrameShare(weight, total, weight // unit, total // unit)


def share_ratio(a: FrameShare, b: FrameShare) -> tuple[float, float, float] | None:
    """(b.share / a.share, low, high), a 95 % interval from both shares' sampling errors; None if either is zero."""
    if not a.samples or not b.samples:
        return None
    ratio = b.share / a.share
    rel = math.sqrt((1 - a.share) / a.samples + (1 - b.share) / b.samples)
    return ratio, ratio * math.exp(-Z95 * rel), ratio * math.exp(Z95 * rel)
