//! A minimal OTLP/HTTP receiver for tests: accepts POSTs on a local port,
//! records path, content type and body, and answers with a fixed status.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// Request path (`/v1/traces`, `/v1/metrics`).
    pub path: String,
    /// Content-Type header value.
    pub content_type: String,
    /// Raw body.
    pub body: Vec<u8>,
}

/// A running receiver; stops when dropped.
pub struct Receiver {
    /// Base URL to export to.
    pub endpoint: String,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    port: u16,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Starts a receiver answering every request with `status`.
    pub fn start(status: u16) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let port = listener.local_addr().expect("local addr").port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    if let Some(req) = serve(conn, status) {
                        r.lock().expect("lock").push(req);
                    }
                }
            }
        });
        Receiver {
            endpoint: format!("http://127.0.0.1:{port}"),
            received,
            stop,
            port,
            thread: Some(thread),
        }
    }

    /// Requests received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(conn: TcpStream, status: u16) -> Option<Received> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut length = 0usize;
    let mut content_type = String::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().ok()?,
                "content-type" => content_type = v.trim().to_string(),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let reason = if status == 200 { "OK" } else { "Error" };
    let answer = if status == 200 {
        "{}"
    } else {
        "{\"message\":\"refused by test\"}"
    };
    let mut out = conn;
    let _ = write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let _ = out.flush();
    Some(Received {
        path,
        content_type,
        body,
    })
}
