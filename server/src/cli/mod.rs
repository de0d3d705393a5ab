//! One module per subcommand.

pub mod explain;
pub mod query;
