"""Every default of profile.sh's jobs (run, sweep, attach), in one place, with the reason for each difference.

- run: 5 rounds (each server restarted every round) of 2 s warm-up, a 6 s window and a 5 s profile window:
  an interval for every figure in about 2 min 10 s of windows for two servers. One connection with 1,000
  streams in flight: measured here, pajamax/tonic_mt over 5 rounds gave ±4.1 % at S=1000 and ±7.9 % at
  S=100 (pajamax is client-bound either way; deeper pipelines fill its batches more evenly). docs/run.md
  gives the figures.
- run and sweep: the server's CPUs poll when idle (--idle poll): halting, client-bound pajamax's rounds ran
  0.19-0.27 µs per request within runs (CV up to 12 %); polling, its rounds' CV stayed within 0.6-3.1 %
  in six runs (docs/run.md).
- sweep: many cells (seed 000 has twelve, times servers, times rounds): 3 s warm-up and 10 s windows keep
  its twelve cells for two servers near 20 minutes; the syscall and profile windows shrink alike.
- attach: the process was started (and warmed) by someone else, so 2 s of warm-up only settles the load
  driver's connections before the window.
"""
from __future__ import annotations

from rpcprof.capture.profiler import MIN_SAMPLES  # noqa: E402  (the layer that uses it owns it)
from rpcprof.report.otlp_push import OTLP_TIMEOUT_S     # report.py export's too
FREQUENCY = 999             # Hz; raised (then the duration) until MIN_SAMPLES is in reach

# Keyed by the name of the option's field (jobs/run.py RunOptions, jobs/attach.py AttachOptions), which is
# the click parameter's name: the command lines and the jobs' dataclasses both take their defaults from here.
RUN = {"connections": 1, "streams": 1000, "duration": 6.0, "warmup": 2.0, "scenario": "helloworld",
       "driver": "h2load", "server_cpus": [0], "port": 50051, "label": "", "profile": True, "profile_duration": 5.0,
       "syscalls": True, "syscall_duration": 5.0, "io_sizes": False, "off_cpu_duration": 5.0, "frequency": FREQUENCY,
       "min_samples": MIN_SAMPLES, "otlp_timeout": OTLP_TIMEOUT_S,
       "max_time": 600.0,       # --precision's time budget: ten minutes of rounds
       "idle": "poll",          # the server's CPUs poll when idle (measure/idle.py); --idle halt: the machine's own way
       "rounds": 5,             # an interval for every ratio and category by default
       "pictures": True}        # flame graphs, charts and report.html drawn at the end of a run (and of each cell)
# a sweep's connections and streams are its grid's lists, as -C and -S take them
SWEEP = {**RUN, "rounds": 1, "connections": "1,10,100", "streams": "1,10,100,1000", "duration": 10.0, "warmup": 3.0,
         "profile_duration": 5.0, "syscall_duration": 3.0, "off_cpu_duration": 3.0}
ATTACH = {"duration": 10.0, "name": "", "frequency": FREQUENCY, "min_samples": MIN_SAMPLES, "driver": "h2load",
          "scenario": "helloworld", "connections": 1, "streams": 100, "warmup": 2.0, "second_profile": True,
          "off_cpu_duration": 5.0, "pictures": True, "otlp_timeout": OTLP_TIMEOUT_S}
