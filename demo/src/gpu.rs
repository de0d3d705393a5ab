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
}

impl Gpu {
    /// Queues `dur_ns` of work at `now`; returns when it will complete.
    pub fn enqueue(&mut self, now: i64, dur_ns: i64) -> i64 {
        let start = self.busy_until.max(now);
        self.busy_until = start + dur_ns.max(0);
        self.busy_total += dur_ns.max(0);
        self.busy_until
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
        assert_eq!(g.enqueue(100, 50), 150);
        assert_eq!(g.enqueue(120, 30), 180);
        // Host comes back late: the engine was idle from 180 to 500.
        assert_eq!(g.enqueue(500, 10), 510);
        assert_eq!(g.busy_total(), 90);
        assert_eq!(g.drained_at(), 510);
    }

    #[test]
    fn transfer_time() {
        assert_eq!(transfer_ns(24_000_000_000, PINNED_BW), 1_000_000_000);
        assert_eq!(transfer_ns(0, PINNED_BW), 1);
    }
}
