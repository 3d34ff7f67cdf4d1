//! Shared by the CLI tests: waiting for the `stagehand` binary with a limit.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Waits for `child` until `limit` after `started`, killing it past that:
/// its exit status, or `None` when it had to be killed.
pub fn wait_at_most(child: &mut Child, started: Instant, limit: Duration) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().expect("waiting works") {
            return Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
