//! A stack reduced to the few frames that say whose code it is: the job's
//! own Python function (and the library function it was in), the native
//! function doing the work, and the kernel function it waited in.
//!
//! Interpreter plumbing (`_PyEval_EvalFrameDefault`, vectorcall trampolines),
//! the scheduler's own frames and unresolved addresses say nothing about the
//! cause, so they are skipped; what remains is what a reader can act on.

use ingero_store::{FrameKind, StackFrame};
use serde::Serialize;

/// One Python frame, named for a reader.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct PyFrame {
    /// Function name (`Popen._wait`, `<module>`).
    pub function: String,
    /// Source file, shortened after `site-packages/` or the Python library folder.
    pub file: String,
    /// Line, 0 when unknown.
    pub line: u32,
}

impl PyFrame {
    fn of(f: &StackFrame) -> PyFrame {
        PyFrame {
            function: f.function.clone(),
            file: short_file(&f.file),
            line: f.line,
        }
    }

    /// `function (file:line)`.
    pub fn label(&self) -> String {
        if self.line > 0 {
            format!("{} ({}:{})", self.function, self.file, self.line)
        } else {
            format!("{} ({})", self.function, self.file)
        }
    }
}

/// Where code time went, reduced to what identifies it.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
pub struct CodePath {
    /// The job's own innermost Python function (outside the Python library,
    /// installed packages and the interpreter's frozen modules), if any.
    pub user: Option<PyFrame>,
    /// The user function's caller in the job's own code, if any.
    pub user_caller: Option<PyFrame>,
    /// The innermost Python frame when it is library code below `user`.
    pub library: Option<PyFrame>,
    /// The innermost native function that says what ran (not interpreter
    /// plumbing), `module:function`.
    pub native: Option<String>,
    /// The kernel function that says what the thread did or waited in (a
    /// system call, a page fault, the wait itself).
    pub kernel: Option<String>,
}

impl CodePath {
    /// True when no frame identifies anything.
    pub fn is_empty(&self) -> bool {
        self.user.is_none()
            && self.library.is_none()
            && self.native.is_none()
            && self.kernel.is_none()
    }

    /// `f (file.py:42) -> Popen._wait (subprocess.py:2047) -> libc:wait4 -> [kernel] do_wait`.
    pub fn text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(c) = &self.user_caller {
            parts.push(c.label());
        }
        if let Some(u) = &self.user {
            parts.push(u.label());
        }
        if let Some(l) = &self.library {
            parts.push(l.label());
        }
        if let Some(n) = &self.native {
            parts.push(n.clone());
        }
        if let Some(k) = &self.kernel {
            parts.push(format!("[kernel] {k}"));
        }
        if parts.is_empty() {
            "no frame resolved".to_string()
        } else {
            parts.join(" -> ")
        }
    }

    /// Every function named on the path, for matching and search.
    pub fn functions(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for p in [&self.user_caller, &self.user, &self.library]
            .into_iter()
            .flatten()
        {
            v.push(&p.function);
        }
        if let Some(n) = &self.native {
            v.push(n.rsplit(':').next().unwrap_or(n));
        }
        if let Some(k) = &self.kernel {
            v.push(k);
        }
        v
    }

    /// What the kernel part of the path amounts to, for grouping: the
    /// system call, "page fault", or the kernel function.
    pub fn kernel_kind(&self) -> Option<String> {
        let k = self.kernel.as_deref()?;
        if let (Some(a), Some(b)) = (k.rfind('('), k.rfind(')')) {
            if b > a {
                return Some(k[a + 1..b].to_string());
            }
        }
        if k.contains("page_fault") || k.contains("page fault") {
            return Some("page fault".to_string());
        }
        Some(k.to_string())
    }

    /// True when the kernel part is the page-fault path (fresh pages
    /// being allocated or read in).
    pub fn in_page_fault(&self) -> bool {
        self.kernel_kind().as_deref() == Some("page fault")
    }

    /// The grouping key: whose code (the user function, else the library
    /// or native frame), without line numbers.
    pub fn owner(&self) -> String {
        if let Some(u) = &self.user {
            format!("{} ({})", u.function, u.file)
        } else if let Some(l) = &self.library {
            format!("{} ({})", l.function, l.file)
        } else if let Some(n) = &self.native {
            n.clone()
        } else if let Some(k) = &self.kernel {
            format!("[kernel] {k}")
        } else {
            "no frame resolved".to_string()
        }
    }
}

