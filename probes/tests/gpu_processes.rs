//! The GPU process list on a real host: a stand-in workload that has loaded
//! the stand-in `libcuda.so.1` is listed from its memory map, and with
//! `INGERO_NVML_LIB` pointing at the stand-in NVML its GPU memory and a
//! process NVML alone knows are listed too; a name then picks the workload
//! and not its forked workers. Needs no privileges (the processes are ours).

mod common;

use ingero_probes::gpu_processes::{list, match_name, GpuProcess};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills a child when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_maps(pid: u32, what: &str) {
    let maps = format!("/proc/{pid}/maps");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(what)) {
        assert!(Instant::now() < deadline, "{pid} never mapped {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The workload's program name in this test.
const NAME: &str = "gpu-list-job";

fn find(processes: &[GpuProcess], pid: u32) -> Option<&GpuProcess> {
    processes.iter().find(|p| p.pid == pid as i32)
}

#[test]
fn maps_and_nvml_list_the_workload_and_a_name_picks_it() {
    let dir = common::standin();
    // A name of its own: other tests' stand-in workloads may still be
    // running on this host, and a name must pick this one alone.
    let tmp = tempfile::tempdir().expect("tmp");
    let exe = tmp.path().join(NAME);
    std::fs::copy(dir.join("workload"), &exe).expect("copy the workload");
    let mut workload = Command::new(&exe)
        .arg("--lib-dir")
        .arg(dir)
        .args([
            "--stdin",
            "--iters",
            "1",
            "--workers",
            "1",
            "--worker-ms",
            "100",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map(Reaped)
        .expect("spawn the stand-in workload");
    wait_for_maps(workload.0.id(), "libcuda.so.1");
    // A process with no CUDA library that NVML says is on the GPU.
    let other = Command::new("sleep")
        .arg("600")
        .spawn()
        .map(Reaped)
        .expect("spawn sleep");
    let (wpid, opid) = (workload.0.id(), other.0.id());
    std::env::set_var(
        ingero_probes::nvml::NVML_LIB_ENV,
        dir.join("libnvidia-ml.so.1"),
    );
    std::env::set_var(
        "STANDIN_NVML_COMPUTE",
        format!("{wpid}:123456789,{opid}:-1"),
    );

    let got = list();
    assert_eq!(got.nvml.error, None, "{:?}", got.nvml);
    assert_eq!(got.nvml.devices, 1);
    let w = find(&got.processes, wpid).expect("the workload is listed");
    assert!(
        w.libcuda
            .as_deref()
            .is_some_and(|l| l.ends_with("/libcuda.so.1")),
        "{w:?}"
    );
    assert_eq!(w.gpu_memory_bytes, Some(123_456_789));
    assert_eq!(w.gpus, vec![0]);
    assert_eq!(w.comm, NAME);
    assert!(w.cmdline.contains("--stdin"), "{w:?}");
    assert!(
        w.started_at.as_deref().is_some_and(|s| s.ends_with('Z')),
        "{w:?}"
    );
    assert!(!w.user.is_empty());
    let o = find(&got.processes, opid).expect("the NVML-only process is listed");
    assert_eq!((o.libcuda.as_deref(), o.gpu_memory_bytes), (None, None));
    assert_eq!(o.gpus, vec![0]);
    assert_eq!(match_name(&got.processes, NAME), Ok(wpid as i32));

    // Released, the workload forks a worker (it maps the library too) and
    // the name still means the workload.
    let stdin = workload.0.stdin.as_mut().expect("stdin");
    stdin.write_all(b"go\n").expect("release the workload");
    stdin.flush().expect("flush");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = list();
        let workers = now
            .processes
            .iter()
            .filter(|p| p.ppid == wpid as i32 && p.libcuda.is_some())
            .count();
        if workers > 0 {
            assert_eq!(match_name(&now.processes, NAME), Ok(wpid as i32));
            break;
        }
        if Instant::now() > deadline || workload.0.try_wait().ok().flatten().is_some() {
            panic!("the worker was never seen: {:?}", now.processes);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
