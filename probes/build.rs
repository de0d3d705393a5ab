//! Compiles the kernel-side C in `bpf/` into BPF objects with clang (the main
//! object, and the multi-uprobe CUDA programs), so the loader can embed them.
//! Only clang is needed (no libbpf headers, no vmlinux.h).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let bpf_dir = PathBuf::from("bpf");
    for entry in [
        "ingero.bpf.c",
        "cuda_multi.bpf.c",
        "common.h",
        "cuda.h",
        "host.h",
        "ingero_bpf.h",
        "ingero_events.h",
    ] {
        println!("cargo:rerun-if-changed={}", bpf_dir.join(entry).display());
    }
    println!("cargo:rerun-if-env-changed=INGERO_CLANG");
    let out_dir = match env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => fail("OUT_DIR is not set (build through cargo)"),
    };
    let clang = env::var("INGERO_CLANG").unwrap_or_else(|_| "clang".to_string());
    for (source, object) in [
        ("ingero.bpf.c", "ingero.bpf.o"),
        ("cuda_multi.bpf.c", "cuda_multi.bpf.o"),
    ] {
        compile(&clang, &bpf_dir.join(source), &out_dir.join(object));
    }
}

fn compile(clang: &str, source: &Path, out: &Path) {
    let status = Command::new(clang)
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
        .arg(source)
        .arg("-o")
        .arg(out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("{clang} failed on {} ({s})", source.display())),
        Err(e) => fail(&format!(
            "cannot run {clang} ({e}); install clang (`apt-get install clang`) or set INGERO_CLANG"
        )),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("ingero-probes build: {msg}");
    std::process::exit(1)
}
