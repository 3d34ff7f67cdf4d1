//! Playback: an image sequence (or synthetic frames) streamed through the
//! upload engine into a frame queue, drawn by a real render pass at the
//! target rate, with a summary of what was shown, dropped and late, and how
//! long the render thread waited.
//!
//! [`play`] draws offscreen; [`play_in`] plays into a window ([`Screen`])
//! with transport keys, a timeline with its cache bar and a heads-up
//! display (`examples/window.rs` shows the order: the screen first, then
//! the GPU on its display). `stagehand play` is a thin front over both.
//! The core library, `stagehand_gpu`, knows nothing of decoders: this
//! crate brings them.

pub mod audio;
pub mod cache;
pub mod convert;
mod error;
pub mod heap;
pub mod options;
mod player;
pub mod render;
pub mod samples;
pub mod source;
mod summary;
#[cfg(feature = "testdata")]
pub mod testdata;
pub mod transport;
pub mod window;
pub mod yuv;

pub use cache::gpu::GpuCacheStats;
pub use cache::{CacheConfig, CacheStats, FrameCache};
pub use convert::format::{FormatChoice, FormatPlan};
pub use error::{Field, PlayError};

pub use options::{Mode, PlayOptions, Preroll, parse_bytes};
pub use player::watch::{CACHE_EVERY, CacheInfo, EVENT_QUEUE, Event, Status, Watch};
pub use player::{PictureReader, Player, engine_config, play, play_in, wanted_features};
pub use render::{Display, Renderer, Transfer};
pub use source::natural_cmp;
pub use summary::{
    AudioSummary, FrameBufferStats, MAX_PASSES, Millis, PassStats, PlaySummary, Progress, Saved,
    SavedTick,
};
pub use transport::{Command, Remote, Tick};
pub use window::{NativeWindow, PresentChoice, Screen, WindowOptions};
