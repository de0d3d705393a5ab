//! One module per subcommand.

pub mod check;
pub mod compare;
pub mod demo;
pub mod explain;
pub mod export;
pub mod mcp;
pub mod merge;
pub mod query;
pub mod report;
pub mod trace;

use ingero_store::{StoreError, TraceDb};
use ingero_tools::ToolError;

/// An analysis error, with a read that stopped on a damaged value (wrong
/// type, out of range) replaced by the message naming the table, column and
/// rows ([`StoreError::Unreadable`], exit 2); other errors pass unchanged.
pub(crate) fn diagnosed(db: &TraceDb, err: anyhow::Error) -> anyhow::Error {
    let err = match err.downcast::<ToolError>() {
        Ok(e) => return e.diagnosed(db).into(),
        Err(e) => e,
    };
    let err = match err.downcast::<StoreError>() {
        Ok(e) => return ToolError::Store(e).diagnosed(db).into(),
        Err(e) => e,
    };
    match err.downcast::<rusqlite::Error>() {
        Ok(e) => ToolError::Sqlite(e).diagnosed(db).into(),
        Err(e) => e,
    }
}
