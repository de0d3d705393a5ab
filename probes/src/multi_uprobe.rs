//! Multi-uprobe links (kernel 6.6+): the CUDA entry and return programs of
//! `bpf/cuda_multi.bpf.c`, attached with one link per library and direction.
//!
//! Why: a classic uprobe is one perf event per function and direction, and
//! the kernel releases each one under a global lock after its own RCU grace
//! period (about 0.1 s here). Fifty-odd links then take seconds to go away,
//! and while they do, any other capture's attach waits behind them. A
//! multi-uprobe link unregisters all its points and waits once.
//!
//! aya loads uprobe programs without an expected attach type, which multi
//! links require, so these two programs are loaded here with plain `bpf(2)`
//! calls. Their map references are pointed at the maps aya created for the
//! main object (both sets of programs share one state); their read-only
//! configuration gets its own frozen array, filled like aya fills the main
//! object's.

use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};
use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The compiled multi-uprobe programs (`bpf/cuda_multi.bpf.c`, built by build.rs).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/cuda_multi.bpf.o"));

const BPF_MAP_CREATE: u32 = 0;
const BPF_MAP_UPDATE_ELEM: u32 = 2;
const BPF_PROG_LOAD: u32 = 5;
const BPF_MAP_FREEZE: u32 = 22;
const BPF_LINK_CREATE: u32 = 28;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_F_RDONLY_PROG: u32 = 1 << 7;
const BPF_PROG_TYPE_KPROBE: u32 = 2;
const BPF_TRACE_UPROBE_MULTI: u32 = 48;
const BPF_TRACE_UPROBE_SESSION: u32 = 57;
const BPF_PSEUDO_KFUNC_CALL: u8 = 2;
const R_BPF_64_32: u32 = 10;
const CALL: u8 = 0x85;
const BPF_F_UPROBE_MULTI_RETURN: u32 = 1;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_PSEUDO_MAP_VALUE: u8 = 2;
const R_BPF_64_64: u32 = 1;
const LD_IMM64: u8 = 0x18;

/// Section and program name of the entry program.
const ENTER: (&str, &str) = ("uprobe.multi", "cuda_enter");
/// Section and program name of the return program.
const RETURN: (&str, &str) = ("uretprobe.multi", "cuda_return");
/// Section and program name of the launch session program (sampled launch
/// timing, kernel 6.13+).
const SESSION: (&str, &str) = ("uprobe.session", "cuda_launch_session");
/// Section and program name of the loader watch (the dynamic loader's
/// `_dl_debug_state`, called around every dlopen and dlclose).
const LOADER: (&str, &str) = ("uprobe.multi/loader", "loader_state");

/// Why the multi-uprobe programs could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MultiUprobeError {
    /// The embedded object is not what this loader expects (a build problem).
    #[error("multi-uprobe object: {0}")]
    Object(String),
    /// The object names a map the main object does not provide.
    #[error("multi-uprobe object refers to map `{0}`, which the main object lacks")]
    MissingMap(String),
    /// A `bpf(2)` call failed (on kernels before 6.6, program load fails
    /// with EINVAL because the attach type is unknown).
    #[error("{call}: {source}{log}")]
    Syscall {
        /// Which call.
        call: String,
        /// The error the kernel returned.
        source: io::Error,
        /// The end of the verifier log, when there is one.
        log: String,
    },
}

fn syscall_err(call: impl Into<String>, source: io::Error) -> MultiUprobeError {
    MultiUprobeError::Syscall {
        call: call.into(),
        source,
        log: String::new(),
    }
}

/// The loaded entry and return programs, ready to be linked to libraries.
pub struct MultiUprobes {
    enter: OwnedFd,
    ret: OwnedFd,
    /// The launch session program, or why it could not be loaded.
    session: Result<OwnedFd, String>,
    /// The loader watch program, or why it could not be loaded.
    loader: Result<OwnedFd, String>,
}

/// Cookie bit of the attachment points of a link bound to one process
/// (`COOKIE_SCOPED` in `bpf/cuda_multi.bpf.c`); the low 32 bits are the
/// catalogue id.
pub const COOKIE_SCOPED: u64 = 1 << 32;

/// One probed function: its file offset and catalogue id (the cookie).
#[derive(Debug, Clone, Copy)]
pub struct ProbePoint {
    /// File offset of the instruction probed.
    pub offset: u64,
    /// Catalogue id of the function, read back by the programs.
    pub op_id: u64,
}

