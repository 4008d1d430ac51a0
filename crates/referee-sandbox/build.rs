//! Builds `src/native.c` (the zygote's request loop and a run's setup) into a shared object that
//! slot.rs embeds and hands to the zygote as a sealed memfd, so no C toolchain is needed where
//! the sandbox runs, only where it is built. Without a C compiler the build fails here and says
//! so: a sandbox without the native loop would be a different, slower and less tested one.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "src/native.c";
    println!("cargo:rerun-if-changed={src}");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("referee_native.so");
    let compiler = cc::Build::new().get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.args([
        "-shared",
        "-fPIC",
        "-O2",
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fno-strict-aliasing",
        // Two segments (code, data) instead of five: every mapping of the zygote is copied at
        // each clone and torn down at each exit. (RELRO would protect the GOT from a run that
        // can already write anywhere in its own memory; it buys nothing here.)
        "-Wl,-z,noseparate-code,-z,norelro",
        "-o",
    ])
    .arg(&out)
    .arg(src);
    let status = cmd.status().unwrap_or_else(|e| {
        panic!(
            "referee-sandbox needs a C compiler to build its zygote loop ({src}); running {} failed: {e}",
            compiler.path().display()
        )
    });
    assert!(
        status.success(),
        "referee-sandbox: compiling {src} failed ({status})"
    );
}
