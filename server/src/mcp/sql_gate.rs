//! Caps on `run_sql` queries running at once, per session and in all.
//!
//! Every tool reads through the same pool of connections per database. A
//! client that keeps starting slow queries (each stopped only at the SQL
//! time limit) would hold all of them and make every other tool wait; with
//! these caps, `run_sql` can take at most part of the pool, and a query
//! beyond a cap is refused at once with an error saying which cap and why.

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many `run_sql` queries may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlConcurrency {
    /// In one session.
    pub per_session: usize,
    /// In the whole server.
    pub global: usize,
}

impl Default for SqlConcurrency {
    /// Half the connections a database pool opens (so other tools always
    /// find one), and two per session.
    fn default() -> Self {
        let global = (super::db::max_connections() / 2).max(1);
        SqlConcurrency {
            per_session: 2.min(global),
            global,
        }
    }
}

/// Why a query was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlBusy {
    /// The session already runs its share.
    #[error("run_sql refused: this session already runs {0} queries (the per-session limit); wait for one to finish, or cancel it, and try again")]
    Session(usize),
    /// The server already runs its share.
    #[error("run_sql refused: the server already runs {0} queries (its limit, which keeps connections free for the other tools); try again in a few seconds")]
    Server(usize),
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

    /// A place for one query of the session holding `session`, or why not.
    pub fn try_start(&self, session: &SessionSqlSlots) -> Result<SqlPermit, SqlBusy> {
        let own = Arc::clone(&session.slots)
            .try_acquire_owned()
            .map_err(|_| SqlBusy::Session(self.limits.per_session))?;
        let global = Arc::clone(&self.global)
            .try_acquire_owned()
            .map_err(|_| SqlBusy::Server(self.limits.global))?;
        Ok(SqlPermit {
            _session: own,
            _global: global,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_caps_hold() {
        let gate = SqlGate::new(SqlConcurrency {
            per_session: 1,
            global: 2,
        });
        let (a, b, c) = (
            gate.session_slots(),
            gate.session_slots(),
            gate.session_slots(),
        );
        let pa = gate.try_start(&a).expect("a");
        assert_eq!(gate.try_start(&a).err(), Some(SqlBusy::Session(1)));
        let _pb = gate.try_start(&b).expect("b");
        assert_eq!(gate.try_start(&c).err(), Some(SqlBusy::Server(2)));
        drop(pa);
        assert!(gate.try_start(&c).is_ok());
    }
}
