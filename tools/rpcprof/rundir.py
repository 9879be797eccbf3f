"""The run folder on disk: the one module that creates, writes and reads it.

    RUNS/YYYYmmdd-HHMMSS-LABEL/          a run (profile.sh run), an attach, or a sweep
      manifest.json                      Manifest: mode, status, command, machine, tools, git, parameters
      metrics.json                       {server: result} (for a sweep: none; its cells are run folders)
      SERVER/result.json                 one server's figures; SERVER/repeat-K/result.json for repeats
      SERVER/profile.json                the profile window's record
      SERVER/profile.folded[.gz]         folded stacks (.gz in saved copies)
      SWEEP/CELL-RUN/...                 a sweep's cells, each a run folder

A folder is never reused (a suffix -2, -3... when two start in the same second). Every file is written
under a temporary name and renamed into place, so a reader never sees half a file. Reading validates
types and names the file, the key and what was expected.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rpcprof import schema
from rpcprof.errors import UserError
from rpcprof.paths import RUNS_DIR

MODES = ("run", "attach", "sweep")
STATUSES = ("running", "complete", "failed", "incomplete", "interrupted")


@dataclass
class Manifest:
    """What a run folder is: written when it starts, rewritten as it goes and when it ends."""
    mode: str
    status: str
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

    def finish(self, status: str) -> "Manifest":
        self.status = status
        self.finished = None if status == "running" else dt.datetime.now().isoformat(timespec="seconds")
        return self


def now(precise: bool = False) -> str:
    return dt.datetime.now().isoformat(timespec="microseconds" if precise else "seconds")


# --- writing -------------------------------------------------------------------------------------

def write_text(path: Path, text: str) -> None:
    """Write whole or not at all: a temporary name in the same folder, then rename."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(path: Path, data: bytes) -> None:
    """write_text for bytes: whole or not at all."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def make_run_dir(label: str, base: Path = RUNS_DIR) -> Path:
    """A new folder base/YYYYmmdd-HHMMSS-label; a suffix -2, -3... if one exists (never reuse)."""
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the runs folder {base}: {e.strerror}; pass --runs-dir with a writable folder") \
            from None
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")[:80] or "run"
    for i in range(1, 1000):
        path = base / (f"{stamp}-{safe}" if i == 1 else f"{stamp}-{safe}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise UserError(f"could not create a run folder under {base}")


class RunFolder:
    """One run folder being written: its manifest, its metrics, and each server's files."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, label: str, base: Path = RUNS_DIR) -> "RunFolder":
        return cls(make_run_dir(label, base))

    def server_dir(self, name: str, repeat: int = 1) -> Path:
        out = self.path / name if repeat == 1 else self.path / name / f"repeat-{repeat}"
        out.mkdir(parents=True, exist_ok=False)
        return out

    def write(self, manifest: Manifest, metrics: dict | None = None) -> None:
        """The manifest and, for runs and attaches, metrics.json (every server's result)."""
        manifest.servers = {n: r.get("status") for n, r in (metrics or {}).items()} or manifest.servers
        write_json(self.path / "manifest.json", asdict(manifest))
        if metrics is not None:
            write_json(self.path / "metrics.json", metrics)

    @staticmethod
    def write_result(out: Path, result: dict) -> None:
        write_json(out / "result.json", result)

    @staticmethod
    def write_profile(out: Path, record: dict) -> None:
        write_json(out / "profile.json", record)

    def __str__(self) -> str:
        return str(self.path)


# --- reading -------------------------------------------------------------------------------------

def read_json(path: Path, what: str):
    """The JSON in path; UserError naming the file and what is wrong."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path.parent}: not {what} (no {path.name}); give a folder under flamegraphs/") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a folder where a file was expected") from None
    except NotADirectoryError:
        raise UserError(f"{path.parent}: a file, not {what}; give a folder under flamegraphs/") from None
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


def validate_manifest(path: Path, data) -> dict:
    """A manifest with the types schema.MANIFEST gives (a folder from before modes were recorded is a run)."""
    if isinstance(data, dict):
        data = {"mode": "run", **data}
    return schema.check(data, schema.MANIFEST, path)


def validate_metrics(path: Path, data) -> dict:
    return schema.check(data, schema.METRICS, path)


def load_manifest(run_dir: Path) -> dict:
    path = Path(run_dir) / "manifest.json"
    return validate_manifest(path, read_json(path, "a run folder"))


def load_run(run_dir: Path) -> tuple[dict, dict]:
    """(manifest, metrics) of a run or attach folder, validated; UserError if it is not one."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    if manifest["mode"] == "sweep":
        raise UserError(f"{run_dir}: a sweep folder, not a run: give one of its cell folders, or use "
                        "report.py sweep / results")
    path = run_dir / "metrics.json"
    return manifest, validate_metrics(path, read_json(path, "a run folder"))


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
    """A server's result.json, validated, or None where there is none (optional context)."""
    path = Path(server_dir) / "result.json"
    return schema.check(read_json(path, "a server folder"), schema.RESULT, path) if path.is_file() else None


def resolve(path: Path | str, runs_dir: Path | None = None) -> Path:
    """A run folder argument: the path as given, else the name under runs_dir."""
    path = Path(path)
    if not path.exists() and runs_dir is not None and (Path(runs_dir) / path).exists():
        return Path(runs_dir) / path
    return path


def profile_folded(run_dir: Path, server: str) -> Path:
    """A server's folded stacks in a run folder: profile.folded, or profile.folded.gz in a saved copy."""
    path = Path(run_dir) / server / "profile.folded"
    gz = path.with_name("profile.folded.gz")
    return gz if not path.exists() and gz.exists() else path


def run_of_folded(folded: Path) -> tuple[Path, str] | None:
    """(run folder, server) when folded is RUN/SERVER/<file> of a run folder with figures for SERVER."""
    folded = Path(folded)
    run_dir, server = folded.parent.parent, folded.parent.name
    if not (run_dir / "manifest.json").exists():
        return None
    try:
        _, metrics = load_run(run_dir)
    except UserError:
        return None
    return (run_dir, server) if isinstance(metrics.get(server), dict) else None
