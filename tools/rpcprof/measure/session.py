"""The one owner of everything a command starts: servers, load drivers' helpers, profilers, counters.

A command opens one Session; every process or recorder it starts is registered with it, and whatever
happens (return, exception, Ctrl-C, SIGTERM) closing the session stops what is still running, newest
first (a profiler before the server it watches), by PID. Something stopped early (a server between
rounds) is stopped through the session too, so it is never stopped twice or forgotten.
"""
from __future__ import annotations

import sys
from typing import Protocol, TypeVar


class Stoppable(Protocol):
    def stop(self): ...


T = TypeVar("T", bound=Stoppable)


class Session:
    def __init__(self) -> None:
        self._owned: list[Stoppable] = []

    def own(self, thing: T) -> T:
        """Register something started (anything with stop()); returns it."""
        self._owned.append(thing)
        return thing

    def stop(self, thing: Stoppable | None):
        """Stop one owned thing now; returns what its stop() returns."""
        if thing is None or thing not in self._owned:
            return None
        self._owned.remove(thing)
        return thing.stop()

    def hand_over(self, thing: Stoppable, other: "Session") -> None:
        """Give an owned thing to another session, which stops it when it is stopped or closed (a counter
        still exiting after its window, reaped before the next window is measured)."""
        self._owned.remove(thing)
        other.own(thing)

    def close(self) -> None:
        """Stop everything still owned, newest first; one failure does not keep the others running."""
        while self._owned:
            thing = self._owned.pop()
            try:
                thing.stop()
            except Exception as e:          # noqa: BLE001 - keep stopping the rest
                print(f"rpcprof: WARNING: stopping {type(thing).__name__} failed: {e}", file=sys.stderr)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
