"""What every job (run, attach, sweep) does the same way, written once: look after folders left behind,
create its folder, make its manifest (machine, tools, git, owner), keep the load off the server's CPUs,
plan a profile window's rate, and draw the pictures of a finished folder. Progress lines are
rpcprof/progress.py's.

What an rpcprof process killed without warning (SIGKILL, power loss) leaves behind is noticed by the next
invocation (tidy_leftovers): run folders whose manifest still says running while the process recorded as
their owner is gone (marked killed), the server CPUs a killed run's --idle poll left polling (set back,
from /run/rpcprof/idle-poll.json, whatever the runs folder), and the cgroups of servers it started
(removed). Its servers died with it (measure/children.py); a process of theirs still in such a cgroup is
stopped by PID first.
"""
from __future__ import annotations

import math
import os
import statistics
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from rpcprof.capture.profiler import ProfilePlan, max_sample_rate
from rpcprof.errors import UserError
from rpcprof.measure.children import identity, pid_running, still_running
from rpcprof.measure.idle import release_stale
from rpcprof.measure.procstat import git_commit, machine_specs, stale_cgroups, tool_versions
from rpcprof.paths import ROOT
from rpcprof.progress import log
from rpcprof.records import Manifest
from rpcprof.rundir import (TIMELINE_SVG, BREAKDOWN_LEVEL2_SVG, BREAKDOWN_SVG, FLAME_SVG, OFFCPU_SVG, OFFWAKE_SVG, REPORT_HTML,
                            RunFolder, mark_killed, now, offcpu_folded, offwake_folded, profile_folded, running_folders,
                            write_text)
from rpcprof.status import Status

MAX_FREQUENCY = 4999        # Hz: the highest rate a plan raises to (the kernel may allow less)
PYSPY_ON_CPU = 0.5          # py-spy --gil samples only while a thread holds the GIL: plan for half the CPU
LAST_ROUND_MARGIN = 1.05
YIELD_LOW_SDS = 2.0         # a round's plan holds at this many standard deviations below the rounds' mean yield


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def tidy_leftovers(runs_dir: Path) -> str | None:
    """Mark stale running folders under runs_dir killed, stop what is left in stale cgroups and remove
    them; returns the one line saying what was done (also printed), or None when nothing was left behind."""
    folders = []
    for path, manifest in running_folders(runs_dir):
        owner = manifest.get("owner")
        if not isinstance(owner, dict) or still_running(owner):
            continue            # a folder of an older rpcprof (no owner recorded), or one being written now
        mark_killed(path, manifest, f"marked on {now()}: its rpcprof process (pid {owner.get('pid')}) "
                                         "had ended without finishing it")
        folders.append(path.name)
    polling = release_stale()       # --idle poll's setting, if the rpcprof that set it is gone
    removed, busy, stopped = stale_cgroups(pid_running)
    if not (folders or removed or busy or polling):
        return None
    parts = []
    if folders:
        parts.append(f"{len(folders)} run folder(s) left running by an rpcprof that is gone marked killed "
                     f"({', '.join(folders[:3])}{', ...' if len(folders) > 3 else ''})")
    if polling:
        cpus = sorted(Path(p).parent.parent.name.removeprefix("cpu") for p in polling)
        parts.append(f"CPU {','.join(cpus)} left polling by a killed run's --idle poll set back")
    if stopped:
        parts.append(f"{len(stopped)} process(es) it started that outlived it stopped ({', '.join(stopped[:3])}"
                     f"{', ...' if len(stopped) > 3 else ''})")
    if removed:
        parts.append(f"{len(removed)} stale cgroup(s) removed ({', '.join(p.name for p in removed[:3])})")
    if busy:
        parts.append(f"{len(busy)} stale cgroup(s) could not be removed: see "
                     f"{', '.join(str(p / 'cgroup.procs') for p in busy[:2])}")
    line = "rpcprof: " + "; ".join(parts)
    log(line)
    return line


