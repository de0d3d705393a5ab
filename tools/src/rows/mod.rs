//! The row types a [`crate::dataset::Dataset`] holds: CUDA op names, raw
//! calls, aggregate rows, raw host events and their totals.
//!
//! They live apart from the loader so that the modules which fold or read
//! rows (activity spans, say) need not depend on the loader, which in turn
//! calls them: the rows are the leaf both sides share.

mod agg_row;
mod call;
mod host_row;
mod op_info;
mod totals;

pub use agg_row::AggRow;
pub use call::Call;
pub use host_row::HostRow;
pub use op_info::OpInfo;
pub use totals::Totals;