impl MultiUprobes {
    /// Loads both programs. `maps` gives the main object's map descriptors by
    /// name; `globals` the read-only configuration values by symbol name;
    /// `kernel_btf` the running kernel's BTF (kernel functions the programs
    /// call are resolved in it).
    pub fn load(
        maps: &HashMap<String, BorrowedFd<'_>>,
        globals: &[(&str, u32)],
        kernel_btf: &aya_obj::btf::Btf,
    ) -> Result<MultiUprobes, MultiUprobeError> {
        let file =
            object::File::parse(OBJECT).map_err(|e| MultiUprobeError::Object(e.to_string()))?;
        let license = object_license(&file)?;
        let mut data_maps = DataMaps::new();
        let mut kfuncs = Kfuncs { btf: kernel_btf };
        let mut relocate = |section: &str, globals: &[(&str, u32)]| {
            relocated(&file, section, maps, globals, &mut data_maps, &mut kfuncs)
        };
        // Without the session program, driver launches go through the entry
        // and return programs: they then time every launch, as with sampled
        // timing off (so launch rows, when asked for, fold the short ones).
        let untimed_off: Vec<(&str, u32)> = globals
            .iter()
            .map(|&(name, v)| (name, if name == "cfg_launch_sample" { 0 } else { v }))
            .collect();
        let session_insns = relocate(SESSION.0, globals);
        let pair_samples = session_insns.is_ok();
        let pair_globals = if pair_samples {
            globals
        } else {
            &untimed_off[..]
        };
        let enter_insns = relocate(ENTER.0, pair_globals)?;
        let ret_insns = relocate(RETURN.0, pair_globals)?;
        let (session, enter, ret) =
            verify_in_parallel(session_insns, &enter_insns, &ret_insns, &license);
        let session = session.map_err(|e| e.to_string());
        let (enter, ret) = if session.is_err() && pair_samples {
            // The session program was relocated but the kernel refused it:
            // the pair must time every launch after all.
            let enter_insns = relocate(ENTER.0, &untimed_off)?;
            let ret_insns = relocate(RETURN.0, &untimed_off)?;
            (
                prog_load(ENTER.1, &enter_insns, &license, BPF_TRACE_UPROBE_MULTI)?,
                prog_load(RETURN.1, &ret_insns, &license, BPF_TRACE_UPROBE_MULTI)?,
            )
        } else {
            (enter?, ret?)
        };
        let loader = relocate(LOADER.0, globals)
            .and_then(|insns| prog_load(LOADER.1, &insns, &license, BPF_TRACE_UPROBE_MULTI))
            .map_err(|e| e.to_string());
        // The programs hold their own references to the data maps now.
        drop(data_maps);
        Ok(MultiUprobes {
            enter,
            ret,
            session,
            loader,
        })
    }

    /// Entry, return and session programs that do nothing (`r0 = 0; exit`;
    /// the session entry returns 1, declining the return): linked like the
    /// real ones, they cost what the kernel's trap and return hijack cost
    /// with no program work, the floor capture cost is measured against.
    pub fn empty() -> Result<MultiUprobes, MultiUprobeError> {
        const RETURN_ZERO: [u8; 16] = [0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];
        let license = CString::new("GPL").map_err(|e| MultiUprobeError::Object(e.to_string()))?;
        let load = |name| prog_load(name, &RETURN_ZERO, &license, BPF_TRACE_UPROBE_MULTI);
        // A session entry that returns 1: the return is not wanted.
        const RETURN_ONE: [u8; 16] = [0xb7, 0, 0, 0, 1, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];
        Ok(MultiUprobes {
            enter: load("floor_enter")?,
            ret: load("floor_return")?,
            session: prog_load(
                "floor_session",
                &RETURN_ONE,
                &license,
                BPF_TRACE_UPROBE_SESSION,
            )
            .map_err(|e| e.to_string()),
            loader: Err("the floor programs watch no loader".into()),
        })
    }

