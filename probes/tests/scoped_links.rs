//! Nobody else pays: the CUDA probes are bound to the traced processes, so
//! the kernel writes its breakpoints only into their memory. An untraced
//! process that maps the same library file runs its original code, with no
//! trap at all. Checked on the code bytes themselves: the first bytes of
//! `cuLaunchKernel` as each process's memory holds them (`/proc/PID/mem`)
//! against the library file's.

mod common;

use ingero_probes::{start, CaptureConfig, Target};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Bytes compared from the start of the function: the probe sits on its
/// first instruction or right after a 4-byte landing pad (`endbr64`).
const CODE_BYTES: usize = 16;

/// (as the process's memory holds them, as the library file holds them).
fn code_bytes(pid: i32, addr: u64) -> (Vec<u8>, Vec<u8>) {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
    let (start, pgoff, path) = maps
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (lo, hi) = f.first()?.split_once('-')?;
            let (lo, hi) = (
                u64::from_str_radix(lo, 16).ok()?,
                u64::from_str_radix(hi, 16).ok()?,
            );
            let off = u64::from_str_radix(f.get(2)?, 16).ok()?;
            let path = PathBuf::from(f.get(5)?);
            (lo <= addr && addr < hi).then_some((lo, off, path))
        })
        .expect("a mapping holds cuLaunchKernel");
    let mut in_memory = vec![0u8; CODE_BYTES];
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).expect("mem");
    mem.seek(SeekFrom::Start(addr)).expect("seek mem");
    mem.read_exact(&mut in_memory).expect("read mem");
    let mut in_file = vec![0u8; CODE_BYTES];
    let mut file = std::fs::File::open(&path).expect("library file");
    file.seek(SeekFrom::Start(addr - start + pgoff))
        .expect("seek file");
    file.read_exact(&mut in_file).expect("read file");
    (in_memory, in_file)
}

/// Waits for the workload's address file, returns the address.
fn address(file: &Path) -> u64 {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(t) = std::fs::read_to_string(file) {
            if let Some(hex) = t.trim().strip_prefix("0x") {
                return u64::from_str_radix(hex, 16).expect("hex address");
            }
        }
        assert!(Instant::now() < until, "no address in {}", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid of the process whose command line names `marker`.
fn pid_with_arg(marker: &str) -> i32 {
    std::fs::read_dir("/proc")
        .expect("proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c.split(|b| *b == 0).any(|a| a == marker.as_bytes()))
                .unwrap_or(false)
        })
        .expect("traced workload running")
}

#[test]
fn an_untraced_process_of_the_same_library_keeps_its_original_code() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let traced_addr = tmp.path().join("traced.addr");
    let neighbour_addr = tmp.path().join("neighbour.addr");
    let workload = dir.join("workload");
    let mut neighbour = Command::new(&workload)
        .args(["--wait-ms", "3000", "--iters", "10", "--addr-file"])
        .arg(&neighbour_addr)
        .spawn()
        .expect("neighbour");
    let argv: Vec<String> = vec![
        workload.display().to_string(),
        "--wait-ms".into(),
        "3000".into(),
        "--iters".into(),
        "10".into(),
        "--addr-file".into(),
        traced_addr.display().to_string(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), tmp.path().join("scoped.db"));
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(Duration::from_secs(60));
    let capture = start(cfg).expect("start");
    let (t_addr, n_addr) = (address(&traced_addr), address(&neighbour_addr));
    let traced = pid_with_arg(&traced_addr.display().to_string());
    let (t_mem, t_file) = code_bytes(traced, t_addr);
    let (n_mem, n_file) = code_bytes(neighbour.id() as i32, n_addr);
    assert_eq!(t_file, n_file, "one library file");
    assert_ne!(t_mem, t_file, "the traced process has the breakpoint");
    assert!(
        t_mem
            .iter()
            .zip(&t_file)
            .any(|(m, f)| *m == 0xcc && *f != 0xcc),
        "an int3 in the traced process: {t_mem:02x?} against {t_file:02x?}"
    );
    assert_eq!(
        n_mem, n_file,
        "the untraced neighbour runs the file's code, no breakpoint"
    );
    let summary = capture.wait().expect("capture");
    assert_eq!(summary.command_exit, Some(0));
    assert!(neighbour.wait().expect("neighbour exit").success());
}
