"""Where rpcprof's files are: the repository root and the folders and files it reads by default."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVERS_DIR = ROOT / "servers"
PROTO_DIR = SERVERS_DIR / "proto"
RULES_PATH = ROOT / "categorize.yaml"
INDIRECT_COST = ROOT / "docs" / "data" / "indirect-syscall-cost.json"   # bench/indirect's record
RUNS_DIR = ROOT / "flamegraphs"          # default of every command's --runs-dir
VENV = Path(os.environ.get("RPCPROF_VENV", ROOT / ".venv"))
ENCODER = VENV / "bin" / "rpcprof-encode"   # tools/encode, which tools/setup.sh builds


def encoder_ready() -> bool:
    """Whether the compiled encoder is there, and not set aside (RPCPROF_NO_ENCODER=1 times the Python paths)."""
    return os.access(ENCODER, os.X_OK) and not os.environ.get("RPCPROF_NO_ENCODER")
