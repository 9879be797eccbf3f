"""Bucket sampled stacks into recv / send / runtime / protocol / app (+ other) with categorize.yaml.

Semantics (categorize.yaml's header says them in full): walk each stack from the leaf toward the root; the
first frame that matches a rule decides; no match at all is `other`. Within one frame, the category listed
first in the file wins. Three more groupings come from the same file, chosen with Rules.using(level=2) or
Rules.using(view=...): level 2 (then, walking again from the leaf, the first frame that matches a rule of the
stack's category with a `sub:` decides, `CATEGORY/other` when none does: level-1 shares are the sums of their
level-2 shares), the tax view (the kind of work at the leaf: the first `tax:` rule from the leaf, no further
than the frame that decided the category) and the waits view (off-CPU stacks by wait reason: the first
`waits:` rule from the leaf over the whole stack).
"""
from __future__ import annotations

# One engine: stack_walk's walk over a stack's text, for a file read by the compiled core (categorize_file) and for
# stacks held in memory (categorize, group_of) alike. The rules, the reader and the breakdown are importable from here.
from rpcprof.analyze.rules import OTHER, Breakdown, Rules, normalize_frame, strip_generics  # noqa: F401
from rpcprof.analyze.rules_file import check_examples, load_rules  # noqa: F401
from rpcprof.analyze.stack_walk import categorize, categorize_file, group_of  # noqa: F401
from rpcprof.folded import open_folded  # noqa: F401
