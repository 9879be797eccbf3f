//! rust_tonic: tonic 0.14 gRPC server for rpcprof (see ../README.md for the contract), the crate behind
//! two servers that differ only in tokio's runtime flavour (`--runtime`):
//!   ../rust_tonic_st  `current_thread`: one thread runs the accept loop, connections and handlers
//!                     (grpc_bench `rust_tonic_st`);
//!   ../rust_tonic_mt  `multi_thread` with one worker (seed 001's tonic, grpc_bench `rust_tonic_mt`):
//!                     `main` runs the accept loop in `block_on`, one worker thread runs connections
//!                     and handlers.
//! The flavour changes how h2 writes: on the multi-thread runtime a finished stream wakes the connection
//! task into the worker's LIFO slot, so it runs (and flushes) right after every response; on
//! current_thread it runs after all ready stream tasks, so it writes once per batch.
//!
//! Serves, on 127.0.0.1:PORT (plaintext h2c):
//!   /helloworld.Greeter/SayHello    message  = "Hello {name}!"     (handler: `HelloGreeter`)
//!   /complexproto.Greeter/SayHello  response = request (echo)      (handler: `ComplexGreeter`)
//!
//! The handler types are named so that server.yaml's `app` regex
//! `rust_tonic::(HelloGreeter|ComplexGreeter)` matches their frames, e.g.
//! `<rust_tonic::HelloGreeter as rust_tonic::helloworld::greeter_server::Greeter>::say_hello::{{closure}}`.
//! No per-request logging. SIGTERM / SIGINT end the process.

use std::net::{Ipv4Addr, SocketAddr};

use tonic::{Request, Response, Status};

pub mod helloworld {
    tonic::include_proto!("helloworld");
}
pub mod complexproto {
    tonic::include_proto!("complexproto");
}

/// Handler for /helloworld.Greeter/SayHello.
#[derive(Debug, Default)]
pub struct HelloGreeter;

#[tonic::async_trait]
impl helloworld::greeter_server::Greeter for HelloGreeter {
    async fn say_hello(
        &self,
        request: Request<helloworld::HelloRequest>,
    ) -> Result<Response<helloworld::HelloReply>, Status> {
        // As tonic's (and pajamax's) helloworld example: the formatting frame
        // `alloc::fmt::format::format_inner` is seed 001's ruler (server.yaml `ruler`).
        let reply = helloworld::HelloReply {
            message: format!("Hello {}!", request.into_inner().name),
        };
        Ok(Response::new(reply))
    }
}

/// Handler for /complexproto.Greeter/SayHello.
#[derive(Debug, Default)]
pub struct ComplexGreeter;

#[tonic::async_trait]
impl complexproto::greeter_server::Greeter for ComplexGreeter {
    async fn say_hello(
        &self,
        request: Request<complexproto::HelloRequest>,
    ) -> Result<Response<complexproto::HelloReply>, Status> {
        let response = request.into_inner().request;
        Ok(Response::new(complexproto::HelloReply { response }))
    }
}

const USAGE: &str = "usage: rust_tonic --port PORT --runtime current-thread|multi-thread";

#[derive(Clone, Copy)]
enum Flavor {
    CurrentThread,
    MultiThread,
}

fn parse_args() -> (u16, Flavor) {
    let mut args = std::env::args().skip(1);
    let (mut port, mut flavor) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()),
            "--runtime" => {
                flavor = match args.next().as_deref() {
                    Some("current-thread") => Some(Flavor::CurrentThread),
                    Some("multi-thread") => Some(Flavor::MultiThread),
                    _ => None,
                }
            }
            other => {
                eprintln!("rust_tonic: unknown argument {other:?}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    match (port, flavor) {
        (Some(p), Some(f)) => (p, f),
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
    let (port, flavor) = parse_args();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));

    // One worker either way. current_thread: the accept loop, every connection task and every
    // handler run on the main thread. multi_thread with worker_threads(1), as seed 001 changed
    // tonic's example (`#[tokio::main(worker_threads = 1)]`): `main` blocks in `block_on` running
    // only the accept loop, connections run on the one worker thread.
    let rt = match flavor {
        Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Flavor::MultiThread => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(1);
            b
        }
    }
    .enable_all()
    .build()
    .expect("build tokio runtime");

    rt.block_on(async move {
        let server = tonic::transport::Server::builder()
            .add_service(helloworld::greeter_server::GreeterServer::new(HelloGreeter))
            .add_service(complexproto::greeter_server::GreeterServer::new(ComplexGreeter))
            .serve(addr);
        // Exit promptly on a signal: don't wait for clients to close their connections
        // (a graceful drain could hang on a load generator that keeps its connection open).
        tokio::select! {
            res = server => {
                if let Err(e) = res {
                    eprintln!("rust_tonic: server error: {e}");
                    std::process::exit(1);
                }
            }
            _ = shutdown_signal() => {}
        }
    });
}
