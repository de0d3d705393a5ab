//! The simulated GPU: one in-order engine that executes kernels and copies
//! back to back.
//!
//! Work is enqueued with a known duration, so the completion time of
//! everything queued so far is known at once; a synchronising call simply
//! waits until the engine drains. When the host is late to enqueue, the
//! engine sits idle, which is exactly the starvation the demo illustrates.

/// Pinned (page-locked) host-to-device bandwidth, bytes per second.
pub const PINNED_BW: i64 = 24_000_000_000;

/// Host memcpy bandwidth the driver reaches when staging a pageable buffer
/// into its pinned bounce buffer, bytes per second.
pub const STAGING_BW: i64 = 5_000_000_000;

/// Time to move `bytes` at `bytes_per_s`, in ns (at least 1).
pub fn transfer_ns(bytes: i64, bytes_per_s: i64) -> i64 {
    ((bytes as i128 * 1_000_000_000) / bytes_per_s.max(1) as i128).max(1) as i64
}

/// In-order execution engine of the simulated device.
#[derive(Debug, Default, Clone)]
pub struct Gpu {
    busy_until: i64,
    busy_total: i64,
    busy: Vec<Busy>,
}

/// One stretch of back-to-back work of one process on the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// Start, epoch ns.
    pub start_ns: i64,
    /// End, epoch ns.
    pub end_ns: i64,
    /// Process whose work it is.
    pub pid: i32,
}

impl Gpu {
    /// Queues `dur_ns` of `pid`'s work at `now`; returns when it will
    /// complete. The stretch is kept for the simulated NVML samples.
    pub fn enqueue_for(&mut self, now: i64, dur_ns: i64, pid: i32) -> i64 {
        let start = self.busy_until.max(now);
        let dur = dur_ns.max(0);
        self.busy_until = start + dur;
        self.busy_total += dur;
        if dur > 0 {
            match self.busy.last_mut() {
                Some(b) if b.pid == pid && b.end_ns == start => b.end_ns = start + dur,
                _ => self.busy.push(Busy {
                    start_ns: start,
                    end_ns: start + dur,
                    pid,
                }),
            }
        }
        self.busy_until
    }

    /// Every stretch of work so far, in time order.
    pub fn busy(&self) -> &[Busy] {
        &self.busy
    }

    /// When everything queued so far will have finished.
    pub fn drained_at(&self) -> i64 {
        self.busy_until
    }

    /// Total time the engine has been (or is scheduled to be) busy.
    pub fn busy_total(&self) -> i64 {
        self.busy_total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_queues_back_to_back_and_idles_when_late() {
        let mut g = Gpu::default();
        assert_eq!(g.enqueue_for(100, 50, 1), 150);
        assert_eq!(g.enqueue_for(120, 30, 1), 180);
        // Host comes back late: the engine was idle from 180 to 500.
        assert_eq!(g.enqueue_for(500, 10, 1), 510);
        assert_eq!(g.busy_total(), 90);
        assert_eq!(g.drained_at(), 510);
        let stretches: Vec<_> = g.busy().iter().map(|b| (b.start_ns, b.end_ns)).collect();
        assert_eq!(stretches, vec![(100, 180), (500, 510)]);
    }

    #[test]
    fn transfer_time() {
        assert_eq!(transfer_ns(24_000_000_000, PINNED_BW), 1_000_000_000);
        assert_eq!(transfer_ns(0, PINNED_BW), 1);
    }
}
