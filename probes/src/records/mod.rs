//! The byte layouts the kernel programs and user space share: ring-buffer
//! records ([`events`], `bpf/ingero_events.h`) and the table values read at
//! the stop ([`tables`], `bpf/cuda.h`, `bpf/page_runs.h`), one `repr(C)`
//! plain-data struct per C struct, read from bytes by casting.
//!
//! A leaf module: it imports nothing from the rest of the crate, so the
//! decoder and the table readers can all depend on it without depending on
//! each other. The build reads the C headers (`build/c_layout.rs`) and
//! checks here, at compile time, every struct's size and alignment, every
//! field's offset and exact type, and the value of every mirrored constant.

pub mod events;
pub mod tables;

pub use events::*;
pub use tables::*;

include!(concat!(env!("OUT_DIR"), "/record_layout.rs"));
