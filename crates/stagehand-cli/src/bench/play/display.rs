//! Where window runs draw: an X server of the bench's own (Xvfb, one
//! 1920x1080 screen, no vertical blank), started once for the whole run and
//! stopped at its end, so every window run of every player meets the same
//! display. Without Xvfb, a `DISPLAY` already set is used instead, and the
//! header says so.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest the server takes to answer once it has named its display.
const READY: Duration = Duration::from_secs(10);

/// The display window runs get.
#[derive(Debug)]
pub enum Screen {
    /// The bench's own server.
    Own(Xvfb),
    /// The display in `DISPLAY`, for want of Xvfb.
    Given(String),
    /// None: why (the window cells say it).
    Missing(String),
}

impl Screen {
    /// Starts an Xvfb, else falls back to `DISPLAY`.
    pub fn open() -> Self {
        match Xvfb::start() {
            Ok(x) => Screen::Own(x),
            Err(why) => match std::env::var("DISPLAY") {
                Ok(d) if !d.is_empty() => Screen::Given(d),
                _ => Screen::Missing(format!("no display: {why}")),
            },
        }
    }

    /// The `DISPLAY` value for window runs, or why there is none.
    /// CPU seconds (user + system) the bench's own server has spent so
    /// far; `None` for a display it did not start, or where the system
    /// does not say.
    pub fn server_cpu(&self) -> Option<f64> {
        match self {
            Screen::Own(x) => x.cpu_seconds(),
            Screen::Given(_) | Screen::Missing(_) => None,
        }
    }

    pub fn display(&self) -> Result<&str, &str> {
        match self {
            Screen::Own(x) => Ok(&x.display),
            Screen::Given(d) => Ok(d),
            Screen::Missing(why) => Err(why),
        }
    }

    /// One line for the header.
    pub fn describe(&self) -> String {
        match self {
            Screen::Own(x) => format!("Xvfb {} (1920x1080x24, the bench's own)", x.display),
            Screen::Given(d) => format!("DISPLAY={d} (Xvfb is not installed)"),
            Screen::Missing(why) => why.clone(),
        }
    }
}

/// A running Xvfb, stopped on drop.
#[derive(Debug)]
pub struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    fn start() -> Result<Self, String> {
        // The server picks a free display and writes its number to us. No
        // reset between players: one that connects while the server starts
        // over can be refused.
        let spawned = Command::new("Xvfb")
            .args([
                "-noreset",
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1920x1080x24",
                "-nolisten",
                "tcp",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err("Xvfb is not installed (scripts/setup installs it)".into());
            }
            Err(e) => return Err(format!("Xvfb: {e}")),
            Ok(child) => child,
        };
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            // EOF (the server quit) leaves the line empty.
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let mut x = Self {
            child,
            display: String::new(),
        };
        let number: u32 = line
            .trim()
            .parse()
            .map_err(|_| format!("Xvfb named no display ({:?})", line.trim()))?;
        x.display = format!(":{number}");
        x.wait_ready(number)?;
        Ok(x)
    }

    /// The server's CPU seconds so far, from `/proc` (Linux).
    #[cfg(target_os = "linux")]
    fn cpu_seconds(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        Some(cpu_ticks(&stat)? as f64 / ticks_per_second()?)
    }

    #[cfg(not(target_os = "linux"))]
    fn cpu_seconds(&self) -> Option<f64> {
        None
    }

    /// Waits until the server accepts a connection on its socket.
    #[cfg(unix)]
    fn wait_ready(&self, number: u32) -> Result<(), String> {
        let socket = format!("/tmp/.X11-unix/X{number}");
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            if started.elapsed() > READY {
                return Err(format!("Xvfb on {} does not answer", self.display));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn wait_ready(&self, _number: u32) -> Result<(), String> {
        Ok(())
    }
}

impl Drop for Xvfb {
    /// SIGTERM first, so the server removes its lock file and socket;
    /// SIGKILL after two seconds.
    fn drop(&mut self) {
        super::child::terminate(&mut self.child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User + system clock ticks of a `/proc/PID/stat` line: its 14th and 15th
/// fields, counted after the command name, which is in parentheses and may
/// hold spaces and parentheses itself.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // The fields after the name start at the 3rd (the state).
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    user.checked_add(system)
}

/// Clock ticks a second, as `/proc` counts them.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // sysconf is a C call that reads a constant
fn ticks_per_second() -> Option<f64> {
    // SAFETY: sysconf takes an integer name and returns an integer; it
    // touches no memory of ours.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then_some(ticks as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_lines_cpu_ticks_are_read_after_the_command_name() {
        // A name with a space and a parenthesis, as a process may take.
        let line = "4242 (X (odd) name) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    123 45 0 0 20 0 1 0 777 1000 100 18446744073709551615";
        assert_eq!(cpu_ticks(line), Some(168));
        assert_eq!(cpu_ticks("4242 (Xvfb) S 1 2"), None, "cut short");
        assert_eq!(cpu_ticks("no name here"), None);
    }
}
