//! An S3 server on loopback for the fleet tests and bench (shared with `#[path]`): moto's
//! (`moto[server]` from PyPI), started from `MEMORIA_TEST_MOTO` (its `moto_server`
//! launcher; `.ci/run` installs it), with one bucket, `fleet`; the bench can take s3s-fs's
//! instead.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A moto S3 server on loopback with bucket `fleet`, stopped when dropped.
pub struct S3 {
    child: Child,
    port: u16,
    /// Where s3s-fs keeps the bucket's objects as files (moto: `None`).
    files: Option<PathBuf>,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
}

impl S3 {
    /// The server, or `None` (with a note) when `MEMORIA_TEST_MOTO` is not set.
    pub fn start() -> Option<S3> {
        let Some(moto) = std::env::var_os("MEMORIA_TEST_MOTO") else {
            eprintln!(
                "skipped: MEMORIA_TEST_MOTO (a moto_server launcher) is not set; .ci/run sets it"
            );
            return None;
        };
        let port = free_port();
        let mut command = Command::new(&moto);
        command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        Some(S3::serve(command, port, None))
    }

    /// s3s-fs's S3 server (`cargo install s3s-fs --features binary`), keeping the bucket's
    /// objects as files under `root`: moto keeps them in its memory, which a million
    /// chunks' worth does not fit.
    #[allow(dead_code)] // the bench's; the tests run on moto
    pub fn start_s3s_fs(binary: &Path, root: &Path) -> S3 {
        let port = free_port();
        // s3s-fs checks signatures and `request` does not sign, so the bucket (a directory)
        // is made here.
        let bucket = root.join("fleet");
        std::fs::create_dir_all(&bucket).expect("the S3 server's bucket directory");
        let mut command = Command::new(binary);
        command
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", "testing", "--secret-key", "testing"])
            .arg(root);
        S3::serve(command, port, Some(bucket))
    }

    /// Starts `command`, a server that will listen on `port`, and creates the bucket unless
    /// it is the directory `files`.
    fn serve(mut command: Command, port: u16, files: Option<PathBuf>) -> S3 {
        let program = command.get_program().to_owned();
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("{}: {err}", Path::new(&program).display()));
        let server = S3 {
            child,
            port,
            files,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while server.request("GET", "/").is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{} did not answer on port {port} within 60 s",
                Path::new(&program).display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        if server.files.is_none() {
            let created = server.request("PUT", "/fleet").map(|(status, _)| status);
            assert_eq!(created, Some(200), "creating the bucket");
        }
        server
    }

    /// LanceDB's storage options for this server.
    pub fn storage_options(&self) -> serde_json::Value {
        S3::options_for(&self.endpoint)
    }

    /// LanceDB's storage options for a server at `endpoint` (another process's).
    pub fn options_for(endpoint: &str) -> serde_json::Value {
        serde_json::json!({
            "aws_endpoint": endpoint,
            "aws_region": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "allow_http": "true",
        })
    }

    /// The objects of the bucket under `prefix`: key and size, every page of the listing.
    pub fn objects(&self, prefix: &str) -> Vec<(String, u64)> {
        let mut found = Vec::new();
        if let Some(bucket) = &self.files {
            files(bucket, Path::new(""), &mut found);
            found.retain(|(key, _)| key.starts_with(prefix));
            return found;
        }
        let mut token: Option<String> = None;
        loop {
            let mut path = format!("/fleet?list-type=2&prefix={}", encode(prefix));
            if let Some(token) = &token {
                path.push_str(&format!("&continuation-token={}", encode(token)));
            }
            let Some((200, body)) = self.request("GET", &path) else {
                return found;
            };
            for entry in body.split("<Contents>").skip(1) {
                let key = between(entry, "<Key>", "</Key>").unwrap_or_default();
                let size = between(entry, "<Size>", "</Size>").and_then(|s| s.parse().ok());
                found.push((key.to_string(), size.unwrap_or(0)));
            }
            token = between(&body, "<NextContinuationToken>", "</NextContinuationToken>")
                .filter(|_| body.contains("<IsTruncated>true</IsTruncated>"))
                .map(str::to_string);
            if token.is_none() {
                return found;
            }
        }
    }

    /// One HTTP/1.1 request without a body: the status code and the body.
    fn request(&self, method: &str, path: &str) -> Option<(u16, String)> {
        let port = self.port;
        let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .ok()?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let status = answer.split_whitespace().nth(1)?.parse().ok()?;
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        Some((status, body.to_string()))
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on loopback now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The files under `root/key` (`root`, a bucket directory): their keys and sizes.
fn files(root: &Path, key: &Path, found: &mut Vec<(String, u64)>) {
    let Ok(entries) = std::fs::read_dir(root.join(key)) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let key = key.join(entry.file_name());
        match entry.metadata() {
            Ok(meta) if meta.is_dir() => files(root, &key, found),
            Ok(meta) => found.push((key.to_string_lossy().into_owned(), meta.len())),
            Err(_) => {}
        }
    }
}

/// The text between the first `open` and the `close` after it.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

/// `text` percent-encoded for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