def open_folder(label: str, runs_dir: Path, base: Path | None = None) -> RunFolder:
    """A new folder for a job under runs_dir (or base, a sweep's folder for its cells, which has looked
    after leftovers already); folders and cgroups left by a job that died are marked and tidied first."""
    if base is None:
        tidy_leftovers(runs_dir)
    return RunFolder.create(label, base or runs_dir)


def new_manifest(mode: str, command: list[str], **fields) -> Manifest:
    """A job's manifest as it starts: the machine, the tools, the git commit and its owner (this process)."""
    return Manifest(mode=mode, status=Status.RUNNING, command=command, started=now(), machine=machine_specs(),
                    tools=tool_versions(), git=git_commit(), parameters={}, owner=identity(), **fields)


def load_cpus_besides(server_cpus: list[int] | set[int], given: list[int] | None, why: str,
                      server_option: str = "--server-cpus") -> list[int]:
    """The CPUs for the load generator: given, else every CPU the server may not run on; UserError (exit 2,
    before anything is measured) when given ones overlap the server's, or with why (how to fix it) when
    there is none. Every command that takes --load-cpus comes here: the one place the option is checked."""
    if given:
        shared = sorted(set(given) & set(server_cpus))
        if shared:
            raise UserError(f"--load-cpus {','.join(map(str, given))} overlaps {server_option} "
                            f"{','.join(map(str, sorted(server_cpus)))} (CPU {','.join(map(str, shared))}): the load "
                            "would steal the server's CPU; give --load-cpus other CPUs")
        return given
    others = [c for c in range(os.cpu_count() or 1) if c not in server_cpus]
    if not others:
        raise UserError(why)
    return others


def profile_plan(cpu_cores: float, profiler: str, frequency: int, duration: float, min_samples: int,
                 max_duration: float = 60.0) -> ProfilePlan:
    """The rate and duration of a profile window from the CPU the server used (ProfilePlan.for_load),
    for perf or py-spy, never above MAX_FREQUENCY or the kernel's limit."""
    cores = cpu_cores * (PYSPY_ON_CPU if profiler == "py-spy" else 1.0)
    return ProfilePlan.for_load(cores, frequency, duration, min_samples,
                                max_frequency=min(MAX_FREQUENCY, max_sample_rate()), max_duration=max_duration)


def round_sample_target(min_samples: int, rounds: int, earlier: list[tuple[int, int]]) -> int:
    """The samples to plan for in a server's next profile window, so that its rounds together reach
    min_samples: what is still missing, spread over the rounds left, over the yield a round may fall to.
    earlier: (samples taken, samples the plan expected) of its earlier rounds; a round's yield is their ratio.
    A server that runs in short bursts gives fewer samples than its unprofiled CPU time predicts, and not the
    same fraction each round: pajamax in 16 runs of the README's command gave 0.51-1.62 of its plans over their
    80 rounds, 0.93 on average, and planned on the rounds' total shortfall 5 of the 16 runs ended short of 5,000
    (4,722-4,976). So a round plans for a yield YIELD_LOW_SDS standard deviations below the earlier rounds'
    mean (after one round, its yield; before any, 1; never under 0.5 or over 1): replayed on those rounds,
    none of the 16 ends short (their median 5,360 samples, against 5,128). The last round plans
    LAST_ROUND_MARGIN more than it needs: a run that ended 7 short (4,993 of 5,000) was flagged TOO FEW SAMPLES."""
    left = max(1, rounds - len(earlier))
    need = max(0, min_samples - sum(s for s, _ in earlier))
    yields = [s / e for s, e in earlier if e]
    low = statistics.mean(yields) - YIELD_LOW_SDS * statistics.stdev(yields) if len(yields) > 1 else \
        yields[0] if yields else 1.0
    margin = LAST_ROUND_MARGIN if left == 1 else 1.0
    return math.ceil(need / left / min(1.0, max(0.5, low)) * margin)


