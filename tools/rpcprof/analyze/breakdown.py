"""A profile's weights per group of the rules' grouping, and per deciding frame (for `top`)."""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass


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

