//! Compiles the kernel-side C in `bpf/` into one BPF object with clang, so the
//! loader can embed it. Only clang is needed (no libbpf headers, no vmlinux.h).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let bpf_dir = PathBuf::from("bpf");
    for entry in [
        "ingero.bpf.c",
        "common.h",
        "cuda.h",
        "host.h",
        "ingero_bpf.h",
        "ingero_events.h",
    ] {
        println!("cargo:rerun-if-changed={}", bpf_dir.join(entry).display());
    }
    println!("cargo:rerun-if-env-changed=INGERO_CLANG");
    let out = match env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir).join("ingero.bpf.o"),
        None => fail("OUT_DIR is not set (build through cargo)"),
    };
    let clang = env::var("INGERO_CLANG").unwrap_or_else(|_| "clang".to_string());
    let status = Command::new(&clang)
        .args([
            "-target",
            "bpf",
            "-O2",
            "-g",
            "-D__TARGET_ARCH_x86",
            "-Wall",
            "-Werror",
            "-c",
        ])
        .arg(bpf_dir.join("ingero.bpf.c"))
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("{clang} failed on bpf/ingero.bpf.c ({s})")),
        Err(e) => fail(&format!(
            "cannot run {clang} ({e}); install clang (`apt-get install clang`) or set INGERO_CLANG"
        )),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("ingero-probes build: {msg}");
    std::process::exit(1)
}
