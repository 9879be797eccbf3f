"""The profilers and perf's call-graph modes, named once: capture records with them, server.yaml's schema
and the command lines offer them. Below every layer: it imports nothing.

Call-graph modes for perf:
  dwarf       --call-graph dwarf (8 KiB of stack per sample): the default. Deep async stacks are cut
              near the root, but the leaf side, which decides categories, is intact.
  dwarf-deep  --call-graph dwarf,32768: complete stacks, ~4x the data.
  fp          -g (frame pointers): cheapest, but callers inside glibc (no frame pointers in Debian's
              build) are lost: blocking recv/send wrappers and malloc lose their callers.
  dwarf-jit   dwarf-deep for a JIT runtime that writes a jitdump with unwinding info (Node/V8 started with
              --perf-prof --perf-prof-unwinding-info): recorded with -k mono, then `perf inject --jit` turns
              the dump into one small ELF per JIT function (written beside the dump) so DWARF unwinding
              goes through JS frames too, and perf.data is replaced by the injected file.
"""
from __future__ import annotations

from pathlib import Path

PROFILERS = ("perf", "py-spy")
CALL_GRAPHS = {"dwarf": ["--call-graph", "dwarf"], "dwarf-deep": ["--call-graph", "dwarf,32768"], "fp": ["-g"],
               # perf inject --jit needs sample times on the jitdump's clock (CLOCK_MONOTONIC)
               "dwarf-jit": ["-k", "mono", "--call-graph", "dwarf,32768"]}


def perf_map(pid: int) -> Path:
    """The symbol map a JIT runtime writes for perf script (perf's convention: /tmp/perf-PID.map)."""
    return Path(f"/tmp/perf-{pid}.map")
