"""The run folder on disk: the one module that creates, writes and reads it.

    RUNS/YYYYmmdd-HHMMSS-LABEL/          a run (profile.sh run), an attach, or a sweep
      manifest.json                      Manifest: mode, status, command, machine, tools, git, parameters
      metrics.json                       {server: result} (for a sweep: none; its cells are run folders)
      SERVER/result.json                 one server's figures; SERVER/round-K/result.json for round K
      SERVER/profile.json                the profile window's record
      SERVER/profile.folded[.gz]         folded stacks (.gz in saved copies)
      SWEEP/CELL-RUN/...                 a sweep's cells, each a run folder

A folder is never reused (a suffix -2, -3... when two start in the same second). Every file is written under a
temporary name and renamed into place, so a reader never sees half a file. Reading validates types and names
the file, the key and what was expected.
"""
from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

from rpcprof import schema
from rpcprof.errors import EXIT_FAILED, EXIT_USAGE, UserError
from rpcprof.paths import RUNS_DIR
from rpcprof.records import Manifest, ServerResult, with_halting
from rpcprof.status import Status, read_statuses

RUNS = "--runs-dir"                         # what to change when a run folder cannot be written
RESULT_FILE = "result.json"                 # a server's figures in its folder (also named where they come from)


def now(precise: bool = False) -> str:
    return dt.datetime.now().isoformat(timespec="microseconds" if precise else "seconds")


# --- writing -------------------------------------------------------------------------------------

class CannotWrite(UserError):
    """A file that could not be written: one line naming it, why, and what to do."""

    def __init__(self, path: Path, error: OSError, where: str = "-o"):
        full = error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
        fix = {errno.ENOSPC: f"free space or choose another {where}", errno.EDQUOT: f"free space or choose another {where}",
               errno.EACCES: f"choose a writable place for {where}", errno.EROFS: f"choose a writable place for {where}",
               errno.ENOENT: f"its folder does not exist; choose another {where}",
               errno.EISDIR: f"it is a folder; give {where} a file name"}.get(error.errno, f"choose another {where}")
        super().__init__(f"cannot write {path}: {error.strerror or error}; {fix}", exit_code=EXIT_FAILED if full else EXIT_USAGE)
        self.path, self.errno = path, error.errno


def write_bytes(path: Path, data: bytes, where: str = "-o") -> None:
    """Write whole or not at all: a temporary name in the same folder, then renamed into place (a
    device or pipe such as /dev/stdout is written in place, never replaced). CannotWrite if it fails."""
    with output_file(path, where) as f:
        f.write(data)


def write_text(path: Path, text: str, where: str = "-o") -> None:
    write_bytes(path, text.encode("utf-8"), where)


@contextmanager
def output_file(path: Path, where: str = "-o"):
    """A file object for path whose content appears there only when the block ends without error
    (temporary name, then renamed); every rpcprof output goes through it. CannotWrite if it fails."""
    path = Path(path)
    in_place = path.exists() and not path.is_file() and not path.is_dir()     # /dev/stdout, /dev/full, a FIFO
    tmp = path if in_place else path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        try:
            with open(tmp, "wb") as f:
                yield f
            if not in_place:
                os.replace(tmp, path)
        finally:
            if not in_place:
                tmp.unlink(missing_ok=True)
    except OSError as e:
        raise CannotWrite(path, e, where) from None


def overwrite_in_place(path: Path, data) -> bool:
    """Rewrite an existing JSON file in place (not whole-or-nothing: the last resort on a full disk); True if done.
    The data goes in the bytes the file holds: indented as json_text writes it when that fits, else on one line
    (a write past the file's end needs room the disk may not have); a write that fails puts the old bytes back."""
    try:
        with open(path, "r+b") as f:
            old = f.read()
            new = json_text(data).encode("utf-8")
            if len(new) > len(old):
                new = (json.dumps(data, sort_keys=True, separators=(",", ":"), default=str) + "\n").encode("utf-8")
            try:
                f.seek(0)
                f.write(new)
                f.truncate()
                f.flush()
            except OSError:
                f.seek(0)
                f.write(old)
                f.truncate()
                raise
        return True
    except OSError:
        return False


