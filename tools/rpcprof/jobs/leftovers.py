"""What an rpcprof process killed without warning (SIGKILL, power loss) leaves behind, noticed by the
next invocation: run folders whose manifest still says running while the process recorded as their
owner is gone (marked killed), the server CPUs a killed run's --idle poll left polling (set back,
from /run/rpcprof/idle-poll.json, whatever the runs folder), and the cgroups of servers it started
(removed). Its servers died with it (measure/children.py); a process of theirs still in such a cgroup is
stopped by PID first.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.measure.children import pid_running, still_running
from rpcprof.measure.idle import release_stale
from rpcprof.measure.procstat import stale_cgroups
from rpcprof.progress import log
from rpcprof.rundir import mark_killed, now, running_folders


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
