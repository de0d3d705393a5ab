//! Native and kernel frames resolved with `blazesym` during the capture, so
//! that the file names functions wherever it is read later.
//!
//! A user address is first placed in the process's own mappings (a
//! snapshot of `/proc/PID/maps`, taken at the process's first sample and
//! again after it maps new code), turned into a file offset, and that
//! offset is symbolised in the ELF file (symbol tables only: fast, and
//! what a stripped library still has). Results are cached per file and
//! offset, so a library shared by a hundred workers is read once. Kernel
//! addresses are resolved through `/proc/kallsyms`. Return addresses (every
//! frame but the innermost) are looked up one byte earlier, inside the
//! call instruction, so that a call at the very end of a function is not
//! charged to the next one.

use super::maps::ProcMaps;
use crate::decode::RawStack;
use blazesym::symbolize::source::{Elf, Kernel, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::MaybeDefault;
use ingero_store::{FrameKind, StackFrame};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the mappings of a process may be read again when one of its
/// addresses falls outside every known mapping.
const REMAP_EVERY: Duration = Duration::from_millis(100);

/// What the symboliser did, for the capture summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SymbolizeStats {
    /// Frames named.
    pub resolved: u64,
    /// Frames left as addresses.
    pub unresolved: u64,
    /// Processes whose mappings were never read (gone before their first sample was seen).
    pub processes_without_maps: u64,
}

/// Resolves raw stacks into frames, caching per file and offset.
pub struct NativeSymbolizer {
    blaze: Symbolizer,
    maps: HashMap<i32, ProcMaps>,
    read_at: HashMap<i32, Instant>,
    user: HashMap<(PathBuf, u64), Option<(String, u64)>>,
    kernel: HashMap<u64, Option<(String, u64)>>,
    /// Running totals.
    pub stats: SymbolizeStats,
}

impl Default for NativeSymbolizer {
    fn default() -> Self {
        NativeSymbolizer::new()
    }
}

impl NativeSymbolizer {
    /// A symboliser with empty caches (demangled names, no source lines).
    pub fn new() -> NativeSymbolizer {
        let blaze = Symbolizer::builder()
            .enable_code_info(false)
            .enable_inlined_fns(false)
            .enable_demangling(true)
            .build();
        NativeSymbolizer {
            blaze,
            maps: HashMap::new(),
            read_at: HashMap::new(),
            user: HashMap::new(),
            kernel: HashMap::new(),
            stats: SymbolizeStats::default(),
        }
    }

    /// Loads the kernel's symbol table (`/proc/kallsyms`, some 200,000
    /// lines) before the first kernel frame needs it. Nearly every capture
    /// with stacks has kernel frames (every off-CPU stack starts in the
    /// kernel), and a short command's first ones may only arrive with the
    /// last batch, which would put the table's reading inside the stop.
    pub fn warm_kernel(&mut self) {
        let _ = self.blaze.symbolize(&kernel_source(), Input::AbsAddr(&[0]));
    }

    /// Reads the mappings of `pid` now (at exec, or when it mapped new
    /// code); a process that is gone keeps its last snapshot.
    pub fn remap(&mut self, pid: i32) {
        if let Some(m) = ProcMaps::read(pid) {
            self.maps.insert(pid, m);
        }
        self.read_at.insert(pid, Instant::now());
    }

    /// Forgets what was known of `pid`'s mappings (after exec, which
    /// replaces them) and reads them again.
    pub fn exec(&mut self, pid: i32) {
        self.maps.remove(&pid);
        self.remap(pid);
    }

    /// Frames of `raw`, innermost first: the kernel part (when the sample
    /// was taken in the kernel), then the user part.
    pub fn resolve(&mut self, raw: &RawStack) -> Vec<StackFrame> {
        let mut frames = Vec::with_capacity(raw.kernel.len() + raw.user.len());
        for (i, addr) in raw.kernel.iter().enumerate() {
            frames.push(self.kernel_frame(*addr, i > 0));
        }
        if !raw.user.is_empty() && !self.maps.contains_key(&raw.pid) {
            self.remap(raw.pid);
            if !self.maps.contains_key(&raw.pid) {
                self.stats.processes_without_maps += 1;
            }
        }
        for (i, addr) in raw.user.iter().enumerate() {
            frames.push(self.user_frame(raw.pid, *addr, i > 0));
        }
        frames
    }

