//! Converts kernel timestamps (`bpf_ktime_get_ns`, CLOCK_MONOTONIC) into epoch
//! nanoseconds, the unit the trace store uses.

/// Offset between CLOCK_REALTIME and CLOCK_MONOTONIC, measured once at start.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    offset_ns: i64,
}

fn read(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Current CLOCK_MONOTONIC time in ns (the clock BPF programs stamp with).
pub fn monotonic_ns() -> i64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Current wall-clock time in epoch ns.
pub fn realtime_ns() -> i64 {
    read(libc::CLOCK_REALTIME)
}

/// Environment variable that shifts every recorded time by this many ns,
/// as if the host's clock were off by that much: lets tests of merged
/// captures (`ingero merge`) run several "hosts" on one machine with a known
/// clock offset. Unset or 0 in normal use.
pub const SKEW_ENV: &str = "INGERO_CLOCK_SKEW_NS";

/// The skew [`SKEW_ENV`] asks for, 0 when unset or not a number.
pub fn injected_skew_ns() -> i64 {
    std::env::var(SKEW_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

impl Clock {
    /// Measures the offset, keeping the tightest of a few bracketed samples
    /// (plus any skew [`SKEW_ENV`] injects).
    pub fn measure() -> Clock {
        let mut best = (i64::MAX, 0i64);
        for _ in 0..5 {
            let m0 = monotonic_ns();
            let r = realtime_ns();
            let m1 = monotonic_ns();
            let width = m1 - m0;
            if width < best.0 {
                best = (width, r - (m0 + width / 2));
            }
        }
        Clock {
            offset_ns: best.1 + injected_skew_ns(),
        }
    }

    /// Kernel monotonic ns to epoch ns.
    pub fn to_epoch(&self, mono_ns: u64) -> i64 {
        (mono_ns as i64).saturating_add(self.offset_ns)
    }

    /// Now, in epoch ns, on the same scale as converted kernel stamps.
    pub fn now_epoch(&self) -> i64 {
        monotonic_ns() + self.offset_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converted_now_is_close_to_realtime() {
        let c = Clock::measure();
        let diff = (c.to_epoch(monotonic_ns() as u64) - realtime_ns()).abs();
        assert!(diff < 5_000_000, "diff {diff}");
    }
}
