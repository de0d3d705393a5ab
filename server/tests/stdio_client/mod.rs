//! A plain JSON-RPC client of `ingero mcp` over stdio, for the tests that
//! read the server's own bytes (no SDK in between): one line per message.

// Each test file includes this module and uses part of it.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A running `ingero mcp`, initialised; killed when dropped.
pub struct StdioServer {
    child: Child,
    to: Option<ChildStdin>,
    from: BufReader<ChildStdout>,
    next_id: i64,
    /// The `initialize` result (server info, capabilities, instructions).
    pub init: Value,
}

impl StdioServer {
    /// Starts `ingero mcp ARGS` and completes the MCP handshake.
    pub fn start<I, S>(args: I) -> StdioServer
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ingero mcp");
        let to = Some(child.stdin.take().expect("stdin"));
        let from = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = StdioServer {
            child,
            to,
            from,
            next_id: 1,
            init: Value::Null,
        };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "stdio-test", "version": "1"}}),
        );
        assert!(init["result"].is_object(), "initialize: {init}");
        server.init = init["result"].clone();
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) {
        let to = self.to.as_mut().expect("the server's input is open");
        writeln!(to, "{message}").expect("write to the server");
        to.flush().expect("flush");
    }

    /// Sends a request and returns the response with its id (notifications
    /// in between are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.from.read_line(&mut line).expect("read the answer");
            assert!(n > 0, "the server closed its output");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// `tools/call` of `tool`: whether it is an error, and its first text block.
    pub fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &r["result"];
        let text = result["content"]
            .as_array()
            .and_then(|c| c.iter().find_map(|b| b["text"].as_str()))
            .unwrap_or_default()
            .to_string();
        (result["isError"] == true, text)
    }
}

impl StdioServer {
    /// Closes the server's input, as a client ending its session does, and
    /// waits for the server to exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        self.to = None;
        self.child.wait().expect("server exits")
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