/// Reduces a native/kernel stack and a Python stack (innermost first) to a
/// [`CodePath`]. Either may be empty.
pub fn reduce(native: &[StackFrame], python: &[StackFrame]) -> CodePath {
    let py: Vec<&StackFrame> = native
        .iter()
        .chain(python.iter())
        .filter(|f| f.kind == FrameKind::Python)
        .collect();
    let mut user_at = None;
    for (i, f) in py.iter().enumerate() {
        if is_user_file(&f.file) {
            user_at = Some(i);
            break;
        }
    }
    let user = user_at.map(|i| PyFrame::of(py[i]));
    let user_caller = user_at.and_then(|i| {
        py[i + 1..]
            .iter()
            .find(|f| is_user_file(&f.file) && f.function != "<module>")
            .map(|f| PyFrame::of(f))
    });
    // The innermost library frame that is real source (the interpreter's
    // frozen import machinery says only "importing"; the module body being
    // imported says what).
    let below_user = &py[..user_at.unwrap_or(py.len())];
    let library = below_user
        .iter()
        .find(|f| !f.file.starts_with('<'))
        .or(below_user.first())
        .map(|f| PyFrame::of(f));
    CodePath {
        user,
        user_caller,
        library,
        native: native_leaf(native),
        kernel: kernel_leaf(native),
    }
}

/// Native functions that only move control around inside the interpreter
/// or libc's call plumbing.
const PLUMBING: &[&str] = &[
    "_PyEval_EvalFrame",
    "PyEval_EvalCode",
    "_PyObject_Call",
    "PyObject_Call",
    "PyObject_Vectorcall",
    "_PyObject_Vectorcall",
    "_PyFunction_Vectorcall",
    "method_vectorcall",
    "cfunction_call",
    "cfunction_vectorcall",
    "slot_tp_call",
    "_PyObject_MakeTpCall",
    "vectorcall_method",
    "run_eval_code_obj",
    "run_mod",
    "pyrun_file",
    "_PyRun_",
    "Py_RunMain",
    "Py_BytesMain",
    "__libc_start",
    "_start",
    "pybind11::cpp_function::dispatcher",
    "THPFunction_apply",
    "torch::autograd::THPVariable_",
];

/// The innermost native frame that is resolved and not plumbing.
fn native_leaf(frames: &[StackFrame]) -> Option<String> {
    frames
        .iter()
        .filter(|f| f.kind == FrameKind::Native)
        .find(|f| {
            !f.function.is_empty()
                && !f.function.starts_with("0x")
                && !PLUMBING.iter().any(|p| f.function.starts_with(p))
        })
        .map(|f| {
            let module = f.module.rsplit('/').next().unwrap_or(&f.module);
            if module.is_empty() {
                f.function.clone()
            } else {
                format!("{module}:{}", short_symbol(&f.function))
            }
        })
}

/// Kernel frames that are the scheduler, the probe or the system-call
/// entry: they are in every off-CPU stack and say nothing of the cause.
const KERNEL_NOISE: &[&str] = &[
    "bpf_",
    "__bpf_",
    "perf_",
    "__perf",
    "__schedule",
    "schedule",
    "preempt_schedule",
    "__cond_resched",
    "_cond_resched",
    "io_schedule",
    "x64_sys_call",
    "do_syscall_64",
    "entry_SYSCALL",
    "syscall_exit",
    "exit_to_user_mode",
    "irqentry_exit",
    "asm_sysvec",
    "sysvec_",
    "__sysvec",
    "hrtimer_",
    "__hrtimer",
    "asm_common_interrupt",
    "common_interrupt",
    "ret_from_fork",
    "exc_int3",
    "asm_exc_int3",
    "do_int3",
    "handle_swbp",
    "uprobe_",
    "arch_uprobe",
];

/// The kernel frame that says what the thread was doing: the innermost
/// frame past the scheduler and probe frames, named with the system call
/// it serves when the stack shows one (`do_wait (wait4)`).
fn kernel_leaf(frames: &[StackFrame]) -> Option<String> {
    let kernel: Vec<&StackFrame> = frames
        .iter()
        .filter(|f| f.kind == FrameKind::Kernel)
        .collect();
    let leaf = kernel
        .iter()
        .find(|f| !KERNEL_NOISE.iter().any(|n| f.function.starts_with(n)))?;
    let syscall = kernel.iter().find_map(|f| {
        f.function
            .strip_prefix("__x64_sys_")
            .or_else(|| f.function.strip_prefix("__se_sys_"))
            .or_else(|| f.function.strip_prefix("__do_sys_"))
    });
    let fault = kernel
        .iter()
        .any(|f| f.function.contains("exc_page_fault") || f.function == "handle_mm_fault");
    Some(match (syscall, fault) {
        (Some(s), _) if !leaf.function.ends_with(s) => format!("{} ({s})", leaf.function),
        (None, true) if !leaf.function.contains("fault") => {
            format!("{} (page fault)", leaf.function)
        }
        _ => leaf.function.clone(),
    })
}

