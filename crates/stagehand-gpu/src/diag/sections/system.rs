//! The `system` section: the machine the report was made on.

use crate::diag::report::{Block, Cell, Section, View};
use serde::Serialize;

/// The machine: operating system, architecture, processors, memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SystemInfo {
    /// Operating system family (`linux`, `macos`, `windows`).
    pub os: String,
    /// Distribution or release name, where the OS says (`/etc/os-release` on Linux).
    pub os_release: Option<String>,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// Logical processors this process may use.
    pub cpus: usize,
    /// Physical memory in bytes, where the OS says (`/proc/meminfo` on Linux).
    pub memory_total: Option<u64>,
    /// Memory available to new work in bytes, where the OS says.
    pub memory_available: Option<u64>,
}

impl SystemInfo {
    /// Reads the numbers of this machine.
    pub fn collect() -> Self {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let os_release = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|s| pretty_name(&s));
        Self {
            os: std::env::consts::OS.to_owned(),
            os_release,
            arch: std::env::consts::ARCH.to_owned(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_total: meminfo_bytes(&meminfo, "MemTotal"),
            memory_available: meminfo_bytes(&meminfo, "MemAvailable"),
        }
    }
}

/// `PRETTY_NAME` of an os-release file.
fn pretty_name(os_release: &str) -> Option<String> {
    let line = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(line.trim_matches('"').to_owned())
}

/// A `Key:   123 kB` line of /proc/meminfo, in bytes.
fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    let rest = meminfo
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

fn opt_bytes(v: Option<u64>) -> Cell {
    v.map_or(Cell::text("unknown"), Cell::Bytes)
}

impl Section for SystemInfo {
    fn name(&self) -> &str {
        "system"
    }

    fn view(&self) -> View {
        let fields = vec![
            ("os".into(), Cell::text(&self.os)),
            (
                "release".into(),
                Cell::text(self.os_release.as_deref().unwrap_or("unknown")),
            ),
            ("arch".into(), Cell::text(&self.arch)),
            ("cpus".into(), Cell::int(self.cpus)),
            ("memory".into(), opt_bytes(self.memory_total)),
            ("memory available".into(), opt_bytes(self.memory_available)),
        ];
        View {
            blocks: vec![Block::Fields(fields)],
            footnotes: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines_parse_to_bytes() {
        let text = "MemTotal:       24522364 kB\nMemAvailable:   23000000 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), Some(24_522_364 * 1024));
        assert_eq!(meminfo_bytes(text, "MemAvailable"), Some(23_000_000 * 1024));
        assert_eq!(meminfo_bytes(text, "SwapTotal"), None);
        assert_eq!(meminfo_bytes("MemTotal: lots\n", "MemTotal"), None);
    }

    #[test]
    fn os_release_pretty_name_is_unquoted() {
        let text = "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            pretty_name(text).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
    }
}
