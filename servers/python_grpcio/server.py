"""python_grpcio: grpcio sync server for rpcprof.

Serves /helloworld.Greeter/SayHello and /complexproto.Greeter/SayHello on 127.0.0.1:PORT (h2c).
grpc.server() with a ThreadPoolExecutor of MAX_WORKERS (10) threads. The handlers hold the GIL, so
the pool size barely changes throughput (1, 2, 4, 10 measured within noise); 10 equals the 10 streams
h2load keeps in flight, so no request waits for a free worker. The app handlers are
HelloGreeter.SayHello and ComplexGreeter.SayHello in this file; py-spy 0.4 shows them as
`HelloGreeter.SayHello (server.py:LINE)`.
"""
import argparse
import os
import signal
import sys
from concurrent import futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

import grpc  # noqa: E402

import complexproto_pb2  # noqa: E402
import complexproto_pb2_grpc  # noqa: E402
import helloworld_pb2  # noqa: E402
import helloworld_pb2_grpc  # noqa: E402

MAX_WORKERS = 10


class HelloGreeter(helloworld_pb2_grpc.GreeterServicer):
    def SayHello(self, request, context):
        return helloworld_pb2.HelloReply(message="Hello " + request.name + "!")


class ComplexGreeter(complexproto_pb2_grpc.GreeterServicer):
    def SayHello(self, request, context):
        return complexproto_pb2.HelloReply(response=request.request)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=50051)
    ap.add_argument("--max-workers", type=int, default=MAX_WORKERS)
    args = ap.parse_args()

    # so_reuseport off: a second server on a busy port must fail, not silently share it.
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.max_workers),
        options=[("grpc.so_reuseport", 0)],
    )
    helloworld_pb2_grpc.add_GreeterServicer_to_server(HelloGreeter(), server)
    complexproto_pb2_grpc.add_GreeterServicer_to_server(ComplexGreeter(), server)
    addr = f"127.0.0.1:{args.port}"
    if server.add_insecure_port(addr) == 0:
        sys.exit(f"python_grpcio: cannot bind {addr}")
    server.start()

    def on_signal(signum, _frame):
        server.stop(grace=None)  # cancels in-flight RPCs; wait_for_termination then returns

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"python_grpcio: listening on {addr} (max_workers={args.max_workers})", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
