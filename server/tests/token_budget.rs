//! What a model pays to investigate with this server, in tokens (the cl100k
//! BPE, counted with `tiktoken-rs`), checked on every evaluation case
//! (`evals/cases/`) through the real server over stdio:
//!
//! - the analysis tools' definitions as a model reads them (name,
//!   description, input schema) at most [`TOOLS_BUDGET`] together;
//! - the `investigate` prompt, filled in for the case, at most
//!   [`PROMPT_BUDGET`];
//! - the first request of the case (those definitions, that prompt and the
//!   question, as `evals/run.py --mode model` sends them) at most
//!   [`FIRST_REQUEST_BUDGET`];
//! - the brief `get_causal_chains` answer's text at most [`CHAINS_BUDGET`].
//!
//! A small local model (an 8,192-token window) must hold all of that, the
//! chat template's own tokens and its answer. The figures are printed.

mod stdio_client;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use stdio_client::StdioServer;
use tiktoken_rs::CoreBPE;

/// Analysis tool definitions together.
const TOOLS_BUDGET: usize = 2_500;
/// The filled-in `investigate` prompt.
const PROMPT_BUDGET: usize = 600;
/// Tool definitions + prompt + question: one case's first request.
const FIRST_REQUEST_BUDGET: usize = 3_200;
/// A brief `get_causal_chains` answer.
const CHAINS_BUDGET: usize = 1_200;

/// Tools that record rather than read; a model investigating a file is not
/// offered them (`evals/ingero_eval/model.py` leaves them out too).
const CAPTURE_TOOLS: &[&str] = &[
    "list_gpu_processes",
    "start_trace",
    "stop_trace",
    "get_trace_status",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One evaluation case: its id, question, and where its database comes from.
struct Case {
    id: String,
    question: String,
    db: Option<PathBuf>,
    demo: Option<String>,
}

impl Case {
    /// File name of the case's database in the served folder.
    fn served(&self) -> String {
        match (&self.db, &self.demo) {
            (_, Some(demo)) => format!("demo-{demo}.db"),
            (Some(db), None) => db
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| n.trim_end_matches(".xz").to_string())
                .unwrap_or_default(),
            (None, None) => String::new(),
        }
    }
}

/// The top-level `key = "value"` of a case file.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
        serde_json::from_str::<String>(rest).ok()
    })
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("evals/cases"))
        .expect("evals/cases")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("case file");
        out.push(Case {
            id: path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string(),
            question: field(&text, "question").expect("question"),
            db: field(&text, "db").map(|d| root().join(d)),
            demo: field(&text, "demo"),
        });
    }
    assert!(
        out.len() >= 30,
        "expected the evaluation cases, found {}",
        out.len()
    );
    out
}

/// Puts the case's database into `folder` (unpacked or generated).
fn place(case: &Case, folder: &Path) {
    let dest = folder.join(case.served());
    if dest.exists() {
        return;
    }
    if let Some(demo) = &case.demo {
        let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["demo", demo, "--db"])
            .arg(&dest)
            .output()
            .expect("ingero demo");
        assert!(out.status.success(), "demo {demo}: {out:?}");
        return;
    }
    let src = case.db.as_ref().expect("db");
    if src.extension().is_some_and(|e| e == "xz") {
        let file = std::fs::File::open(src).expect("packed recording");
        let mut dst = std::fs::File::create(&dest).expect("unpacked copy");
        lzma_rs::xz_decompress(&mut std::io::BufReader::new(file), &mut dst).expect("xz");
    } else {
        std::fs::copy(src, &dest).expect("copy");
    }
}

/// Tool definitions as a function-calling model receives them.
fn model_view(tools: &[Value]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}})
            })
            .collect(),
    )
}

fn tokens(bpe: &CoreBPE, text: &str) -> usize {
    bpe.encode_with_special_tokens(text).len()
}

