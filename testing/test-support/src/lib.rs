//! What strata's test suites share (a dev-dependency only): the path of
//! Ethereum's published test vectors, `../shared/vectors` beside the
//! checkout, and the rule for when they are absent — a test says so and
//! skips, except under `CI=true`, where absence is a failure; [`json_files`],
//! the vector files of a folder; [`tree_contents`], what "changed no byte
//! of the datadir" is checked with; and [`http_post`] / [`json_rpc`], a
//! JSON-RPC server asked over a bare HTTP/1.1 connection, byte for byte what
//! the test wrote (malformed bodies included), for the servers' tests;
//! [`garage::GarageCluster`], the object store the replica tests run against.

pub mod garage;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The checkout's root folder (this crate is `testing/test-support`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `sub` inside the shared vectors folder (`""` for the folder itself), or
/// `None` after printing why the calling test skips. Panics when the folder
/// is absent and `CI=true`.
pub fn vectors(sub: &str) -> Option<PathBuf> {
    // The vectors sit beside the checkout.
    let dir = repo_root().join("../shared/vectors").join(sub);
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "test vectors missing at {} (required when CI=true)",
            dir.display()
        );
    }
    eprintln!("skipping: no test vectors at {}", dir.display());
    None
}

/// Every `.json` file under `dir` and its subfolders, sorted.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every file and folder under `dir` with the bytes of each file (a folder
/// maps to `<folder>`): equal before and after a command when it changed no
/// byte, created nothing and deleted nothing.
pub fn tree_contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let entries =
            std::fs::read_dir(&at).unwrap_or_else(|e| panic!("list {}: {e}", at.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path.clone());
                out.insert(path, b"<folder>".to_vec());
            } else {
                let bytes =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                out.insert(path, bytes);
            }
        }
    }
    out
}

/// POSTs `body` to `addr` as JSON over one HTTP/1.1 connection and returns
/// the response body as JSON. Panics when the response is not JSON.
pub fn http_post(addr: SocketAddr, body: &str) -> Value {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

/// Calls `method` with `params` (a JSON list, as text) at `addr`; the
/// whole response object (`result` or `error`).
pub fn json_rpc(addr: SocketAddr, method: &str, params: &str) -> Value {
    http_post(
        addr,
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#),
    )
}
