//! The vocabulary of the idle split: the states the GPU-driving thread can
//! be in ([`states`]) and the named parts of the split, one per state
//! ([`parts`]).
//!
//! Both the idle measurement ([`crate::idle`]) and the code attribution
//! ([`crate::code`]) speak it, and the measurement calls the attribution;
//! kept here, it is the leaf both depend on.

pub mod parts;
pub mod states;
