//! Standard output without panics.
//!
//! `print!` and `println!` panic when standard output cannot be written: a
//! full disk (`stagehand report > /dev/full`), or a reader that went away
//! (`stagehand report | head -1`). Everything the command prints goes
//! through [`print`] and [`println`] instead, which return an
//! [`OutputError`].
//!
//! What `main` does with the error:
//!
//! - A closed pipe ([`OutputError::is_broken_pipe`]) ends the command at
//!   once, silently, with status 0. The reader chose to stop reading; that
//!   is not a failure of this command, and a message about it would only be
//!   noise after `| head`. This is what a classic Unix tool amounts to (it
//!   dies of SIGPIPE without a word); a Rust program ignores SIGPIPE and
//!   sees `EPIPE` instead, and exiting quietly with success is what Rust
//!   tools such as ripgrep do. The status is 0 rather than SIGPIPE's 141 so
//!   that `set -o pipefail` scripts piping into `head` keep going.
//! - Any other error (no space left, an I/O error on the file) fails the
//!   command with status 1 and one line on standard error,
//!   `stagehand: cannot write to standard output: <reason>`, since the
//!   output the user asked for was lost.
//!
//! Every call flushes, so an error shows up at the call that caused it and
//! not later, when the buffer is flushed at exit and errors are ignored.

use std::fmt;
use std::io::{self, Write};

/// Standard output could not be written.
#[derive(Debug)]
pub struct OutputError(io::Error);

impl OutputError {
    /// Whether the reader closed its end of the pipe: the command should
    /// stop quietly rather than report a failure.
    pub fn is_broken_pipe(&self) -> bool {
        self.0.kind() == io::ErrorKind::BrokenPipe
    }
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl From<io::Error> for OutputError {
    fn from(e: io::Error) -> Self {
        Self(e)
    }
}

/// Writes `text` to standard output as it is, and flushes.
pub(crate) fn print(text: &str) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Writes `text` and a newline to standard output, and flushes.
pub(crate) fn println(text: &str) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::OutputError;
    use std::io;

    #[test]
    fn the_message_names_standard_output_and_the_reason() {
        let e = OutputError::from(io::Error::from_raw_os_error(28));
        assert_eq!(
            e.to_string(),
            "cannot write to standard output: No space left on device (os error 28)"
        );
        assert!(!e.is_broken_pipe());
    }

    #[test]
    fn a_closed_pipe_is_told_apart() {
        let e = OutputError::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(e.is_broken_pipe());
    }
}
