//! Starts the command to trace, held before `exec` until its pid is in the
//! tracked map, so not one of its CUDA calls escapes the filter.
//!
//! `std::process::Command` cannot be used: its `spawn` waits for the exec,
//! which is exactly what must not happen yet. The child is forked by hand and
//! only calls async-signal-safe functions (close, read, dup2, execve, _exit).

use crate::error::CaptureError;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A child process waiting at the gate, then running.
#[derive(Debug)]
pub struct HeldChild {
    pid: i32,
    gate: Option<i32>,
    status: Option<i32>,
}

fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn cstring(bytes: &[u8], argv: &[String]) -> Result<CString, CaptureError> {
    CString::new(bytes).map_err(|_| CaptureError::Spawn {
        command: argv.join(" "),
        detail: "argument contains a NUL byte".into(),
    })
}

/// Forks `argv` (searched in PATH), leaving it blocked until [`HeldChild::release`].
pub fn spawn_held(argv: &[String]) -> Result<HeldChild, CaptureError> {
    let program = argv.first().ok_or(CaptureError::EmptyCommand)?;
    let spawn_err = |detail: String| CaptureError::Spawn {
        command: argv.join(" "),
        detail,
    };
    let path = resolve(program).ok_or_else(|| spawn_err("not found in PATH".into()))?;
    if !is_executable(&path) {
        return Err(spawn_err(format!(
            "{} is not an executable file",
            path.display()
        )));
    }
    let c_path = cstring(path.as_os_str().as_bytes(), argv)?;
    let c_args = argv
        .iter()
        .map(|a| cstring(a.as_bytes(), argv))
        .collect::<Result<Vec<_>, _>>()?;
    let c_env = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(&kv, argv)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut arg_ptrs: Vec<*const libc::c_char> = c_args.iter().map(|c| c.as_ptr()).collect();
    arg_ptrs.push(std::ptr::null());
    let mut env_ptrs: Vec<*const libc::c_char> = c_env.iter().map(|c| c.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());

    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(spawn_err(std::io::Error::last_os_error().to_string()));
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: after fork the child only calls async-signal-safe functions on
    // memory prepared before the fork, then execve or _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: both descriptors came from pipe2 above.
        unsafe {
            libc::close(r);
            libc::close(w);
        }
        return Err(spawn_err(e.to_string()));
    }
    if pid == 0 {
        // SAFETY: child side, see above.
        unsafe {
            libc::close(w);
            let mut byte = 0u8;
            while libc::read(r, (&mut byte as *mut u8).cast(), 1) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
            libc::close(r);
            libc::execve(c_path.as_ptr(), arg_ptrs.as_ptr(), env_ptrs.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: the read end belongs to the child now.
    unsafe { libc::close(r) };
    Ok(HeldChild {
        pid,
        gate: Some(w),
        status: None,
    })
}

impl HeldChild {
    /// Process id of the child.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec.
    pub fn release(&mut self) {
        if let Some(fd) = self.gate.take() {
            // SAFETY: fd is our open pipe write end; one byte from a valid buffer.
            unsafe {
                libc::write(fd, [1u8].as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
    }

    /// Exit status once the child has ended (128 + signal when killed), without blocking.
    pub fn try_wait(&mut self) -> Option<i32> {
        if self.status.is_none() {
            let mut st = 0;
            // SAFETY: waits only for our own child; st is a valid out pointer.
            let rc = unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) };
            if rc == self.pid {
                self.status = Some(decode_status(st));
            }
        }
        self.status
    }

    /// Leaves the child running; a background thread reaps it when it ends.
    pub fn detach(mut self) {
        self.release();
        if self.try_wait().is_none() {
            let pid = self.pid;
            std::thread::spawn(move || {
                let mut st = 0;
                // SAFETY: blocking wait for our own child.
                unsafe { libc::waitpid(pid, &mut st, 0) };
            });
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        self.release();
    }
}

fn decode_status(st: i32) -> i32 {
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        -1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_child_runs_only_after_release() {
        let mut c = spawn_held(&["sh".into(), "-c".into(), "exit 7".into()]).expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(c.try_wait(), None, "ran before release");
        c.release();
        let mut status = None;
        for _ in 0..200 {
            status = c.try_wait();
            if status.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(status, Some(7));
    }

    #[test]
    fn missing_program_is_a_clear_error() {
        let e = spawn_held(&["/nonexistent/prog".into()]).unwrap_err();
        assert!(e.to_string().contains("not an executable"), "{e}");
        assert!(matches!(spawn_held(&[]), Err(CaptureError::EmptyCommand)));
    }
}
