//! Token channels: the bounded queues between simulated threads (prefetch
//! slots, ready batches).

use std::collections::VecDeque;

/// A counting semaphore with a FIFO of sleeping takers.
#[derive(Debug, Default)]
pub(crate) struct Chan {
    pub tokens: u32,
    pub waiters: VecDeque<usize>,
}

impl Chan {
    /// A channel holding `tokens` to begin with.
    pub fn with_tokens(tokens: u32) -> Chan {
        Chan {
            tokens,
            waiters: VecDeque::new(),
        }
    }
}
