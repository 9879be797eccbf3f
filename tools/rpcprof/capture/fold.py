"""Fold: a recorded profile into folded stacks (`frame;frame;... WEIGHT` lines), rerunnable on saved files.

- perf.data: `perf script --no-inline | inferno-collapse-perf --kernel` (inferno weights each sample by
  its period); for a JIT runtime's data, `perf inject --jit` first (at capture time, while the jitdump
  is where the process wrote it).
- py-spy raw output is already folded (counts are samples): it is checked and copied.
- an off-CPU recording (sched:sched_switch, capture/offcpu.py) is folded by time off CPU (µs), with
  the wait counts beside it (OUT.count).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from rpcprof.measure.recorder import require
from rpcprof.errors import UserError
from rpcprof.folded import open_folded
from rpcprof.measure import children
from rpcprof.progress import log
from rpcprof.capture.jit_maps import SavedMaps
from rpcprof.capture.offcpu import collapse, fold_offcpu, perf_script
from rpcprof.rundir import PERF_DATA, CannotWrite, check_not_input, read_profile, write_bytes

_HEADER = re.compile(rb"^\S.*\s\d+\.\d+:\s+\d+\s+\S+:")
_COUNTED = re.compile(rb" [0-9]+\r?$")
_UNNAMED_FRAME = re.compile(r"\[perf-\d+\.map\]")
_JITTED = re.compile(rb"/(jitted-\d+-\d+\.so)\)")       # a frame's DSO in perf script: (/path/jitted-PID-N.so)
UNNAMED_JIT_WARN = 0.01     # a share of samples in JIT code no map names (a warm JVM's runs: under 1 %)


def jitdumps(pid: int) -> list[Path]:
    """The jitdump files (jit-PID.dump) the process has mapped: V8 maps its dump so perf records where it is."""
    maps = children.read_stripped(f"/proc/{pid}/maps") or ""     # a mapping's path is its sixth field
    return sorted({Path(p) for p in re.findall(r"^(?:\S+[ \t]+){5}(.*/jit-\d+\.dump)$", maps, re.M)})


def inject_jit(data: Path, dumps: list[Path]) -> dict:
    """perf inject --jit on data, which then holds the injected profile. Returns what happened:
    {'jitdumps': [...], 'jit_elf_files': ELF files beside the dumps} or {'jit_error': why} (data left as it was)."""
    if not dumps:
        return {"jit_error": "the process has no jitdump mapped (start node with --perf-prof "
                             "--perf-prof-unwinding-info), so JS frames stop the unwind"}
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    injected = data.with_name(data.stem + ".jit.data")
    # a build-id cache of its own, thrown away after: perf.data names the ELF files by path, and the
    # thousands of them would otherwise pile up in ~/.debug
    with tempfile.TemporaryDirectory(prefix="rpcprof-buildid-") as cache:
        proc = children.run([perf, "--buildid-dir", cache, "inject", "--jit", "-i", str(data), "-o", str(injected)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0 or not injected.exists():
        injected.unlink(missing_ok=True)
        return {"jit_error": f"perf inject --jit exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace').strip()[-200:]}"}
    os.replace(injected, data)
    elves = sum(len(jitted_beside(d)) for d in dumps)
    return {"jitdumps": [str(d) for d in dumps], "jit_elf_files": elves}


def jitted_beside(dump: Path) -> list[Path]:
    """The ELF files perf inject --jit wrote for a jitdump (jit-PID.dump: jitted-PID-N.so beside it)."""
    return list(dump.parent.glob(f"jitted-{dump.stem.split('-', 1)[1]}-*.so"))


def prune_jitted(dumps: list[Path], kept: set[str], within: Path) -> int:
    """Delete the ELF files perf inject --jit wrote beside dumps under `within` (a run's own server folder) that
    no sample runs in (kept: fold_perf's elves): report.py fold reads no other, and a Node round writes
    thousands. Beside a dump elsewhere (attach: the process's working directory, where an earlier recording
    may need them) none is deleted. Returns the ELF files left beside the dumps."""
    left = 0
    for dump in dumps:
        ours = dump.resolve().is_relative_to(within.resolve())
        for elf in jitted_beside(dump):
            if ours and elf.name not in kept:
                elf.unlink(missing_ok=True)
            else:
                left += 1
    return left


def fold_perf(data: Path, folded: Path, pid: int | None = None, name: str | None = None,
              elves: set[str] | None = None) -> dict:
    """perf script | inferno-collapse-perf --kernel -> folded. Returns {'samples': N, 'fold_seconds': s,
    'unnamed_jit_share': the share of the samples' weight in JIT code no perf map named (None when folded is
    no file to read back)}. pid: keep only that process's samples (a recording of whole CPUs holds every task
    that ran there). JIT frames are named from the process's map (/tmp/perf-PID.map), by perf, else from its
    copy saved beside data. Over 1 % left unnamed is a warning naming why (name: what it is said of). elves: the
    names of the jitted-PID-N.so files (perf inject --jit's) that the samples' frames run in are added to it."""
    saved = SavedMaps(data.parent) if any(data.parent.glob("perf-*.map")) else None
    t0 = time.monotonic()
    # perf script's text beside the output (it can take GBs), under names of its own; a device or FIFO's in /tmp
    beside = folded.parent if not folded.exists() or folded.is_file() else None
    try:
        scratch_dir = tempfile.TemporaryDirectory(dir=beside, prefix=f".{folded.name}-")
    except OSError as e:
        raise CannotWrite(folded, e) from None
    with scratch_dir as scratch:
        script, named = Path(scratch) / "script", Path(scratch) / "named"
        with open(script, "wb") as out:
            perf_script(data, *([f"--pid={pid}"] if pid is not None else []), stdout=out)
        samples = 0
        with open(script, "rb") as f:
            for line in f:
                if line[:1] not in (b"\t", b" ", b"\n"):
                    samples += _HEADER.match(line) is not None
                elif elves is not None and b"/jitted-" in line:
                    elves.update(m.decode() for m in _JITTED.findall(line))
        if saved:
            with open(script, "rb") as f, open(named, "wb") as out:
                out.writelines(saved.named(line) for line in f)
        collapse(named if saved else script, folded)
    unnamed, jit_map = unnamed_jit(open_folded(folded)) if samples and folded.is_file() else (None, None)
    if unnamed and unnamed > UNNAMED_JIT_WARN:
        there = jit_map.exists() or (data.parent / jit_map.name).exists()
        log(f"rpcprof: WARNING: {name or data}: {100 * unnamed:.1f} % of the samples hold JIT-compiled code that "
            f"{jit_map} does not name: " + (
                "code compiled and freed again within the window, by a JIT still warming up; a longer warm-up (-w) "
                "names it" if there else "no map was written (the runtime writes it: node --perf-basic-prof, a JVM "
                "`jcmd PID Compiler.perfmap`), nor saved beside the recording"))
    return {"samples": samples, "fold_seconds": time.monotonic() - t0, "unnamed_jit_share": unnamed}


def unnamed_jit(stacks: list[tuple[list[str], int]]) -> tuple[float, Path | None]:
    """(the share of the stacks' weight with a frame in JIT code no perf map named, `[perf-PID.map]` as
    inferno writes it; that map's path, or None)."""
    unnamed, jit_map = 0, None
    for frames, weight in stacks:
        if frame := next((f for f in frames if _UNNAMED_FRAME.fullmatch(f)), None):
            unnamed, jit_map = unnamed + weight, Path("/tmp") / frame[1:-1]
    return unnamed / sum(w for _, w in stacks), jit_map


def fold_pyspy(raw: Path, folded: Path) -> dict:
    """A py-spy raw file -> folded stacks. py-spy --nonblocking reads frame names from a running interpreter
    and now and then reads garbage, which may hold a newline: a record so broken over several lines is
    joined again (the newline kept as the two characters \\n), so one bad frame name costs its sample, not the
    profile. Returns {'samples': N, 'rejoined': records joined, 'dropped': a last record left without count}."""
    records, parts, rejoined, samples = [], [], 0, 0
    with open(raw, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            if not parts and not line.strip():
                continue
            parts.append(line)
            if counted := _COUNTED.search(line):
                rejoined += len(parts) > 1
                samples += int(counted.group())         # its count is samples (ASCII digits, as rpcprof.folded takes them)
                records.append(b"\\n".join(parts))
                parts = []
    write_bytes(folded, b"".join(r + b"\n" for r in records))
    return {"samples": samples, "rejoined": rejoined, "dropped": int(bool(parts))}


def records_switches(data: Path) -> bool:
    """True for an off-CPU recording (capture/offcpu.py): its event is sched:sched_switch (beside it perf
    lists the dummy event that carries --switch-events' records, `dummy:HG`)."""
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    proc = subprocess.run([perf, "evlist", "-i", str(data)], capture_output=True, text=True)
    events = [line.strip() for line in proc.stdout.splitlines() if line.strip() and not line.startswith("#")]
    return proc.returncode == 0 and [e for e in events if not e.startswith("dummy:")] == ["sched:sched_switch"]


def fold(source: Path, out: Path) -> dict:
    """Fold a saved profile (perf.data or py-spy raw) into out; returns {'samples': N, 'input': kind}."""
    source, out = Path(source), Path(out)
    if not source.is_file():
        raise UserError(f"{source}: no such file; give a perf.data or py-spy raw file (RUN/SERVER/perf.data)")
    check_not_input(out, source)
    with open(source, "rb") as f:
        perf_data = f.read(8) == b"PERFILE2"        # perf.data's magic
    if perf_data:
        if records_switches(source):
            return {**fold_offcpu(source, out), "samples": None, "input": "off-CPU perf.data"}
        # a recording of whole CPUs is folded for the process its profile record names (pid_filter)
        pid = read_profile(source.parent).get("pid_filter")
        return {**fold_perf(source, out, pid if isinstance(pid, int) and not isinstance(pid, bool) else None),
                "input": PERF_DATA}
    with tempfile.TemporaryDirectory(prefix="rpcprof-fold-") as scratch:
        joined = Path(scratch) / "py-spy.folded"
        done = fold_pyspy(source, joined)
        open_folded(joined)             # py-spy raw: UserError when it is neither folded stacks nor has samples
        write_bytes(out, joined.read_bytes())
    return {**done, "input": "py-spy raw"}
