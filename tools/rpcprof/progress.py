"""Progress and warnings of every layer, one line each on stderr (stdout is the report): the one logger."""
from __future__ import annotations

import sys


def log(msg: str) -> None:
    """msg as one line on stderr, flushed (a run's progress must show as it happens)."""
    print(msg, file=sys.stderr, flush=True)
