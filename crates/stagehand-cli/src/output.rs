//! Standard output without panics.
//!
//! `print!` and `println!` panic when standard output cannot be written: a
//! full disk (`stagehand report > /dev/full`), or a reader that went away
//! (`stagehand report | head -1`). Everything the command prints goes
//! through [`print`] and [`println`] instead, which return an
//! [`OutputError`].
//!
//! `main` ends the command with status 1 and one line on standard error,
//! `stagehand: cannot write to standard output: <reason>`: on a full disk,
//! and on a closed pipe too (`stagehand play | head -1` stops as soon as a
//! write fails, rather than playing on for nobody). Where the whole output
//! fits in the pipe's buffer before the reader leaves, nothing fails and
//! the command succeeds.
//!
//! Every call flushes, so an error shows up at the call that caused it and
//! not later, when the buffer is flushed at exit and errors are ignored.

use std::fmt;
use std::io::{self, Write};

/// Standard output could not be written.
#[derive(Debug)]
pub struct OutputError(io::Error);

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
    }
}
