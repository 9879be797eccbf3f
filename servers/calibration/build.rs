// Generate the prost messages and tonic server stubs from the shared protos in ../proto.
// Needs protoc (Debian protobuf-compiler, /usr/bin/protoc) or $PROTOC.
//
// helloworld.HelloReply is not generated: `extern_path` makes the generated Greeter server use
// the hand-written `calibration::PaddedHelloReply` (src/main.rs), which encodes exactly like the
// generated type when `--pad-items 0` and carries the `--pad-items` payload otherwise.
const PROTOS: &[&str] = &["../proto/helloworld.proto", "../proto/complexproto.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Rerun only when the protos or this script change (not on every file in the folder).
    println!("cargo:rerun-if-changed=build.rs");
    for p in PROTOS {
        println!("cargo:rerun-if-changed={p}");
    }
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".helloworld.HelloReply", "crate::PaddedHelloReply")
        .compile_protos(PROTOS, &["../proto"])?;
    Ok(())
}
