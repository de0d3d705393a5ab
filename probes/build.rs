//! Provides the BPF objects the loader embeds (the main object, and the
//! multi-uprobe CUDA programs), one per `bpf/*.bpf.c`: compiled from source
//! with clang when clang is there, otherwise the committed copies in
//! `bpf/prebuilt/`, so the crate builds with the Rust toolchain alone. A
//! cargo warning says which was used.
//!
//! Environment:
//! - `INGERO_CLANG=PATH`: the clang to run; it must work (no fallback).
//! - `INGERO_BPF_PREBUILT=1`: use the committed objects even where clang is.
//! - `INGERO_BPF_UPDATE=1`: compile, then write the objects and the clang
//!   version into `bpf/prebuilt/` (to be committed).
//!
//! The clang flags live in `bpf/cflags`, which `.ci/check-bpf-objects` reads
//! too; clang runs from `bpf/` on a relative source name, so no absolute path
//! reaches the objects and any clone builds the same bytes.
//!
//! It also reads the C layouts of the records and tables user space shares
//! with the kernel (`build/c_layout.rs`) and writes `record_layout.rs` into
//! `OUT_DIR`: size, alignment, field offset and field type checks that
//! `src/records/` includes, so a header change not mirrored in Rust fails
//! the build.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

// Shared with tests/record_layout.rs, which uses the parts this does not.
#[allow(dead_code)]
#[path = "build/c_layout.rs"]
mod c_layout;

/// File in `bpf/prebuilt/` naming the clang that built the committed objects.
const VERSION_FILE: &str = "clang-version";

fn main() {
    println!("cargo:rerun-if-changed=bpf");
    for var in ["INGERO_CLANG", "INGERO_BPF_PREBUILT", "INGERO_BPF_UPDATE"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out_dir = match env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => fail("OUT_DIR is not set (build through cargo)"),
    };
    let bpf = match env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) => PathBuf::from(dir).join("bpf"),
        None => fail("CARGO_MANIFEST_DIR is not set (build through cargo)"),
    };
    layout_checks(&bpf, &out_dir);
    let prebuilt_only = switch("INGERO_BPF_PREBUILT");
    let update = switch("INGERO_BPF_UPDATE");
    if prebuilt_only && update {
        fail("INGERO_BPF_PREBUILT=1 and INGERO_BPF_UPDATE=1 exclude each other: unset one");
    }
    let sources = sources(&bpf);
    if prebuilt_only {
        use_prebuilt(&bpf, &sources, &out_dir, "INGERO_BPF_PREBUILT=1 is set");
        return;
    }
    let explicit = env::var("INGERO_CLANG").ok().filter(|c| !c.is_empty());
    let clang = explicit.clone().unwrap_or_else(|| "clang".to_string());
    let version = match clang_version(&clang) {
        Ok(v) => v,
        Err(e) if explicit.is_none() && !update => {
            let why = format!("clang is not available ({e})");
            use_prebuilt(&bpf, &sources, &out_dir, &why);
            return;
        }
        Err(e) => fail(&format!(
            "cannot run {clang} ({e}): install clang (`apt-get install clang`), point \
             INGERO_CLANG at it, or set INGERO_BPF_PREBUILT=1 to use the committed objects"
        )),
    };
    let flags = read_flags(&bpf.join("cflags"));
    let mut differing = Vec::new();
    for (source, object) in &sources {
        let out = out_dir.join(object);
        compile(&clang, &flags, &bpf, source, &out);
        let built = read(&out);
        let committed = bpf.join("prebuilt").join(object);
        if fs::read(&committed).ok().as_deref() != Some(built.as_slice()) {
            differing.push(object.clone());
            if update {
                write(&committed, &built);
            }
        }
    }
    let version_file = bpf.join("prebuilt").join(VERSION_FILE);
    let recorded = fs::read_to_string(&version_file).unwrap_or_default();
    if update && recorded.trim() != version {
        write(&version_file, format!("{version}\n").as_bytes());
    }
    let verdict = match (differing.is_empty(), update) {
        (true, _) => "the same bytes as bpf/prebuilt".to_string(),
        (false, true) => format!("written to bpf/prebuilt: {}", differing.join(", ")),
        (false, false) => format!(
            "{} differ from bpf/prebuilt (committed with {}); refresh them with \
             `INGERO_BPF_UPDATE=1 cargo build -p ingero-probes` and commit",
            differing.join(", "),
            non_empty(recorded.trim())
        ),
    };
    println!("cargo:warning=BPF objects compiled from source with {version} ({verdict})");
}

