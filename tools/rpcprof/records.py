"""The typed records of a run folder, as rpcprof writes them: the manifest (Manifest). rundir.py writes them to
its JSON and reads them back.

A run's rounds are `rounds` in the code (--rounds); their JSON keys keep the name they had when rounds were
called repeats, so that every run folder reads alike: a round's number is `repeat` (ROUND_KEY) in a result
and in each of its rows, the rows of a result's rounds are `repeats` (ROUNDS_KEY), and --rounds is
`repeat` among the manifest's parameters. round_of, round_rows and rounds_asked are the one reader of each,
parameters_json the writer of the last.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from rpcprof.status import Status


@dataclass
class Manifest:
    """What a run folder is: written when it starts, rewritten as it goes and when it ends."""
    mode: str
    status: Status
    command: list[str]
    started: str
    machine: dict
    tools: dict
    git: dict
    parameters: dict                       # every option as given; `servers` among them
    finished: str | None = None
    servers: dict = field(default_factory=dict)         # server -> status
    scenario: dict | None = None
    sampled_event: str | None = None
    process: dict | None = None            # attach: the process profiled
    cells: dict | None = None              # sweep: CELL -> {connections, streams, run}
    stopped_by: str | None = None          # --precision: what ended the rounds (precision or time budget)
    owner: dict | None = None              # the rpcprof process writing it: pid, start time, boot id
    killed: str | None = None              # why a later invocation marked it killed
    host: dict | None = None               # the host card (measure/hostcard.py): unit costs of the host it ran on

    def finish(self, status: Status) -> "Manifest":
        self.status = status
        self.finished = None if status == Status.RUNNING else dt.datetime.now().isoformat(timespec="seconds")
        return self


ROUND_KEY = "repeat"                    # a round's number, in a result and in a row of its rounds
ROUNDS_KEY = "repeats"                  # the rows of a result's rounds (analyze/rounds.py)
_ROUNDS_PARAMETER = "repeat"            # --rounds, among a manifest's parameters


def round_of(row: dict) -> int:
    """The round a server's result, or a row of its rounds, is of (1 where none is recorded)."""
    return int(row.get(ROUND_KEY) or 1)


def round_rows(result: dict) -> list[dict]:
    """The rows of a server's result's rounds, each with its round's figures; [] for a result of one measurement
    (its figures are the result's own)."""
    return result.get(ROUNDS_KEY) or []


def rounds_asked(parameters: dict) -> int:
    """--rounds, as a manifest's parameters record it."""
    return int(parameters.get(_ROUNDS_PARAMETER) or 1)


def parameters_json(options: dict) -> dict:
    """A job's options as its manifest's parameters: --rounds (the field `rounds`) under its key."""
    out = {k: v for k, v in options.items() if k != "rounds"}
    return {**out, _ROUNDS_PARAMETER: options["rounds"]} if "rounds" in options else out
