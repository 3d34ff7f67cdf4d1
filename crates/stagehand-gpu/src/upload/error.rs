//! The upload engine's errors.

use crate::pool::PoolError;

/// Why an upload was refused or did not land.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// The data is shorter or longer than the region needs.
    #[error("data is {got} bytes; the region needs {min} to {max} bytes")]
    DataLength {
        /// Bytes given.
        got: u64,
        /// Fewest bytes the region takes (the last row unpadded).
        min: u64,
        /// Most bytes the region takes (every row at the source pitch).
        max: u64,
    },
    /// The region reaches outside the resource.
    #[error("region {region} is outside the resource ({bounds})")]
    OutOfBounds {
        /// The region asked for.
        region: String,
        /// What the resource has.
        bounds: String,
    },
    /// A mip level the texture does not have.
    #[error("mip level {level} does not exist; the texture has {count}")]
    NoSuchMip {
        /// The level asked for.
        level: u32,
        /// Levels the texture has.
        count: u32,
    },
    /// Array layers the texture does not have.
    #[error("layers {first}..{end} do not exist; the texture has {count}")]
    NoSuchLayer {
        /// First layer asked for.
        first: u32,
        /// One past the last layer asked for.
        end: u32,
        /// Layers the texture has.
        count: u32,
    },
    /// The data is in another format than the texture.
    #[error("data in {data:?} cannot go into a {texture:?} texture")]
    FormatMismatch {
        /// The format the data was described in.
        data: wgpu::TextureFormat,
        /// The texture's format.
        texture: wgpu::TextureFormat,
    },
    /// A format uploads do not support: depth, stencil or multi-planar.
    #[error(
        "uploads to {0:?} textures are not supported (depth, stencil and multi-planar formats need per-aspect copies)"
    )]
    UnsupportedFormat(wgpu::TextureFormat),
    /// A buffer offset or length that is not a multiple of 4.
    #[error(
        "buffer offset {offset} and length {len} must be multiples of {}",
        wgpu::COPY_BUFFER_ALIGNMENT
    )]
    Unaligned {
        /// The offset asked for.
        offset: u64,
        /// The length of the data.
        len: u64,
    },
    /// A region with no texels or bytes.
    #[error("the region is empty")]
    ZeroSized,
    /// A source row pitch shorter than a row.
    #[error("bytes_per_row {given} is less than a row of the region, {row} bytes")]
    PitchTooSmall {
        /// The pitch given.
        given: u64,
        /// Bytes in one row of blocks.
        row: u64,
    },
    /// A source row pitch so large that the region's rows reach past the
    /// largest source there can be (it would overflow the address space).
    #[error(
        "bytes_per_row {given} times the region's {rows} rows is more than any source can hold"
    )]
    PitchTooLarge {
        /// The pitch given.
        given: u64,
        /// Rows of blocks in the region (all layers).
        rows: u64,
    },
    /// The region needs more staging memory than the resource's buffers hold.
    #[error(
        "the region needs {needed} staging bytes; this resource's staging buffers hold {capacity}"
    )]
    StagingTooSmall {
        /// Bytes the region takes in staging.
        needed: u64,
        /// Bytes each staging buffer holds.
        capacity: u64,
    },
    /// The resource was released.
    #[error("the resource was released")]
    Released,
    /// The engine was shut down.
    #[error("the upload engine has shut down")]
    ShutDown,
    /// `try_upload` found the resource or the engine at its in-flight bound.
    #[error("upload would block: {0}")]
    WouldBlock(&'static str),
    /// A staging buffer could not be had.
    #[error(transparent)]
    Staging(#[from] PoolError),
    /// The device failed the copy.
    #[error("the device failed the upload: {0}")]
    Device(String),
    /// A configuration value is out of range.
    #[error("invalid upload config: {0}")]
    InvalidConfig(String),
    /// A resource could not be created.
    #[error("could not create the resource: {0}")]
    Create(String),
}