#[test]
fn an_investigation_fits_a_small_models_window() {
    let bpe = tiktoken_rs::cl100k_base().expect("cl100k tokenizer");
    let cases = cases();
    let lib = tempfile::tempdir().expect("tempdir");
    place(&cases[0], lib.path());
    let mut server = StdioServer::start([
        std::ffi::OsString::from("--db"),
        lib.path().join(cases[0].served()).into_os_string(),
        "--allow-dir".into(),
        lib.path().as_os_str().to_owned(),
    ]);

    let listed = server.request("tools/list", json!({}));
    let all = listed["result"]["tools"].as_array().expect("tools").clone();
    let analysis: Vec<Value> = all
        .iter()
        .filter(|t| !CAPTURE_TOOLS.contains(&t["name"].as_str().unwrap_or_default()))
        .cloned()
        .collect();
    let tools_text = model_view(&analysis).to_string();
    let tools_tokens = tokens(&bpe, &tools_text);
    println!(
        "tool definitions: {} analysis tools {} tokens ({} characters); all {} tools {} tokens",
        analysis.len(),
        tools_tokens,
        tools_text.len(),
        all.len(),
        tokens(&bpe, &model_view(&all).to_string())
    );
    for t in &analysis {
        println!(
            "  {:28} {:5} tokens",
            t["name"].as_str().unwrap_or_default(),
            tokens(&bpe, &model_view(std::slice::from_ref(t)).to_string())
        );
    }
    let instructions = server.init["instructions"].as_str().unwrap_or_default();
    println!("server instructions: {} tokens", tokens(&bpe, instructions));

    let mut failures = Vec::new();
    if tools_tokens > TOOLS_BUDGET {
        failures.push(format!(
            "analysis tool definitions: {tools_tokens} tokens > {TOOLS_BUDGET}"
        ));
    }
    println!(
        "{:36} {:>7} {:>8} {:>7}",
        "case", "prompt", "request", "chains"
    );
    let mut worst = (0, 0, 0);
    for case in &cases {
        place(case, lib.path());
        let db = case.served();
        let p = server.request(
            "prompts/get",
            json!({"name": "investigate", "arguments": {"db": db, "focus": case.question}}),
        );
        let prompt: String = p["result"]["messages"]
            .as_array()
            .expect("prompt messages")
            .iter()
            .filter_map(|m| m["content"]["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let prompt_tokens = tokens(&bpe, &prompt);
        // As the model harness sends it: the prompt, then the question.
        let first =
            tools_tokens + tokens(&bpe, &format!("{prompt}\n\nQuestion: {}", case.question));
        let (is_error, chains) = server.call("get_causal_chains", json!({"db": db}));
        assert!(!is_error, "{}: get_causal_chains failed: {chains}", case.id);
        let chains_tokens = tokens(&bpe, &chains);
        println!(
            "{:36} {:>7} {:>8} {:>7}",
            case.id, prompt_tokens, first, chains_tokens
        );
        worst = (
            worst.0.max(prompt_tokens),
            worst.1.max(first),
            worst.2.max(chains_tokens),
        );
        if prompt_tokens > PROMPT_BUDGET {
            failures.push(format!(
                "{}: investigate prompt {prompt_tokens} tokens > {PROMPT_BUDGET}",
                case.id
            ));
        }
        if first > FIRST_REQUEST_BUDGET {
            failures.push(format!(
                "{}: first request {first} tokens > {FIRST_REQUEST_BUDGET}",
                case.id
            ));
        }
        if chains_tokens > CHAINS_BUDGET {
            failures.push(format!(
                "{}: brief get_causal_chains {chains_tokens} tokens > {CHAINS_BUDGET}",
                case.id
            ));
        }
        // One unpacked recording on disk at a time.
        let _ = std::fs::remove_file(lib.path().join(&db));
    }
    println!(
        "largest: prompt {} (budget {PROMPT_BUDGET}), first request {} (budget {FIRST_REQUEST_BUDGET}), brief chains {} (budget {CHAINS_BUDGET})",
        worst.0, worst.1, worst.2
    );
    assert!(failures.is_empty(), "over budget:\n{}", failures.join("\n"));
}
