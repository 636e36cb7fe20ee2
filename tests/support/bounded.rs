//! Running a test script for a bounded time, its output printed line by line as it comes
//! (shown with `--nocapture`, or on failure), its `FAIL` lines collected.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// After SIGTERM, how long a script gets to take its servers down before SIGKILL.
const GRACE: Duration = Duration::from_secs(20);

/// What a bounded run printed (stdout and stderr, line by line) and how it ended.
pub struct Run {
    pub lines: Vec<String>,
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl Run {
    pub fn fails(&self) -> Vec<&str> {
        self.lines
            .iter()
            .map(String::as_str)
            .filter(|l| l.starts_with("FAIL") || l.starts_with("not ok"))
            .collect()
    }

    pub fn summary(&self) -> String {
        let ending = match (self.timed_out, self.status) {
            (true, _) => format!("killed after the {} s limit", self.elapsed.as_secs()),
            (false, Some(s)) => format!("{s} after {:.1} s", self.elapsed.as_secs_f64()),
            (false, None) => "no exit status".to_string(),
        };
        let tail: Vec<&str> = self
            .lines
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(String::as_str)
            .collect();
        format!(
            "{ending}\n{}\n--- last lines ---\n{}",
            self.fails().join("\n"),
            tail.join("\n")
        )
    }

    pub fn ok(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }
}

/// Forwards each line of `from` to `tx`.
fn pump(from: impl Read + Send + 'static, tx: mpsc::Sender<String>) {
    thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
}

/// Runs `cmd`, printing its output line by line as it comes, for at most `limit`: then
/// SIGTERM (the e2e script then kills its gateway's process group), and SIGKILL after
/// [`GRACE`].
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let (tx, rx) = mpsc::channel();
    pump(child.stdout.take().unwrap(), tx.clone());
    pump(child.stderr.take().unwrap(), tx);
    let mut lines = Vec::new();
    let mut timed_out = false;
    let mut termed_at: Option<Instant> = None;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                println!("{line}");
                lines.push(line);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Both pipes closed: the process is exiting (or closed them); poll gently.
            Err(mpsc::RecvTimeoutError::Disconnected) => thread::sleep(Duration::from_millis(100)),
        }
        if let Some(status) = child.try_wait().unwrap() {
            // Whatever is still in the pipes.
            while let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
                println!("{line}");
                lines.push(line);
            }
            break Some(status);
        }
        match termed_at {
            None if started.elapsed() > limit => {
                timed_out = true;
                termed_at = Some(Instant::now());
                let line = format!(
                    "FAIL time limit: still running after {} s; sent SIGTERM to pid {}",
                    limit.as_secs(),
                    child.id()
                );
                println!("{line}");
                lines.push(line);
                // SAFETY: kill(2) on the pid of our own child, which has not been reaped.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            }
            Some(at) if at.elapsed() > GRACE => {
                let _ = child.kill();
                break child.wait().ok();
            }
            _ => {}
        }
    };
    Run {
        lines,
        status,
        timed_out,
        elapsed: started.elapsed(),
    }
}
