//! Which processes' GPU samples belong to the capture.
//!
//! NVML reports per-process utilisation for every process on a GPU; a
//! capture of one process tree keeps only that tree's (other users' jobs
//! are not ours to record), a system-wide capture keeps them all. The
//! control thread adds processes as the kernel side reports them (the
//! target, its forks, any process seen in events), the GPU sampler asks.

use std::collections::HashSet;
use std::sync::RwLock;

/// The traced processes, shared between the control thread and the GPU
/// sampler.
#[derive(Debug, Default)]
pub struct TracedPids {
    all: bool,
    pids: RwLock<HashSet<i32>>,
}

impl TracedPids {
    /// Every process counts (a system-wide capture).
    pub fn everything() -> TracedPids {
        TracedPids {
            all: true,
            pids: RwLock::default(),
        }
    }

    /// Only `initial` and the processes added later count.
    pub fn tree(initial: impl IntoIterator<Item = i32>) -> TracedPids {
        TracedPids {
            all: false,
            pids: RwLock::new(initial.into_iter().collect()),
        }
    }

    /// Adds a traced process.
    pub fn insert(&self, pid: i32) {
        if self.all {
            return;
        }
        let mut set = match self.pids.write() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        set.insert(pid);
    }

    /// Whether samples of `pid` are kept.
    pub fn keeps(&self, pid: i32) -> bool {
        if self.all {
            return true;
        }
        match self.pids.read() {
            Ok(s) => s.contains(&pid),
            Err(poisoned) => poisoned.into_inner().contains(&pid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_keeps_its_members_and_everything_keeps_all() {
        let t = TracedPids::tree([10]);
        assert!(t.keeps(10));
        assert!(!t.keeps(11));
        t.insert(11);
        assert!(t.keeps(11));
        assert!(!t.keeps(1));
        let all = TracedPids::everything();
        assert!(all.keeps(1) && all.keeps(12345));
    }
}
