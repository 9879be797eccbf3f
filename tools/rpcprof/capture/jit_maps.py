"""JIT perf maps (/tmp/perf-PID.map, perf's convention), which name the frames of JIT-compiled code: a JIT
runtime's map around a profile window (JitMaps), saved beside its recording, and a saved map naming the frames
perf script left unnamed once the process and its own map are gone (SavedMaps, used by capture/fold.py).

A JVM writes its map when asked (`jcmd PID Compiler.perfmap`, server.yaml's after_profile or attach's), and
holds only the code alive then: the map is asked for as the window begins, while it runs (over the attach
socket jcmd opened, while the JIT frees code) and as it ends, and the code freed in between is kept in the
end's map.
"""
from __future__ import annotations

import bisect
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from contextlib import nullcontext, suppress
from pathlib import Path

from rpcprof.folded import open_folded
from rpcprof.measure import children
from rpcprof.profiler_names import perf_map
from rpcprof.progress import log
from rpcprof.rundir import output_file

AFTER_TIMEOUT_S = 60.0
# a frame perf script left unnamed in a JIT map's range: its indent, address, the map's path and name
_UNNAMED_JIT = re.compile(rb"^(\s+)([0-9a-f]+) \[unknown\] \((/tmp/(perf-\d+\.map))\)$")
ATTACH_THREAD = "Attach_Listener"  # the JVM thread that writes the map when asked (perf's name, inferno's underscore)
MAP_REFRESH_S = 0.5               # a JVM asked for its perf map this often while a window runs (InWindowMaps)
JIT_MAP_KEEP_BYTES = 64 << 20     # a young JVM's or node's map here: under 1 MiB; node's (--perf-basic-prof) only grows


def map_spans(lines: list) -> list[tuple]:
    """(start, end, name, line) of each `START SIZE NAME` line of a perf map (hexadecimal addresses; lines of
    str or bytes), sorted."""
    spans = []
    for line in lines:
        parts = line.split(None, 2)
        with suppress(ValueError, IndexError):
            start = int(parts[0], 16)
            spans.append((start, start + int(parts[1], 16), parts[2] if len(parts) == 3 else parts[0][:0], line))
    return sorted(spans)


class SavedMaps:
    """The JIT perf maps saved beside a recording (save_jit_map): they name the JIT frames
    perf script leaves unnamed once the process's own map (/tmp/perf-PID.map) is gone, as perf names them."""

    def __init__(self, folder: Path):
        self.folder, self.maps = folder, {}

    def named(self, line: bytes) -> bytes:
        """A line of perf script's text, its JIT frame named if perf left it unnamed and a saved map names it."""
        if b"(/tmp/perf-" in line and (m := _UNNAMED_JIT.match(line)):
            if symbol := self.name(m.group(4), int(m.group(2), 16)):
                return b"%s%s %s (%s)\n" % (m.group(1), m.group(2), symbol, m.group(3))
        return line

    def name(self, file: bytes, address: int) -> bytes | None:
        """`NAME+0xOFFSET` of the address in the saved map of that name (perf-PID.map), or None."""
        if file not in self.maps:
            spans = []
            with suppress(OSError):
                spans = map_spans((self.folder / file.decode()).read_bytes().splitlines())
            self.maps[file] = ([a for a, *_ in spans], spans)
        starts, spans = self.maps[file]
        i = bisect.bisect_right(starts, address) - 1
        return b"%s+0x%x" % (spans[i][2], address - spans[i][0]) if i >= 0 and address < spans[i][1] else None