    /// Links the entry and return programs to `points` of the library file
    /// at `path`: in process `pid` only (the kernel installs the breakpoints
    /// in no other process, so nobody else traps), or with `None` in every
    /// process that maps it. Dropping the two links detaches them.
    pub fn attach(
        &self,
        path: &Path,
        points: &[ProbePoint],
        pid: Option<u32>,
    ) -> Result<[OwnedFd; 2], MultiUprobeError> {
        // Return side first: a call that enters once the entry side is in
        // place is then sure to be seen returning, so no entry is left in
        // the table to pass for a call open at the stop.
        let ret = link(
            &self.ret,
            BPF_TRACE_UPROBE_MULTI,
            BPF_F_UPROBE_MULTI_RETURN,
            path,
            points,
            pid,
        )?;
        let enter = link(&self.enter, BPF_TRACE_UPROBE_MULTI, 0, path, points, pid)?;
        Ok([ret, enter])
    }

    /// Links the entry program alone (no return hijack): what one trap per
    /// call costs, for measuring the floor of an entry-only design.
    pub fn attach_entry(
        &self,
        path: &Path,
        points: &[ProbePoint],
        pid: Option<u32>,
    ) -> Result<OwnedFd, MultiUprobeError> {
        link(&self.enter, BPF_TRACE_UPROBE_MULTI, 0, path, points, pid)
    }

    /// Links the loader watch to the instruction at `offset` of the dynamic
    /// loader file at `path` (its `_dl_debug_state`), in process `pid` only
    /// or, with `None`, in every process that maps it.
    pub fn attach_loader_watch(
        &self,
        path: &Path,
        offset: u64,
        pid: Option<u32>,
    ) -> Result<OwnedFd, MultiUprobeError> {
        let prog = self
            .loader
            .as_ref()
            .map_err(|e| MultiUprobeError::Object(format!("no loader watch program: {e}")))?;
        let point = ProbePoint { offset, op_id: 0 };
        link(prog, BPF_TRACE_UPROBE_MULTI, 0, path, &[point], pid)
    }

    /// Why the loader watch program is not there, or `None` when it is.
    pub fn loader_watch_unavailable(&self) -> Option<&str> {
        self.loader.as_ref().err().map(String::as_str)
    }

    /// Why the launch session program is not there (kernels before 6.13
    /// have no uprobe sessions), or `None` when it is.
    pub fn session_unavailable(&self) -> Option<&str> {
        self.session.as_ref().err().map(String::as_str)
    }

    /// Links the launch session program to `points` (driver launch
    /// functions): one link serving entry and return, where the entry
    /// decides per call whether the return is wanted (sampled launch
    /// timing). Fails when the program could not be loaded.
    pub fn attach_session(
        &self,
        path: &Path,
        points: &[ProbePoint],
        pid: Option<u32>,
    ) -> Result<OwnedFd, MultiUprobeError> {
        let prog = self
            .session
            .as_ref()
            .map_err(|e| MultiUprobeError::Object(format!("no launch session program: {e}")))?;
        link(prog, BPF_TRACE_UPROBE_SESSION, 0, path, points, pid)
    }
}

/// One multi-uprobe link of `prog` on `points` of `path` (`attach_type`:
/// multi or session; `flags`: entry or return side of a multi link).
fn link(
    prog: &OwnedFd,
    attach_type: u32,
    flags: u32,
    path: &Path,
    points: &[ProbePoint],
    pid: Option<u32>,
) -> Result<OwnedFd, MultiUprobeError> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| syscall_err("library path", io::Error::other(e)))?;
    let offsets: Vec<u64> = points.iter().map(|p| p.offset).collect();
    // A link bound to one process says so in its cookies: its programs then
    // skip the tracked-process lookup (the kernel already filters).
    let scoped = if pid.is_some() { COOKIE_SCOPED } else { 0 };
    let cookies: Vec<u64> = points.iter().map(|p| p.op_id | scoped).collect();
    let mut attr = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        attach_type,
        path: c_path.as_ptr() as u64,
        offsets: offsets.as_ptr() as u64,
        cookies: cookies.as_ptr() as u64,
        cnt: offsets.len() as u32,
        multi_flags: flags,
        pid: pid.unwrap_or(0),
        ..LinkCreateAttr::default()
    };
    bpf_fd(BPF_LINK_CREATE, &mut attr)
        .map_err(|e| syscall_err(format!("multi-uprobe link on {}", path.display()), e))
}

/// Read-only data sections turned into frozen array maps (by section name),
/// created the first time an instruction refers to them.
type DataMaps = HashMap<String, OwnedFd>;

