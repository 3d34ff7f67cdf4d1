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
    /// An option is out of range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// A thread of the player could not start, or ended in a panic.
    #[error("player thread: {0}")]
    Thread(String),
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
