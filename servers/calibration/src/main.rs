//! calibration: rpcprof's ground-truth server.
//!
//! The same tonic 0.14 server as ../rust_tonic (same dependencies, same single-threaded
//! runtime, same two RPCs), plus three knobs, each adding one known kind of work per request and
//! nothing else (all 0 = the plain tonic server, byte for byte the same replies):
//!
//! - `--burn-us N`: every handler first burns N microseconds of the thread's own CPU time in
//!   `calibration_burn_cpu`, a named, never-inlined function. A profile should attribute about
//!   N µs of CPU per request to the app (server.yaml's `app` regex).
//! - `--extra-writes N`: every handler makes N extra small socket writes: N `send`s of a 32-byte
//!   UDP datagram (`std::net::UdpSocket::send`, one `sendto` syscall each) from a socket connected
//!   to a loopback UDP sink that the server binds at start and never reads (once its receive
//!   buffer is full, a few hundred datagrams in, the kernel drops each datagram at the sink: the
//!   same full send path every time, and nothing for anyone to receive). The cost lands in the
//!   `send` category (std's socket send, libc's send, the kernel's socket/UDP/IP/loopback path
//!   below `__x64_sys_sendto`), and the syscall count grows by N `sendto` per request.
//! - `--pad-items N`: the helloworld reply carries N more uint64 values, each a 10-byte varint,
//!   encoded by prost's packed-varint encoder (`prost::encoding::uint64::encode_packed`, called
//!   from `<PaddedHelloReply as prost::Message>::encode_raw`): 10·N more payload bytes per reply
//!   (plus 1 tag byte and 2-3 length bytes), encoded a byte at a time into tonic's buffer
//!   (category protocol, sub-category protocol/protobuf). The values are built once at start;
//!   the handler only clones an `Arc` (an atomic increment), so the app does no per-item work.
//!
//! The padding's wire format, and why: the probe that rpcprof makes before loading a server
//! decodes the reply with ../proto/helloworld.proto and wants exactly `message: "Hello world!"`;
//! an unknown field 2 would show up in that decoding (protoc prints unknown fields). So the packed
//! list is sent under field 1, *before* the real `message`: every protobuf parser keeps the last
//! value of a non-repeated field, and every varint is chosen so that its 10 bytes are valid UTF-8
//! (three 3-byte CJK characters, then 0x01), so proto3 parsers that check a string's UTF-8 accept
//! the first occurrence too. Any client of ../proto/helloworld.proto reads "Hello {name}!".
//! Caveat: h2load counts OK replies as DATA bytes / the expected reply's framed length (19 bytes),
//! so with `--pad-items` > 0 rpcprof's request count (and every per-request figure derived from
//! it) is too high by the ratio of the framed reply lengths; h2load's own `succeeded` count
//! (result.json `driver_figures`) is right. tests/test_perturbation.py and bench/perturb.sh correct
//! for it and check data bytes = succeeded × framed reply length.
//!
//! Serves, on 127.0.0.1:PORT (plaintext h2c):
//!   /helloworld.Greeter/SayHello    burn, writes, then message = "Hello {name}!" (+ padding)
//!                                   (`HelloGreeter`)
//!   /complexproto.Greeter/SayHello  burn, writes, then response = request (echo), never padded
//!                                   (`ComplexGreeter`)
//!
//! Args: `--port PORT --burn-us N [--extra-writes N] [--pad-items N]`. No per-request logging.
//! SIGTERM / SIGINT end the process.

use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use prost::bytes::{Buf, BufMut};
use prost::encoding::{self, DecodeContext, WireType};
use tonic::{Request, Response, Status};

pub mod helloworld {
    tonic::include_proto!("helloworld");
}
pub mod complexproto {
    tonic::include_proto!("complexproto");
}

