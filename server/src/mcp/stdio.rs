//! `ingero mcp` over stdin/stdout: one session, logs on stderr only.
//!
//! rmcp drops a line that is not JSON without a word, so a client that sent
//! one waits forever. Every line goes through [`judge_line`] first: lines
//! that are not JSON-RPC messages are answered here (-32700 or -32600, as
//! JSON-RPC 2.0 says), the rest are passed to rmcp through an in-process
//! pipe. One writer owns stdout, so answers never interleave inside a line.

use super::http_edge::{error_response, judge_message, BodyVerdict, INVALID_REQUEST};
use super::server::IngeroMcp;
use super::Config;
use rmcp::ServiceExt;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest line read from the client; a longer one is refused and skipped.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Serves one MCP session on stdio until the client closes it.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    serve_on(config, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves one session reading `input` and writing `output` (stdio, or a
/// pipe in tests).
pub async fn serve_on<R, W>(config: Config, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let shared = IngeroMcp::shared(config)?;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 20);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 20);
    let (lines_tx, lines_rx) = mpsc::channel::<String>(64);
    let writer = tokio::spawn(write_lines(lines_rx, output));
    let relay = tokio::spawn(relay_rmcp(from_rmcp, lines_tx.clone()));
    let reader = tokio::spawn(read_client(input, to_rmcp, lines_tx));
    let running = IngeroMcp::new(Arc::clone(&shared))
        .serve((rmcp_in, rmcp_out))
        .await?;
    tracing::info!("serving MCP on stdio");
    // A signal ends the session as the client's EOF does.
    let cancel = running.cancellation_token();
    let signalled = Arc::new(std::sync::Mutex::new(None::<&'static str>));
    let got = Arc::clone(&signalled);
    let signals = tokio::spawn(async move {
        let name = super::http::shutdown_signal().await;
        if let Ok(mut slot) = got.lock() {
            *slot = Some(name);
        }
        cancel.cancel();
    });
    let reason = running.waiting().await?;
    signals.abort();
    tracing::info!(?reason, "stdio session ended");
    // What the captures' files record as their ending.
    let ending = match signalled.lock().ok().and_then(|s| *s) {
        Some(name) => format!("server shutting down ({name})"),
        None => "MCP client disconnected (stdin closed)".to_string(),
    };
    super::finish_captures(&shared, &ending).await;
    reader.abort();
    // rmcp's pipe is closed now: the relay ends, then the writer drains.
    let _ = relay.await;
    let _ = writer.await;
    Ok(())
}

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum LineVerdict {
    /// Blank: ignore.
    Skip,
    /// A JSON-RPC message: hand it to rmcp.
    Forward,
    /// Answer with this error line instead.
    Answer(String),
}

/// Judges one line (without its newline), as the HTTP edge judges a body.
pub fn judge_line(line: &str) -> LineVerdict {
    if line.trim().is_empty() {
        return LineVerdict::Skip;
    }
    match judge_message(line.as_bytes(), "line") {
        BodyVerdict::Forward => LineVerdict::Forward,
        BodyVerdict::Refuse { code, message, id } => {
            LineVerdict::Answer(error_response(code, &message, id))
        }
    }
}

/// Reads client lines, forwarding messages to rmcp and answering the rest.
async fn read_client<R, W>(input: R, mut to_rmcp: W, answers: mpsc::Sender<String>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = match read_bounded_line(&mut reader, &mut buf).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin");
                break;
            }
        };
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE_BYTES {
            let line = error_response(
                INVALID_REQUEST,
                &format!("Invalid Request: message longer than {MAX_LINE_BYTES} bytes"),
                Value::Null,
            );
            if answers.send(line).await.is_err() {
                break;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        match judge_line(line) {
            LineVerdict::Skip => {}
            LineVerdict::Answer(reply) => {
                if answers.send(reply).await.is_err() {
                    break;
                }
            }
            LineVerdict::Forward => {
                let sent = async {
                    to_rmcp.write_all(line.as_bytes()).await?;
                    to_rmcp.write_all(b"\n").await?;
                    to_rmcp.flush().await
                };
                if sent.await.is_err() {
                    break;
                }
            }
        }
    }
    // End of input: closing rmcp's side ends the session.
    let _ = to_rmcp.shutdown().await;
}

/// Reads up to a newline; past [`MAX_LINE_BYTES`] the rest of the line is
/// consumed but not kept (the length says it was too long).
async fn read_bounded_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0usize;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() <= MAX_LINE_BYTES {
            let room = MAX_LINE_BYTES + 1 - buf.len();
            buf.extend_from_slice(&chunk[..take.min(room)]);
        }
        total += take;
        reader.consume(take);
        if done {
            return Ok(total);
        }
    }
}

/// Copies rmcp's output lines to the writer.
async fn relay_rmcp<R: AsyncRead + Unpin>(from_rmcp: R, lines: mpsc::Sender<String>) {
    let mut reader = BufReader::new(from_rmcp).lines();
    while let Ok(Some(line)) = reader.next_line().await {
        if lines.send(line).await.is_err() {
            break;
        }
    }
}

/// The one writer of stdout: whole lines, flushed each time.
async fn write_lines<W: AsyncWrite + Unpin>(mut lines: mpsc::Receiver<String>, mut output: W) {
    while let Some(line) = lines.recv().await {
        let written = async {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!(error = %e, "stdout closed");
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(verdict: LineVerdict) -> Option<i64> {
        match verdict {
            LineVerdict::Answer(line) => {
                let v: Value = serde_json::from_str(&line).expect("answer is JSON");
                v["error"]["code"].as_i64()
            }
            _ => None,
        }
    }

    #[test]
    fn lines_are_judged() {
        assert_eq!(judge_line("   "), LineVerdict::Skip);
        assert_eq!(
            judge_line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            LineVerdict::Forward
        );
        assert_eq!(code_of(judge_line("{not json")), Some(-32700));
        assert_eq!(code_of(judge_line(r#"{"id": 3}"#)), Some(-32600));
        assert_eq!(code_of(judge_line("[1,2]")), Some(-32600));
    }

    #[tokio::test]
    async fn long_lines_are_cut_but_consumed() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.push(b'\n');
        input.extend_from_slice(b"next\n");
        let mut reader = BufReader::new(&input[..]);
        let mut buf = Vec::new();
        let n = read_bounded_line(&mut reader, &mut buf)
            .await
            .expect("read");
        assert_eq!(n, MAX_LINE_BYTES + 11);
        assert_eq!(buf.len(), MAX_LINE_BYTES + 1);
        buf.clear();
        read_bounded_line(&mut reader, &mut buf)
            .await
            .expect("read");
        assert_eq!(buf, b"next\n");
    }
}