/// A long C++ symbol cut to its qualified name: no template arguments, no
/// argument list, no return type.
fn short_symbol(s: &str) -> String {
    let mut plain = String::with_capacity(s.len());
    let mut depth = 0usize;
    for ch in s.chars() {
        match ch {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            '(' if depth == 0 => break,
            _ if depth == 0 => plain.push(ch),
            _ => {}
        }
    }
    let head = plain.rsplit(' ').find(|t| !t.is_empty()).unwrap_or(&plain);
    if head.is_empty() {
        return s.chars().take(80).collect();
    }
    if head.chars().count() > 80 {
        let tail: String = head
            .chars()
            .rev()
            .take(77)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("...{tail}")
    } else {
        head.to_string()
    }
}

/// True for a source file of the job itself: not the Python library, an
/// installed package, or the interpreter's frozen modules.
pub fn is_user_file(file: &str) -> bool {
    !(file.is_empty()
        || file.starts_with('<')
        || file.contains("site-packages/")
        || file.contains("dist-packages/")
        || is_stdlib(file))
}

/// A file of the Python standard library (`/usr/lib/python3.12/...`).
fn is_stdlib(file: &str) -> bool {
    let mut it = file.split('/');
    while let Some(seg) = it.next() {
        if seg.starts_with("python3") || seg.starts_with("python2") {
            if let Some(next) = it.clone().next() {
                // lib/python3.12/x.py, not a project folder named python3-tools/x.py
                return !next.is_empty()
                    && seg.chars().skip(6).all(|c| c.is_ascii_digit() || c == '.');
            }
        }
    }
    false
}

/// A file name shortened for a reader: after `site-packages/` or the
/// Python library folder, else the last two path components.
pub fn short_file(file: &str) -> String {
    if let Some((_, rest)) = file.rsplit_once("site-packages/") {
        return rest.to_string();
    }
    if let Some((_, rest)) = file.rsplit_once("dist-packages/") {
        return rest.to_string();
    }
    let parts: Vec<&str> = file.rsplit('/').take(2).collect();
    if is_stdlib(file) || parts.len() < 2 {
        return parts.first().copied().unwrap_or(file).to_string();
    }
    format!("{}/{}", parts[1], parts[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(f: &str) -> StackFrame {
        StackFrame {
            kind: FrameKind::Kernel,
            module: "kernel".into(),
            function: f.into(),
            offset: 0,
            file: String::new(),
            line: 0,
        }
    }

    #[test]
    fn a_blocked_subprocess_wait_names_the_user_function_and_the_syscall() {
        let native = vec![
            k("bpf_prog_x_on_switch"),
            k("__schedule"),
            k("schedule"),
            k("do_wait"),
            k("kernel_wait4"),
            k("__do_sys_wait4"),
            k("__x64_sys_wait4"),
            k("do_syscall_64"),
            StackFrame::native("libc.so.6", "wait4", 10),
            StackFrame::native("python3.12", "_PyEval_EvalFrameDefault", 10),
        ];
        let python = vec![
            StackFrame::python("Popen._wait", "/usr/lib/python3.12/subprocess.py", 2047),
            StackFrame::python("run", "/usr/lib/python3.12/subprocess.py", 550),
            StackFrame::python("monitor", "/srv/job/train.py", 42),
            StackFrame::python("main", "/srv/job/train.py", 90),
            StackFrame::python("<module>", "/srv/job/train.py", 99),
        ];
        let p = reduce(&native, &python);
        assert_eq!(
            p.user.as_ref().map(|u| u.function.as_str()),
            Some("monitor")
        );
        assert_eq!(
            p.user_caller.as_ref().map(|u| u.function.as_str()),
            Some("main")
        );
        assert_eq!(
            p.library.as_ref().map(|u| u.function.as_str()),
            Some("Popen._wait")
        );
        assert_eq!(p.native.as_deref(), Some("libc.so.6:wait4"));
        assert_eq!(p.kernel.as_deref(), Some("do_wait (wait4)"));
        assert_eq!(
            p.text(),
            "main (job/train.py:90) -> monitor (job/train.py:42) -> Popen._wait (subprocess.py:2047) \
             -> libc.so.6:wait4 -> [kernel] do_wait (wait4)"
        );
    }

    #[test]
    fn library_and_stdlib_files_are_not_the_jobs_code() {
        assert!(!is_user_file("/usr/lib/python3.12/subprocess.py"));
        assert!(!is_user_file(
            "/opt/venv/lib/python3.12/site-packages/torch/nn/module.py"
        ));
        assert!(!is_user_file("<frozen importlib._bootstrap>"));
        assert!(is_user_file("/work/zoo2.py"));
        assert!(is_user_file("/home/me/python3-tools/train.py"));
    }
}
