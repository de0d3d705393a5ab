//! One module per subcommand.

pub mod explain;
pub mod mcp;
pub mod query;
