//! SIGINT, SIGTERM and SIGHUP for `ingero trace`: the first ends the
//! capture the normal way and names itself as the file's stop reason; a
//! second aborts at once. The handler only writes the signal's number into
//! a pipe (all a handler may safely do); a thread reads it and acts.

use std::io::Read;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// Write end of the pipe the handler writes into (-1 before install).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The signals that end a capture, with the names the file records.
const ENDING: [(libc::c_int, &str); 3] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
];

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = sig as u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is one valid byte.
        unsafe { libc::write(fd, std::ptr::addr_of!(byte).cast(), 1) };
    }
}

/// Installs the handlers. `first` runs (on a thread of its own) with the
/// name of the first signal; a second signal prints a line and exits 130
/// without finalising.
pub fn install(first: impl FnOnce(&'static str) + Send + 'static) -> std::io::Result<()> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds is a valid array of two descriptors for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just opened fds[0]; this File is its only owner.
    let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    PIPE_WRITE.store(fds[1], Ordering::Relaxed);
    std::thread::Builder::new()
        .name("ingero-signals".into())
        .spawn(move || {
            let mut first = Some(first);
            let mut byte = [0u8; 1];
            while reader.read_exact(&mut byte).is_ok() {
                match first.take() {
                    Some(f) => f(name_of(i32::from(byte[0]))),
                    None => {
                        eprintln!("ingero: second signal, aborting without finalising the capture");
                        std::process::exit(130);
                    }
                }
            }
        })?;
    for (sig, _) in ENDING {
        // SAFETY: a zeroed sigaction with a plain handler and an empty
        // mask is valid; on_signal only does async-signal-safe work.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The recorded name of an ending signal.
fn name_of(sig: i32) -> &'static str {
    ENDING
        .iter()
        .find(|(s, _)| *s == sig)
        .map_or("signal", |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ending_signals_have_their_usual_names() {
        assert_eq!(name_of(libc::SIGTERM), "SIGTERM");
        assert_eq!(name_of(libc::SIGHUP), "SIGHUP");
        assert_eq!(name_of(libc::SIGINT), "SIGINT");
        assert_eq!(name_of(0), "signal");
    }
}
