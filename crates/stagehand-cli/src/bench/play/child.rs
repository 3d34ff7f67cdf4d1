//! One player run as a child process: its exit, what it printed, and the
//! CPU time it used, user plus system, as the kernel counted it for the
//! whole process when it was reaped (`wait4`). A run past its time limit is
//! killed and says so.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It ran past the limit and was killed.
    TimedOut(Duration),
}

/// A child that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub end: End,
    /// CPU seconds of the whole process (user + system); `None` where the
    /// platform does not say.
    pub cpu: Option<f64>,
    /// What it printed on standard output.
    pub stdout: String,
    /// What it printed on standard error.
    pub stderr: String,
}

impl Finished {
    /// Whether it exited with status 0.
    pub fn succeeded(&self) -> bool {
        self.end == End::Exited(0)
    }

    /// Why it did not succeed, in a few words, with the first line of its
    /// error output where it printed one.
    pub fn failure(&self) -> String {
        let said = first_line(&self.stderr).or_else(|| first_line(&self.stdout));
        let how = match self.end {
            End::Exited(code) => format!("exit {code}"),
            End::Signalled(signal) => format!("killed by signal {signal}"),
            End::TimedOut(limit) => format!("timed out after {} s", limit.as_secs()),
        };
        match said {
            Some(line) => format!("{how}: {line}"),
            None => how,
        }
    }
}

/// The first line with anything on it.
pub fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// Runs `command` with nothing on standard input, waiting at most `limit`.
/// Fails only where the program cannot be started at all.
pub fn run(mut command: Command, limit: Duration) -> std::io::Result<Finished> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    // Read both pipes while waiting: a child writing more than a pipe
    // holds would otherwise wait for us while we wait for it.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let (end, cpu) = wait(&mut child, limit);
    Ok(Finished {
        end,
        cpu,
        stdout: collect(stdout),
        stderr: collect(stderr),
    })
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
    let mut pipe = pipe?;
    Some(std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error ends the output there; what came before is kept.
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    }))
}

fn collect(reader: Option<JoinHandle<Vec<u8>>>) -> String {
    let bytes = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Polls until the child ends or `limit` passes (then kills it), and
/// reaps it.
fn wait(child: &mut Child, limit: Duration) -> (End, Option<f64>) {
    let started = Instant::now();
    loop {
        match reap::try_reap(child, false) {
            Ok(Some((end, cpu))) => return (end, cpu),
            Ok(None) => {}
            // Reaped by someone else: its status is lost.
            Err(_) => return (End::Exited(-1), None),
        }
        if started.elapsed() > limit {
            // Still unreaped, so its id is still its own: safe to signal.
            let _ = child.kill();
            return match reap::try_reap(child, true) {
                Ok(Some((_, cpu))) => (End::TimedOut(limit), cpu),
                _ => (End::TimedOut(limit), None),
            };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaping with the child's resource usage.
#[cfg(unix)]
#[allow(unsafe_code)] // wait4 and kill are C calls; each is wrapped here once
mod reap {
    use super::End;
    use std::process::Child;

    /// Reaps `child` if it has ended (or, with `block`, once it ends):
    /// how it ended and its CPU seconds. `None`: still running.
    pub fn try_reap(child: &mut Child, block: bool) -> std::io::Result<Option<(End, Option<f64>)>> {
        let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
        let flags = if block { 0 } else { libc::WNOHANG };
        let mut status: libc::c_int = 0;
        // SAFETY: `rusage` is plain integers; all zeroes is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let got = loop {
            // SAFETY: `pid` is our own child, not yet reaped (std never
            // waits on it: every wait goes through here), and both
            // pointers are to locals that outlive the call.
            let got = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
            let interrupted = got == -1
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
            if !interrupted {
                break got;
            }
        };
        if got == -1 {
            return Err(std::io::Error::last_os_error());
        }
        if got == 0 {
            return Ok(None);
        }
        let end = if libc::WIFSIGNALED(status) {
            End::Signalled(libc::WTERMSIG(status))
        } else {
            End::Exited(libc::WEXITSTATUS(status))
        };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok(Some((
            end,
            Some(seconds(usage.ru_utime) + seconds(usage.ru_stime)),
        )))
    }

    /// Asks `child` to stop (SIGTERM), so it can clean up after itself.
    pub fn terminate(child: &mut Child) {
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: a plain signal to our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

/// Reaping where the platform gives no resource usage: no CPU time.
#[cfg(not(unix))]
mod reap {
    use super::End;
    use std::process::Child;

    pub fn try_reap(child: &mut Child, block: bool) -> std::io::Result<Option<(End, Option<f64>)>> {
        let status = if block {
            Some(child.wait()?)
        } else {
            child.try_wait()?
        };
        Ok(status.map(|s| (End::Exited(s.code().unwrap_or(-1)), None)))
    }

    pub fn terminate(child: &mut Child) {
        let _ = child.kill();
    }
}

pub use reap::terminate;
