//! Slows down failed authentications, per peer address.
//!
//! Each request refused for a missing or wrong token waits before its 401,
//! and the wait doubles with every recent failure from the same address,
//! up to [`MAX_DELAY`]. A client guessing tokens one answer after another
//! gets a few guesses a second at first, then one every few seconds. The
//! wait is a timer on that request alone: requests carrying the right token
//! are never held, whoever sends them. The table of peers is bounded.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wait before the first 401 of a peer with no recent failure.
pub const BASE_DELAY: Duration = Duration::from_millis(100);

/// Longest wait before a 401.
pub const MAX_DELAY: Duration = Duration::from_secs(5);

/// A peer with no failure for this long starts again from [`BASE_DELAY`].
pub const FORGET_AFTER: Duration = Duration::from_secs(60);

/// Peers remembered at most; beyond, forgotten peers are dropped first,
/// then all of them (an attacker rotating addresses gains the base delay).
const MAX_PEERS: usize = 4096;

/// Recent failures of one peer.
#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

/// Failed authentications per peer, and the wait each one earns.
#[derive(Debug, Default)]
pub struct AuthThrottle {
    peers: Mutex<HashMap<IpAddr, Failures>>,
}

impl AuthThrottle {
    /// Records a failure of `peer` and returns how long its 401 waits.
    pub fn record_failure(&self, peer: IpAddr) -> Duration {
        let now = Instant::now();
        let mut peers = match self.peers.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        if peers.len() >= MAX_PEERS && !peers.contains_key(&peer) {
            peers.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
            if peers.len() >= MAX_PEERS {
                peers.clear();
            }
        }
        let entry = peers.entry(peer).or_insert(Failures {
            count: 0,
            last: now,
        });
        if now.duration_since(entry.last) >= FORGET_AFTER {
            entry.count = 0;
        }
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
        delay_for(entry.count)
    }

    /// Waits as long as a failure of `peer` earns.
    pub async fn penalise(&self, peer: IpAddr) {
        let wait = self.record_failure(peer);
        tokio::time::sleep(wait).await;
    }
}

/// The wait before the 401 of a peer's `count`-th recent failure.
pub fn delay_for(count: u32) -> Duration {
    let doublings = count.saturating_sub(1).min(16);
    BASE_DELAY.saturating_mul(1u32 << doublings).min(MAX_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_grows_and_is_bounded() {
        assert_eq!(delay_for(1), BASE_DELAY);
        assert_eq!(delay_for(2), BASE_DELAY * 2);
        assert_eq!(delay_for(4), BASE_DELAY * 8);
        assert_eq!(delay_for(40), MAX_DELAY);
        assert_eq!(delay_for(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn peers_are_counted_apart() {
        let t = AuthThrottle::default();
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        let b: IpAddr = "127.0.0.2".parse().expect("ip");
        assert_eq!(t.record_failure(a), BASE_DELAY);
        assert_eq!(t.record_failure(a), BASE_DELAY * 2);
        assert_eq!(t.record_failure(b), BASE_DELAY);
    }
}
