"""The seeds' published figures, quoted once for the documents that set rpcprof's beside them
(documents/seeds.py: docs/seeds.md, documents/results.py: docs/results.md).

seed 000: grpc_bench, ghz 0.114, 16-core EPYC, server on 1 CPU, client on 12; its ^ marks per (C, S) cell.
seed 001: ghz directly against tonic (tokio multi-thread runtime, one worker) and pajamax, 1 connection,
          50 requests in flight; figures read off its summary table and its flame graphs.
seed 002: pajamax and tonic with 2, 4 and 8 server threads, a client on two other machines.
"""
from __future__ import annotations

from dataclasses import dataclass

# Seed 000's ^ marks: pajamax's req/s per CPU over tonic's, per (C, S) cell.
SEED_000_RATIOS = {(1, 1): 2.9, (1, 10): 4.2, (1, 100): 7.0, (1, 1000): 10.4, (10, 10): 1.3, (10, 100): 2.9,
                   (10, 1000): 7.1, (10, 10000): 10.8, (100, 100): 1.8, (100, 1000): 3.2, (100, 10000): 6.7,
                   (100, 100000): 11.0}


@dataclass(frozen=True)
class SeedFrame:
    role: str          # 'tonic' or 'pajamax': which of the seed's servers it was read from
    label: str         # as seed 001 names it
    regex: str         # frame names as the rules see them (generic arguments stripped)
    seed_pct: float    # seed 001's share of its flame graph
    what: str          # seed 001's reading of it


SEED_FRAMES = [
    # release builds may inline PollEvented::poll_read into TcpStream::poll_read_priv: either frame counts
    SeedFrame("tonic", "PollEvented::poll_read",
              r"tokio::io::poll_evented::PollEvented::poll_read|tokio::net::tcp::stream::TcpStream::poll_read_priv",
              1.60, "network input, the recv() syscall"),
    SeedFrame("tonic", "TcpStream::poll_write_vectored",
              r"<tokio::net::tcp::stream::TcpStream as tokio::io::async_write::AsyncWrite>::poll_write_vectored",
              38.11, "network output, the send() syscall"),
    SeedFrame("pajamax", "GreeterServer::handle", r"GreeterServer as pajamax::PajamaxService>::handle", 7.09,
              "construct the response: formatting, gRPC encoding"),
    SeedFrame("pajamax", "Decoder::find_path", r"pajamax::hpack_decoder::Decoder::find_path", 2.60,
              "the request's :path header"),
    SeedFrame("pajamax", "ResponseEnd::flush", r"pajamax::response_end::ResponseEnd::flush", 40.32,
              "network output, the send() syscall"),
    # std's socket read is one symbol across socket types: a TCP read shows as UnixDatagram::recv
    SeedFrame("pajamax", "UnixDatagram::recv", r"<std::os::unix::net::datagram::UnixDatagram>::recv", 47.55,
              "network input, the recv() syscall"),
]
# seed 001's ruler: the handler's format! (0.31 % of tonic's samples, 2.90 % of pajamax's)
RULER = r"alloc::fmt::format::format_inner"
# seed 001's summary table: client CPU %, server CPU %, req/s
SEED_RUN = {"tonic": (790.0, 95.0, 41124.74), "pajamax": (1100.0, 15.0, 65135.31)}
SEED_CLIENT_CPUS = 12
SEED_RATIO_QUOTED = 9.5                                  # as seed 001 prints it
# its own formula on its own figures, req/s per server CPU of pajamax over tonic's: 10.03
SEED_RATIO = ((SEED_RUN["pajamax"][2] / (SEED_RUN["pajamax"][1] / 100))
              / (SEED_RUN["tonic"][2] / (SEED_RUN["tonic"][1] / 100)))
LEAF_SWITCH = r"^finish_task_switch"                     # where cpu-clock charges a context switch's irq-off time
# what a handler's frame holds besides its own work: dropping what it was given (tonic's Request: metadata
# HeaderMap, extensions) and freeing memory
TEARDOWN = r"core::ptr::drop_in_place|as core::ops::drop::Drop>::drop|^(cfree|free|_int_free)\b"

# seed 002's table: case -> [(server threads, (client time s pajamax, tonic), (CPU % per thread pajamax, tonic))]
SEED_002 = {"A": [(2, (36, 33), (9, 87)), (4, (35, 38), (9, 85)), (8, (34, 44), (8, 83))],
            "B": [(2, (23, 27), (10, 90)), (4, (23, 33), (9, 87)), (8, (20, 44), (3, 83))]}
SEED_002_CASES = {100: "A", 1000: "B"}      # streams per connection -> seed 002's case


def seed_002_cpu_ratio(times: tuple[float, float], cpus: tuple[float, float]) -> float:
    """tonic's CPU per request over pajamax's from one row of seed 002: both served the same requests with
    the same threads, so CPU per request goes as CPU % per thread x the client's run time."""
    return (cpus[1] * times[1]) / (cpus[0] * times[0])
