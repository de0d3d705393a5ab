//! The ingero analysis engine.
//!
//! Everything the CLI and the MCP server say about a trace comes from here:
//! [`stats`] (per-op latency statistics), [`processes`] (per-process
//! breakdown), [`timeline`], [`chains`] (causal chains linking CUDA tail
//! latency to host causes), [`starvation`] (how long the GPU-driving threads
//! were kept away from the GPU), [`events`] (filtered raw rows) and
//! [`explain`] (all of it as one report), and [`compare`] (two reports side
//! by side: did the fix work?). Every function reads a
//! [`ingero_store::TraceDb`] through a [`dataset::Dataset`] loaded once.
//!
//! Module dependencies form a DAG: what several analyses share lives in
//! leaf modules that import none of them — [`finding`] (what a causal chain
//! is made of), [`rows`] (the rows a dataset holds) and [`idle_split`] (the
//! thread states and parts of the GPU-idle split) — so no analysis imports
//! from the module that calls it.

// Every public item says why it exists; the lint keeps it that way.
#![warn(missing_docs)]

pub mod activity;
pub mod chains;
pub mod code;
pub mod compare;
pub mod dataset;
pub mod error;
pub mod events;
pub mod explain;
pub mod finding;
pub mod format;
pub mod gpu_activity;
pub mod idle;
pub mod idle_split;
pub(crate) mod intervals;
pub mod launch_levels;
pub mod library;
pub mod percentile;
pub mod processes;
pub mod pyframes;
pub mod ranks;
pub mod render;
pub mod render_ranks;
pub mod render_stacks;
pub mod rows;
pub mod scope;
pub mod sql;
pub mod stacks;
pub mod starvation;
pub mod stats;
pub mod teach;
pub mod timeline;
pub mod waits;

pub use error::ToolError;
pub use scope::Scope;
