"""The host card (measure/hostcard.py, tools/hostcard.c) measured here: every unit, the user-code units with the
working sets sized from this machine's caches, within their time budget."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from rpcprof.host_units import HOST_UNITS
from rpcprof.measure import hostcard



def sysfs_kib(level: int) -> int:
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if int((index / "level").read_text()) == level and (index / "type").read_text().strip() != "Instruction":
            return int((index / "size").read_text().strip().rstrip("K"))
    raise AssertionError(f"no L{level} in sysfs")


def test_the_card_carries_every_unit_and_records_what_the_user_code_units_took():
    card = hostcard.measure(0, 1, "halt")
    for key, *_ in HOST_UNITS:
        f = card[key]
        assert 0 < f["min"] <= f["median"] <= f["max"] and len(f["batches"]) == 7, (key, f)
    caches = card["caches_kib"]
    assert caches == {"l1d": sysfs_kib(1), "l2": sysfs_kib(2), "l3": sysfs_kib(3)}
    sets = [card[k]["set_kib"] for k in ("mem_l1_ns", "mem_l2_ns", "mem_l3_ns", "mem_dram_ns")]
    assert sets == [caches["l1d"] // 2, caches["l2"] // 2, min(caches["l3"] // 2, 4 * caches["l2"]), 2 * caches["l3"]]
    assert card["code_ns"]["set_kib"] == 1000 * 2048 // 1024            # the far code: 1,000 functions 2 KiB apart
    # a load that misses every cache waits longer than one that hits L1, whatever else runs on the machine
    assert card["mem_dram_ns"]["min"] > card["mem_l1_ns"]["median"]
    assert card["user_units_s"] > 0      # recorded, not bounded here: a test asserts no timing (docs/hosts.md: the budget)
    assert "load in DRAM" in hostcard.card_line(card) and f"({sets[3]:,} KiB)" in hostcard.card_line(card)
    assert card["neighbours"] == []       # the card's program is the run's own


def test_a_card_measured_beside_a_busy_program_names_it():
    # the loop is started by a shell that exits at once: not below this process (which stands for rpcprof)
    started = subprocess.run(["sh", "-c", f"taskset -c 0 {sys.executable} -c 'while True: pass' >/dev/null 2>&1 & "
                              "echo $!"], capture_output=True, text=True, check=True)
    pid = int(started.stdout)
    try:
        card = hostcard.measure(0, 1, "halt")
    finally:
        os.kill(pid, signal.SIGKILL)
    assert pid in {n["pid"] for n in card["neighbours"]}, card["neighbours"]
