//! Fast detach. Closing a uprobe link makes the kernel wait for an RCU
//! grace period, and it does so one link at a time (about 0.1 s each here,
//! several seconds for a pair of CUDA libraries). A short-lived child process
//! takes over references to the BPF and perf file descriptors, so our own
//! closes only drop references and return at once; the child does the slow
//! final release after we are done, and nobody waits for it.

use std::fs;

/// Open descriptors that refer to BPF objects or perf events.
fn bpf_fds() -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<i32> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let fd: i32 = e.file_name().to_str()?.parse().ok()?;
            let target = fs::read_link(e.path()).ok()?;
            let t = target.to_string_lossy();
            (t.starts_with("anon_inode:bpf") || t.starts_with("anon_inode:[perf_event]"))
                .then_some(fd)
        })
        .collect();
    fds.sort_unstable();
    fds
}

/// A child holding copies of our BPF descriptors until [`Holder::release`].
pub struct Holder {
    pid: i32,
    gate: i32,
}

impl Holder {
    /// Forks the holder. `None` when it cannot (then closes are just slow).
    pub fn spawn() -> Option<Holder> {
        let keep = bpf_fds();
        if keep.is_empty() {
            return None;
        }
        let mut p = [0i32; 2];
        // SAFETY: p is a valid array for pipe2 to fill.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        let (r, w) = (p[0], p[1]);
        // SAFETY: the child only calls async-signal-safe syscalls on memory
        // prepared before the fork (close_range, read, _exit).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: child side, see above.
            unsafe {
                // Close everything except the BPF descriptors and the read end.
                let mut next = 0u32;
                for &fd in keep.iter().chain(std::iter::once(&r)) {
                    let fd = fd as u32;
                    if fd > next {
                        libc::syscall(libc::SYS_close_range, next, fd - 1, 0u32);
                    }
                    next = next.max(fd + 1);
                }
                libc::syscall(libc::SYS_close_range, next, u32::MAX, 0u32);
                let mut b = 0u8;
                while libc::read(r, (&mut b as *mut u8).cast(), 1) != 0 {
                    if *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
                libc::_exit(0);
            }
        }
        // SAFETY: our copy of the read end is not needed.
        unsafe { libc::close(r) };
        if pid < 0 {
            // SAFETY: closing the write end we own.
            unsafe { libc::close(w) };
            return None;
        }
        Some(Holder { pid, gate: w })
    }

    /// Lets the holder exit (releasing the last references) and reaps it in
    /// the background.
    pub fn release(self) {
        // SAFETY: closing our pipe end; the child sees EOF.
        unsafe { libc::close(self.gate) };
        let pid = self.pid;
        let _ = std::thread::Builder::new()
            .name("ingero-reap".into())
            .spawn(move || {
                let mut st = 0;
                // SAFETY: waiting for our own child.
                unsafe { libc::waitpid(pid, &mut st, 0) };
            });
    }
}
