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
