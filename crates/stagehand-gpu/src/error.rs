//! stagehand's error type.

use crate::diag::ObjectKind;
use std::fmt;

/// A result whose error is stagehand's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An object's label as error messages print it: ` "name"`, or nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Label(pub Option<String>);

impl Label {
    pub(crate) fn of(label: Option<&str>) -> Self {
        Self(label.map(str::to_owned))
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(l) => write!(f, " {l:?}"),
            None => Ok(()),
        }
    }
}

/// Everything that can go wrong in stagehand.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No adapter on any backend searched. Recover by installing a software
    /// adapter (the message says which package) or searching other backends.
    #[error(
        "no GPU adapter found on backends {backends}{seen}. On a machine without a GPU install a software adapter: \
         `apt-get install mesa-vulkan-drivers` gives lavapipe (Vulkan); `apt-get install libegl1 libgl1-mesa-dri` \
         gives llvmpipe (GL). Then try WGPU_BACKEND=vulkan or WGPU_BACKEND=gl.",
        seen = if adapters_seen.is_empty() { String::new() } else { format!(" (seen on other backends: {})", adapters_seen.join(", ")) }
    )]
    NoAdapter {
        /// The backends searched.
        backends: String,
        /// Adapters that exist on backends that were not searched.
        adapters_seen: Vec<String>,
    },

    /// An adapter was asked for by name and none matched. Recover by choosing
    /// one of `available`.
    #[error("no adapter's name contains {wanted:?}; available: {}", available.join(", "))]
    AdapterNotFound {
        /// The name asked for.
        wanted: String,
        /// Names of the adapters found, with their backends.
        available: Vec<String>,
    },

    /// A backend name that is not one of vulkan, gl, metal, dx12.
    #[error(
        "unknown backend {0:?}: expected vulkan, gl, metal or dx12 (comma-separated for several)"
    )]
    UnknownBackend(String),

    /// The adapter refused to open a device with the features or limits asked for.
    /// Recover by asking for fewer features or lower limits.
    #[error("adapter {adapter:?} could not open a device: {reason}")]
    RequestDevice {
        /// The adapter's name.
        adapter: String,
        /// What the backend said.
        reason: String,
    },

    /// A name (a texture format, a usage flag) that wgpu does not have.
    #[error("unknown {what} {name:?}: expected {expected}")]
    UnknownName {
        /// What was named: `"texture format"`, `"buffer usage"`.
        what: &'static str,
        /// The name given.
        name: String,
        /// What would have been taken.
        expected: String,
    },

    /// A descriptor stagehand checked and found wrong; nothing was created.
    #[error("invalid {kind} descriptor{label}: {reason}")]
    InvalidDescriptor {
        /// What was being created.
        kind: ObjectKind,
        /// Its label, if it had one.
        label: Label,
        /// What is wrong and what the limit is.
        reason: String,
    },

    /// A texture format that needs device features the device was not opened
    /// with. Recover by opening the device with `missing` features, where the
    /// adapter has them, or choosing another format.
    #[error(
        "texture format {format:?} needs features {missing:?}, which this device was not opened with"
    )]
    UnsupportedFormat {
        /// The format asked for.
        format: wgpu::TextureFormat,
        /// The features it needs that the device lacks.
        missing: wgpu::Features,
    },

    /// A texture usage the adapter does not allow for a format.
    #[error(
        "texture format {format:?} does not allow usage {usage:?} on this adapter (it allows {allowed:?})"
    )]
    UnsupportedUsage {
        /// The format asked for.
        format: wgpu::TextureFormat,
        /// The usages asked for.
        usage: wgpu::TextureUsages,
        /// The usages the adapter allows for this format.
        allowed: wgpu::TextureUsages,
    },

    /// wgpu's validation rejected the call; nothing was created or submitted.
    #[error("wgpu rejected {kind}{label}: {message}")]
    Validation {
        /// What was being created or done.
        kind: ObjectKind,
        /// Its label, if it had one.
        label: Label,
        /// wgpu's message.
        message: String,
    },

    /// A pool could not hand out a block; see [`PoolError`](crate::pool::PoolError).
    #[error(transparent)]
    Pool(crate::pool::PoolError),

    /// An upload was refused or failed; see [`UploadError`](crate::upload::UploadError).
    #[error(transparent)]
    Upload(crate::upload::UploadError),

    /// The device ran out of memory. Recover by freeing memory (drop or trim
    /// cached objects) or asking for less.
    #[error("out of GPU memory creating {kind}{label} ({bytes} bytes)")]
    OutOfMemory {
        /// What was being created.
        kind: ObjectKind,
        /// Its label, if it had one.
        label: Label,
        /// The bytes it would have held.
        bytes: u64,
    },
}

impl From<crate::pool::PoolError> for Error {
    fn from(e: crate::pool::PoolError) -> Self {
        Self::Pool(e)
    }
}

impl Error {
    /// Whether this is an out-of-memory error, which freeing memory may cure.
    pub fn is_oom(&self) -> bool {
        match self {
            Self::OutOfMemory { .. } => true,
            Self::Pool(e) => e.is_oom(),
            _ => false,
        }
    }
}
