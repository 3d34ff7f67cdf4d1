//! Why playback could not run.

use stagehand_gpu::upload::UploadError;
use std::path::PathBuf;

/// Why playback could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlayError {
    /// The folder or pattern names no image files the player reads.
    #[error("no frames (EXR, PNG, JPEG or TIFF) in {0}")]
    NoFrames(PathBuf),
    /// A file uses something the player does not read (an EXR compression,
    /// deep data, a pixel layout).
    #[error("{path}: unsupported: {reason}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is unsupported, named.
        reason: String,
    },
    /// A file or folder could not be read.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What the OS said.
        reason: String,
    },
    /// An image could not be decoded.
    #[error("cannot decode {path}: {reason}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        reason: String,
    },
    /// A frame's size differs from the first frame's.
    #[error("{path} is {}x{}, but the sequence is {}x{}", got.0, got.1, expected.0, expected.1)]
    SizeMismatch {
        /// The file.
        path: PathBuf,
        /// The sequence's size.
        expected: (u32, u32),
        /// This file's size.
        got: (u32, u32),
    },
    /// A frame could not be decoded (the error is shared by the threads
    /// that needed the frame).
    #[error(transparent)]
    Frame(std::sync::Arc<PlayError>),
    /// A file could not be written.
    #[error("cannot write {path}: {reason}")]
    Write {
        /// The path.
        path: PathBuf,
        /// What the OS said.
        reason: String,
    },
    /// A window was asked for where none can open.
    #[error("cannot open a window: {0}")]
    NoDisplay(String),
    /// An argument is out of range, or does not fit the source.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// An option's value is out of range, or does not fit the source: the
    /// option, and what is wrong with its value (which `message` starts
    /// with, where there is one).
    #[error("invalid option: {field} {message}")]
    BadOption {
        /// The option.
        field: Field,
        /// What is wrong.
        message: String,
    },
    /// The player did not start as asked (its first frame did not come in
    /// time, or playback ended before it).
    #[error("player thread: {0}")]
    Thread(String),
    /// A thread of the player could not start (the system's limit on
    /// threads, or on memory).
    #[error("cannot start the {thread} thread: {cause}")]
    Spawn {
        /// The thread's part in the player.
        thread: &'static str,
        /// What the system said.
        #[source]
        cause: std::io::Error,
    },
    /// A part of the player panicked (a bug, or a library it calls): it
    /// stopped rather than go on in a state nobody checked.
    #[error("the {part} panicked{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Panicked {
        /// The part, as the player names it (`producer`, `decoder on frame
        /// 12`).
        part: String,
        /// The panic's message, where it had one in text.
        message: Option<String>,
    },
    /// The player was closed already.
    #[error("the player is closed")]
    Closed,
    /// The upload engine refused.
    #[error(transparent)]
    Upload(#[from] UploadError),
    /// Memory for a frame could not be had.
    #[error("frame memory: {0}")]
    Memory(#[from] stagehand_gpu::pool::PoolError),
    /// The GPU refused.
    #[error(transparent)]
    Gpu(#[from] stagehand_gpu::Error),
}

impl PlayError {
    /// The error for `part`'s panic, with the panic's message where it is
    /// text (`panic!("...")` gives a `&str` or a `String`).
    pub(crate) fn panicked(part: impl Into<String>, payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|m| (*m).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        Self::Panicked {
            part: part.into(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PlayError;

    #[test]
    fn a_panic_is_an_error_naming_the_part_and_keeping_the_message() {
        let payload = std::panic::catch_unwind(|| panic!("index {} out of range", 7)).unwrap_err();
        let e = PlayError::panicked("producer", payload.as_ref());
        assert_eq!(e.to_string(), "the producer panicked: index 7 out of range");
        let payload = std::panic::catch_unwind(|| std::panic::panic_any(5u8)).unwrap_err();
        let e = PlayError::panicked("decoder on frame 3", payload.as_ref());
        assert_eq!(e.to_string(), "the decoder on frame 3 panicked");
    }

    #[test]
    fn a_thread_that_cannot_start_keeps_the_systems_error_as_its_source() {
        let e = PlayError::Spawn {
            thread: "producer",
            cause: std::io::Error::from(std::io::ErrorKind::OutOfMemory),
        };
        assert!(
            e.to_string()
                .starts_with("cannot start the producer thread: "),
            "{e}"
        );
        let source = std::error::Error::source(&e).expect("the cause is kept");
        assert_eq!(
            source
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind),
            Some(std::io::ErrorKind::OutOfMemory)
        );
    }
}

/// An option of [`PlayOptions`](crate::PlayOptions) (or of its sound's), as an error about its
/// value names it: by the name front ends give it (`staging_buffers`,
/// `gpu_cache`, `audio_offset`), which each writes its own way (the command
/// line as its flag, `--staging-buffers`; Python as its keyword).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// [`PlayOptions::fps`](crate::PlayOptions::fps).
    Fps,
    /// [`PlayOptions::size`](crate::PlayOptions::size).
    Size,
    /// [`PlayOptions::output_size`](crate::PlayOptions::output_size).
    OutputSize,
    /// [`PlayOptions::frames`](crate::PlayOptions::frames).
    Frames,
    /// [`PlayOptions::range`](crate::PlayOptions::range).
    Range,
    /// [`PlayOptions::preroll`](crate::PlayOptions::preroll).
    Preroll,
    /// [`PlayOptions::threads`](crate::PlayOptions::threads).
    Threads,
    /// [`PlayOptions::staging_buffers`](crate::PlayOptions::staging_buffers).
    StagingBuffers,
    /// [`PlayOptions::depth`](crate::PlayOptions::depth).
    Depth,
    /// The display's exposure.
    Exposure,
    /// [`PlayOptions::read_behind`](crate::PlayOptions::read_behind).
    ReadBehind,
    /// [`PlayOptions::cache_bytes`](crate::PlayOptions::cache_bytes).
    Cache,
    /// [`PlayOptions::gpu_cache_bytes`](crate::PlayOptions::gpu_cache_bytes).
    GpuCache,
    /// [`PlayOptions::format`](crate::PlayOptions::format).
    Format,
    /// The sound's offset.
    AudioOffset,
    /// [`PlayOptions::start_paused`](crate::PlayOptions::start_paused).
    StartPaused,
    /// [`PlayOptions::save_ticks`](crate::PlayOptions::save_ticks).
    SaveFrame,
    /// [`PlayOptions::seek`](crate::PlayOptions::seek).
    Seek,
}

impl Field {
    /// The option's name, in words joined by `_` (`staging_buffers`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Fps => "fps",
            Self::Size => "size",
            Self::OutputSize => "output_size",
            Self::Frames => "frames",
            Self::Range => "range",
            Self::Preroll => "preroll",
            Self::Threads => "threads",
            Self::StagingBuffers => "staging_buffers",
            Self::Depth => "depth",
            Self::Exposure => "exposure",
            Self::ReadBehind => "read_behind",
            Self::Cache => "cache",
            Self::GpuCache => "gpu_cache",
            Self::Format => "format",
            Self::AudioOffset => "audio_offset",
            Self::StartPaused => "start_paused",
            Self::SaveFrame => "save_frame",
            Self::Seek => "seek",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
