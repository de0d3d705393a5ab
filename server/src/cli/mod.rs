//! One module per subcommand.

pub mod demo;
pub mod explain;
pub mod query;
