//! The sample outputs in the README and `docs/` are the binary's own. A
//! fenced block preceded by `<!-- checked -->` starts with `$ ingero ARGS`
//! (run from the repository root) and holds that command's output; with
//! `<!-- checked in a new folder -->` its `$ ingero` lines run in turn in an
//! empty folder (earlier ones make the files the last one reads) and the
//! block holds the last one's output; one
//! preceded by `<!-- checked tool: DB TOOL {ARGS} -->` holds the text answer of
//! that MCP tool, called through `ingero mcp --db DB` over stdio. The block's
//! lines must equal the first lines of the output; a last line `...` says more
//! follows. `INGERO_DOCS_REGEN=1` rewrites the blocks from the binary instead
//! of checking them (as many lines as each block has).

mod stdio_client;

use std::path::{Path, PathBuf};
use std::process::Command;
use stdio_client::StdioServer;

const MARKER: &str = "<!-- checked -->";
const FOLDER_MARKER: &str = "<!-- checked in a new folder -->";
const TOOL_MARKER: &str = "<!-- checked tool:";
const MORE: &str = "...";

/// What produces a block's output.
enum Source {
    /// `ingero ARGS` for each command, in turn; in a new folder when set.
    Cli(Vec<Vec<String>>, bool),
    /// An MCP tool's text answer: database, tool, arguments.
    Tool(String, String, serde_json::Value),
}

/// One checked block: where it is and what it holds.
struct Block {
    /// Line index of the last line before the output (the command line, or
    /// the fence of a tool block).
    command_at: usize,
    /// Where the output comes from.
    source: Source,
    /// The output lines shown, without a closing `...`.
    shown: Vec<String>,
    /// True when the block ends in `...`.
    more: bool,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The documents whose blocks are checked.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

fn blocks(lines: &[&str], doc: &Path) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let l = l.trim();
        let tool = l
            .strip_prefix(TOOL_MARKER)
            .and_then(|t| t.strip_suffix("-->"));
        let in_folder = l == FOLDER_MARKER;
        if l != MARKER && !in_folder && tool.is_none() {
            continue;
        }
        let at = |j: usize| format!("{}:{}", doc.display(), j + 1);
        let fence = i + 1;
        assert!(
            lines.get(fence).is_some_and(|f| f.starts_with("```")),
            "{}: a checked marker must sit right above a fenced block",
            at(i)
        );
        let (command_at, source) = match tool {
            Some(spec) => {
                let mut parts = spec.trim().splitn(3, ' ');
                let (db, name) = (parts.next(), parts.next());
                let args = parts.next().unwrap_or("{}");
                let (Some(db), Some(name)) = (db, name) else {
                    panic!("{}: `checked tool: DB TOOL {{ARGS}}`", at(i))
                };
                let args: serde_json::Value = serde_json::from_str(args)
                    .unwrap_or_else(|e| panic!("{}: tool arguments: {e}", at(i)));
                (fence, Source::Tool(db.into(), name.into(), args))
            }
            None => {
                let mut commands = Vec::new();
                let mut j = fence + 1;
                while let Some(args) = lines.get(j).and_then(|c| c.strip_prefix("$ ingero ")) {
                    commands.push(args.split_whitespace().map(str::to_string).collect());
                    j += 1;
                }
                assert!(
                    !commands.is_empty(),
                    "{}: a checked block starts with `$ ingero ARGS`, not {:?}",
                    at(fence + 1),
                    lines.get(fence + 1)
                );
                (j - 1, Source::Cli(commands, in_folder))
            }
        };
        let end = (command_at + 1..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .unwrap_or_else(|| panic!("{}: unclosed block", doc.display()));
        let mut shown: Vec<String> = lines[command_at + 1..end]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let more = shown.last().is_some_and(|l| l.trim() == MORE);
        if more {
            shown.pop();
        }
        out.push(Block {
            command_at,
            source,
            shown,
            more,
        });
    }
    out
}

/// The output lines of a block's source.
fn produce(source: &Source) -> (String, Vec<String>) {
    match source {
        Source::Cli(commands, in_folder) => {
            let folder = in_folder.then(|| tempfile::tempdir().expect("tempdir"));
            let cwd = folder
                .as_ref()
                .map_or_else(root, |d| d.path().to_path_buf());
            let mut last = Vec::new();
            for args in commands {
                last = run(args, &cwd);
            }
            let shown = commands.last().map(|a| a.join(" ")).unwrap_or_default();
            (format!("ingero {shown}"), last)
        }
        Source::Tool(db, tool, args) => {
            let mut server = StdioServer::start(["--db".into(), root().join(db)]);
            let (is_error, text) = server.call(tool, args.clone());
            assert!(!is_error, "{tool} on {db}: {text}");
            let lines = text.lines().map(|l| l.trim_end().to_string()).collect();
            (format!("{tool} {args} on {db}"), lines)
        }
    }
}

fn run(args: &[String], cwd: &Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run ingero");
    assert!(
        out.status.success(),
        "ingero {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[test]
fn every_checked_sample_is_what_the_binary_prints() {
    let regen = std::env::var("INGERO_DOCS_REGEN").as_deref() == Ok("1");
    let mut checked = 0;
    let mut drift = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("read doc");
        let lines: Vec<&str> = text.lines().collect();
        let found = blocks(&lines, &doc);
        if found.is_empty() {
            continue;
        }
        let mut rewritten: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        // From the end, so earlier indices stay valid while blocks change size.
        for b in found.iter().rev() {
            checked += 1;
            let (what, actual) = produce(&b.source);
            let n = b.shown.len();
            let want: Vec<String> = actual.iter().take(n).cloned().collect();
            let more_now = actual.len() > n;
            if want != b.shown || (b.more != more_now && !regen) {
                drift.push(format!(
                    "{}:{}: `{what}` prints\n{}\n{}but the block shows\n{}{}",
                    doc.display(),
                    b.command_at + 1,
                    want.join("\n"),
                    if more_now { "...\n" } else { "" },
                    b.shown.join("\n"),
                    if b.more { "\n..." } else { "" }
                ));
            }
            let mut replacement = want;
            if more_now {
                replacement.push(MORE.to_string());
            }
            let old_len = n + usize::from(b.more);
            rewritten.splice(b.command_at + 1..b.command_at + 1 + old_len, replacement);
        }
        if regen {
            let mut body = rewritten.join("\n");
            body.push('\n');
            std::fs::write(&doc, body).expect("rewrite doc");
        }
    }
    assert!(checked > 0, "no {MARKER} block found");
    if !regen {
        assert!(
            drift.is_empty(),
            "{} sample(s) no longer match the binary (INGERO_DOCS_REGEN=1 cargo test -p ingero \
             --test docs_drift rewrites them):\n\n{}",
            drift.len(),
            drift.join("\n\n")
        );
    }
}
