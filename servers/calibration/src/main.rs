//! calibration: rpcprof's ground-truth server.
//!
//! The same tonic 0.14 server as ../rust_tonic (same dependencies, same single-threaded
//! runtime, same two RPCs), except that every handler first burns `--burn-us` microseconds of
//! the thread's own CPU time in `calibration_burn_cpu`, a named, never-inlined function. A
//! profiler run against this server should attribute about `burn_us` µs of CPU per request to
//! the app (server.yaml's `app` regex) and the rest to tonic/hyper/tokio/kernel as usual.
//!
//! Serves, on 127.0.0.1:PORT (plaintext h2c):
//!   /helloworld.Greeter/SayHello    burn, then message  = "Hello {name}!"  (`HelloGreeter`)
//!   /complexproto.Greeter/SayHello  burn, then response = request (echo)    (`ComplexGreeter`)
//!
//! Args: `--port PORT --burn-us N`. No per-request logging. SIGTERM / SIGINT end the process.

use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};

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
    black_box(x);
}

/// Handler for /helloworld.Greeter/SayHello.
#[derive(Debug)]
pub struct HelloGreeter {
    burn_us: u64,
}

#[tonic::async_trait]
impl helloworld::greeter_server::Greeter for HelloGreeter {
    async fn say_hello(
        &self,
        request: Request<helloworld::HelloRequest>,
    ) -> Result<Response<helloworld::HelloReply>, Status> {
        calibration_burn_cpu(self.burn_us);
        let reply = helloworld::HelloReply {
            message: format!("Hello {}!", request.into_inner().name),
        };
        Ok(Response::new(reply))
    }
}

/// Handler for /complexproto.Greeter/SayHello.
#[derive(Debug)]
pub struct ComplexGreeter {
    burn_us: u64,
}

#[tonic::async_trait]
impl complexproto::greeter_server::Greeter for ComplexGreeter {
    async fn say_hello(
        &self,
        request: Request<complexproto::HelloRequest>,
    ) -> Result<Response<complexproto::HelloReply>, Status> {
        calibration_burn_cpu(self.burn_us);
        let response = request.into_inner().request;
        Ok(Response::new(complexproto::HelloReply { response }))
    }
}

const USAGE: &str = "usage: calibration --port PORT --burn-us N";

fn parse_args() -> (u16, u64) {
    let mut args = std::env::args().skip(1);
    let (mut port, mut burn_us) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()),
            "--burn-us" => burn_us = args.next().and_then(|v| v.parse().ok()),
            other => {
                eprintln!("calibration: unknown argument {other:?}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    match (port, burn_us) {
        (Some(p), Some(b)) => (p, b),
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
    let (port, burn_us) = parse_args();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));

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
        let server = tonic::transport::Server::builder()
            .add_service(helloworld::greeter_server::GreeterServer::new(HelloGreeter { burn_us }))
            .add_service(complexproto::greeter_server::GreeterServer::new(ComplexGreeter {
                burn_us,
            }))
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
}
