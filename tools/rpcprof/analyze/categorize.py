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

# One engine: stack_walk's walk over a stack's text, for a file read by the compiled core (categorize_file) and for
# stacks held in memory (categorize, group_of) alike. The rules, the reader and the breakdown are importable from here.
from rpcprof.analyze.rules import OTHER, Breakdown, Rules, normalize_frame, strip_generics  # noqa: F401
from rpcprof.analyze.rules_file import check_examples, load_rules  # noqa: F401
from rpcprof.analyze.stack_walk import categorize, categorize_file, group_of  # noqa: F401
from rpcprof.folded import open_folded, read_folded  # noqa: F401