/// Writes `record_layout.rs`, the checks of the Rust mirrors against the
/// C layouts in `bpf`.
fn layout_checks(bpf: &Path, out_dir: &Path) {
    let read = |file: &str| {
        let path = bpf.join(file);
        fs::read_to_string(&path).map_err(|e| format!("cannot read {} ({e})", path.display()))
    };
    match c_layout::checks(read) {
        Ok(source) => write(&out_dir.join("record_layout.rs"), source.as_bytes()),
        Err(e) => fail(&e),
    }
}

/// Sources `*.bpf.c` in `bpf`, sorted, each with its object name.
fn sources(bpf: &Path) -> Vec<(String, String)> {
    let entries = match fs::read_dir(bpf) {
        Ok(e) => e,
        Err(e) => fail(&format!("cannot list {} ({e})", bpf.display())),
    };
    let mut found: Vec<(String, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|name| {
            let stem = name.strip_suffix(".bpf.c")?.to_string();
            Some((name, format!("{stem}.bpf.o")))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        fail(&format!("no *.bpf.c in {}", bpf.display()));
    }
    found
}

/// True when `var` is `1`; unset, empty or `0` is false, anything else fails.
fn switch(var: &str) -> bool {
    match env::var(var).as_deref() {
        Ok("1") => true,
        Ok("") | Ok("0") | Err(_) => false,
        Ok(other) => fail(&format!(
            "{var}={other:?}: use 1 to set it, or leave it unset"
        )),
    }
}

/// Copies the committed objects into `out_dir`.
fn use_prebuilt(bpf: &Path, sources: &[(String, String)], out_dir: &Path, why: &str) {
    let prebuilt = bpf.join("prebuilt");
    for (source, object) in sources {
        let committed = prebuilt.join(object);
        let bytes = fs::read(&committed).unwrap_or_else(|e| {
            fail(&format!(
                "{why}, and the committed object {} for {source} cannot be read ({e}): \
                 install clang (`apt-get install clang`) or set INGERO_CLANG to compile it, \
                 or restore it with `git checkout -- probes/bpf/prebuilt`",
                committed.display()
            ))
        });
        write(&out_dir.join(object), &bytes);
    }
    let recorded = fs::read_to_string(prebuilt.join(VERSION_FILE)).unwrap_or_default();
    println!(
        "cargo:warning=using the committed BPF objects in bpf/prebuilt \
         (built with {}): {why}; install clang to compile them from source",
        non_empty(recorded.trim())
    );
}

fn non_empty(version: &str) -> &str {
    if version.is_empty() {
        "an unrecorded clang"
    } else {
        version
    }
}

/// First line of `clang --version`.
fn clang_version(clang: &str) -> Result<String, String> {
    let out = Command::new(clang)
        .arg("--version")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("`{clang} --version` failed ({})", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or("").trim().to_string())
}

/// The flags in `cflags`: white-space separated, `#` to the end of a line is
/// a comment (the same rule as `.ci/check-bpf-objects`).
fn read_flags(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| fail(&format!("cannot read {} ({e})", path.display())));
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

/// `clang FLAGS -c SOURCE -o OUT`, run from `bpf` on the relative `source`.
fn compile(clang: &str, flags: &[String], bpf: &Path, source: &str, out: &Path) {
    let status = Command::new(clang)
        .current_dir(bpf)
        .args(flags)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("{clang} failed on bpf/{source} ({s})")),
        Err(e) => fail(&format!("cannot run {clang} on bpf/{source} ({e})")),
    }
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| fail(&format!("cannot read {} ({e})", path.display())))
}

fn write(path: &Path, bytes: &[u8]) {
    if let Err(e) = fs::write(path, bytes) {
        fail(&format!("cannot write {} ({e})", path.display()));
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("ingero-probes build: {msg}");
    std::process::exit(1)
}
