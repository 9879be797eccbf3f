"""The servers under test: one folder each under servers/, described by its server.yaml.

See servers/README.md for the contract.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rpcprof import schema
from rpcprof.analyze.patterns import UserRegex
from rpcprof.errors import UserError
from rpcprof.paths import ROOT, SERVERS_DIR, VENV

FIX = "fix it (servers/README.md says what each key takes)"
# Names that were servers once: what to type now.
RENAMED = {"rust_tonic": "rust_tonic_st (tokio current_thread) or rust_tonic_mt (multi_thread, one worker: seed 001's)"}


@dataclass
class ServerSpec:
    name: str
    folder: Path
    description: str
    profiler: str
    run: list[str]
    app: str
    params: dict = field(default_factory=dict)
    call_graph: str = "dwarf"       # the perf unwinding that works for this server's code
    workdir: str = "folder"         # folder | run (see schema.SERVER)
    ruler: str | None = None        # regex of frames doing the same work in every server (seed 001's ruler)
    after_profile: list[str] | None = None   # argv run when a profile window ends, before symbolising ({pid})
    warmup_s: float = 0.0           # the least warm-up before its CPU per request is steady (a JIT's), measured

    def argv(self, port: int, overrides: dict[str, str] | None = None) -> list[str]:
        """The command that starts the server on port, placeholders filled in."""
        values = {"port": str(port), "root": str(ROOT), "folder": str(self.folder), "python": str(VENV / "bin" / "python"),
                  "node": shutil.which("node") or "node", **{k: str(v) for k, v in self.params.items()}}
        for key, value in (overrides or {}).items():
            if key not in self.params:
                known = ", ".join(sorted(self.params)) or "none"
                raise UserError(f"--param {key}: {self.name} has no parameter {key!r} (its parameters: {known})")
            values[key] = value
        try:
            return [part.format(**values) for part in self.run]
        except KeyError as e:
            raise UserError(f"{self.folder}/server.yaml: run uses unknown placeholder {{{e.args[0]}}}") from None

    def after_profile_argv(self, pid: int) -> list[str] | None:
        """after_profile with {pid} filled in (None when the server declares none)."""
        if not self.after_profile:
            return None
        try:
            return [part.format(pid=pid) for part in self.after_profile]
        except (KeyError, IndexError, ValueError) as e:
            raise UserError(f"{self.folder}/server.yaml: after_profile: {e!r} is not a placeholder it takes "
                            "(only {pid})") from None

    def build(self, log) -> None:
        """Run the folder's build.sh (idempotent); raise UserError with the log tail on failure."""
        script = self.folder / "build.sh"
        if not script.exists():
            return
        proc = subprocess.run(["bash", str(script)], cwd=self.folder, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        log.write(proc.stdout)
        if proc.returncode != 0:
            tail = " | ".join(proc.stdout.strip().splitlines()[-3:])
            raise UserError(f"building {self.name} failed (servers/{self.name}/build.sh, exit {proc.returncode}): {tail}")


def load_server(name: str) -> ServerSpec:
    """The ServerSpec for servers/NAME, validated; UserError naming the known servers if absent."""
    folder = SERVERS_DIR / name
    path = folder / "server.yaml"
    if name in RENAMED and not path.exists():
        raise UserError(f"server {name!r} is now {RENAMED[name]}")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or not path.exists():
        known = sorted(p.parent.name for p in SERVERS_DIR.glob("*/server.yaml"))
        raise UserError(f"unknown server {name!r}: known servers are {', '.join(known)}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise UserError(f"{path}: invalid YAML: {str(e).splitlines()[0]}") from None
    schema.check(data, schema.SERVER, path, FIX)
    for key in ("app", "ruler"):
        if data.get(key) is not None:
            UserRegex(data[key], f"{path}: {key}")      # the guarded compilation the rules' regexes get
    spec = ServerSpec(name=name, folder=folder, description=str(data["description"]),
                      profiler=data["profiler"], run=data["run"], app=data["app"], params=data.get("params") or {},
                      warmup_s=float(data.get("warmup_s", ServerSpec.warmup_s)),      # else the dataclass's defaults
                      **{key: data[key] for key in ("call_graph", "workdir", "ruler", "after_profile") if key in data})
    spec.after_profile_argv(0)          # its placeholders, checked before anything starts
    return spec
