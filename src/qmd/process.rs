//! Running one QMD command: bounded in time, output captured, nothing left behind.
//!
//! The command runs in its own process group, so that a timeout (or a stop) ends it and
//! everything it started (QMD runs under Bun or Node, which may spawn helpers); its stdout
//! is captured up to [`MAX_STDOUT`], the tail of its stderr kept for the error message.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Stdout beyond this is cut (a search answer is a few kilobytes).
const MAX_STDOUT: u64 = 64 << 20;
/// How much of stderr an error message quotes (its end, where the error usually is).
const STDERR_TAIL: usize = 600;
/// How often a running command is checked for its end, its deadline and a stop.
const POLL: Duration = Duration::from_millis(5);

/// Why a command gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunError {
    /// The executable was not found.
    Missing(String),
    /// It exited with a failure.
    Failed { status: String, stderr: String },
    /// It ran past its time limit and was ended.
    TimedOut(Duration),
    /// memoria is stopping.
    Stopped,
    /// It could not be started or read.
    Io(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Missing(command) => write!(
                f,
                "the QMD command `{command}` was not found (install QMD, or set memory.qmd.command)"
            ),
            RunError::Failed { status, stderr } if stderr.is_empty() => write!(f, "{status}"),
            RunError::Failed { status, stderr } => write!(f, "{status}: {stderr}"),
            RunError::TimedOut(limit) => {
                write!(f, "no answer within {} ms, ended", limit.as_millis())
            }
            RunError::Stopped => write!(f, "stopped"),
            RunError::Io(err) => write!(f, "{err}"),
        }
    }
}

/// Runs `program args` with `envs` added to the environment, for at most `timeout` (and
/// until `stop` is set); returns its stdout when it exits with success.
pub(crate) fn run(
    program: &str,
    args: &[&str],
    envs: &[(&str, PathBuf)],
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Vec<u8>, RunError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => RunError::Missing(program.to_string()),
        std::io::ErrorKind::PermissionDenied => {
            RunError::Io(format!("`{program}` cannot be run: {err}"))
        }
        _ => RunError::Io(format!("starting `{program}`: {err}")),
    })?;
    let stdout = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = out.take(MAX_STDOUT).read_to_end(&mut bytes);
            bytes
        })
    });
    let stderr = child.stderr.take().map(|err| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = err.take(MAX_STDOUT).read_to_end(&mut bytes);
            bytes
        })
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() >= timeout => break Err(RunError::TimedOut(timeout)),
            Ok(None) if stop.load(Ordering::Relaxed) => break Err(RunError::Stopped),
            Ok(None) => std::thread::sleep(POLL),
            Err(err) => break Err(RunError::Io(format!("waiting for `{program}`: {err}"))),
        }
    };
    // Whatever happened, nothing of the group outlives the call (and the pipes close).
    end_group(&mut child);
    let stdout = stdout.and_then(|t| t.join().ok()).unwrap_or_default();
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let status = status?;
    if status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&stderr);
    let stderr = stderr.trim();
    let tail_start = stderr
        .char_indices()
        .rev()
        .nth(STDERR_TAIL)
        .map_or(0, |(i, _)| i);
    Err(RunError::Failed {
        status: format!(
            "`{program} {}` failed ({status})",
            args.first().unwrap_or(&"")
        ),
        stderr: stderr[tail_start..].to_string(),
    })
}

/// Kills the child's process group (the child leads it) and reaps the child.
fn end_group(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> Result<Vec<u8>, RunError> {
        run(
            "sh",
            &["-c", script],
            &[("MEMORIA_T", PathBuf::from("x"))],
            timeout,
            &AtomicBool::new(false),
        )
    }

    #[test]
    fn answers_fails_times_out_and_is_missing() {
        assert_eq!(
            sh("printf \"$MEMORIA_T\"", Duration::from_secs(5)).unwrap(),
            b"x"
        );
        match sh("echo boom >&2; exit 3", Duration::from_secs(5)) {
            Err(RunError::Failed { status, stderr }) => {
                assert!(status.contains("exit status: 3"), "{status}");
                assert_eq!(stderr, "boom");
            }
            other => panic!("{other:?}"),
        }
        // A child that holds the pipe (sleep) is ended with the group: no wait for it.
        let started = Instant::now();
        assert_eq!(
            sh("sleep 30", Duration::from_millis(200)),
            Err(RunError::TimedOut(Duration::from_millis(200)))
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(
            run(
                "/no/such/qmd",
                &[],
                &[],
                Duration::from_secs(1),
                &AtomicBool::new(false)
            ),
            Err(RunError::Missing(_))
        ));
    }
}