/// The license the object declares (its `license` section), which the
/// kernel checks before the programs may call GPL-only helpers.
fn object_license(file: &object::File<'_>) -> Result<CString, MultiUprobeError> {
    let license = section_bytes(file, "license")?;
    CString::new(license.split(|&b| b == 0).next().unwrap_or_default())
        .map_err(|e| MultiUprobeError::Object(e.to_string()))
}

/// One program loaded into the kernel, or why not.
type ProgramLoad = Result<OwnedFd, MultiUprobeError>;

/// Loads the session, entry and return programs. The kernel verifies the
/// three programs independently: in parallel, the capture starts sooner.
/// The session program's relocation may have failed already
/// (`session_insns`).
fn verify_in_parallel(
    session_insns: Result<Vec<u8>, MultiUprobeError>,
    enter_insns: &[u8],
    ret_insns: &[u8],
    license: &CString,
) -> (ProgramLoad, ProgramLoad, ProgramLoad) {
    std::thread::scope(|scope| {
        let session = scope.spawn(move || -> ProgramLoad {
            prog_load(
                SESSION.1,
                &session_insns?,
                license,
                BPF_TRACE_UPROBE_SESSION,
            )
        });
        let enter =
            scope.spawn(|| prog_load(ENTER.1, enter_insns, license, BPF_TRACE_UPROBE_MULTI));
        let ret = prog_load(RETURN.1, ret_insns, license, BPF_TRACE_UPROBE_MULTI);
        let joined = |h: std::thread::ScopedJoinHandle<'_, Result<OwnedFd, MultiUprobeError>>| {
            h.join().unwrap_or_else(|_| {
                Err(MultiUprobeError::Object(
                    "program load thread panicked".into(),
                ))
            })
        };
        (joined(session), joined(enter), ret)
    })
}

fn section_bytes<'a>(file: &object::File<'a>, name: &str) -> Result<&'a [u8], MultiUprobeError> {
    file.section_by_name(name)
        .ok_or_else(|| MultiUprobeError::Object(format!("no `{name}` section")))?
        .data()
        .map_err(|e| MultiUprobeError::Object(e.to_string()))
}

/// Kernel functions called by the programs, resolved by name in the
/// running kernel's BTF (the loader's parsed copy: parsing it again would
/// add tens of milliseconds to every capture's start).
struct Kfuncs<'a> {
    btf: &'a aya_obj::btf::Btf,
}

impl Kfuncs<'_> {
    /// The BTF id of kernel function `name`.
    fn id(&mut self, name: &str) -> Result<u32, MultiUprobeError> {
        self.btf
            .id_by_type_name_kind(name, aya_obj::btf::BtfKind::Func)
            .map_err(|_| {
                MultiUprobeError::Object(format!(
                    "this kernel has no function `{name}` (uprobe sessions need Linux 6.13+)"
                ))
            })
    }
}

