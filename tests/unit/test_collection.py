"""The tests that start no server run on two workers (pytest-xdist), which refuse to start unless both
collect the same test ids: an id made from data that changes with the clock (a gzip header's mtime, in a
parametrize) once failed the whole tier when the two workers collected a second apart."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import ROOT


def collected() -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "not live", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_two_collections_a_second_apart_give_the_same_test_ids():
    first = collected()
    time.sleep(1.1)
    second = collected()
    assert len(first) > 900
    assert first == second, sorted(set(first) ^ set(second))[:6]
