"""The sweep's plan, without running one: seed 000's cells and the duration it announces (a real
sweep: tests/live/test_sweep_live.py)."""
import re
from dataclasses import replace

import pytest


def test_cells_are_seed_000s_twelve_for_its_c_and_s():
    from rpcprof.jobs.sweep import cells
    assert cells([1, 10, 100], [1, 10, 100, 1000, 10000, 100000]) == [
        (1, 1), (1, 10), (1, 100), (1, 1000), (10, 10), (10, 100), (10, 1000), (10, 10000),
        (100, 100), (100, 1000), (100, 10000), (100, 100000)]
    assert (1, 10000) in cells([1], [10000], max_per_connection=10000)


@pytest.mark.parametrize("off_cpu, bounds", [(None, 2), (True, 1), (False, 1)])
def test_the_plan_counts_off_cpu_windows_that_may_come(off_cpu, bounds):
    from rpcprof.jobs.run import RunOptions
    from rpcprof.jobs.sweep import planned, seconds_per_cell
    opts = RunOptions(servers=["rust_tonic_mt", "rust_pajamax"], duration=10, warmup=2, off_cpu=off_cpu,
                      off_cpu_duration=5)
    text = planned(opts, 12)
    assert len(re.findall(r"\d+ min \d+ s", text)) == bounds, text
    with_window = seconds_per_cell(opts, every_off_cpu=True)
    assert with_window - seconds_per_cell(opts) == (2 * (5 + 2 + 1) if off_cpu is None else 0)   # window, lead, fold
    # each window after the measured one has h2load's lead: the warm-up again; ghz has none
    assert seconds_per_cell(opts) - seconds_per_cell(replace(opts, driver="ghz")) == 2 * 5 * 2 + (2 * 2 if off_cpu else 0)
