"""Every default of both command lines, in one place, with the reason for each difference.

- run: 5 rounds (each server restarted every round) of 2 s warm-up, a 6 s window and a 5 s profile window:
  an interval for every figure in about 2 min 10 s of windows for two servers. One connection with 1,000
  streams in flight: measured here, pajamax/tonic_mt over 5 rounds gave ±4.1 % at S=1000 and ±7.9 % at
  S=100 (pajamax is client-bound either way; deeper pipelines fill its batches more evenly). docs/run.md
  gives the figures.
- sweep: many cells (seed 000 has twelve, times servers, times repeats): 3 s warm-up and 10 s windows keep
  its twelve cells for two servers near 20 minutes; the syscall and profile windows shrink alike.
- attach: the process was started (and warmed) by someone else, so 2 s of warm-up only settles the load
  driver's connections before the window.
"""
from __future__ import annotations

from rpcprof.capture.profiler import MIN_SAMPLES  # noqa: E402  (the layer that uses it owns it)
FREQUENCY = 999             # Hz; raised (then the duration) until MIN_SAMPLES is in reach

RUN = {"connections": 1, "streams": 1000, "duration": 6.0, "warmup": 2.0, "profile_duration": 5.0,
       "syscall_duration": 5.0, "offcpu_duration": 5.0, "frequency": FREQUENCY, "min_samples": MIN_SAMPLES,
       "max_time": 600.0,       # --precision's time budget: ten minutes of rounds
       "repeat": 5}             # rounds: an interval for every ratio and category by default
SWEEP = {**RUN, "repeat": 1, "connections": "1,10,100", "streams": "1,10,100,1000", "duration": 10.0, "warmup": 3.0,
         "profile_duration": 5.0, "syscall_duration": 3.0, "offcpu_duration": 3.0}
ATTACH = {"connections": 1, "streams": 100, "duration": 10.0, "warmup": 2.0, "offcpu_duration": 5.0, "frequency": FREQUENCY,
          "min_samples": MIN_SAMPLES}
