"""What a run folder records about where it ran: the git commit and the tools' versions."""
from __future__ import annotations

import subprocess
import sys

from rpcprof.measure.procstat import command_version
from rpcprof.paths import ROOT


def git_commit() -> dict:
    def git(*args):
        r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.rstrip("\n") if r.returncode == 0 else ""
    status = git("status", "--porcelain")
    # the paths that differ from the commit (porcelain: two status letters, a space, the path)
    changed = [line[3:] for line in status.splitlines()]
    return {"commit": git("rev-parse", "HEAD").strip() or "unknown", "dirty": bool(status), "changed": changed[:50]}


def tool_versions() -> dict:
    ghz = command_version(["bash", "-c", 'go version -m "$(command -v ghz)" | grep -m1 "mod.*ghz"'])
    return {
        "perf": command_version(["perf", "--version"]),
        "h2load": command_version(["h2load", "--version"]),
        "ghz": " ".join(ghz.split()[1:3]) if ghz not in ("not found", "unknown") else ghz,
        # inferno's binaries have no --version: cargo knows what it installed
        "inferno": command_version(["bash", "-c", "cargo install --list | grep -m1 '^inferno v'"]).rstrip(":"),
        "py-spy": command_version(["py-spy", "--version"]),
        "protoc": command_version(["protoc", "--version"]),
        "python": sys.version.split()[0],
    }
