"""The typed records of a run folder, as rpcprof writes them: the manifest (Manifest) and a server's result
(ServerResult). rundir.py writes them to its JSON and reads them back; ServerResult.to_json and from_json are
the one writer and the one reader of a result's JSON.

A run's rounds are `rounds` in the code (--rounds); their JSON keys keep the name they had when rounds were
called repeats, so that every run folder reads alike: a round's number is `repeat` (ROUND_KEY) in a result
and in each of its rows, the rows of a result's rounds are `repeats` (ROUNDS_KEY), and --rounds is
`repeat` among the manifest's parameters. round_of, round_rows and rounds_asked are the one reader of each,
parameters_json the writer of the last.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from rpcprof.status import Status, read_statuses


# a CPU whose time the hypervisor gave another guest for 5 % of a window or more (its steal) flags the window
# BUSY-HOST, as a program outside the run at 5 % of a CPU does (measure/neighbours.py)
STEAL_SHARE = 0.05
# ... where the run kept the CPU from halting when idle. A CPU that halts (the load generator's; every CPU
# under --idle halt or attach: the record's `halting`) is also charged as steal the host's delay in waking
# it: on an otherwise idle guest of this machine kind a thread waking 900-3,500 times a second had up to 6 % of
# its CPU stolen, none with a SCHED_IDLE loop keeping the CPU from halting (bench/halt_steal); h2load's CPU
# beside tonic_mt, up to 8 % in rounds whose server's CPU, held, had at most 2 %. Such a CPU flags at 20 %.
HALT_STEAL_SHARE = 0.20


def stolen_cpus(record: dict) -> dict[str, float]:
    """{cpu: share} of the CPUs stolen STEAL_SHARE or more in a result's windows or a host card (its `steal`),
    HALT_STEAL_SHARE or more for a CPU it names among those that halted when idle (its `halting`)."""
    halting = {str(cpu) for cpu in record.get("halting") or []}
    return {cpu: share for cpu, share in (record.get("steal") or {}).items()
            if share >= (HALT_STEAL_SHARE if cpu in halting else STEAL_SHARE)}


def halting_cpus(server_cpus, load_cpus, idle: str | None) -> tuple[int, ...]:
    """The CPUs a run lets halt when idle: the load generator's, and the server's too under --idle halt (or no
    --idle: runs from before it halted)."""
    return tuple(sorted({*load_cpus, *(server_cpus if idle in ("halt", None) else ())}))


def with_halting(manifest: dict, metrics: dict) -> None:
    """A folder from before `halting` was recorded beside steal: the CPUs its run let halt, from its parameters
    (every CPU when it attached), put in each result and card that has a steal and no `halting`: the one reader
    of them."""
    p = manifest.get("parameters") or {}
    cpus = range((manifest.get("machine") or {}).get("cpus") or 0)
    halting = list(cpus) if manifest.get("mode") == "attach" else \
        list(halting_cpus(p.get("server_cpus") or [], p.get("load_cpus") or [], p.get("idle")))
    host = manifest.get("host") or {}
    for record in [*(m for m in metrics.values() if isinstance(m, dict)), host, *(host.get("cards") or [])]:
        if "steal" in record and "halting" not in record:
            record["halting"] = halting


def merge_busy(record: dict, seen: dict) -> None:
    """What was busy beside another window or card (seen: its neighbours and steal) taken into record: each pid
    once at the most CPU it used, each CPU's steal at its most, the CPUs that halted in any."""
    known = {n["pid"]: n for n in record.get("neighbours") or []}
    for n in seen.get("neighbours") or []:
        known[n["pid"]] = max(known.get(n["pid"], n), n, key=lambda x: x["cores"])
    record["neighbours"] = sorted(known.values(), key=lambda x: -x["cores"])
    steal, more = record.get("steal") or {}, seen.get("steal") or {}
    record["steal"] = {cpu: max(steal.get(cpu, 0.0), more.get(cpu, 0.0)) for cpu in sorted({*steal, *more})}
    if "halting" in record or "halting" in seen:        # a record from before it was kept stays without it
        record["halting"] = sorted({*(record.get("halting") or []), *(seen.get("halting") or [])})


def beside_busy(record: dict) -> bool:
    """A result or a host card measured beside busy programs (BUSY-HOST): its neighbours, or a CPU stolen."""
    return bool(record.get("neighbours") or stolen_cpus(record))


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
    """The rows of a server's result's rounds, each with its round's figures; [] for one measurement (own figures)."""
    return result.get(ROUNDS_KEY) or []


def rounds_asked(parameters: dict) -> int:
    """--rounds, as a manifest's parameters record it."""
    return int(parameters.get(_ROUNDS_PARAMETER) or 1)


def view_of(metrics: dict, name: str) -> str | None:
    """The profile an attach took first when name's is a second view of the same process (profile.sh attach's
    perf profile after py-spy's: one pid), else None: two views of one process have no ratio and no gap."""
    m = metrics.get(name) or {}
    if m.get("mode") != "attach":
        return None
    earlier = list(metrics)[:list(metrics).index(name)]
    return next((s for s in earlier if (metrics[s] or {}).get("pid") == m.get("pid")), None)


def kernel_blind(m: dict) -> str | None:
    """The profiler of a server's profile when it sees no kernel time (py-spy: its recv and send are empty,
    not measured), else None."""
    profiler = (m.get("profile") or {}).get("profiler")
    return profiler if profiler not in (None, "perf") else None


def parameters_json(options: dict) -> dict:
    """A job's options as its manifest's parameters: --rounds (the field `rounds`) under its key."""
    out = {k: v for k, v in options.items() if k != "rounds"}
    return {**out, _ROUNDS_PARAMETER: options["rounds"]} if "rounds" in options else out


@dataclass
class ServerResult:
    """One server's measurement: a round of a run (SERVER/result.json, SERVER/round-K/result.json) or an attached
    process's profile; in metrics.json, a server's result over its rounds (analyze/rounds.py). What rpcprof
    decides is typed: whose, how it ended and why, which round, when it started; what the windows measured is
    `figures`, under the keys they measured it by. Its JSON has the keys it always had."""
    server: str
    status: Status = Status.RUNNING
    round: int | None = None                # ROUND_KEY; None: an attach, or a server its run did not reach
    description: str | None = None          # the server's, from its server.yaml
    started: str | None = None              # when its measurement started
    error: str | None = None                # why it did not end ok
    figures: dict = field(default_factory=dict)

    def end(self, status: Status, error: str | None = None) -> "ServerResult":
        self.status, self.error = status, error
        return self

    def to_json(self) -> dict:
        """Its record as run folders hold it: the figures, and each typed field that is set under its key."""
        typed = {"server": self.server, "status": self.status, ROUND_KEY: self.round, "description": self.description,
                 "started": self.started, "error": self.error}
        return {**self.figures, **{k: v for k, v in typed.items() if v is not None}}

    @classmethod
    def from_json(cls, data: dict) -> "ServerResult":
        """A result as a run folder holds it (its status read in today's words, status.read_statuses)."""
        data = read_statuses(data, "server")
        typed = ("server", "status", ROUND_KEY, "description", "started", "error")
        return cls(data["server"], Status(data["status"]), data.get(ROUND_KEY), data.get("description"),
                   data.get("started"), data.get("error"), {k: v for k, v in data.items() if k not in typed})
