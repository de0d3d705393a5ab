//! The header reader the build uses to hold `src/records/` to the C
//! layouts: on the real headers it must find the layouts the Rust mirrors
//! have, and on headers it cannot mirror it must fail rather than guess.

#[allow(dead_code)]
#[path = "../build/c_layout.rs"]
mod c_layout;

use c_layout::{checks, integer, Scope, HEADERS};
use ingero_probes::records::*;
use std::mem::{align_of, size_of};
use std::path::Path;

fn header(file: &str) -> Result<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf").join(file);
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// (C struct, size, alignment) of every Rust mirror.
fn mirrors() -> Vec<(&'static str, usize, usize)> {
    macro_rules! m {
        ($($c:literal => $t:ty),* $(,)?) => {
            vec![$(($c, size_of::<$t>(), align_of::<$t>())),*]
        };
    }
    m![
        "rec_cuda" => RecCuda,
        "rec_host" => RecHost,
        "rec_pages" => RecPages,
        "rec_launch_run" => RecLaunchRun,
        "rec_call_fold" => RecCallFold,
        "rec_proc" => RecProc,
        "rec_stack" => RecStack,
        "rec_notice" => RecNotice,
        "call_val" => CallVal,
        "launch_run" => RunVal,
        "thread_calls" => ThreadCalls,
        "page_run" => PageRun,
        "call_fold" => FoldVal,
        "row_budget" => RowBudget,
    ]
}

#[test]
fn the_headers_lay_out_as_the_rust_mirrors() {
    let mut scope = Scope::default();
    let mut seen = Vec::new();
    for h in HEADERS {
        let parsed = match header(h.file) {
            Ok(text) => scope.parse(h.file, &text, h.structs),
            Err(e) => Err(e),
        };
        let parsed = parsed.unwrap_or_else(|e| panic!("{e}"));
        for s in parsed.structs {
            let Some(&(_, size, align)) = mirrors().iter().find(|m| m.0 == s.name) else {
                panic!(
                    "struct {} in bpf/{} has no mirror in this test",
                    s.name, h.file
                );
            };
            assert_eq!((s.size, s.align), (size, align), "struct {}", s.name);
            // Fields tile the struct: each starts at or after the previous end.
            let mut end = 0;
            for f in &s.fields {
                assert!(f.offset >= end, "{}.{} overlaps", s.name, f.name);
                end = f.offset + f.size;
            }
            assert!(end <= s.size);
            seen.push(s.name);
        }
    }
    assert_eq!(seen.len(), mirrors().len(), "{seen:?}");
    let Ok(source) = checks(header) else {
        panic!("the checks of the real headers fail");
    };
    assert!(source.contains("offset_of!(RecStack, kernel) == 1048"));
    assert!(source.contains("size_of::<ThreadCalls>() == 1328"));
}

#[test]
fn the_record_and_loss_numbers_are_the_headers() {
    let mut scope = Scope::default();
    let text = header("ingero_events.h").unwrap_or_else(|e| panic!("{e}"));
    let parsed = scope
        .parse("ingero_events.h", &text, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let value = |name: &str| parsed.defines.iter().find(|d| d.0 == name).map(|d| d.1);
    assert_eq!(value("REC_LAUNCH_RUN"), Some(i128::from(REC_LAUNCH_RUN)));
    assert_eq!(value("REC_CALL_FOLD"), Some(i128::from(REC_CALL_FOLD)));
    assert_eq!(value("LOSS_UNFINISHED"), Some(i128::from(LOSS_UNFINISHED)));
    assert_eq!(value("RET_THREAD_EXITED"), Some(-1));
    assert_eq!(value("STACK_KERNEL_FRAMES"), Some(48));
    assert_eq!(value("INGERO_EVENTS_H"), None);
}

/// `ingero_events.h` with `from` replaced by `to`, for the reader to fail on.
fn altered(from: &str, to: &str) -> impl Fn(&str) -> Result<String, String> {
    let (from, to) = (from.to_string(), to.to_string());
    move |file: &str| {
        let text = header(file)?;
        if file != "ingero_events.h" {
            return Ok(text);
        }
        assert!(text.contains(&from), "{from:?} is not in the header");
        Ok(text.replace(&from, &to))
    }
}

#[test]
fn headers_beyond_the_mirrors_fail_the_build() {
    let cases = [
        (
            "struct rec_notice {",
            "struct rec_new {\n\tu32 rec;\n};\nstruct rec_notice {",
            "struct rec_new has no Rust mirror",
        ),
        (
            "\tu64 ts;      /* first",
            "\tint ts; /* first",
            "type \"int\"",
        ),
        (
            "u64 user[STACK_USER_FRAMES];",
            "u64 user[FRAMES_NOT_DEFINED];",
            "array length \"FRAMES_NOT_DEFINED\"",
        ),
        (
            "struct rec_notice {",
            "struct rec_notice_renamed {",
            "no Rust mirror",
        ),
    ];
    for (from, to, why) in cases {
        match checks(altered(from, to)) {
            Ok(_) => panic!("{to:?} was accepted"),
            Err(e) => assert!(e.contains(why), "{to:?}: {e}"),
        }
    }
}

#[test]
fn integer_defines_are_read_as_c_reads_them() {
    assert_eq!(integer("(-1)"), Some(-1));
    assert_eq!(integer("1000000ULL"), Some(1_000_000));
    assert_eq!(integer("0xffffffffU"), Some(0xffff_ffff));
    assert_eq!(integer("(1ULL << 8)"), None);
    assert_eq!(integer(""), None);
}
