"""The indirect cost of a syscall said (its figures: analyze/indirect.py): the line that quotes the record, the
sentence of the user code the extra writes slow (in the mechanism behind a gap) and the ruler check's verdict
where the syscalls per request predict a ratio.
"""
from __future__ import annotations

import math

from rpcprof.analyze.indirect import IndirectCost, SlowedWrites, syscalls_explain


def summary_line(cost: IndirectCost) -> str:
    """One line: the figure with its interval, and what it rests on."""
    return (f"user code slowed by a syscall: {cost.user.slope:.2f} µs/req per extra syscall per request "
            f"[{cost.user.low:.2f} to {cost.user.high:.2f}], from {cost.user.n} windows of the calibration server "
            f"({cost.source}; the cause, caches and predictors evicted, is inferred: no PMU counts it here)")


def slowed_text(s: SlowedWrites) -> str:
    """' Of the gap, ~X µs/req is user code slowed by the extra writes (...)'."""
    return (f" Of the gap, ~{s.us:.2f} µs/req [{s.low:.2f}-{s.high:.2f}] is user code in {s.more} slowed by the extra "
            f"writes ({s.extra:.2f} more write syscalls/req than {s.less} × {s.per_syscall:.2f} µs each, measured on "
            "the calibration server; caches and predictors evicted: inferred, not counted, no PMU here).")


def ruler_verdict(row: dict, base: dict, sc_base: float, sc_other: float, cost: IndirectCost) -> str:
    """The verdict of a ruler check that has an expected ratio (analyze/indirect.py's ruler_expectation):
    DISAGREE only when the measured interval misses the expected one, and then how much of the ruler's own
    difference the syscalls explain."""
    why = (f"expected ^{row['expected_ratio']:.2f} [{row['expected_low']:.2f}-{row['expected_high']:.2f}] from the "
           f"syscalls per request ({row['server']} {sc_other:.2f}, {base['server']} {sc_base:.2f}) and the ruler's "
           f"{cost.ruler.slope:.3f} µs/req per syscall on the calibration server")
    if row["agrees"]:
        return "agree within the sampling error; " + why
    if row["expected_agrees"]:
        return "agree with the " + why + ": the ruler's extra cost is the syscalls' indirect cost"
    a, b = base["us_per_req"], row["us_per_req"]
    err = 2 * math.hypot(base["us_per_req_err"], row["us_per_req_err"])
    return (f"DISAGREE beyond the sampling error and the {why}: the same work costs {a:.3f} µs/req in "
            f"{base['server']} and {b:.3f} in {row['server']} (±{err:.3f}), of which the syscalls explain "
            f"{syscalls_explain(cost, sc_base, sc_other):.3f} µs/req")
