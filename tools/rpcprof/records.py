"""The typed records of a run folder, as rpcprof writes them: the manifest (Manifest). rundir.py writes them to
its JSON and reads them back.
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
