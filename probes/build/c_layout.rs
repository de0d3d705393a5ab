//! Reads the struct definitions and integer `#define`s of the BPF headers
//! whose layouts reach user space, computes each struct's C layout, and
//! writes the Rust checks that hold `src/records/` to it. `build.rs` runs it
//! on every build, so a header change not mirrored in Rust stops the build;
//! `tests/record_layout.rs` runs it too, to test the reader itself.
//!
//! Only the C the headers use is understood: fixed-width integer types
//! (`u8`..`u64`, `s8`..`s64`), `char`, named structs, and one array
//! dimension given as a number or a `#define`. Anything else is an error, so
//! a header that grows beyond it is noticed rather than misread.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A header, relative to `bpf/`, with the named structs of it that user
/// space reads (C name, Rust mirror) and the `#define`s the Rust side
/// mirrors.
pub struct Header {
    /// File name in `bpf/`.
    pub file: &'static str,
    /// Every named struct of the header must be listed (C name, Rust type).
    pub structs: &'static [(&'static str, &'static str)],
    /// Which integer `#define`s must have a Rust constant of equal value.
    pub defines: Defines,
}

/// The `#define`s of a header that the Rust side mirrors.
pub enum Defines {
    /// Every integer `#define`.
    All,
    /// These only.
    Only(&'static [&'static str]),
}

/// The headers whose layouts reach user space, in include order (a later
/// header may use an earlier one's structs and constants).
pub const HEADERS: &[Header] = &[
    Header {
        file: "ingero_events.h",
        structs: &[
            ("rec_cuda", "RecCuda"),
            ("rec_host", "RecHost"),
            ("rec_pages", "RecPages"),
            ("rec_launch_run", "RecLaunchRun"),
            ("rec_call_fold", "RecCallFold"),
            ("rec_proc", "RecProc"),
            ("rec_stack", "RecStack"),
            ("rec_notice", "RecNotice"),
        ],
        defines: Defines::All,
    },
    Header {
        file: "call_folds.h",
        structs: &[("call_fold", "FoldVal"), ("row_budget", "RowBudget")],
        defines: Defines::Only(&["FOLD_SLOTS", "BUDGET_SLOTS"]),
    },
    Header {
        file: "cuda.h",
        structs: &[
            ("call_val", "CallVal"),
            ("launch_run", "RunVal"),
            ("thread_calls", "ThreadCalls"),
        ],
        defines: Defines::Only(&["CALL_SLOTS"]),
    },
    Header {
        file: "page_runs.h",
        structs: &[("page_run", "PageRun")],
        defines: Defines::Only(&[]),
    },
];

/// One field of a C struct, laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (the Rust mirror uses the same).
    pub name: String,
    /// Rust spelling of its type, e.g. `u32` or `[u64; 127]`.
    pub rust_type: String,
    /// Byte offset in the struct.
    pub offset: usize,
    /// Bytes it takes.
    pub size: usize,
}

/// A named C struct, laid out as the compiler does (each field at its
/// alignment, the size rounded up to the largest alignment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Struct {
    /// C name, without `struct`.
    pub name: String,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    /// `sizeof`.
    pub size: usize,
    /// `_Alignof`.
    pub align: usize,
}

/// What one header declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Named structs, in order.
    pub structs: Vec<Struct>,
    /// Integer `#define`s, in order.
    pub defines: Vec<(String, i128)>,
}

/// Known layouts (C struct name to Rust type, size, alignment) and
/// constant values that a header may refer to.
#[derive(Default)]
pub struct Scope {
    structs: BTreeMap<String, (String, usize, usize)>,
    defines: BTreeMap<String, i128>,
}

/// The value of a `#define` body when it is one integer: decimal or hex,
/// optionally negative, in parentheses, or with `U`/`L` suffixes.
pub fn integer(body: &str) -> Option<i128> {
    let mut s = body.trim();
    while let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        s = inner.trim();
    }
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest.trim()),
        None => (false, s),
    };
    let s = s.trim_end_matches(['u', 'U', 'l', 'L']);
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => i128::from_str_radix(hex, 16).ok()?,
        None => s.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// `text` without `/* */` and `//` comments (each replaced by a space).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                match rest[b + 2..].find("*/") {
                    Some(end) => rest = &rest[b + 2 + end + 2..],
                    None => return out,
                }
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                match rest[l..].find('\n') {
                    Some(end) => rest = &rest[l + end..],
                    None => return out,
                }
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Splits source into identifiers/numbers and single punctuation
/// characters; preprocessor lines (with their continuations) are returned
/// apart, joined.
fn tokens(text: &str) -> (Vec<String>, Vec<String>) {
    let mut toks = Vec::new();
    let mut directives = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with('#') {
            let mut joined = line.to_string();
            while joined.ends_with('\\') {
                joined.pop();
                match lines.next() {
                    Some(next) => joined.push_str(next),
                    None => break,
                }
            }
            directives.push(joined);
            continue;
        }
        let mut word = String::new();
        for c in line.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                toks.push(std::mem::take(&mut word));
            }
            if !c.is_whitespace() {
                toks.push(c.to_string());
            }
        }
        if !word.is_empty() {
            toks.push(word);
        }
    }
    (toks, directives)
}

