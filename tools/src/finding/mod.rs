//! The vocabulary of a finding: the cause it blames ([`Cause`]), how urgent
//! it is ([`Severity`]), the numbers behind it ([`Evidence`]), the links
//! from system state down to the CUDA call ([`ChainStep`]), and the finding
//! itself ([`CausalChain`]).
//!
//! The detectors in [`crate::chains`] produce these and the runner there
//! ranks them; kept here, apart from both, the detectors need not import
//! from the module that calls them.

mod cause;
mod chain;
mod evidence;
mod severity;
mod step;
mod unit;

pub use cause::Cause;
pub use chain::CausalChain;
pub use evidence::Evidence;
pub use severity::Severity;
pub(crate) use step::step;
pub use step::{ChainStep, Layer};
pub use unit::Unit;
