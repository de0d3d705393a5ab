//! A reader that goes away ends a command quietly: `ingero query ... | head`
//! and the JSON and folded exports into `head` exit as other Unix tools do
//! (the pipeline's status 0, the command itself by SIGPIPE), never with a
//! panic about a broken pipe.

use std::process::Command;

#[test]
fn commands_piped_into_head_end_quietly() {
    let bin = env!("CARGO_BIN_EXE_ingero");
    let db = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../investigations/pageable-vs-pinned-h200.db"
    );
    for args in [
        "query --db DB",
        "query --json --db DB",
        "explain --db DB",
        "explain --json --db DB",
    ] {
        let cmd = format!("{bin} {} | head -c 20 >/dev/null", args.replace("DB", db));
        let out = Command::new("sh").args(["-c", &cmd]).output().expect("sh");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args}: {stderr}");
    }
}

/// `| head -1`: the command's own status (not the pipeline's) is 0 or that
/// of SIGPIPE (141 in bash), and it prints nothing about the closed pipe.
#[test]
fn commands_piped_into_head_1_exit_0_or_by_sigpipe() {
    let bin = env!("CARGO_BIN_EXE_ingero");
    let db = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../investigations/nccl-ws1-h200.db"
    );
    for args in [
        "query --db DB --limit 5000",
        "query --json --db DB --limit 5000",
        "export --format folded --db DB",
        "export --format folded --stacks off_cpu --db DB",
    ] {
        let cmd = format!(
            "{bin} {} | head -1 >/dev/null; exit ${{PIPESTATUS[0]}}",
            args.replace("DB", db)
        );
        let out = Command::new("bash")
            .args(["-c", &cmd])
            .output()
            .expect("bash");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0) | Some(141)),
            "{args}: {:?} {stderr}",
            out.status
        );
        assert!(!stderr.contains("panicked"), "{args}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args}: {stderr}");
    }
}