def run_after(name: str, argv: list[str], timeout: float = AFTER_TIMEOUT_S) -> dict:
    """The window's after-command (e.g. `jcmd PID Compiler.perfmap`: the JVM writes /tmp/perf-PID.map, which
    perf script reads to name JIT frames); its exit code and time are recorded. A failure is a warning: the
    profile is folded anyway, with the frames it would have named left as addresses."""
    t0 = time.monotonic()
    try:
        proc = children.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            timeout=timeout)
        code, tail = proc.returncode, " | ".join(proc.stdout.decode(errors="replace").strip().splitlines()[-2:])
    except OSError as e:
        code, tail = None, f"could not start {argv[0]}: {e.strerror}"
    except subprocess.TimeoutExpired:
        code, tail = None, f"still running after {timeout:g} s, stopped"
    record = {"argv": argv, "exit_code": code, "seconds": round(time.monotonic() - t0, 3)}
    if code != 0:
        record["error"] = tail[:300]
        log(f"rpcprof: WARNING: {name}: the after-profile command `{' '.join(argv)}` failed "
            f"({'exit ' + str(code) if code is not None else tail}): frames it should name stay unnamed"
            + (f": {tail[:200]}" if code is not None and tail else ""))
    return record


def save_jit_map(name: str, path: Path, out: Path) -> None:
    """A copy of the JIT's perf map, as the window ended, beside the recording (out/perf-PID.map), from which
    report.py fold names JIT frames once the process, and its map, are gone. No map, no copy; a map over
    JIT_MAP_KEEP_BYTES (a long-lived process's, where the runtime only appends) is left where it is, said."""
    with suppress(FileNotFoundError), path.open("rb") as src:
        if (size := os.fstat(src.fileno()).st_size) > JIT_MAP_KEEP_BYTES:
            log(f"rpcprof: NOTE: {name}: {path} holds {size / 2**20:.0f} MiB, not copied into the run folder: report.py "
                "fold names JIT frames from it only while it is there")
            return
        with output_file(out / path.name) as dst:
            shutil.copyfileobj(src, dst)


def freed_spans(spans: list[tuple], later: list[tuple]) -> list[tuple]:
    """Those of a perf map's spans (map_spans) that no span of a later map (sorted, disjoint) overlaps: code
    freed in between, which the later map does not name."""
    starts = [a for a, *_ in later]
    return [span for span in spans if not (i := bisect.bisect_left(starts, span[1])) or later[i - 1][1] <= span[0]]


def keep_freed_code(earlier: list[list[str]], path: Path) -> int:
    """Appends to the perf map at path, written when the window ended, the lines of the maps written before
    it, oldest first (as the window began, then while it ran), whose code no line of a later map overlaps:
    code the JIT freed meanwhile (replaced by a higher tier, or deoptimised), which the end's map no longer
    names. Returns how many it kept."""
    try:
        taken = map_spans(path.read_text(errors="replace").splitlines())
    except OSError:
        return 0
    kept = []
    for lines in reversed(earlier):
        freed = freed_spans(map_spans(lines), taken)
        kept += [line for *_, line in freed]
        taken = sorted(taken + freed)
    if kept:
        with path.open("a") as f:
            f.write("".join(f"{line}\n" for line in kept))
    return len(kept)


