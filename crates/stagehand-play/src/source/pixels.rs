//! [`Pixels`]: a decoded frame's bytes, kept as its decoder wrote them.
//!
//! Image decoders write a frame's rows one after another into one buffer
//! ([`Pixels::Packed`]). A movie's decoder writes each plane into buffers
//! of its own, every row at the plane's own stride. Packing those planes
//! into one buffer was a whole-frame copy of every frame (33 MB for a 4K
//! ProRes frame) that the upload then copied again, into staging. Kept as
//! the decoder gave them ([`Pixels::Planes`]), the planes' rows go
//! straight into staging: one copy where there were two.
//!
//! Reading the bytes on the CPU ([`Deref`] to `[u8]`: tests, read-backs)
//! still sees the packed frame; for planes it is made then, once.

use bytes::Bytes;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// Where a row starts in the packed frame: its row, and the byte within
/// that row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowAt {
    /// The row of the packed frame.
    pub y: usize,
    /// The byte within that row where this row's bytes start.
    pub x: usize,
}

/// A frame held as its decoder's own rows, wherever they lie: each row of
/// the packed frame is made of one or more of them.
pub trait PlaneRows: Send + Sync + 'static {
    /// Calls `row` with every row, and where it goes in the packed frame.
    fn rows(&self, row: &mut dyn FnMut(RowAt, &[u8]));
}

/// A frame's bytes: packed rows from the top, or a decoder's planes.
#[derive(Clone)]
pub enum Pixels {
    /// Rows one after another in one buffer.
    Packed(Bytes),
    /// A decoder's planes, packed only where something reads them on the
    /// CPU.
    Planes(Arc<Planes>),
}

/// A decoder's planes, and their packed copy once one is asked for.
pub struct Planes {
    rows: Box<dyn PlaneRows>,
    row_bytes: usize,
    height: usize,
    packed: OnceLock<Bytes>,
}

impl Planes {
    /// Whether the packed copy has been made.
    pub fn is_packed(&self) -> bool {
        self.packed.get().is_some()
    }

    /// The packed frame, made on first use.
    fn packed(&self) -> &Bytes {
        self.packed.get_or_init(|| {
            let mut out = vec![0u8; self.row_bytes * self.height];
            self.rows.rows(&mut |at, src| {
                let start = at.y * self.row_bytes + at.x;
                out[start..start + src.len()].copy_from_slice(src);
            });
            Bytes::from(out)
        })
    }
}

impl Pixels {
    /// A decoder's planes, making up a packed frame of `height` rows of
    /// `row_bytes` bytes. Every row `rows` gives must fit in it.
    pub fn planes(rows: impl PlaneRows, row_bytes: usize, height: usize) -> Self {
        Self::Planes(Arc::new(Planes {
            rows: Box::new(rows),
            row_bytes,
            height,
            packed: OnceLock::new(),
        }))
    }

    /// Bytes of the packed frame (no copy is made to say).
    pub fn len(&self) -> usize {
        match self {
            Self::Packed(bytes) => bytes.len(),
            Self::Planes(planes) => planes.row_bytes * planes.height,
        }
    }

    /// Whether the frame has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `row` with the frame's rows, each where it goes in the packed
    /// frame; packed rows are `row_bytes` long, and `height` of them are
    /// given. Nothing is copied on the way.
    pub fn for_each_row(&self, row_bytes: usize, height: usize, row: &mut dyn FnMut(RowAt, &[u8])) {
        match self {
            Self::Packed(bytes) => {
                for (y, src) in bytes
                    .chunks_exact(row_bytes.max(1))
                    .take(height)
                    .enumerate()
                {
                    row(RowAt { y, x: 0 }, src);
                }
            }
            Self::Planes(planes) => planes.rows.rows(row),
        }
    }
}

impl Deref for Pixels {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Packed(bytes) => bytes,
            Self::Planes(planes) => planes.packed(),
        }
    }
}

impl AsRef<[u8]> for Pixels {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Bytes> for Pixels {
    fn from(bytes: Bytes) -> Self {
        Self::Packed(bytes)
    }
}

impl std::fmt::Debug for Pixels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Packed(bytes) => write!(f, "Packed({} bytes)", bytes.len()),
            Self::Planes(planes) => write!(
                f,
                "Planes({} rows of {} bytes, packed: {})",
                planes.height,
                planes.row_bytes,
                planes.is_packed()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two planes side by side, each row at a stride of 4 bytes of which
    /// 2 are the row's.
    struct SideBySide {
        left: Vec<u8>,
        right: Vec<u8>,
    }

    impl PlaneRows for SideBySide {
        fn rows(&self, row: &mut dyn FnMut(RowAt, &[u8])) {
            for (x, plane) in [(0, &self.left), (2, &self.right)] {
                for (y, src) in plane.chunks_exact(4).enumerate() {
                    row(RowAt { y, x }, &src[..2]);
                }
            }
        }
    }

    #[test]
    fn planes_go_row_by_row_to_where_they_belong_and_are_packed_only_when_read() {
        let pixels = Pixels::planes(
            SideBySide {
                left: vec![1, 2, 0, 0, 5, 6, 0, 0],
                right: vec![3, 4, 9, 9, 7, 8, 9, 9],
            },
            4,
            2,
        );
        let mut staging = vec![0xEEu8; 12];
        pixels.for_each_row(4, 2, &mut |at, src| {
            let start = at.y * 6 + at.x;
            staging[start..start + src.len()].copy_from_slice(src);
        });
        assert_eq!(staging, [1, 2, 3, 4, 0xEE, 0xEE, 5, 6, 7, 8, 0xEE, 0xEE]);
        let Pixels::Planes(planes) = &pixels else {
            unreachable!()
        };
        assert!(!planes.is_packed(), "filling staging made no packed copy");
        assert_eq!(pixels.len(), 8);
        assert!(!planes.is_packed(), "nor did asking the length");
        assert_eq!(&pixels[..], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(planes.is_packed());
    }

    #[test]
    fn packed_rows_are_given_whole_up_to_the_height() {
        let pixels = Pixels::from(Bytes::from_static(&[1, 2, 3, 4, 5, 6]));
        let mut seen = Vec::new();
        pixels.for_each_row(2, 2, &mut |at, src| seen.push((at, src.to_vec())));
        assert_eq!(
            seen,
            [
                (RowAt { y: 0, x: 0 }, vec![1, 2]),
                (RowAt { y: 1, x: 0 }, vec![3, 4])
            ]
        );
    }
}
