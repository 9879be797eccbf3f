"""One function call in a forked child, so that two independent passes over files use both CPUs (diff reads its
two sides at once): the child inherits the parent's memory (no argument is pickled), and gives back its return
value, or the exception it raised, pickled through a pipe.

The parent owns the child: result() waits for it by PID, and stop(), which the caller puts in a `finally`, kills
and reaps it on any other exit path (an exception in the parent, ^C). The child leaves with os._exit: no atexit
handler, no temporary folder's cleanup and no buffered output of the parent's runs twice.
"""
from __future__ import annotations

import os
import pickle
import signal


class Forked:
    """fn(*args) running in a child process; result() gives what it returned, or raises what it raised."""

    def __init__(self, fn, *args) -> None:
        read_end, write_end = os.pipe()
        self.pid: int | None = os.fork()
        if self.pid == 0:                      # the child
            os.close(read_end)
            _answer(write_end, fn, args)
        os.close(write_end)
        self.read_end = read_end

    def result(self):
        with os.fdopen(self.read_end, "rb") as pipe:
            data = pipe.read()
        self._reap()
        if not data:
            raise RuntimeError("a forked pass ended without an answer (killed?)")
        raised, value = pickle.loads(data)
        if raised:
            raise value
        return value

    def stop(self) -> None:
        """Kill and reap the child if it still runs (the parent's own error or ^C)."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
            try:
                os.close(self.read_end)
            except OSError:
                pass

    def _reap(self) -> None:
        if self.pid:
            os.waitpid(self.pid, 0)
            self.pid = None


def _answer(write_end: int, fn, args) -> None:
    code = 0
    try:
        try:
            answer = (False, fn(*args))
        except BaseException as e:           # noqa: BLE001 - given to the parent, which raises it
            answer = (True, e)
        try:
            data = pickle.dumps(answer)
        except Exception as e:               # noqa: BLE001 - an answer that does not pickle, said as such
            data = pickle.dumps((True, RuntimeError(f"a forked pass's answer could not be passed back: {e}")))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
    except BaseException:                    # noqa: BLE001 - the parent sees an empty answer
        code = 1
    finally:
        os._exit(code)
