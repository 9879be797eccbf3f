"""forked.Forked: a call in a forked child gives back its value or its exception, and the parent stops it."""
import os
import time

import pytest

from rpcprof.errors import UserError
from rpcprof.forked import Forked


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_childs_value_comes_back_and_the_child_is_reaped():
    big = list(range(100_000))              # inherited, not pickled; the answer is
    child = Forked(lambda n: (os.getpid(), sum(big[:n]), {"a": [1.5]}), 10)
    pid = child.pid
    other_pid, total, extra = child.result()
    assert other_pid == pid != os.getpid() and total == 45 and extra == {"a": [1.5]}
    assert child.pid is None and not _alive(pid)
    child.stop()                           # nothing left to stop


def test_the_childs_exception_is_raised_in_the_parent():
    def fails():
        raise UserError("x.folded: no samples")
    child = Forked(fails)
    with pytest.raises(UserError, match="no samples"):
        child.result()


def test_an_answer_that_does_not_pickle_is_said_so():
    child = Forked(lambda: (lambda: None))
    with pytest.raises(RuntimeError, match="could not be passed back"):
        child.result()


def test_stop_kills_a_child_still_running():
    child = Forked(time.sleep, 60)
    pid = child.pid
    child.stop()
    assert child.pid is None and not _alive(pid)


def test_a_child_that_dies_gives_one_clear_error():
    child = Forked(os._exit, 3)
    with pytest.raises(RuntimeError, match="without an answer"):
        child.result()
