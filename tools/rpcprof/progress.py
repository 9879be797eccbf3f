"""Progress and warnings of every layer, one line each on stderr (stdout is the report): the one logger.

On a terminal, a job (run, sweep, attach) also shows a progress bar with the time left (tqdm), its lines
printed above it; off a terminal, or when the command prints JSON (bar_allowed(False)), the lines are all
there is, as they always were. One bar at a time: a sweep's bar counts its cells, whose runs draw none.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from types import SimpleNamespace

_bar = None             # the bar on the terminal now, if any
_allowed = True         # the command lets a bar be drawn (not with --format json)


def log(msg: str) -> None:
    """msg as one line on stderr, flushed (progress must show as it happens); above the bar if one is drawn."""
    if _bar is not None:
        _bar.write(msg, file=_bar.fp)
    else:
        print(msg, file=sys.stderr, flush=True)


def bar_allowed(allowed: bool) -> None:
    """Whether the command in progress may draw a bar (False: it prints JSON, or was asked not to)."""
    global _allowed
    _allowed = allowed


@contextmanager
def progress_bar(total: int, unit: str):
    """A bar of `total` steps (each a `unit`: measurements, cells...) with the time elapsed and left, on
    stderr when it is a terminal; yields what to call update() on after each step, and whose total may be
    raised (refresh() after). Off a terminal, with JSON, or inside another bar: nothing drawn."""
    global _bar
    if _bar is not None or not _allowed or total <= 0 or not getattr(sys.stderr, "isatty", lambda: False)():
        yield SimpleNamespace(total=0, update=lambda n=1: None, refresh=lambda: None)     # what a job steps: no bar
        return
    from tqdm import tqdm
    _bar = tqdm(total=total, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True,
                bar_format="{desc}{n}/{total} {unit} |{bar}| {elapsed} elapsed, {remaining} left")
    try:
        yield _bar
    finally:
        bar, _bar = _bar, None
        bar.close()
