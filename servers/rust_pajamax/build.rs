//! Compiles servers/proto/*.proto with prost-build and generates pajamax 0.4 service glue.
//!
//! pajamax-build 0.3.0 (the newest published) emits code for pajamax 0.3's hidden trait
//! (`PajamaxService::handle(.., frame_len)` and `local_build_response(.., frame_len)`), which does not
//! compile against pajamax 0.4.0. `PajamaxGen04` below is the same local-mode generator written against
//! pajamax 0.4.0's signatures:
//!
//! ```text
//! fn route(&self, path: &[u8]) -> Option<usize>;
//! fn handle(&self, req_disc: usize, req_buf: &[u8], stream_id: u32) -> Result<(), pajamax::error::Error>;
//! fn is_dispatch_mode(&self) -> bool;
//! pub fn local_build_response<Reply: prost::Message>(stream_id: u32, response: pajamax::Response<Reply>) -> Result<(), Error>;
//! ```
//!
//! For each proto service `S` it emits (into the package's module, like pajamax-build does):
//! - `pub trait S { fn method(&self, req: In) -> pajamax::Response<Out>; }`, implemented by the app;
//! - `pub struct SServer<T: S>(T)` implementing `pajamax::PajamaxService` in local mode: decode the request
//!   with prost, call the app's method inline, and hand the reply to pajamax's per-connection response buffer.

use std::fmt::Write;
use std::path::PathBuf;

struct PajamaxGen04;

impl prost_build::ServiceGenerator for PajamaxGen04 {
    fn generate(&mut self, service: prost_build::Service, buf: &mut String) {
        let name = &service.name;

        // trait {Service}: the application implements this.
        writeln!(buf, "pub trait {name} {{").unwrap();
        for m in &service.methods {
            writeln!(
                buf,
                "    fn {}(&self, req: {}) -> pajamax::Response<{}>;",
                m.name, m.input_type, m.output_type
            )
            .unwrap();
        }
        writeln!(buf, "}}\n").unwrap();

        // struct {Service}Server<T>: intermediary between pajamax and the application.
        writeln!(
            buf,
            "pub struct {name}Server<T: {name}>(T);

#[allow(dead_code)]
impl<T: {name}> {name}Server<T> {{
    pub fn new(inner: T) -> Self {{ Self(inner) }}
    pub fn inner(&self) -> &T {{ &self.0 }}
}}

impl<T> pajamax::PajamaxService for {name}Server<T>
where
    T: {name},
{{
    fn is_dispatch_mode(&self) -> bool {{ false }}

    fn route(&self, path: &[u8]) -> Option<usize> {{
        match path {{"
        )
        .unwrap();
        for (i, m) in service.methods.iter().enumerate() {
            writeln!(
                buf,
                "            b\"/{}.{}/{}\" => Some({i}),",
                service.package, service.proto_name, m.proto_name
            )
            .unwrap();
        }
        writeln!(
            buf,
            "            _ => None,
        }}
    }}

    fn handle(&self, req_disc: usize, req_buf: &[u8], stream_id: u32) -> Result<(), pajamax::error::Error> {{
        use prost::Message;
        match req_disc {{"
        )
        .unwrap();
        for (i, m) in service.methods.iter().enumerate() {
            writeln!(
                buf,
                "            {i} => {{
                let request = {}::decode(req_buf)?;
                let response = self.0.{}(request);
                pajamax::local_build_response(stream_id, response)
            }}",
                m.input_type, m.name
            )
            .unwrap();
        }
        writeln!(
            buf,
            "            d => unreachable!(\"invalid req_disc: {{d}}\"),
        }}
    }}
}}"
        )
        .unwrap();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../proto");
    let protos = [
        proto_dir.join("helloworld.proto"),
        proto_dir.join("complexproto.proto"),
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    prost_build::Config::new()
        .service_generator(Box::new(PajamaxGen04))
        .compile_protos(&protos, &[&proto_dir])?;
    Ok(())
}