/// The calling thread's CPU time in ns: clock_gettime(CLOCK_THREAD_CPUTIME_ID).
/// (This clock is not served by the vDSO: every call is a real syscall, ~0.1-1 µs.)
#[inline(always)]
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid clock id and a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spin-loop iterations per µs of thread CPU, learned from earlier calls (scaled by 1024).
/// 0 = not learned yet. Only a hint for how long to spin between clock reads.
static SPIN_ITERS_PER_US_X1024: AtomicU64 = AtomicU64::new(0);

/// Calls to the burn and the thread CPU they measured in total (ns), printed at exit: the burn each
/// call really took, which is what a profile's app cost is checked against.
static BURN_CALLS: AtomicU64 = AtomicU64::new(0);
static BURN_NS: AtomicU64 = AtomicU64::new(0);

/// Pure user-space busy work: a dependent LCG chain the compiler can neither remove nor
/// vectorize. Inlined, so its samples land in `calibration_burn_cpu` itself.
#[inline(always)]
fn spin(mut x: u64, iters: u64) -> u64 {
    for _ in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
    x
}

/// Busy-loops until this thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) has advanced by `us`
/// microseconds. Time spent descheduled does not count, so the CPU cost per call is `us`
/// regardless of load.
///
/// The clock is read only about three times per call (start, after a spin sized from the
/// learned spin rate to just under the budget, after a short top-up spin): each read is a
/// syscall (~1 µs in a VM), and reading it in a tight loop would put a large part of the burn
/// in the kernel (and, with frame-pointer unwinding through glibc's wrapper, lose this frame).
/// This way almost all samples have this function as their leaf. Typically 2-3 clock reads
/// and an overshoot of ~1-2 µs per call (the last read plus part of the last top-up).
#[inline(never)]
pub fn calibration_burn_cpu(us: u64) {
    if us == 0 {
        return;
    }
    let target = us * 1000; // ns
    let start = thread_cpu_ns();
    let mut x = start;
    let mut rate = SPIN_ITERS_PER_US_X1024.load(Ordering::Relaxed);
    let mut spun: u64 = 0;
    // First chunk: ~97 % of the budget at the learned rate, else a short probe to learn it.
    let mut chunk = if rate > 0 { (us * rate * 97 / 100) >> 10 } else { 256 };
    let mut elapsed;
    loop {
        x = spin(x, chunk);
        spun += chunk;
        elapsed = thread_cpu_ns() - start;
        if elapsed >= target {
            break;
        }
        if elapsed > 0 {
            rate = (spun * 1000 * 1024) / elapsed;
        }
        // Top up the remainder at the current rate; at least ~0.25 µs per round.
        chunk = (((target - elapsed) * rate / 1000) >> 10).max(rate >> 12).max(16);
    }
    // Remember this call's average rate (clock reads included, so slightly low), in both
    // directions: the spin speed drifts with what else the (virtual) machine is doing.
    SPIN_ITERS_PER_US_X1024.store(((spun * 1000 * 1024) / elapsed).max(1), Ordering::Relaxed);
    BURN_CALLS.fetch_add(1, Ordering::Relaxed);
    BURN_NS.fetch_add(elapsed, Ordering::Relaxed);
    black_box(x);
}

// --- extra_writes: N small socket writes per response ----------------------------------------

/// The size of each extra write: small, so that the cost is the per-write path, not copying.
const EXTRA_WRITE_BYTES: usize = 32;

/// A UDP socket connected to a loopback sink that nobody reads, for `--extra-writes`.
#[derive(Debug)]
pub struct WriteSink {
    tx: UdpSocket,
    /// Kept open (and never read) so that the datagrams have a destination.
    _sink: UdpSocket,
}

impl WriteSink {
    fn open() -> std::io::Result<WriteSink> {
        let sink = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        tx.connect(sink.local_addr()?)?;
        // Never block the runtime's only thread (a loopback UDP send does not block anyway: the
        // datagram is delivered or dropped within the call).
        tx.set_nonblocking(true)?;
        Ok(WriteSink { tx, _sink: sink })
    }
}

static WRITE_FAILED: AtomicBool = AtomicBool::new(false);

