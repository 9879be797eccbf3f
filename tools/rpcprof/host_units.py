"""The unit costs of a host card (tools/hostcard.c prints them; measure/hostcard.py runs it; report/hosts.py
sets hosts side by side, with analyze/hosts.py's prediction): the one list of their keys, names, units and formats."""

# key, name, unit, format of the median
HOST_UNITS = (
    ("syscall_ns", "syscall", "ns", "{:.0f}"),
    ("write_us", "100 B loopback write", "µs", "{:.2f}"),
    ("wake_us", "cross-CPU wake-up", "µs", "{:.1f}"),
    ("wake_cpu_us", "its CPU on the server's CPU", "µs", "{:.1f}"),
    ("loop_ns", "loop", "ns/iter", "{:.2f}"),
    ("mem_l1_ns", "load in L1", "ns", "{:.1f}"),
    ("mem_l2_ns", "load in L2", "ns", "{:.1f}"),
    ("mem_l3_ns", "load in L3", "ns", "{:.0f}"),
    ("mem_dram_ns", "load in DRAM", "ns", "{:.0f}"),
    ("alloc_ns", "malloc+free", "ns", "{:.0f}"),
    ("indirect_ns", "indirect call", "ns", "{:.1f}"),
    ("ilp_ns", "loop, 8 chains at once", "ns/step", "{:.2f}"),
    ("code_ns", "call into far code", "ns", "{:.0f}"),
)
# the units every card has had (runs' cards before the user-code units: the pairwise model's)
FIRST_UNITS = ("syscall_ns", "write_us", "wake_us", "wake_cpu_us", "loop_ns")
