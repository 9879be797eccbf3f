"""Bucket sampled stacks into recv / send / runtime / protocol / app (+ other) with categorize.yaml.

Semantics (also in categorize.yaml's header): walk each stack from the leaf toward the root; the first
frame that matches a rule decides; no match at all is `other`. Within one frame, the category listed
first in the file wins.

Three more groupings come from the same file, chosen with Rules.using(level=2) or Rules.using(view=...):
- level 2 splits each category into its sub-categories (protocol/http2, send/syscall...): the stack's
  category is decided as above, then, walking again from the leaf, the first frame that matches a rule
  of that category carrying a `sub:` decides the sub-category (`CATEGORY/other` when none does). Level-1
  shares are therefore the sums of their level-2 shares, by construction.
- the tax view groups samples by the kind of work at the leaf (allocation, data movement, hashing,
  locks and atomics, syscall entry/exit, everything else): walking from the leaf, no further than the
  frame that decided the category, the first frame that matches a `tax:` rule decides.
- the waits view (view="waits", for off-CPU stacks: where a thread went to sleep, weighted by how long
  it slept) groups them by wait reason (socket data, sending, locks, idle poll, timers, runnable...):
  walking from the leaf over the whole stack, the first frame that matches a `waits:` rule decides.
"""
from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass

# The rules and the folded-file reader live in their own modules; they are importable from here as before.
from rpcprof.analyze.rules import (LEVELS, OTHER, VIEWS, Rule, Rules, TaxGroup, View, normalize_frame,  # noqa: F401
                                   shade, strip_generics)
from rpcprof.analyze.rules_file import check_examples, load_rules  # noqa: F401
from rpcprof.folded import open_folded, read_folded  # noqa: F401
from rpcprof.folded import sample_weight as one_sample


@dataclass
class Breakdown:
    """Weights per category of one profile, and per deciding frame for `top`."""
    weights: dict[str, int]
    total: int
    samples: int
    by_frame: dict[str, dict[str, int]]     # category -> deciding frame -> weight
    stacks: int

    def share(self, category: str) -> float:
        return self.weights.get(category, 0) / self.total if self.total else math.nan

    def top_frames(self, category: str, limit: int) -> list[tuple[str, int]]:
        """The limit (frame, weight) of category with the most weight, ties by name (a fleet's profile can
        hold a million: none is sorted beyond them)."""
        frames = self.by_frame.get(category, {})
        if limit <= 0 or not frames:
            return []
        # heapq.nsmallest(limit, items, key=(-weight, name)) without a key call per frame: the limit-th largest
        # weight, the frames above it by that order, then the ties at it by name
        least = heapq.nlargest(limit, frames.values())[-1]
        above = sorted([(f, w) for f, w in frames.items() if w > least], key=lambda kv: (-kv[1], kv[0]))
        ties = heapq.nsmallest(limit - len(above), [f for f, w in frames.items() if w == least])
        return above + [(f, least) for f in ties]


def categorize(stacks: list[tuple[list[str], int]], rules: Rules, sample_weight: int | None = None) -> Breakdown:
    """The category breakdown of folded stacks. sample_weight: weight of one sample (perf's period
    when inferno weighted by period); inferred as the gcd of the weights when not given."""
    weights: dict[str, int] = defaultdict(int)
    by_frame: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    total = 0
    for frames, w in stacks:
        cat, idx = rules.classify_stack(frames)
        weights[cat] += w
        by_frame[cat][frames[idx] if idx >= 0 else frames[-1]] += w
        total += w
    if sample_weight is None:
        sample_weight = one_sample(stacks)
    return Breakdown({c: weights.get(c, 0) for c in rules.all_categories}, total,
                     total // sample_weight if sample_weight else 0,
                     {c: dict(v) for c, v in by_frame.items()}, len(stacks))
