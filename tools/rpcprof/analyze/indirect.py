"""The indirect cost of a syscall: user code runs slower after the kernel has run, as a figure.

bench/indirect measures it on the calibration server (servers/calibration), whose `extra_writes` knob
adds N loopback UDP sendto syscalls per response and nothing else: the least-squares slope of the
user-space categories' CPU µs per request (protocol + runtime + app), and of the ruler's, against the
write syscalls per request, with its 95 % interval; the kernel's own cost of the sends (category send)
has a slope of its own, kept apart. This machine kind has no PMU, so the cause (caches and branch
predictors evicted by the kernel's path) is inferred from where the time went, not counted.

The record it writes (docs/data/indirect-syscall-cost.json, docs/data/README.md says how it was made)
is read here by `load_indirect`, and used by the mechanism (the user code the extra writes slow,
slowed_by_writes), the ruler check and the what-if; report/mechanism.py says them.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from rpcprof.analyze.intervals import t975
from rpcprof.errors import UserError
from rpcprof.paths import ROOT

FIGURE_KEY = "user_us_per_syscall"                    # the record's key of the figure


@dataclass(frozen=True)
class Slope:
    """A least-squares slope with its 95 % t interval (n - 2 degrees of freedom)."""
    slope: float
    low: float
    high: float
    intercept: float
    n: int

    @property
    def half(self) -> float:
        return (self.high - self.low) / 2

    def as_dict(self) -> dict:
        return asdict(self)


def slope_interval(xs: Sequence[float], ys: Sequence[float]) -> Slope:
    """The least-squares slope of y on x with its 95 % interval; needs three points or more and x that varies."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys) or len(xs) < 3:
        raise ValueError("slope_interval: needs three or more (x, y) points")
    if min(xs) == max(xs):
        raise ValueError("slope_interval: x must vary")
    slope, intercept = statistics.linear_regression(xs, ys)
    mx = statistics.fmean(xs)
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    ss_res = math.fsum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    half = t975(len(xs) - 2) * math.sqrt(ss_res / (len(xs) - 2) / sxx)
    return Slope(slope, slope - half, slope + half, intercept, len(xs))


@dataclass(frozen=True)
class IndirectCost:
    """The figures of a record: user-code and ruler µs per request per extra syscall, with 95 % intervals."""
    user: Slope
    ruler: Slope | None
    categories: dict[str, Slope]       # per user-space category (and send, the direct cost)
    source: str                        # the record's path, as given

    def key(self, name: str = FIGURE_KEY) -> str:
        return f"{self.source}: {name}"


def _slope(node, path: str, what: str) -> Slope:
    try:
        return Slope(float(node["slope"]), float(node["low"]), float(node["high"]), float(node.get("intercept", 0.0)),
                     int(node.get("n", 0)))
    except (TypeError, KeyError, ValueError):
        raise UserError(f"{path}: {what} is not a slope with low and high: remake it with bench/indirect") from None


def load_indirect(path: Path | str) -> IndirectCost:
    """The record bench/indirect wrote; UserError (one line naming the file) when missing or malformed."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"{path}: cannot read the indirect-cost record ({e.strerror}): give --indirect FILE "
                        "as bench/indirect wrote it") from None
    except ValueError:
        raise UserError(f"{path}: not JSON: give --indirect FILE as bench/indirect wrote it") from None
    if not isinstance(data, dict) or FIGURE_KEY not in data:
        raise UserError(f"{path}: no {FIGURE_KEY}: give --indirect FILE as bench/indirect wrote it")
    cats = data.get("categories") or {}
    # the record named as the repository names it, where it is in it
    source = str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)
    return IndirectCost(_slope(data[FIGURE_KEY], str(path), FIGURE_KEY),
                        _slope(data["ruler_us_per_syscall"], str(path), "ruler_us_per_syscall")
                        if data.get("ruler_us_per_syscall") else None,
                        {c: _slope(v, str(path), f"categories.{c}") for c, v in cats.items()}, source)


@dataclass(frozen=True)
class SlowedWrites:
    """The user code slowed by the write syscalls one server makes more than the other: the extra writes per
    request times the indirect cost per syscall (report/mechanism.py says it)."""
    more: str                          # the server that writes more
    less: str
    extra: float                       # its write syscalls per request more
    us: float                          # µs/req of user code slowed, with its 95 % interval
    low: float
    high: float
    per_syscall: float                 # the indirect cost: µs/req per extra syscall per request


def slowed_by_writes(cost: IndirectCost, writes_base: float, writes_other: float, base: str,
                     other: str) -> SlowedWrites:
    """The write syscalls per request one server makes more than the other, times the indirect cost per syscall."""
    more, less = (base, other) if writes_base > writes_other else (other, base)
    d = abs(writes_base - writes_other)
    return SlowedWrites(more, less, d, cost.user.slope * d, *sorted((cost.user.low * d, cost.user.high * d)),
                        cost.user.slope)


def ruler_expectation(cost: IndirectCost, row: dict, base: dict, sc_base: float | None,
                      sc_other: float | None) -> dict:
    """The ruler check's expected share ratio (other over base) given the syscalls per request (row against base,
    two rows of report/compare.py's ruler_rows after ruler_check), when the ruler's cost per request grows with
    them as measured: base's ruler µs/req + slope × the syscalls' difference, over base's, times the CPU-per-request
    ratio (base over other). {expected_ratio, expected_low, expected_high, expected_agrees (the measured interval
    meets the expected one)}; all None where it cannot be made (without a ruler slope too)."""
    out = {"expected_ratio": None, "expected_low": None, "expected_high": None, "expected_agrees": None,
           "expected_key": cost.key("ruler_us_per_syscall")}
    cpu_ratio = row.get("profiled_ratio") or row.get("measured_ratio")
    if (row.get("ratio") is not None and sc_base is not None and sc_other is not None and cpu_ratio
            and cost.ruler is not None and (us := base["us_per_req"])):
        low, mid, high = sorted(max(0.0, us + s * (sc_other - sc_base)) / us * cpu_ratio
                                for s in (cost.ruler.slope, cost.ruler.low, cost.ruler.high))
        out.update(expected_ratio=mid, expected_low=low, expected_high=high,
                   expected_agrees=row["ratio_low"] <= high and low <= row["ratio_high"])
    return out


def syscalls_explain(cost: IndirectCost, sc_base: float, sc_other: float) -> float:
    """µs/req of a disagreeing ruler check's difference that the syscalls per request explain (slope × difference)."""
    return abs(cost.ruler.slope * (sc_other - sc_base))
