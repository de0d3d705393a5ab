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
        let mut keep = bpf_fds();
        if keep.is_empty() {
            return None;
        }
        let mut p = [0i32; 2];
        // SAFETY: p is a valid array for pipe2 to fill.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        let (r, w) = (p[0], p[1]);
        // The read end may take a lower number than some BPF descriptor (a
        // freed slot is reused), so the ranges are worked out over both.
        keep.push(r);
        let close = ranges_to_close(&keep);
        // SAFETY: the child only calls async-signal-safe syscalls on memory
        // prepared before the fork (close_range, read, _exit).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: child side, see above.
            unsafe {
                // Close everything except the BPF descriptors and the read end.
                for &(first, last) in &close {
                    libc::syscall(libc::SYS_close_range, first, last, 0u32);
                }
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

/// The descriptor ranges (first, last, inclusive) that cover every number
/// not in `keep`, up to the largest.
fn ranges_to_close(keep: &[i32]) -> Vec<(u32, u32)> {
    let mut fds: Vec<u32> = keep.iter().filter_map(|&f| u32::try_from(f).ok()).collect();
    fds.sort_unstable();
    fds.dedup();
    let mut out = Vec::with_capacity(fds.len() + 1);
    let mut next = 0u32;
    for fd in fds {
        if fd > next {
            out.push((next, fd - 1));
        }
        next = fd.saturating_add(1);
    }
    out.push((next, u32::MAX));
    out
}

#[cfg(test)]
mod tests {
    use super::ranges_to_close;

    #[test]
    fn kept_descriptors_are_never_in_a_closed_range() {
        // The read end (5) is below the BPF descriptors: it must stay open.
        let keep = [10, 11, 14, 5];
        let ranges = ranges_to_close(&keep);
        assert_eq!(ranges, vec![(0, 4), (6, 9), (12, 13), (15, u32::MAX)]);
        for fd in keep {
            let fd = fd as u32;
            assert!(ranges.iter().all(|&(a, b)| fd < a || fd > b), "{fd} closed");
        }
    }

    #[test]
    fn descriptor_zero_and_duplicates_are_handled() {
        assert_eq!(ranges_to_close(&[0, 0, 1]), vec![(2, u32::MAX)]);
    }
}