/// The instructions of `section` with every map reference and kernel
/// function call resolved.
fn relocated(
    file: &object::File<'_>,
    section: &str,
    maps: &HashMap<String, BorrowedFd<'_>>,
    globals: &[(&str, u32)],
    data_maps: &mut DataMaps,
    kfuncs: &mut Kfuncs<'_>,
) -> Result<Vec<u8>, MultiUprobeError> {
    let bad = |m: String| MultiUprobeError::Object(format!("{section}: {m}"));
    let sec = file
        .section_by_name(section)
        .ok_or_else(|| bad("missing".into()))?;
    let mut insns = sec.data().map_err(|e| bad(e.to_string()))?.to_vec();
    for (offset, rel) in sec.relocations() {
        let RelocationFlags::Elf { r_type } = rel.flags() else {
            return Err(bad("not an ELF relocation".into()));
        };
        let RelocationTarget::Symbol(index) = rel.target() else {
            return Err(bad("relocation without a symbol".into()));
        };
        let sym = file
            .symbol_by_index(index)
            .map_err(|e| bad(e.to_string()))?;
        let at = usize::try_from(offset).map_err(|e| bad(e.to_string()))?;
        if r_type == R_BPF_64_32 && sym.is_undefined() && insns.get(at) == Some(&CALL) {
            // A call to a kernel function (declared in `.ksyms`).
            let name = sym.name().map_err(|e| bad(e.to_string()))?;
            let id = kfuncs.id(name)?;
            let insn = &mut insns[at..at + 8];
            insn[1] = (insn[1] & 0x0f) | (BPF_PSEUDO_KFUNC_CALL << 4);
            insn[2..4].copy_from_slice(&0i16.to_le_bytes());
            insn[4..8].copy_from_slice(&id.to_le_bytes());
            continue;
        }
        if r_type != R_BPF_64_64 {
            return Err(bad(format!(
                "relocation type {r_type} (a call to a function that is not inlined?)"
            )));
        }
        let target_section = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .ok_or_else(|| bad("relocation to an undefined symbol".into()))?;
        let target_name = target_section.name().map_err(|e| bad(e.to_string()))?;
        if at + 16 > insns.len() || insns[at] != LD_IMM64 {
            return Err(bad(format!("relocation at {at} is not a 64-bit load")));
        }
        if target_name == ".maps" {
            let name = sym.name().map_err(|e| bad(e.to_string()))?;
            let fd = maps
                .get(name)
                .ok_or_else(|| MultiUprobeError::MissingMap(name.to_string()))?;
            patch_load(
                &mut insns[at..at + 16],
                BPF_PSEUDO_MAP_FD,
                fd.as_raw_fd(),
                0,
            );
        } else if target_name.starts_with(".rodata") {
            let fd = data_map(file, &target_section, globals, data_maps)?;
            let imm =
                i32::from_le_bytes([insns[at + 4], insns[at + 5], insns[at + 6], insns[at + 7]]);
            let value_offset =
                i64::try_from(sym.address()).map_err(|e| bad(e.to_string()))? + i64::from(imm);
            let value_offset = i32::try_from(value_offset).map_err(|e| bad(e.to_string()))?;
            patch_load(
                &mut insns[at..at + 16],
                BPF_PSEUDO_MAP_VALUE,
                fd,
                value_offset,
            );
        } else {
            return Err(bad(format!("reference into section `{target_name}`")));
        }
    }
    Ok(insns)
}

/// Points the two-slot load at `insn` to map `fd` (and `value_offset` in it).
fn patch_load(insn: &mut [u8], kind: u8, fd: i32, value_offset: i32) {
    insn[1] = (insn[1] & 0x0f) | (kind << 4);
    insn[4..8].copy_from_slice(&fd.to_le_bytes());
    insn[12..16].copy_from_slice(&value_offset.to_le_bytes());
}

/// The frozen array map holding read-only section `sec`, with `globals`
/// written over their defaults.
fn data_map(
    file: &object::File<'_>,
    sec: &object::Section<'_, '_>,
    globals: &[(&str, u32)],
    data_maps: &mut DataMaps,
) -> Result<i32, MultiUprobeError> {
    let name = sec
        .name()
        .map_err(|e| MultiUprobeError::Object(e.to_string()))?
        .to_string();
    if let Some(fd) = data_maps.get(&name) {
        return Ok(fd.as_raw_fd());
    }
    let mut value = sec
        .data()
        .map_err(|e| MultiUprobeError::Object(e.to_string()))?
        .to_vec();
    for sym in file.symbols() {
        if sym.section_index() != Some(sec.index()) {
            continue;
        }
        let Ok(sym_name) = sym.name() else { continue };
        if let Some((_, v)) = globals.iter().find(|(g, _)| *g == sym_name) {
            let at = usize::try_from(sym.address())
                .map_err(|e| MultiUprobeError::Object(e.to_string()))?;
            let slot = value.get_mut(at..at + 4).ok_or_else(|| {
                MultiUprobeError::Object(format!("`{sym_name}` lies outside {name}"))
            })?;
            slot.copy_from_slice(&v.to_ne_bytes());
        }
    }
    let mut create = MapCreateAttr {
        map_type: BPF_MAP_TYPE_ARRAY,
        key_size: 4,
        value_size: value.len() as u32,
        max_entries: 1,
        map_flags: BPF_F_RDONLY_PROG,
        ..MapCreateAttr::default()
    };
    let short = b"ingero_mrodata";
    create.map_name[..short.len()].copy_from_slice(short);
    let fd = bpf_fd(BPF_MAP_CREATE, &mut create).map_err(|e| syscall_err("BPF_MAP_CREATE", e))?;
    let key = 0u32;
    let mut update = MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: &key as *const u32 as u64,
        value: value.as_ptr() as u64,
        ..MapElemAttr::default()
    };
    bpf(BPF_MAP_UPDATE_ELEM, &mut update).map_err(|e| syscall_err("BPF_MAP_UPDATE_ELEM", e))?;
    let mut freeze = MapFdAttr {
        map_fd: fd.as_raw_fd() as u32,
    };
    bpf(BPF_MAP_FREEZE, &mut freeze).map_err(|e| syscall_err("BPF_MAP_FREEZE", e))?;
    let raw = fd.as_raw_fd();
    data_maps.insert(name, fd);
    Ok(raw)
}

