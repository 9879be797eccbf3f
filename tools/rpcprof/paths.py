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