def json_text(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def write_json(path: Path, data, where: str = "-o") -> None:
    write_text(path, json_text(data), where)


def check_not_input(out: Path, *inputs: Path) -> None:
    """UserError when out is one of the files the command reads: writing it would destroy its input."""
    for source in inputs:
        if Path(source).exists() and Path(out).exists() and Path(out).resolve() == Path(source).resolve():
            raise UserError(f"-o {out}: the output would replace its own input ({source}); choose another -o")


def inputs_of(run_dir: Path) -> list[Path]:
    """The files of a run folder (or a sweep's cells) that reports read."""
    run_dir = Path(run_dir)
    names = ("manifest.json", "metrics.json", "result.json", "profile.json", "profile.folded", "profile.folded.gz")
    return [p for name in names for p in (run_dir / name, *run_dir.glob(f"*/{name}"), *run_dir.glob(f"*/*/{name}"))
            if p.is_file()]


def running_folders(base: Path) -> list[tuple[Path, dict]]:
    """(folder, manifest) of every run, attach or sweep folder under base (and every sweep's cells) whose
    manifest says running; unreadable manifests are left out."""
    found = []
    for path in sorted(Path(base).glob("*/manifest.json")) + sorted(Path(base).glob("*/*/manifest.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("status") == Status.RUNNING:
            found.append((path.parent, data))
    return found


def mark_killed(run_dir: Path, manifest: dict, why: str) -> None:
    """Rewrite a folder's manifest as killed (its owner died without saying so), saying why."""
    write_json(Path(run_dir) / "manifest.json", {**manifest, "status": Status.KILLED, "killed": why}, RUNS)


def server_path(run_dir: Path, name: str, k: int = 1) -> Path:
    """RUN/SERVER for a server's first round, RUN/SERVER/round-K for round K (repeat-K in older runs)."""
    old = Path(run_dir) / name / f"repeat-{k}"
    return Path(run_dir) / name if k == 1 else old if old.is_dir() else Path(run_dir) / name / f"round-{k}"


@dataclass(eq=False)                # compared and hashed by identity
class RunFolder:
    """One run folder being written: its manifest, its metrics, and each server's files."""
    path: Path

    @classmethod
    def create(cls, label: str, base: Path = RUNS_DIR) -> "RunFolder":
        """A new folder base/YYYYmmdd-HHMMSS-label; a suffix -2, -3... if one exists (never reuse)."""
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create the runs folder {base}: {e.strerror}; pass --runs-dir with a writable "
                            "folder") from None
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")[:80] or "run"
        for i in range(1, 1000):
            path = base / (f"{stamp}-{safe}" if i == 1 else f"{stamp}-{safe}-{i}")
            with suppress(FileExistsError):
                path.mkdir()
                return cls(path)
        raise UserError(f"could not create a run folder under {base}")

    def server_dir(self, name: str, k: int = 1) -> Path:
        out = server_path(self.path, name, k)
        out.mkdir(parents=True, exist_ok=False)
        return out

    def write(self, manifest: Manifest, results: dict[str, ServerResult] | None = None) -> None:
        """The manifest and, for runs and attaches, metrics.json (every server's result)."""
        manifest.servers = {n: r.status for n, r in (results or {}).items()} or manifest.servers
        path, text = self.path / "manifest.json", json_text(asdict(manifest))
        try:
            write_text(path, text, RUNS)
        except CannotWrite as e:
            # a full disk has no room for a second copy: the manifest is rewritten in the space it holds,
            # so the folder still says how it ended
            if e.errno not in (errno.ENOSPC, errno.EDQUOT) or not overwrite_in_place(path, asdict(manifest)):
                raise
        if results is not None:
            write_json(self.path / "metrics.json", {n: r.to_json() for n, r in results.items()}, RUNS)

    @staticmethod
    def write_result(out: Path, result: ServerResult) -> None:
        write_json(out / RESULT_FILE, result.to_json(), RUNS)

    @staticmethod
    def write_profile(out: Path, record: dict) -> None:
        write_json(out / "profile.json", record, RUNS)


# --- reading -------------------------------------------------------------------------------------

# the runs folder is --runs-dir's, whatever it is (flamegraphs/ by default)
GIVE_A_FOLDER = "give a folder profile.sh wrote: its path, or its name under --runs-dir"


def read_json(path: Path, what: str):
    """The JSON in path; UserError naming the file and what is wrong."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path.parent}: not {what} (no {path.name}); {GIVE_A_FOLDER}") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a folder where a file was expected") from None
    except NotADirectoryError:
        raise UserError(f"{path.parent}: a file, not {what}; {GIVE_A_FOLDER}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}): "
                        "the file is damaged; re-run or fix the file") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}): the file is damaged") from None
    except (ValueError, RecursionError) as e:      # a number of over 4,300 digits; nesting too deep
        raise UserError(f"{path}: not JSON rpcprof can read ({type(e).__name__}: {str(e)[:80]}): "
                        "the file is damaged") from None
    except OSError as e:
        raise UserError(f"{path}: unreadable: {e.strerror}") from None


def load_manifest(run_dir: Path) -> dict:
    """A folder's manifest with the types schema.MANIFEST gives (a folder from before modes were recorded is a run)."""
    path = Path(run_dir) / "manifest.json"
    data = read_json(path, "a run folder")
    if isinstance(data, dict):
        data = {"mode": "run", **data}
    return schema.check(read_statuses(data, "job"), schema.MANIFEST, path)


def load_run(run_dir: Path) -> tuple[dict, dict]:
    """(manifest, metrics) of a run or attach folder, validated; UserError if it is not one."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    if manifest["mode"] == "sweep":
        raise UserError(f"{run_dir}: a sweep folder, not a run: give one of its cell folders, or use "
                        "report.py sweep / results")
    path = run_dir / "metrics.json"
    metrics = read_json(path, "a run folder")
    if isinstance(metrics, dict):
        metrics = {name: read_statuses(result, "server") for name, result in metrics.items()}
    metrics = schema.check(metrics, schema.METRICS, path)
    with_halting(manifest, metrics)
    return manifest, metrics


def load_sweep(sweep_dir: Path) -> tuple[dict, dict[str, tuple[dict, dict]]]:
    """(manifest, {cell: (cell manifest, cell metrics)}) of a sweep folder, validated."""
    sweep_dir = Path(sweep_dir)
    manifest = load_manifest(sweep_dir)
    if manifest["mode"] != "sweep":
        raise UserError(f"{sweep_dir}: a {manifest['mode']} folder, not a sweep: make one with ./profile.sh sweep")
    return manifest, {key: load_run(sweep_dir / cell["run"]) for key, cell in manifest["cells"].items()}


def read_profile(server_dir: Path) -> dict:
    """A server's profile.json, validated, or {} where there is none."""
    path = Path(server_dir) / "profile.json"
    return schema.check(read_json(path, "a server folder"), schema.PROFILE, path) if path.is_file() else {}


def read_result(server_dir: Path) -> dict | None:
    """A server's result.json, validated, as the reports read metrics.json (a dict, its status in today's words),
    or None where there is none (optional context); read_server_result gives it typed."""
    path = Path(server_dir) / RESULT_FILE
    return schema.check(read_statuses(read_json(path, "a server folder"), "server"), schema.RESULT, path) \
        if path.is_file() else None


def read_server_result(server_dir: Path) -> ServerResult | None:
    """A server's result.json as a ServerResult (its server and status required), or None where there is none."""
    data = read_result(server_dir)
    path = Path(server_dir) / RESULT_FILE
    return None if data is None else ServerResult.from_json(schema.check(data, schema.SERVER_RESULT, path))


def resolve(path: Path | str, runs_dir: Path | None = None) -> Path:
    """A run folder argument: the path as given, else the name under runs_dir."""
    path = Path(path)
    if not path.exists() and runs_dir is not None and (Path(runs_dir) / path).exists():
        return Path(runs_dir) / path
    return path


def count_path(folded: Path) -> Path:
    """Where an off-CPU profile's wait counts are kept, beside its folded file (weighted by time)."""
    return folded.with_name(folded.name + ".count")


def saved_copy(path: Path) -> Path:
    """path, or path.gz when only that exists (saved copies of run folders keep their stacks gzip'd)."""
    path = Path(path)
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.exists() else path


# the files a server's folder holds besides the JSON records
PROFILE_FOLDED = "profile.folded"       # the on-CPU profile's folded stacks
PERF_DATA = "perf.data"                 # perf record's recording of the profile window
PYSPY_RAW = "py-spy.raw"                # py-spy's recording of the profile window
OFFCPU_DATA = "offcpu.data"             # the off-CPU window's recording (every context switch)
OFFCPU_FOLDED = "offcpu.folded"         # ... folded by time off CPU
OFFWAKE_DATA = "offwake.data"           # the off-CPU window's wake-ups of the server's threads, with the waker's stack
OFFWAKE_FOLDED = "offwake.folded"       # ... paired with the waits they ended: waker;--;sleeper, by time off CPU
SOCKETS_LOG = "sockets.log"             # the off-CPU window's samples of the connections' TCP state
FLAME_SVG = "flame.svg"                 # the profile's annotated flame graph
OFFCPU_SVG = "offcpu.svg"               # the off-CPU window's flame graph, by wait reason
OFFWAKE_SVG = "offwake.svg"             # ... who woke the threads: waker below, sleeper above, by wait reason
BUILD_LOG = "build.log"                 # the server's build
SERVER_LOG = "server.log"               # the server's own output
LOAD_LOG = "load.log"                   # the load driver's output in the measured window
WARMUP_LOG = "warmup.log"               # ... in the warm-up
LEAD_ENDED_LOG = "load-lead-ended.log"  # ... in a measured window whose connections ended in its lead
PROFILE_LOAD_LOG = "profile-load.log"   # ... in the profile window
OFFCPU_LOAD_LOG = "offcpu-load.log"     # ... in the off-CPU window
PERF_RECORD_LOG = "perf-record.log"     # perf record's messages (profile window)
PERF_OFFCPU_LOG = "perf-offcpu.log"     # perf record's messages (off-CPU window)
PERF_OFFWAKE_LOG = "perf-offwake.log"   # ... (the wake-ups' recording in the off-CPU window)
PYSPY_LOG = "py-spy.log"                # py-spy's messages (profile window)
# the files of a run folder
TIMELINE_SVG = "timeline.svg"           # each round's measured window over time, a line per server
BREAKDOWN_SVG = "breakdown.svg"         # CPU µs per request of each server, by category
BREAKDOWN_LEVEL2_SVG = "breakdown-level2.svg"   # ... by sub-category
REPORT_HTML = "report.html"             # the run on one page


# A counted window's files are named from its stem: the syscall-counting window's and the profile window's
SYSCALLS_WINDOW, PROFILE_SYSCALLS = "syscalls", "profile-syscalls"


def window_file(stem: str, kind: str) -> str:
    """A counted window's file: perf stat's counts, a recorder's messages, perf record's recording, the load
    driver's output, or (io) the stem of its recording of read/write sizes."""
    return stem + {"counts": ".csv", "messages": ".log", "recording": ".data", "load": "-load.log", "io": "-io"}[kind]


def beside(path: Path, kind: str) -> Path:
    """A file beside another: perf script's text of a recording (text); the load driver's JSON report (json,
    ghz) or per-request latencies (latencies, h2load --log-file) beside its output."""
    return path.with_suffix({"text": ".txt", "json": ".json", "latencies": ".latency.tsv"}[kind])


def offcpu_folded(run_dir: Path, server: str) -> Path:
    """A server's folded off-CPU stacks in a run folder (offcpu.folded, or .gz in a saved copy)."""
    return saved_copy(Path(run_dir) / server / OFFCPU_FOLDED)


def offwake_folded(run_dir: Path, server: str) -> Path:
    """A server's folded wake-ups (waker;--;sleeper) in a run folder (offwake.folded, or .gz in a saved copy)."""
    return saved_copy(Path(run_dir) / server / OFFWAKE_FOLDED)


def profile_folded(run_dir: Path, server: str, k: int = 1) -> Path:
    """A server's folded stacks in a run folder (k: round k's): profile.folded, or .gz in a saved copy."""
    return saved_copy(server_path(run_dir, server, k) / PROFILE_FOLDED)


def run_of_folded(folded: Path) -> tuple[Path, str] | None:
    """(run folder, server) when folded is RUN/SERVER/<file> of a run folder with figures for SERVER."""
    folded = Path(folded)
    run_dir, server = folded.parent.parent, folded.parent.name
    try:
        _, metrics = load_run(run_dir)
    except UserError:
        return None
    return (run_dir, server) if isinstance(metrics.get(server), dict) else None
