//! Stack samples (schema version 4): what a traced thread was running, or
//! where it blocked, at a sampled moment.
//!
//! A sample names its stack by id; stacks are interned (`stacks` table), the
//! id being the FNV-1a 64 hash of the stack's frames JSON ([`frames_json`]),
//! so the same stack seen a million times is stored once and two files give
//! the same stack the same id. Samples are raw rows, kept per second and per
//! thread like the other raw rows (the writer's [`crate::RawPolicy`]); the
//! `stack_counts` table counts every one taken.

use serde::{Deserialize, Serialize};

/// Where a frame comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// Machine code in a user-space ELF object.
    Native,
    /// Kernel code.
    Kernel,
    /// A Python function (CPython frame).
    Python,
}

impl FrameKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::Native => "native",
            FrameKind::Kernel => "kernel",
            FrameKind::Python => "python",
        }
    }

    /// Inverse of [`FrameKind::as_str`].
    pub fn parse(s: &str) -> Option<FrameKind> {
        match s {
            "native" => Some(FrameKind::Native),
            "kernel" => Some(FrameKind::Kernel),
            "python" => Some(FrameKind::Python),
            _ => None,
        }
    }
}

/// One frame of a stack, resolved at capture time so that the file names
/// functions wherever it is read later.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StackFrame {
    /// Native, kernel or Python.
    pub kind: FrameKind,
    /// ELF object file name (native), `kernel`, or the Python module's
    /// source file name; empty when unknown.
    pub module: String,
    /// Function name (demangled symbol, Python function), or the address in
    /// hex (`0x...`) when it could not be resolved.
    pub function: String,
    /// Bytes past the start of the symbol (native and kernel frames), 0 otherwise.
    pub offset: u64,
    /// Source file (Python frames), empty otherwise.
    pub file: String,
    /// Source line (Python frames), 0 when unknown.
    pub line: u32,
}

impl StackFrame {
    /// A frame of machine code `function` + `offset` in `module`.
    pub fn native(module: &str, function: &str, offset: u64) -> StackFrame {
        StackFrame {
            kind: FrameKind::Native,
            module: module.to_string(),
            function: function.to_string(),
            offset,
            file: String::new(),
            line: 0,
        }
    }

    /// A Python frame: `function` at `file`:`line`.
    pub fn python(function: &str, file: &str, line: u32) -> StackFrame {
        let module = file.rsplit('/').next().unwrap_or(file);
        StackFrame {
            kind: FrameKind::Python,
            module: module.to_string(),
            function: function.to_string(),
            offset: 0,
            file: file.to_string(),
            line,
        }
    }

    /// Short human label: `fetch.py:<listcomp>`, `libc.so.6:memcpy`.
    pub fn label(&self) -> String {
        match self.kind {
            FrameKind::Python => format!("{}:{}", self.module, self.function),
            FrameKind::Kernel => format!("[kernel] {}", self.function),
            FrameKind::Native if self.module.is_empty() => self.function.clone(),
            FrameKind::Native => format!("{}:{}", self.module, self.function),
        }
    }
}

/// What kind of moment a sample records (`stack_samples.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StackKind {
    /// CPU-clock sample of a running thread (native user + kernel frames).
    OnCpu,
    /// A CUDA-calling thread leaving the CPU (where it blocked or was preempted).
    OffCpu,
    /// A Python-level sample of a thread (py-spy).
    Python,
    /// The stack at a CUDA call's entry (recorded by Ingero).
    CallSite,
}

impl StackKind {
    /// Stored number.
    pub fn id(self) -> i64 {
        match self {
            StackKind::OnCpu => 1,
            StackKind::OffCpu => 2,
            StackKind::Python => 3,
            StackKind::CallSite => 4,
        }
    }

    /// Inverse of [`StackKind::id`].
    pub fn from_id(id: i64) -> Option<StackKind> {
        match id {
            1 => Some(StackKind::OnCpu),
            2 => Some(StackKind::OffCpu),
            3 => Some(StackKind::Python),
            4 => Some(StackKind::CallSite),
            _ => None,
        }
    }

    /// Name as it appears in tool output.
    pub fn as_str(self) -> &'static str {
        match self {
            StackKind::OnCpu => "on_cpu",
            StackKind::OffCpu => "off_cpu",
            StackKind::Python => "python",
            StackKind::CallSite => "call_site",
        }
    }
}

/// `stack_samples.off_cpu_ns` of an off-CPU sample whose thread had not come
/// back on the CPU when the capture stopped.
pub const OFF_CPU_UNKNOWN: i64 = -1;

/// One stack sample, frames innermost first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackSample {
    /// When, epoch ns on the capture clock (off-CPU: the switch-out).
    pub ts_ns: i64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// CPU it ran on, -1 when unknown.
    pub cpu: i32,
    /// What the sample records.
    pub kind: StackKind,
    /// Off-CPU samples: how long the thread stayed off ([`OFF_CPU_UNKNOWN`]
    /// when it had not come back at the stop); 0 for other kinds.
    pub off_cpu_ns: i64,
    /// Off-CPU: 1 preempted, 0 blocked; Python: 1 active, 0 idle; else -1.
    pub state: i64,
    /// Frames, innermost first (empty when the stack could not be walked).
    pub frames: Vec<StackFrame>,
}

/// The stored JSON of a stack (the text the id hashes).
pub fn frames_json(frames: &[StackFrame]) -> String {
    serde_json::to_string(frames).unwrap_or_else(|_| "[]".to_string())
}

/// Parses a stored frames JSON; `None` when it is not an array of frames.
pub fn parse_frames(text: &str) -> Option<Vec<StackFrame>> {
    serde_json::from_str(text).ok()
}

/// FNV-1a 64 of `bytes`, as the signed integer SQLite stores.
pub fn fnv1a64(bytes: &[u8]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

/// The id of a stack: [`fnv1a64`] of its [`frames_json`].
pub fn stack_id(frames: &[StackFrame]) -> i64 {
    fnv1a64(frames_json(frames).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_hash_stably() {
        let frames = vec![
            StackFrame::native("burn", "spin_here", 12),
            StackFrame::python("<listcomp>", "/x/fetch.py", 51),
        ];
        let json = frames_json(&frames);
        assert_eq!(parse_frames(&json), Some(frames.clone()));
        assert_eq!(stack_id(&frames), stack_id(&frames.clone()));
        assert_ne!(stack_id(&frames), stack_id(&frames[..1]));
        assert_eq!(frames[1].label(), "fetch.py:<listcomp>");
        // Known FNV-1a 64 value of "a".
        assert_eq!(fnv1a64(b"a") as u64, 0xaf63_dc4c_8601_ec8c);
        for k in [
            StackKind::OnCpu,
            StackKind::OffCpu,
            StackKind::Python,
            StackKind::CallSite,
        ] {
            assert_eq!(StackKind::from_id(k.id()), Some(k));
        }
    }
}
