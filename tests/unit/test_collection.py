"""The tests that start no server run on two workers (pytest-xdist), which refuse to start unless both
collect the same test ids: an id made from data that changes with the clock (a gzip header's mtime, in a
parametrize) once failed the whole tier when the two workers collected a second apart."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import ROOT

STARTED = time.time()       # when this module was imported: during this session's collection


def collected() -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "not live", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_a_collection_a_second_later_gives_the_ids_this_session_collected(request):
    """This session's collection (this worker's, made when it started) against one made now, at least 1.1 s
    later: every id this session collected outside tests/live is collected again, and the whole tier when
    the session collected it all."""
    ours = [item.nodeid for item in request.session.items if not item.get_closest_marker("live")]
    time.sleep(max(0.0, 1.1 - (time.time() - STARTED)))
    now = collected()
    assert len(now) > 900
    assert not set(ours) - set(now), sorted(set(ours) - set(now))[:6]
    if len(ours) == len(now):
        assert ours == now
