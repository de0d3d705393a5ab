//! What part of a trace an analysis looks at.

use ingero_store::TimeWindow;
use serde::{Deserialize, Serialize};

mod rank;

pub use rank::pid_of_rank;

/// A time window (relative to the capture end) and an optional process filter.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Scope {
    /// Window relative to the end of the capture.
    pub window: TimeWindow,
    /// Only this process (and, for host causes, its relatives) when set.
    pub pid: Option<i32>,
}

impl Scope {
    /// This scope narrowed to the process of global rank `rank`
    /// (`processes.rank`; a merged file or a capture of a node's ranks);
    /// unchanged when `rank` is `None`.
    pub fn for_rank(
        self,
        db: &ingero_store::TraceDb,
        rank: Option<i32>,
    ) -> crate::error::Result<Scope> {
        let Some(rank) = rank else {
            return Ok(self);
        };
        match pid_of_rank(db, rank)? {
            Some(pid) => Ok(Scope {
                pid: Some(pid),
                ..self
            }),
            None => Err(crate::ToolError::BadArgument(format!(
                "no process of rank {rank} in this file (processes.rank is filled from the \
                 RANK environment variable or an NCCL communicator of the process)"
            ))),
        }
    }

    /// The whole capture, every process.
    pub const ALL: Scope = Scope {
        window: TimeWindow::ALL,
        pid: None,
    };
}
