"""The measured comparison run: for each server, start it pinned, wait until it answers a real gRPC
call, warm up, measure a window with no profiler attached, count syscalls, profile a window, stop it.
Every run writes its own folder (rundir); every process started is owned by the run's session and
stopped by PID whatever happens.

What a run sets on the machine for as long as it measures, and what it measures of the host: the server
CPUs' idle (--idle poll, spin or halt, measure/idle.py) and the host card (measure/hostcard.py). Each is
said in one line and recorded; a setting that cannot be made falls back, says so and records what the run
did instead.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.intervals import PILOT_ROUNDS, log_ratios, rounds_needed
from rpcprof.analyze.rounds import aggregate_rounds
from rpcprof.capture.profiler import pmu_event
from rpcprof.errors import UserError
from rpcprof.jobs.base import Job, lifecycle, load_cpus_besides, new_manifest, open_folder, render_pictures, shown
from rpcprof.jobs.defaults import RUN
from rpcprof.jobs.server_round import ServerRound
from rpcprof.jobs.steps import ProfileSender
from rpcprof.measure import hostcard
from rpcprof.measure.idle import IDLE_MODES, IdlePoll, IdleSpin, NoPollingState, poll_time_us
from rpcprof.measure.load import LoadSettings
from rpcprof.measure.procstat import keep_off
from rpcprof.measure.scenario import get_scenario
from rpcprof.measure.servers import ServerSpec, load_server
from rpcprof.measure.session import Session
from rpcprof.paths import RUNS_DIR
from rpcprof.progress import log, progress_bar
from rpcprof.records import ServerResult, beside_busy, parameters_json
from rpcprof.report.summary import busy_host
from rpcprof.rundir import load_manifest
from rpcprof.status import Status


def idle_effect(mode: str, cpus: list[int], holder) -> Callable[[], None]:
    """What the idle setting did between now and the call of what this returns, measured and said: the time the
    server's CPUs spent polling, or the busy loop's CPU; a poll that took no time at all is named as having taken
    no effect."""
    polled = [poll_time_us(c) for c in cpus]
    spun = holder.cpu_seconds() if isinstance(holder, IdleSpin) else 0.0

    def say() -> None:
        if mode == "poll":
            after = map(poll_time_us, cpus)
            spent = sum((b - a) / 1e6 for a, b in zip(polled, after) if a is not None and b is not None)
            log(f"rpcprof: --idle poll: the server's CPUs polled {spent:.1f} s while idle during the rounds"
                if spent > 0 else "rpcprof: --idle poll: the server's CPUs spent no time polling during the rounds: "
                "they never idled, or the setting took no effect")
        elif mode == "spin":
            log(f"rpcprof: --idle spin: the busy loop ran {holder.cpu_seconds() - spun:.1f} s on the server's CPUs "
                "while the server idled during the rounds")
    return say


def card_of(source: Path, server_cpu: int, load_cpu: int, idle: str) -> dict:
    """The host card of an earlier run (--host-card RUN, its folder), to take as this run's; UserError in one line
    when it has none, or was measured on another boot, other CPUs or another --idle."""
    card = load_manifest(source).get("host") or {}
    wrong = ("it holds none" if not card or card.get("error") else
             "it was measured before this machine last booted" if card.get("boot_id") != hostcard.boot_id() else
             f"it was measured on CPUs {card.get('server_cpu')} and {card.get('load_cpu')} with --idle {card.get('idle')}, "
             f"this run's are {server_cpu} and {load_cpu} with --idle {idle}"
             if (card.get("server_cpu"), card.get("load_cpu"), card.get("idle")) != (server_cpu, load_cpu, idle) else None)
    if wrong:
        raise UserError(f"--host-card {source}: {wrong}; give a run of this boot with the same CPUs and --idle, "
                        "or leave --host-card out to measure the card")
    return {**card, "taken_from": str(source)}


def host_card(card: dict | None, server_cpu: int, load_cpu: int, idle: str) -> dict:
    """The host card: card when a sweep measured it already, else measured now; its line printed. A card
    that cannot be made is a warning and an {"error": ...} record, never a lost run."""
    if card is None:
        try:
            card = hostcard.measure(server_cpu, load_cpu, idle)
        except (hostcard.HostCardError, OSError) as e:
            log(f"rpcprof: WARNING: no host card: {e}")
            card = {"error": str(e)}
    log(f"rpcprof: {hostcard.card_line(card)}")
    if beside_busy(card) and not card.get("taken_from"):
        log(f"rpcprof: WARNING: other programs were busy while the host card was measured ({busy_host(card)})"
            ": its unit costs are not this host's alone; run again with the machine otherwise idle")
    return card


@dataclass
class RunOptions:
    """Every option of a run; the defaults are jobs/defaults.py's RUN. profile.sh's options are built from
    these fields by name (cli/profile.py): a new option is a field here, its default in RUN and a click option."""
    servers: list[str]
    connections: int = RUN["connections"]
    streams: int = RUN["streams"]
    duration: float = RUN["duration"]
    warmup: float = RUN["warmup"]
    scenario: str = RUN["scenario"]
    driver: str = RUN["driver"]
    server_cpus: list[int] = field(default_factory=lambda: list(RUN["server_cpus"]))
    load_cpus: list[int] | None = None
    port: int = RUN["port"]
    label: str = RUN["label"]
    params: dict[str, str] = field(default_factory=dict)
    ready_timeout: float = 60.0
    profile: bool = RUN["profile"]  # a window with the profiler attached
    call_graph: str | None = None   # None: each server's own (server.yaml call_graph, else dwarf)
    frequency: int = RUN["frequency"]
    profile_duration: float = RUN["profile_duration"]
    min_samples: int = RUN["min_samples"]
    app: str | None = None          # overrides the servers' app pattern
    ruler: str | None = None        # overrides the servers' ruler pattern (seed 001's check)
    syscalls: bool = RUN["syscalls"]    # count syscalls (perf stat on tracepoints): in the profile window, else alone
    syscall_duration: float = RUN["syscall_duration"]
    io_sizes: bool = RUN["io_sizes"]    # a window of its own recording every read/write's size (first round)
    off_cpu: bool | None = None     # a window recording where threads wait: None = when the server waited
    off_cpu_duration: float = RUN["off_cpu_duration"]
    rounds: int = RUN["rounds"]     # every server measured once per round, in turn (A B A B ...)
    precision: float | None = None  # keep adding rounds until every ratio's 95 % interval is within ±this
    max_time: float = RUN["max_time"]   # ... or until the next round would end after this many seconds
    idle: str = RUN["idle"]         # poll: the server's CPUs poll when idle instead of halting while the run measures
    runs_dir: Path = RUNS_DIR
    pictures: bool = RUN["pictures"]    # flame graphs, charts and report.html drawn at the end
    otlp_endpoint: str | None = None    # each round's profile sent there over OTLP as it is made
    otlp_timeout: float = RUN["otlp_timeout"]
    host_card: Path | None = None   # an earlier run of this boot whose host card this run takes instead of measuring
    keep_short: bool = False        # keep a window too short for CPU per request, flagged TOO-SHORT (a sweep's cells)


def check_options(opts: RunOptions) -> None:
    """UserError (exit 2) for options no run can take, before anything starts. The values of single options
    (--rounds, --precision, --warmup, --call-graph) are checked as profile.sh reads them (cli/profile.py)."""
    if opts.precision is not None and len(opts.servers) < 2:
        raise UserError("--precision needs two servers or more: it is the precision of their ratio")
    if opts.idle not in IDLE_MODES:
        raise UserError(f"--idle must be one of {', '.join(IDLE_MODES)} (got {opts.idle!r})")
    if len(set(opts.servers)) != len(opts.servers):
        dup = next(s for s in opts.servers if opts.servers.count(s) > 1)
        raise UserError(f"server {dup!r} is named twice: name each server once")
    if opts.otlp_endpoint and not opts.profile:
        raise UserError("--otlp-endpoint sends the profiles a run makes: not with --no-profile")


def hold_idle(opts: RunOptions, machine: Session):
    """--idle (poll by default) held on the server's CPUs, owned by machine: poll where cpuidle offers a polling
    state, else a SCHED_IDLE busy loop (spin); halt where neither can be set. opts.idle says the mode in force;
    what holds it is returned (None: halt)."""
    holders = {"poll": IdlePoll, "spin": IdleSpin}
    while opts.idle in holders:
        try:
            return machine.own(holders[opts.idle](opts.server_cpus))
        except NoPollingState as e:
            log(f"rpcprof: {e}; a SCHED_IDLE busy loop keeps them from halting instead (recorded as --idle spin)")
            opts.idle = "spin"
        except UserError as e:
            log(f"rpcprof: WARNING: {e}; this run's server CPUs halt when idle (recorded as --idle halt)")
            opts.idle = "halt"
    return None


def card_before_round(cards: list[dict], k: int, server_cpu: int, load_cpu: int, idle: str) -> dict | None:
    """Round k's host card, taken before its servers start, appended to cards (those the run measured, from its
    first); the run's card combining them returned (hostcard.combine). None where the run measured no card of
    its own (a sweep's cell, --host-card) or this one could not be made (said)."""
    if not cards:
        return None
    try:
        card = hostcard.measure(server_cpu, load_cpu, idle)
    except (hostcard.HostCardError, OSError) as e:
        log(f"rpcprof: WARNING: no host card before round {k}: {e}")
        return None
    if beside_busy(card):
        log(f"rpcprof: WARNING: other programs were busy while round {k}'s host card was measured "
            f"({busy_host(card)}): its unit costs are not this host's alone")
    cards.append({**card, "round": k})
    return hostcard.combine(cards)


class Run(Job):
    """One invocation of `profile.sh run` (or one cell of a sweep): a folder, a manifest, a result per server."""

    def __init__(self, opts: RunOptions, command: list[str]):
        self.opts = opts
        self.scenario = get_scenario(opts.scenario)
        self.load_cpus = load_cpus_besides(opts.server_cpus, opts.load_cpus, "no CPU left for the load generator: "
                                           "give --server-cpus fewer CPUs or set --load-cpus")
        self.settings = LoadSettings(opts.connections, opts.streams, opts.duration, self.load_cpus, opts.driver)
        self.settings.validate()
        check_options(opts)
        self.sender = ProfileSender(opts.otlp_endpoint, opts.otlp_timeout)
        self.specs = [load_server(name) for name in opts.servers]
        for key in opts.params:
            if not any(key in spec.params for spec in self.specs):
                raise UserError(f"--param {key}: none of {', '.join(opts.servers)} has a parameter {key!r}")
        self.command = command
        self.results: dict[str, ServerResult] = {}
        self.sampled: dict[str, list[tuple[int, int]]] = {}      # per server: (samples, planned) of each profile
        self.stopped_by: str | None = None
        self.rules = load_rules() if opts.profile else None
        if self.rules and opts.app:
            self.rules.with_app(opts.app)        # validates the regex before anything starts
        if opts.ruler:
            UserRegex(opts.ruler, "--ruler")
        self.event = pmu_event() if opts.profile else None
        self.exiting = Session()        # counters still exiting after their window: stopped before the next one
        self.server_round = ServerRound(self)
        self.host: dict | None = None   # the host card; a sweep measures it once for all its cells
        self.cards: list[dict] = []     # the cards this run measured, one before each round (card_before_round)
        self.idle_holder = None         # what keeps the server's CPUs from halting (--idle poll or spin)

    def write(self, status: Status) -> None:
        self.manifest.parameters = {**parameters_json(asdict(self.opts)), "load_cpus": self.load_cpus}
        self.manifest.stopped_by = self.stopped_by
        self.folder.write(self.manifest.finish(status), self.results)

    def execute(self, base: Path | None = None) -> Path:
        with Session() as machine:      # --idle poll's setting, held for the whole run, given back on any exit
            self.idle_holder = hold_idle(self.opts, machine)
            if self.opts.host_card:     # an earlier run's, taken before any folder is made: checked against the idle in force
                self.host = card_of(self.opts.host_card, self.opts.server_cpus[0], self.load_cpus[0], self.opts.idle)
            return self._execute(base)

    def _execute(self, base: Path | None) -> Path:
        keep_off(self.load_cpus)    # rpcprof and its instruments stay off the server's CPUs
        self.folder = open_folder(self.opts.label or "-".join(self.opts.servers), self.opts.runs_dir, base)
        self.manifest = new_manifest("run", self.command, sampled_event=self.event,
                                     scenario={"name": self.scenario.name, "method": self.scenario.method})
        try:
            with self.exiting, lifecycle(self.write) as life:
                log(f"rpcprof: run folder {shown(self.dir)}")
                own = self.host is None         # measured here: then again before each round after the first
                self.host = self.manifest.host = host_card(self.host, self.opts.server_cpus[0], self.load_cpus[0],
                                                           self.opts.idle)
                self.cards = [{**self.host, "round": 1}] if own and not self.host.get("error") else []
                log(f"rpcprof: {len(self.specs)} server(s) x ({self.opts.warmup:g} s warm-up + {self.opts.duration:g} "
                    f"s measured), {self.opts.driver} C={self.opts.connections} S={self.opts.streams}, server CPU "
                    f"{self.opts.server_cpus}, load CPU {self.load_cpus}. Ctrl-C stops.")
                say_idle_effect = idle_effect(self.opts.idle, self.opts.server_cpus, self.idle_holder)
                try:
                    self.rounds()
                except KeyboardInterrupt:
                    for spec in self.specs:
                        self.results.setdefault(spec.name, ServerResult(spec.name, Status.NOT_RUN))
                    raise
                say_idle_effect()
                if len(self.cards) > 1:
                    log(f"rpcprof: {hostcard.card_line(self.host)}")
                life.failed = any(r.status != Status.OK for r in self.results.values())
        except KeyboardInterrupt:
            self.pictures()             # what was captured, drawn; then the interruption goes on
            raise
        self.pictures()
        return self.dir

    def pictures(self) -> None:
        if self.opts.profile or any(r.figures.get("offcpu") for r in self.results.values()):
            render_pictures(self.dir, self.rules or load_rules(), [s.name for s in self.specs], self.opts.pictures)

    def rounds(self) -> None:
        """Rounds of one measurement per server, in turn (A B A B ...), each server restarted: --rounds
        rounds; or with --precision, Stein's two stages (analyze/intervals.py): a pilot of
        max(--rounds, 3) rounds sets how many rounds every ratio's interval needs to be within the target,
        then those are measured, unless the next round would end after --max-time. A server that fails is
        left out of the rounds after."""
        opts, t0 = self.opts, time.monotonic()
        measured: dict[str, list[ServerResult]] = {spec.name: [] for spec in self.specs}     # each server's rounds so far
        pilot = max(opts.rounds, PILOT_ROUNDS)
        wanted = opts.rounds if opts.precision is None else pilot
        with progress_bar(wanted * len(self.specs), "measurements") as bar:
            k = 0
            while k < wanted:
                k += 1
                started = time.monotonic()
                if k > 1 and (card := card_before_round(self.cards, k, opts.server_cpus[0], self.load_cpus[0], opts.idle)):
                    self.host = self.manifest.host = card
                for spec in self.specs:
                    done = measured[spec.name]
                    if done and done[-1].status != Status.OK:
                        continue
                    done.append(self.measure(spec, k))
                    self.results[spec.name] = aggregate_rounds(done)
                    self.write(Status.RUNNING)
                    if done[-1].status == Status.OK:
                        self.sender.send(self.dir, spec.name, self.rules, done[-1].figures.get("app"), k)
                    bar.update(1)
                round_s = time.monotonic() - started
                if opts.precision is None:
                    continue
                if k == pilot:
                    logs = self.pilot_logs()
                    if not logs:
                        self.stopped_by = f"no ratio to make precise after the {pilot}-round pilot"
                        break
                    wanted = rounds_needed(logs, opts.precision)
                    bar.total = wanted * len(self.specs)
                    bar.refresh()
                    log(f"rpcprof: pilot of {pilot} rounds: {wanted} rounds put every ratio within "
                         f"±{100 * opts.precision:g} % (two-stage rule)")
                if k < wanted and time.monotonic() - t0 + round_s > opts.max_time:
                    self.stopped_by = (f"time budget: another round would pass --max-time {opts.max_time:g} s; "
                                       f"{k} of the {wanted} rounds the target needs were measured")
                    break
            else:
                if opts.precision is not None:
                    self.stopped_by = (f"two-stage rule: {k} rounds after a {pilot}-round pilot, for every ratio "
                                       f"within ±{100 * opts.precision:g} %")
            if self.stopped_by:
                log(f"rpcprof: {self.stopped_by}")

    def pilot_logs(self) -> list[list[float]]:
        """The pilot's log ratios of each later server over the first (req/s per CPU)."""
        names = [s.name for s in self.specs if s.name in self.results and self.results[s.name].status == Status.OK]
        if len(names) < 2:
            return []
        base = self.results[names[0]].to_json()
        return [x for x in (log_ratios(base, self.results[n].to_json()) for n in names[1:]) if len(x) >= 2]

    def measure(self, spec: ServerSpec, k: int = 1) -> ServerResult:
        """One measurement of spec in round k (jobs/server_round.py)."""
        return self.server_round.measure(spec, k)