fn primitive(name: &str) -> Option<(&'static str, usize)> {
    Some(match name {
        "u8" | "__u8" => ("u8", 1),
        "s8" | "__s8" => ("i8", 1),
        "char" => ("u8", 1),
        "u16" | "__u16" => ("u16", 2),
        "s16" | "__s16" => ("i16", 2),
        "u32" | "__u32" => ("u32", 4),
        "s32" | "__s32" => ("i32", 4),
        "u64" | "__u64" => ("u64", 8),
        "s64" | "__s64" => ("i64", 8),
        _ => return None,
    })
}

fn align_up(v: usize, align: usize) -> usize {
    v.div_ceil(align) * align
}

impl Scope {
    /// Reads one header's structs and integer `#define`s, laying the
    /// structs out with the types and constants known so far (which then
    /// include this header's own). `mirrors` names the Rust type of each C
    /// struct, for the later structs that contain it.
    pub fn parse(
        &mut self,
        file: &str,
        text: &str,
        mirrors: &[(&str, &str)],
    ) -> Result<Parsed, String> {
        let clean = strip_comments(text);
        let (toks, directives) = tokens(&clean);
        let mut parsed = Parsed::default();
        for d in &directives {
            let mut words = d.trim_start().trim_start_matches('#').split_whitespace();
            if words.next() != Some("define") {
                continue;
            }
            let Some(name) = words.next() else { continue };
            if name.contains('(') {
                continue;
            }
            let body: Vec<&str> = words.collect();
            if let Some(v) = integer(&body.join(" ")) {
                self.defines.insert(name.to_string(), v);
                parsed.defines.push((name.to_string(), v));
            }
        }
        let mut i = 0;
        while i + 2 < toks.len() {
            let named = toks[i] == "struct" && toks[i + 2] == "{" && is_ident(&toks[i + 1]);
            if !named {
                i += 1;
                continue;
            }
            let name = toks[i + 1].clone();
            let (s, next) = self
                .parse_struct(&name, &toks, i + 3)
                .map_err(|e| format!("bpf/{file}: struct {name}: {e}"))?;
            let rust = mirrors
                .iter()
                .find(|(c, _)| *c == name)
                .map_or(&*name, |m| m.1);
            self.structs
                .insert(name.clone(), (rust.to_string(), s.size, s.align));
            parsed.structs.push(s);
            i = next;
        }
        Ok(parsed)
    }

