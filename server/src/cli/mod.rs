//! One module per subcommand.

pub mod demo;
pub mod explain;
pub mod mcp;
pub mod query;
