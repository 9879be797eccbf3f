//! rust_tonic: tonic 0.14 gRPC server for rpcprof (see ../README.md for the contract).
//!
//! Serves, on 127.0.0.1:PORT (plaintext h2c):
//!   /helloworld.Greeter/SayHello    message  = "Hello " + name     (handler: `HelloGreeter`)
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
        let name = request.into_inner().name;
        let mut message = String::with_capacity(6 + name.len());
        message.push_str("Hello ");
        message.push_str(&name);
        Ok(Response::new(helloworld::HelloReply { message }))
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

fn parse_port() -> u16 {
    let mut args = std::env::args().skip(1);
    let mut port = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()),
            other => {
                eprintln!("rust_tonic: unknown argument {other:?}\nusage: rust_tonic --port PORT");
                std::process::exit(2);
            }
        }
    }
    port.unwrap_or_else(|| {
        eprintln!("usage: rust_tonic --port PORT");
        std::process::exit(2);
    })
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
    let port = parse_port();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));

    // One worker thread: a tokio `current_thread` runtime runs the accept loop, every
    // connection task and every handler on the main thread, so the server uses at most one
    // core and its profile has a single thread to look at. (The alternative,
    // `new_multi_thread().worker_threads(1)`, leaves `main` blocked in `block_on` running only
    // the accept loop while connections run on a separate worker thread.)
    let rt = tokio::runtime::Builder::new_current_thread()
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