/// `n` sends of a small datagram, each one `sendto` syscall. A failed send (it should not
/// happen) is reported once on stderr; the syscall was made all the same.
#[inline(never)]
pub fn calibration_extra_writes(sink: &WriteSink, n: u32) {
    let payload = [0x5au8; EXTRA_WRITE_BYTES];
    for _ in 0..n {
        if let Err(e) = sink.tx.send(black_box(&payload)) {
            if !WRITE_FAILED.swap(true, Ordering::Relaxed) {
                eprintln!("calibration: an extra write failed (reported once): {e}");
            }
        }
    }
}

// --- pad_items: a larger reply, encoded by prost ---------------------------------------------

/// helloworld.HelloReply as the Greeter server sends it (build.rs maps the proto type here).
///
/// Encodes as the generated type would (`message`, field 1) when `pad` is empty. Otherwise `pad`
/// goes first, as a packed uint64 list under field 1 too, so that parsers keep the last value,
/// "Hello {name}!" (see the header: every value's varint is valid UTF-8).
#[derive(Clone, PartialEq, Default, Debug)]
pub struct PaddedHelloReply {
    pub pad: Arc<[u64]>,
    pub message: String,
}

impl prost::Message for PaddedHelloReply {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encoding::uint64::encode_packed(1, &self.pad, buf);
        if !self.message.is_empty() {
            encoding::string::encode(1, &self.message, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        match tag {
            1 => encoding::string::merge(wire_type, &mut self.message, buf, ctx),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        encoding::uint64::encoded_len_packed(1, &self.pad)
            + if self.message.is_empty() { 0 } else { encoding::string::encoded_len(1, &self.message) }
    }

    fn clear(&mut self) {
        self.pad = Arc::default();
        self.message.clear();
    }
}

/// The i-th padding value: the u64 whose varint is three 3-byte UTF-8 characters (CJK, from
/// U+4E00 on) followed by 0x01, i.e. exactly 10 bytes, every one of them part of valid UTF-8.
fn pad_value(i: usize) -> u64 {
    let mut bytes = [0u8; 10];
    for k in 0..3 {
        let c = char::from_u32(0x4E00 + ((i * 3 + k) % 0x5000) as u32).expect("a CJK code point");
        c.encode_utf8(&mut bytes[3 * k..3 * k + 3]);
    }
    bytes[9] = 0x01;
    bytes.iter().enumerate().fold(0u64, |v, (j, b)| v | (u64::from(b & 0x7f) << (7 * j)))
}

/// The `n` padding values, checked once: 10 bytes each, and the whole packed list valid UTF-8.
fn pad_values(n: usize) -> Arc<[u64]> {
    let values: Vec<u64> = (0..n).map(pad_value).collect();
    let mut blob = Vec::with_capacity(10 * n);
    for &v in &values {
        encoding::encode_varint(v, &mut blob);
    }
    assert_eq!(blob.len(), 10 * n, "every padding value must encode to 10 bytes");
    assert!(std::str::from_utf8(&blob).is_ok(), "the padding must be valid UTF-8");
    values.into()
}

// --- handlers --------------------------------------------------------------------------------

/// Handler for /helloworld.Greeter/SayHello.
#[derive(Debug)]
pub struct HelloGreeter {
    burn_us: u64,
    extra_writes: u32,
    sink: Arc<WriteSink>,
    pad: Arc<[u64]>,
}

#[tonic::async_trait]
impl helloworld::greeter_server::Greeter for HelloGreeter {
    async fn say_hello(
        &self,
        request: Request<helloworld::HelloRequest>,
    ) -> Result<Response<PaddedHelloReply>, Status> {
        calibration_burn_cpu(self.burn_us);
        calibration_extra_writes(&self.sink, self.extra_writes);
        let reply = PaddedHelloReply {
            pad: self.pad.clone(),
            message: format!("Hello {}!", request.into_inner().name),
        };
        Ok(Response::new(reply))
    }
}

/// Handler for /complexproto.Greeter/SayHello.
#[derive(Debug)]
pub struct ComplexGreeter {
    burn_us: u64,
    extra_writes: u32,
    sink: Arc<WriteSink>,
}

#[tonic::async_trait]
impl complexproto::greeter_server::Greeter for ComplexGreeter {
    async fn say_hello(
        &self,
        request: Request<complexproto::HelloRequest>,
    ) -> Result<Response<complexproto::HelloReply>, Status> {
        calibration_burn_cpu(self.burn_us);
        calibration_extra_writes(&self.sink, self.extra_writes);
        let response = request.into_inner().request;
        Ok(Response::new(complexproto::HelloReply { response }))
    }
}

const USAGE: &str = "usage: calibration --port PORT --burn-us N [--extra-writes N] [--pad-items N]";

struct Args {
    port: u16,
    burn_us: u64,
    extra_writes: u32,
    pad_items: usize,
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let (mut port, mut burn_us, mut extra_writes, mut pad_items) = (None, None, Some(0), Some(0));
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()),
            "--burn-us" => burn_us = args.next().and_then(|v| v.parse().ok()),
            "--extra-writes" => extra_writes = args.next().and_then(|v| v.parse().ok()),
            "--pad-items" => pad_items = args.next().and_then(|v| v.parse().ok()),
            other => {
                eprintln!("calibration: unknown argument {other:?}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    match (port, burn_us, extra_writes, pad_items) {
        (Some(port), Some(burn_us), Some(extra_writes), Some(pad_items)) => {
            Args { port, burn_us, extra_writes, pad_items }
        }
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
}

/// Resolves when SIGTERM or SIGINT arrives.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

fn main() {
    let Args { port, burn_us, extra_writes, pad_items } = parse_args();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let sink = Arc::new(WriteSink::open().unwrap_or_else(|e| {
        eprintln!("calibration: cannot open the loopback UDP sink for --extra-writes: {e}");
        std::process::exit(1);
    }));
    let pad = pad_values(pad_items);
    if extra_writes > 0 || pad_items > 0 {
        // Once, at start (server.log): what the knobs add per request.
        let pad_bytes = encoding::uint64::encoded_len_packed(1, &pad);
        eprintln!(
            "calibration: per request: {extra_writes} extra {EXTRA_WRITE_BYTES}-byte UDP writes; \
             helloworld reply +{pad_bytes} bytes ({pad_items} packed 10-byte varints)"
        );
    }

    // Learn the spin rate once before serving, so the first requests burn accurately too.
    calibration_burn_cpu(10_000);

    // One worker thread, as in ../rust_tonic_st: a tokio `current_thread` runtime runs the accept
    // loop, every connection task and every handler on the main thread, so the burn is charged
    // to the same (only) thread that does the protocol work and the server uses at most one core.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build tokio runtime");

    rt.block_on(async move {
        let hello = HelloGreeter { burn_us, extra_writes, sink: sink.clone(), pad };
        let complex = ComplexGreeter { burn_us, extra_writes, sink };
        let server = tonic::transport::Server::builder()
            .add_service(helloworld::greeter_server::GreeterServer::new(hello))
            .add_service(complexproto::greeter_server::GreeterServer::new(complex))
            .serve(addr);
        // Exit promptly on a signal: don't wait for clients to close their connections.
        tokio::select! {
            res = server => {
                if let Err(e) = res {
                    eprintln!("calibration: server error: {e}");
                    std::process::exit(1);
                }
            }
            _ = shutdown_signal() => {}
        }
    });
    let calls = BURN_CALLS.load(Ordering::Relaxed);
    if calls > 0 {
        // measured up to each call's last clock read: what follows it (a return) is not counted
        eprintln!("calibration: burn calls {calls}, measured thread CPU per call {:.3} us",
                  BURN_NS.load(Ordering::Relaxed) as f64 / calls as f64 / 1000.0);
    }
}