    fn kernel_frame(&mut self, addr: u64, caller: bool) -> StackFrame {
        let probe = if caller { addr.saturating_sub(1) } else { addr };
        let resolved = match self.kernel.get(&probe) {
            Some(r) => r.clone(),
            None => {
                let r = first_sym(
                    self.blaze
                        .symbolize(&kernel_source(), Input::AbsAddr(&[probe])),
                );
                self.kernel.insert(probe, r.clone());
                r
            }
        };
        let frame = match resolved {
            Some((name, off)) => StackFrame {
                kind: FrameKind::Kernel,
                module: "kernel".into(),
                function: name,
                offset: off + u64::from(caller),
                file: String::new(),
                line: 0,
            },
            None => StackFrame {
                kind: FrameKind::Kernel,
                module: "kernel".into(),
                function: format!("0x{addr:x}"),
                offset: 0,
                file: String::new(),
                line: 0,
            },
        };
        self.count(&frame);
        frame
    }

    fn user_frame(&mut self, pid: i32, addr: u64, caller: bool) -> StackFrame {
        let probe = if caller { addr.saturating_sub(1) } else { addr };
        let mut mapping = self.maps.get(&pid).and_then(|m| m.find(probe).cloned());
        if mapping.is_none() {
            let stale = self
                .read_at
                .get(&pid)
                .is_none_or(|t| t.elapsed() >= REMAP_EVERY);
            if stale {
                self.remap(pid);
                mapping = self.maps.get(&pid).and_then(|m| m.find(probe).cloned());
            }
        }
        let Some(m) = mapping else {
            return self.unresolved("", addr);
        };
        if !m.is_file() {
            let module = m.path.clone();
            return self.unresolved(&module, addr);
        }
        let file_offset = probe - m.start + m.file_offset;
        let path = self
            .maps
            .get(&pid)
            .and_then(|maps| maps.readable_path(&m))
            .unwrap_or_else(|| PathBuf::from(&m.path));
        let key = (path, file_offset);
        let resolved = match self.user.get(&key) {
            Some(r) => r.clone(),
            None => {
                let src = Source::Elf(Elf {
                    debug_syms: false,
                    ..Elf::new(key.0.clone())
                });
                let r = first_sym(
                    self.blaze
                        .symbolize(&src, Input::FileOffset(&[file_offset])),
                );
                self.user.insert(key, r.clone());
                r
            }
        };
        let frame = match resolved {
            Some((name, off)) => StackFrame::native(m.module(), &name, off + u64::from(caller)),
            None => StackFrame::native(m.module(), &format!("0x{:x}", file_offset), 0),
        };
        self.count(&frame);
        frame
    }

    fn unresolved(&mut self, module: &str, addr: u64) -> StackFrame {
        let f = StackFrame::native(module, &format!("0x{addr:x}"), 0);
        self.stats.unresolved += 1;
        f
    }

    fn count(&mut self, f: &StackFrame) {
        if f.function.starts_with("0x") {
            self.stats.unresolved += 1;
        } else {
            self.stats.resolved += 1;
        }
    }
}

/// The running kernel's symbols: `/proc/kallsyms` only (no vmlinux).
fn kernel_source() -> Source<'static> {
    Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Default,
        vmlinux: MaybeDefault::None,
        debug_syms: false,
        ..Kernel::default()
    })
}

/// Name and offset of the first answer, when it is a symbol.
fn first_sym(r: blazesym::Result<Vec<Symbolized<'_>>>) -> Option<(String, u64)> {
    let v = r.ok()?;
    match v.into_iter().next()? {
        Symbolized::Sym(s) => Some((s.name.into_owned(), s.offset as u64)),
        Symbolized::Unknown(_) => None,
    }
}
