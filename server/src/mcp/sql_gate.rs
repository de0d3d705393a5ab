//! Caps on `run_sql` queries running at once, per session and in all.
//!
//! Every tool reads through the same pool of connections per database. A
//! client that keeps starting slow queries (each stopped only at the SQL
//! time limit) would hold all of them and make every other tool wait; with
//! these caps, `run_sql` can take at most part of the pool. A query beyond
//! its session's cap is refused at once; one beyond the server's cap waits
//! for a place for a short while (quick queries of many sessions take
//! turns), then is refused. Each refusal says which cap and why.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default [`SqlConcurrency::queue_wait`].
pub const DEFAULT_QUEUE_WAIT: Duration = Duration::from_secs(5);

/// How many `run_sql` queries may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlConcurrency {
    /// In one session.
    pub per_session: usize,
    /// In the whole server.
    pub global: usize,
    /// Longest a query waits for a place under the server's cap.
    pub queue_wait: Duration,
}

impl Default for SqlConcurrency {
    /// Half the connections a database pool opens (so other tools always
    /// find one), and two per session.
    fn default() -> Self {
        let global = (super::db::max_connections() / 2).max(1);
        SqlConcurrency {
            per_session: 2.min(global),
            global,
            queue_wait: DEFAULT_QUEUE_WAIT,
        }
    }
}

/// Why a query was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlBusy {
    /// The session already runs its share.
    #[error("run_sql refused: this session already runs {0} queries (the per-session limit); wait for one to finish, or cancel it, and try again")]
    Session(usize),
    /// The server ran its share for as long as the query could wait.
    #[error("run_sql refused: the server has run {0} queries (its limit, which keeps connections free for the other tools) for all of the {1:?} this one could wait; try again later")]
    Server(usize, Duration),
}

/// The server-wide cap, shared by every session.
#[derive(Debug)]
pub struct SqlGate {
    limits: SqlConcurrency,
    global: Arc<Semaphore>,
}

/// One session's cap.
#[derive(Debug, Clone)]
pub struct SessionSqlSlots {
    slots: Arc<Semaphore>,
}

/// A running query's place under both caps; released when dropped.
#[derive(Debug)]
pub struct SqlPermit {
    _session: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
}

impl SqlGate {
    /// A gate with these caps (each at least one).
    pub fn new(limits: SqlConcurrency) -> SqlGate {
        let limits = SqlConcurrency {
            per_session: limits.per_session.max(1),
            global: limits.global.max(1),
            queue_wait: limits.queue_wait,
        };
        SqlGate {
            global: Arc::new(Semaphore::new(limits.global)),
            limits,
        }
    }

    /// Fresh slots for a new session.
    pub fn session_slots(&self) -> SessionSqlSlots {
        SessionSqlSlots {
            slots: Arc::new(Semaphore::new(self.limits.per_session)),
        }
    }

    /// A place for one query of the session holding `session`, or why not:
    /// refused at once beyond the session's cap, after waiting at most
    /// `queue_wait` beyond the server's.
    pub async fn start(&self, session: &SessionSqlSlots) -> Result<SqlPermit, SqlBusy> {
        let own = Arc::clone(&session.slots)
            .try_acquire_owned()
            .map_err(|_| SqlBusy::Session(self.limits.per_session))?;
        let busy = SqlBusy::Server(self.limits.global, self.limits.queue_wait);
        let waited = tokio::time::timeout(
            self.limits.queue_wait,
            Arc::clone(&self.global).acquire_owned(),
        )
        .await;
        match waited {
            Ok(Ok(global)) => Ok(SqlPermit {
                _session: own,
                _global: global,
            }),
            Ok(Err(_)) | Err(_) => Err(busy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn both_caps_hold() {
        let wait = Duration::from_millis(50);
        let gate = SqlGate::new(SqlConcurrency {
            per_session: 1,
            global: 2,
            queue_wait: wait,
        });
        let (a, b, c) = (
            gate.session_slots(),
            gate.session_slots(),
            gate.session_slots(),
        );
        let pa = gate.start(&a).await.expect("a");
        assert_eq!(gate.start(&a).await.err(), Some(SqlBusy::Session(1)));
        let _pb = gate.start(&b).await.expect("b");
        assert_eq!(gate.start(&c).await.err(), Some(SqlBusy::Server(2, wait)));
        drop(pa);
        assert!(gate.start(&c).await.is_ok());
    }
}
