"""The unit costs of a host card (tools/hostcard.c prints them; measure/hostcard.py runs it; report/hosts.py
sets hosts side by side, with analyze/hosts.py's prediction): the one list of their keys, names, units and formats."""

# key, name, unit, format of the median
HOST_UNITS = (
    ("syscall_ns", "syscall", "ns", "{:.0f}"),
    ("write_us", "100 B loopback write", "µs", "{:.2f}"),
    ("wake_us", "cross-CPU wake-up", "µs", "{:.1f}"),
    ("wake_cpu_us", "its CPU on the server's CPU", "µs", "{:.1f}"),
    ("loop_ns", "loop", "ns/iter", "{:.2f}"),
)