def render_pictures(run_dir: Path, rules, servers: list[str], draw_them: bool = True) -> None:
    """flame.svg per profiled server and breakdown.svg for the run; a picture that cannot be drawn is
    a warning, never a lost run. Not draw_them (--no-pictures): one line saying how to draw them later."""
    if not draw_them:
        log(f"rpcprof: no pictures drawn (--no-pictures): report.py svg, chart and html draw them from "
            f"{shown(run_dir)}")
        return
    from rpcprof.report.chart import render_breakdown_chart, render_timeline_chart
    from rpcprof.report.flamegraph import render_offcpu_flamegraph, render_offwake_flamegraph, render_run_flamegraph
    from rpcprof.report.html import build_html

    def draw(render, folded_of, what: str) -> list[str]:
        """render(run_dir, name, rules) for each server with a non-empty folded file; the names drawn."""
        done = []
        for name in servers:
            folded = folded_of(run_dir, name)
            if folded.exists() and folded.stat().st_size:
                try:
                    render(run_dir, name, rules)
                    done.append(name)
                except (UserError, OSError) as e:
                    log(f"rpcprof: WARNING: {name}: no {what}: {e}")
        return done

    drawn = draw(render_run_flamegraph, profile_folded, "flame graph")
    waited = draw(render_offcpu_flamegraph, offcpu_folded, "off-CPU flame graph")
    woken = draw(render_offwake_flamegraph, offwake_folded, "flame graph of who woke its threads")
    if waited:
        log(f"rpcprof: off-CPU flame graphs (where threads waited): {', '.join(f'{n}/{OFFCPU_SVG}' for n in waited)}"
            + (f"; who woke them: {', '.join(f'{n}/{OFFWAKE_SVG}' for n in woken)}" if woken else ""))
    if drawn:
        try:
            render_breakdown_chart(run_dir, rules, run_dir / BREAKDOWN_SVG)
            render_breakdown_chart(run_dir, rules.using(level=2), run_dir / BREAKDOWN_LEVEL2_SVG)
        except (UserError, OSError, ValueError) as e:
            log(f"rpcprof: WARNING: no breakdown chart: {e}")
        log(f"rpcprof: flame graphs: {', '.join(f'{n}/{FLAME_SVG}' for n in drawn)}; per-request charts: "
            f"{BREAKDOWN_SVG}, {BREAKDOWN_LEVEL2_SVG}")
    try:
        if render_timeline_chart(run_dir, run_dir / TIMELINE_SVG):
            log(f"rpcprof: each measured window over time: {TIMELINE_SVG}")
    except (UserError, OSError, ValueError) as e:
        log(f"rpcprof: WARNING: no {TIMELINE_SVG}: {e}")
    try:
        write_text(run_dir / REPORT_HTML, build_html(run_dir, rules))
        log(f"rpcprof: {REPORT_HTML}: {shown(run_dir / REPORT_HTML)} (one page, opens offline)")
    except (UserError, OSError) as e:
        log(f"rpcprof: WARNING: no {REPORT_HTML}: {e}")


class Job:
    """What every job (Run, Attach, Sweep) keeps: its folder, None until it is made, and that folder's path."""
    folder: RunFolder | None = None

    @property
    def dir(self) -> Path | None:
        return self.folder.path if self.folder else None


@contextmanager
def lifecycle(write):
    """One job's status from its start to its end, written by write(status) on every exit path:
    `running` on entering; on leaving, `interrupted` for Ctrl-C, `failed` for any other exception or when
    the job said a measurement failed (failed = True on what it yields), else `complete` (status.STATUS_MEANING)."""
    life = SimpleNamespace(failed=False)
    write(Status.RUNNING)
    try:
        yield life
    except KeyboardInterrupt:
        write(Status.INTERRUPTED)
        raise
    except BaseException:
        write(Status.FAILED)
        raise
    write(Status.FAILED if life.failed else Status.COMPLETE)