def jcmd_socket(argv: list[str] | None, pid: int) -> Path | None:
    """The attach socket through which the JVM takes an after-command `jcmd PID COMMAND` (HotSpot opens it
    when jcmd first attaches, as the window's opening command did), or None: no such command or socket."""
    if not argv or Path(argv[0]).name != "jcmd" or argv[1:2] != [str(pid)]:
        return None
    status = children.read_stripped(f"/proc/{pid}/status") or ""
    nspid = next((line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:")), str(pid))
    sock = Path(f"/proc/{pid}/root/tmp/.java_pid{nspid}")
    return sock if sock.is_socket() else None


def ask_jvm(sock: Path, command: str) -> bool:
    """Runs a jcmd command in the JVM over its attach socket as jcmd does (protocol 1: `jcmd`, the command
    line, two empty arguments), without a JVM of its own to start; True when the JVM answered 0."""
    with suppress(OSError), socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(5.0)
        conn.connect(str(sock))
        conn.sendall(b"1\0jcmd\0" + command.encode() + b"\0\0\0")
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
        return reply.startswith(b"0\n")
    return False


class InWindowMaps:
    """While a window runs, the JVM asked every MAP_REFRESH_S to write its perf map again (ask_jvm), each map's
    lines kept in maps: code the JIT compiles and frees again within the window is named from them
    (keep_freed_code). Each map costs the JVM a few ms of CPU, so it is asked again only while its JIT frees
    code: once a map shows nothing freed since the one before (first, the map written as the window began),
    the JIT has settled and the asking stops. late: from start() on (the window's start, after a driver's
    lead), not from the context's entry."""

    def __init__(self, sock: Path, command: str, path: Path, first: list[str], late: bool = False):
        self.maps: list[list[str]] = []
        self.late = late
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._ask, args=(sock, command, path, first), daemon=True)

    def start(self) -> None:
        if not self._thread.is_alive() and not self._done.is_set():
            self._thread.start()

    def __enter__(self) -> "InWindowMaps":
        if not self.late:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread.ident is not None:
            self._thread.join()

    def _ask(self, sock: Path, command: str, path: Path, first: list[str]) -> None:
        before = map_spans(first)
        while not self._done.wait(MAP_REFRESH_S) and ask_jvm(sock, command):
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                return
            self.maps.append(lines)
            now = map_spans(lines)
            if not freed_spans(before, now):
                return
            before = now


class JitMaps:
    """A JIT runtime's perf map around a profile window, made by an after-command (module doc; InWindowMaps,
    keep_freed_code) and saved beside the recording (save_jit_map), whoever wrote it (node --perf-basic-prof)."""

    def __init__(self, name: str, pid: int, after: list[str] | None, out: Path):
        self.name, self.pid, self.after, self.out = name, pid, after, out
        self.path, self.asked = perf_map(pid), None
        self.before = run_after(name, after) if after else None
        self.start_map = []
        if self.before and self.before["exit_code"] == 0:
            with suppress(OSError):
                self.start_map = self.path.read_text(errors="replace").splitlines()

    def during(self, late: bool = False):
        """A context for the window: the maps asked for while it runs (a JVM whose attach socket jcmd opened);
        late: from the window's start (start()) on."""
        sock = jcmd_socket(self.after, self.pid) if self.start_map else None
        self.asked = InWindowMaps(sock, " ".join(self.after[2:]), self.path, self.start_map, late) if sock else None
        return self.asked or nullcontext()

    def start(self) -> None:
        """The window starts: the maps asked for from now on, if late."""
        if self.asked is not None:
            self.asked.start()

    def end(self) -> dict | None:
        """The after-command's record once the profiler stopped (None without one); the map saved."""
        after = run_after(self.name, self.after) if self.after else None
        if after:
            earlier = [self.start_map] + (self.asked.maps if self.asked else [])
            kept = keep_freed_code(earlier, self.path) if self.start_map and after["exit_code"] == 0 else 0
            after.update(before_exit_code=self.before["exit_code"], before_seconds=self.before["seconds"],
                         maps_in_window=len(earlier) - 1, freed_lines_kept=kept)
        save_jit_map(self.name, self.path, self.out)
        return after

    def cost(self, folded: Path, record: dict) -> None:
        """What the maps asked for in the window cost: the share of the profile's samples in the thread that
        wrote them, in the record and said."""
        if not (self.asked and self.asked.maps):
            return
        stacks = open_folded(folded)
        share = sum(w for frames, w in stacks if frames[0] == ATTACH_THREAD) / sum(w for _, w in stacks)
        record["after_profile"]["attach_thread_share"] = share
        log(f"rpcprof: {self.name}: the JVM wrote its perf map {len(self.asked.maps)} more time(s) in the "
            f"window (again while its JIT freed code, to name that code): {100 * share:.1f} % of the profile's "
            f"samples (its thread {ATTACH_THREAD})")
