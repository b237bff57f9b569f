//! Compiles `proto/cluster.proto` into the generated `proto` module, with
//! the `protoc` binary shipped by `protoc-bin-vendored`, so a fresh machine
//! needs no system protoc.

use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    const PROTO: &str = "proto/cluster.proto";
    println!("cargo:rerun-if-changed={PROTO}");
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_with_config(config, &[PROTO], &["proto"])?;
    Ok(())
}
