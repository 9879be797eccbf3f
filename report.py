#!/usr/bin/env python3
"""report.py - explain profiles: category shares, per-request CPU by category, rules.

Reads what profile.sh wrote (folded stacks, run folders); rerun it after editing categorize.yaml.

USAGE: ./report.py COMMAND [ARGS] [--format table|markdown|json|csv]

  table FOLDED...           share of each category per profile (+ other: rule coverage)
  run RUN_DIR               the run table of a saved run (--latency full: p50 ... p99.99, max, tm99, stddev)
  compare RUN_DIR           req/s per CPU and CPU µs per request by category, side by side, and
                            the ruler check (--ruler REGEX: frames doing the same work in each server)
  runs RUN_DIR...           runs of one setup side by side: do they agree, and the ratio over runs
  hosts [add RUN_DIR...]    the ledger of hosts (docs/data/hosts.jsonl) and the host model's error; add a run's host
  waits RUN_DIR             where the threads waited (the off-CPU window), why, and who woke them
  whatif RUN_DIR A B        B's CPU µs per request if it wrote as A does, with its interval
  top FOLDED -c CATEGORY    the frames that decide a category, to see and fix rules
  explain FRAME             which rule a frame matches, and why
  check-rules               validate categorize.yaml and its examples
  svg FOLDED -o OUT         annotated flame graph: frames coloured by category, legend, figures
  chart RUN_DIR             the per-request chart (breakdown.svg): CPU µs per request by category
  html RUN_DIR              report.html: one self-contained page of the run that opens offline
  diff A B -o OUT           differential flame graph (normalised) and the category-level difference
  export PROFILE --format F -o OUT   a folded profile for pprof, speedscope, collapsed stacks or OTLP
  sweep SWEEP_DIR           seed 000's table for a saved sweep
  results SWEEP_DIR -o F    the results document (table, explanation in numbers, seed figures)
  seeds RUN_DIR -o F        seed 001 reproduced: a run of its setup beside the seed's figures
  fold PERF.DATA -o F       fold a saved recording again (perf.data or py-spy raw)

A RUN_DIR may be a path or a run folder's name under --runs-dir (default flamegraphs/).

eg,
  ./report.py compare flamegraphs/20261121-101500-rust_tonic_mt-rust_pajamax
  ./report.py table flamegraphs/*/rust_tonic_mt/profile.folded --format markdown
  ./report.py top flamegraphs/RUN/go_grpc/profile.folded -c other
  ./report.py explain 'tcp_recvmsg_locked_[k]'

Folded files are inferno's (perf, weighted by sample period) or py-spy's raw format (sample counts).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV_PYTHON = HERE / ".venv" / "bin" / "python"
# Run under the project's virtualenv (tools/setup.sh makes it), whatever python3 started us.
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (HERE / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
try:
    import rpcprof                         # installed into .venv by tools/setup.sh (pyproject.toml)
except ImportError as e:
    sys.exit(f"report.py: error: {e}: run tools/setup.sh first (it makes .venv with rpcprof in it)")
# the rpcprof imported must be this checkout's, not another's whose editable install this Python holds
_PKG = Path(rpcprof.__file__).resolve().parent
if _PKG != HERE / "tools" / "rpcprof":
    _FIX = (f"remove {HERE / '.venv'} and run tools/setup.sh here" if VENV_PYTHON.exists()
            else "run tools/setup.sh here (it makes .venv with this checkout's rpcprof in it)")
    sys.stderr.write(f"report.py: error: the virtualenv {sys.prefix} runs the code of {_PKG.parents[1]}, not of "
                     f"this checkout ({HERE}): {_FIX}\n")
    sys.exit(2)
from rpcprof.cli.report import entry      # noqa: E402

if __name__ == "__main__":
    entry()
