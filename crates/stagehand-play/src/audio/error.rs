//! [`SoundError`]: why the sound stopped, or never started, while the
//! pictures played on.

use std::sync::Arc;

/// Why the sound stopped, or never started, while the pictures played on
/// (the player's own clock keeps time then). The summary gives it as
/// `audio.error`; the cause is kept.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SoundError {
    /// The null sink's thread could not start.
    #[error("cannot start the null sink: {0}")]
    NullSink(#[source] Arc<std::io::Error>),
    /// The decoder's thread could not start.
    #[error("cannot start the audio decoder: {0}")]
    DecoderThread(#[source] Arc<std::io::Error>),
    /// The sound could not be opened again (to start, or at a new place):
    /// what FFmpeg said.
    #[error("cannot open its audio: {0}")]
    Open(String),
    /// The output has a channel count no layout is known for.
    #[error("no channel layout for the output's {0} channels")]
    Layout(u16),
    /// The stream's rate changed midway to one out of bounds, in Hz.
    #[error("its audio changed to {0} Hz midway; the player takes {min} to {max} Hz", min = super::MIN_RATE, max = super::MAX_RATE)]
    RateChanged(u32),
    /// No resampler converts the stream to the output: what FFmpeg said.
    #[error("cannot resample its audio: {0}")]
    Resample(String),
    /// Decoding failed midway: what FFmpeg said.
    #[error("decoding its audio failed: {0}")]
    Decode(String),
}
