"""The port check before a server starts (measure/process.py): a port a dead server left in TIME_WAIT is
free to bind."""
from __future__ import annotations

import socket
import subprocess


def leave_server_side_time_wait(port: int) -> None:
    """A connection to port closed by the server first, as when a server dies: the server's end of it
    stays in TIME_WAIT on port for a minute, while nothing listens there any more."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        client = socket.create_connection(("127.0.0.1", port))
        server_end, _ = listener.accept()
    server_end.close()                        # active close on the server's side
    assert client.recv(1) == b""              # the client sees the FIN ...
    client.close()                            # ... and closes: the server's end goes to TIME_WAIT
    states = subprocess.run(["ss", "-Htan", "state", "time-wait", f"sport = :{port}"], capture_output=True,
                            text=True).stdout
    assert states.strip(), f"no TIME_WAIT left on port {port}"


def test_port_check_ignores_connections_left_in_time_wait(port):
    from rpcprof.measure.process import check_port_free
    leave_server_side_time_wait(port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as like_a_server:   # binds as tokio and std do
        like_a_server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        like_a_server.bind(("127.0.0.1", port))
    check_port_free(port)


def test_a_port_held_by_a_client_connection_is_named_as_such_with_the_range_to_avoid(port):
    """A client connection whose local port is the one asked (as the kernel gives ports of its ephemeral
    range to connections) blocks the server's bind: one line says so and which ports to pass instead."""
    import os
    import pytest
    from rpcprof.errors import UserError
    from rpcprof.measure.process import check_port_free
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.bind(("127.0.0.1", port))
            client.connect(listener.getsockname())
            with pytest.raises(UserError) as refused:
                check_port_free(port)
    low, high = open("/proc/sys/net/ipv4/ip_local_port_range").read().split()
    name = open("/proc/self/comm").read().strip()
    assert str(refused.value) == (f"port {port} is the local end of a connection by pid {os.getpid()} ({name}) "
                                  f"(ports {low}-{high} are given to client connections): pass --port with one "
                                  f"below {low}")