    fn parse_struct(
        &self,
        name: &str,
        toks: &[String],
        mut i: usize,
    ) -> Result<(Struct, usize), String> {
        let mut fields = Vec::new();
        let (mut offset, mut max_align) = (0usize, 1usize);
        let tok = |i: usize| toks.get(i).map(String::as_str).unwrap_or("");
        loop {
            match tok(i) {
                "}" => break,
                "" => return Err("no closing brace".to_string()),
                _ => {}
            }
            let (rust, size, align) = if tok(i) == "struct" {
                let inner = tok(i + 1);
                i += 2;
                match self.structs.get(inner) {
                    Some((rust, size, align)) => (rust.clone(), *size, *align),
                    None => return Err(format!("struct {inner} is not known yet")),
                }
            } else {
                let ty = tok(i);
                i += 1;
                match primitive(ty) {
                    Some((rust, size)) => (rust.to_string(), size, size),
                    None => return Err(format!("type {ty:?} is not understood")),
                }
            };
            let field = tok(i).to_string();
            if !is_ident(&field) {
                return Err(format!("expected a field name, found {field:?}"));
            }
            i += 1;
            let (rust, size) = if tok(i) == "[" {
                let len = tok(i + 1);
                let n = match integer(len).or_else(|| self.defines.get(len).copied()) {
                    Some(n) if n >= 0 => n as usize,
                    _ => return Err(format!("array length {len:?} of {field} is not known")),
                };
                if tok(i + 2) != "]" {
                    return Err(format!(
                        "array {field}: only one plain dimension is understood"
                    ));
                }
                i += 3;
                (format!("[{rust}; {n}]"), size * n)
            } else {
                (rust, size)
            };
            if tok(i) != ";" {
                return Err(format!("expected `;` after {field}, found {:?}", tok(i)));
            }
            i += 1;
            offset = align_up(offset, align);
            max_align = max_align.max(align);
            fields.push(Field {
                name: field,
                rust_type: rust,
                offset,
                size,
            });
            offset += size;
        }
        if tok(i + 1) != ";" {
            return Err("expected `;` after the closing brace".to_string());
        }
        let s = Struct {
            name: name.to_string(),
            fields,
            size: align_up(offset, max_align),
            align: max_align,
        };
        Ok((s, i + 2))
    }
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads every header in [`HEADERS`] with `read` (given the file name in
/// `bpf/`) and returns the Rust source of the layout checks: for each
/// struct its size, alignment, each field's offset and exact type; for each
/// mirrored `#define` the constant's value. The source is meant to be
/// included into the module that defines (or imports) the Rust mirrors.
pub fn checks(read: impl Fn(&str) -> Result<String, String>) -> Result<String, String> {
    let mut scope = Scope::default();
    let mut out = String::new();
    out.push_str(
        "// Generated by probes/build.rs (probes/build/c_layout.rs) from the BPF headers;\n\
         // each check holds a Rust mirror in src/records/ to its C layout.\n",
    );
    for h in HEADERS {
        let text = read(h.file)?;
        let parsed = scope.parse(h.file, &text, h.structs)?;
        for s in &parsed.structs {
            let Some((_, rust)) = h.structs.iter().find(|(c, _)| *c == s.name) else {
                return Err(format!(
                    "bpf/{}: struct {} has no Rust mirror: add one to probes/src/records/ \
                     and list it in probes/build/c_layout.rs",
                    h.file, s.name
                ));
            };
            write_struct(&mut out, h.file, s, rust);
        }
        for (c, _) in h.structs {
            if !parsed.structs.iter().any(|s| s.name == *c) {
                return Err(format!(
                    "bpf/{}: struct {c} is listed in probes/build/c_layout.rs but not defined",
                    h.file
                ));
            }
        }
        let wanted: Vec<&(String, i128)> = match &h.defines {
            Defines::All => parsed.defines.iter().collect(),
            Defines::Only(names) => {
                let found: Vec<_> = parsed
                    .defines
                    .iter()
                    .filter(|(n, _)| names.contains(&n.as_str()))
                    .collect();
                if let Some(missing) = names.iter().find(|n| !found.iter().any(|(f, _)| f == *n)) {
                    return Err(format!(
                        "bpf/{}: #define {missing} is listed in probes/build/c_layout.rs \
                         but not defined as an integer",
                        h.file
                    ));
                }
                found
            }
        };
        for (name, v) in wanted {
            let _ = writeln!(
                out,
                "const _: () = assert!({name} as i128 == {v}, \
                 \"{name} differs from bpf/{file} ({v})\");",
                file = h.file
            );
        }
    }
    Ok(out)
}

fn write_struct(out: &mut String, file: &str, s: &Struct, rust: &str) {
    let c = &s.name;
    let _ = writeln!(
        out,
        "const _: () = assert!(::core::mem::size_of::<{rust}>() == {size}, \
         \"{rust}: size differs from struct {c} in bpf/{file} ({size} bytes)\");",
        size = s.size
    );
    let _ = writeln!(
        out,
        "const _: () = assert!(::core::mem::align_of::<{rust}>() == {align}, \
         \"{rust}: alignment differs from struct {c} in bpf/{file} ({align})\");",
        align = s.align
    );
    for f in &s.fields {
        let _ = writeln!(
            out,
            "const _: () = assert!(::core::mem::offset_of!({rust}, {name}) == {offset}, \
             \"{rust}.{name}: offset differs from struct {c} in bpf/{file} ({offset})\");",
            name = f.name,
            offset = f.offset
        );
    }
    // Each field's exact type (sign and array length included): a mismatch
    // is a type error here.
    let _ = writeln!(out, "const _: fn(&{rust}) = |r| {{");
    for f in &s.fields {
        let _ = writeln!(out, "    let _: &{} = &r.{};", f.rust_type, f.name);
    }
    out.push_str("};\n");
}