/// Loads one kprobe-type program with `attach_type` (multi or session). On
/// failure, loads again with the verifier log on, to say why.
fn prog_load(
    name: &str,
    insns: &[u8],
    license: &CString,
    attach_type: u32,
) -> Result<OwnedFd, MultiUprobeError> {
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_KPROBE,
        insn_cnt: (insns.len() / 8) as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        expected_attach_type: attach_type,
        ..ProgLoadAttr::default()
    };
    let short = name.as_bytes();
    let n = short.len().min(15);
    attr.prog_name[..n].copy_from_slice(&short[..n]);
    match bpf_fd(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(fd),
        Err(first) => {
            let mut log = vec![0u8; 1 << 20];
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let _ = bpf_fd(BPF_PROG_LOAD, &mut attr);
            let text = String::from_utf8_lossy(log.split(|&b| b == 0).next().unwrap_or_default())
                .into_owned();
            let tail: Vec<&str> = text.lines().rev().take(6).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(MultiUprobeError::Syscall {
                call: format!("loading {name}"),
                source: first,
                log: if tail.is_empty() {
                    String::new()
                } else {
                    format!(" (verifier: {})", tail.join(" | "))
                },
            })
        }
    }
}

/// `bpf(cmd, attr)` returning a new descriptor.
fn bpf_fd<T>(cmd: u32, attr: &mut T) -> io::Result<OwnedFd> {
    let fd = bpf(cmd, attr)?;
    let fd = i32::try_from(fd).map_err(io::Error::other)?;
    // SAFETY: the kernel just returned this descriptor to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The raw `bpf(2)` system call on a `repr(C)` attribute block.
fn bpf<T>(cmd: u32, attr: &mut T) -> io::Result<i64> {
    // SAFETY: attr is a live, fully initialised repr(C) block of the stated
    // size, laid out as the kernel's `union bpf_attr` member for `cmd`; the
    // pointers inside it refer to buffers that outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>() as u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `union bpf_attr` for BPF_MAP_CREATE (leading fields).
#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// `union bpf_attr` for BPF_MAP_UPDATE_ELEM.
#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// `union bpf_attr` for BPF_MAP_FREEZE.
#[repr(C)]
struct MapFdAttr {
    map_fd: u32,
}

/// `union bpf_attr` for BPF_PROG_LOAD (up to the expected attach type).
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// `union bpf_attr` for BPF_LINK_CREATE with the `uprobe_multi` member.
#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    path: u64,
    offsets: u64,
    ref_ctr_offsets: u64,
    cookies: u64,
    cnt: u32,
    multi_flags: u32,
    pid: u32,
    pad: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_blocks_match_the_kernel_layout() {
        // Offsets from include/uapi/linux/bpf.h.
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type), 68);
        assert_eq!(std::mem::offset_of!(LinkCreateAttr, path), 16);
        assert_eq!(std::mem::offset_of!(LinkCreateAttr, cnt), 48);
        assert_eq!(std::mem::offset_of!(LinkCreateAttr, pid), 56);
        assert_eq!(std::mem::offset_of!(MapCreateAttr, map_name), 28);
        assert_eq!(std::mem::offset_of!(MapElemAttr, flags), 24);
    }

    #[test]
    fn the_embedded_object_has_both_programs_and_only_map_or_data_references() {
        let file = object::File::parse(OBJECT).expect("object");
        for (section, _) in [ENTER, RETURN] {
            let sec = file.section_by_name(section).expect(section);
            assert!(sec.relocations().count() > 0, "{section} uses maps");
            for (_, rel) in sec.relocations() {
                assert_eq!(
                    rel.flags(),
                    RelocationFlags::Elf {
                        r_type: R_BPF_64_64
                    }
                );
            }
        }
    }
}
