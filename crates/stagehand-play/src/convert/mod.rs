//! Decoded frames into texels of their texture, done on the decode
//! threads: there are as many of them as cores the player gives decoding,
//! while a stream's uploads run on one transfer worker. The frame cache
//! then holds exactly what the upload copies, and the copy into staging is
//! a plain `memcpy` of each row ([`crate::convert::format::fill_staging`]).
//!
//! Grey and RGB expand to RGBA (alpha opaque) and samples convert to the
//! texture's precision. The converter is chosen once per frame, from the
//! frame's sample type and channels and the texture's format, among
//! functions specialised for each triple: no decision is taken per sample
//! or per pixel, and the common pairs (RGB8 to RGBA8, RGB16 to RGBA16, grey
//! to RGBA) move whole words, several pixels at a time, masked with an
//! opaque alpha (`fast_path`). Floats go to
//! half floats a row at a time through the `half` crate's slice conversion
//! (vectorised where the CPU has F16C).
//!
//! Why here and not in the shader: an RGB frame could go up as it is (a
//! single-channel texture read three samples a texel, as Y'CbCr planes
//! are), saving a quarter of the bytes. But on a software adapter the
//! render pass is the costliest stage of a frame, and a three-sample
//! shader costs several times the one-sample RGBA draw there, on every
//! frame drawn, where converting costs once per frame decoded, on cores
//! decoding shares.

pub mod format;

use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use crate::convert::format::{is_texels, texel_bytes};
use crate::source::{Frame, FrameInfo, SampleType};
use half::f16;
use std::sync::Arc;

/// `frame` as texels of `texture`: the frame itself where its rows already
/// are, else a new frame (in a buffer from `buffers`) of RGBA texels, the
/// old one given back.
pub fn to_texture(
    frame: Frame,
    texture: wgpu::TextureFormat,
    buffers: &Arc<FrameBuffers>,
) -> Result<Frame, PlayError> {
    if is_texels(&frame.info, texture) {
        return Ok(frame);
    }
    let info = frame.info;
    let row = row_converter(&info, texture);
    let src_row = info.row_bytes();
    let dst_row = info.width as usize * texel_bytes(texture);
    let mut out = buffers.take(dst_row * info.height as usize)?;
    for (src, dst) in frame
        .data
        .chunks_exact(src_row)
        .zip(out.as_mut_slice().chunks_exact_mut(dst_row))
    {
        row(src, dst);
    }
    Ok(Frame {
        info: texel_info(&info, texture),
        data: out.freeze().into(),
    })
}

/// A whole frame as tightly packed texels of `texture`, in a `Vec`: what
/// the texture holds once the frame lands (tests compare read-backs with
/// it).
pub fn texels(frame: &Frame, texture: wgpu::TextureFormat) -> Vec<u8> {
    let info = &frame.info;
    if is_texels(info, texture) {
        return frame.data.to_vec();
    }
    let row = row_converter(info, texture);
    let dst_row = info.width as usize * texel_bytes(texture);
    let mut out = vec![0u8; dst_row * info.height as usize];
    for (src, dst) in frame
        .data
        .chunks_exact(info.row_bytes())
        .zip(out.chunks_exact_mut(dst_row))
    {
        row(src, dst);
    }
    out
}

/// What a frame converted to `texture` is: RGBA of the texture's sample.
fn texel_info(info: &FrameInfo, texture: wgpu::TextureFormat) -> FrameInfo {
    let sample = match texture {
        wgpu::TextureFormat::Rgba8Unorm => SampleType::U8,
        wgpu::TextureFormat::Rgba16Unorm => SampleType::U16,
        wgpu::TextureFormat::Rgba16Float => SampleType::F16,
        _ => SampleType::F32,
    };
    FrameInfo {
        channels: 4,
        sample,
        ..*info
    }
}

/// Converts one source row into one row of texels.
type RowFn = fn(&[u8], &mut [u8]);

/// The converter for frames like `info` into `texture`, chosen once.
fn row_converter(info: &FrameInfo, texture: wgpu::TextureFormat) -> RowFn {
    if let Some(fast) = fast_path(info, texture) {
        return fast;
    }
    match texture {
        wgpu::TextureFormat::Rgba8Unorm => by_source::<u8>(info),
        wgpu::TextureFormat::Rgba16Unorm => by_source::<u16>(info),
        wgpu::TextureFormat::Rgba16Float if info.sample == SampleType::F32 => {
            by_channels_f32_to_half(info.channels)
        }
        wgpu::TextureFormat::Rgba16Float => by_source::<f16>(info),
        _ => by_source::<f32>(info),
    }
}

fn by_source<T: Target>(info: &FrameInfo) -> RowFn {
    match info.sample {
        SampleType::U8 => by_channels::<u8, T>(info.channels),
        SampleType::U16 => by_channels::<u16, T>(info.channels),
        SampleType::F16 => by_channels::<f16, T>(info.channels),
        SampleType::F32 => by_channels::<f32, T>(info.channels),
    }
}

fn by_channels<S: Sample, T: Target>(channels: u8) -> RowFn {
    match channels {
        1 => expand::<S, T, 1>,
        2 => expand::<S, T, 2>,
        3 => expand::<S, T, 3>,
        _ => expand::<S, T, 4>,
    }
}

fn by_channels_f32_to_half(channels: u8) -> RowFn {
    match channels {
        1 => floats_to_halves::<1>,
        2 => floats_to_halves::<2>,
        3 => floats_to_halves::<3>,
        _ => floats_to_halves::<4>,
    }
}

/// The common pairs, where the sample stays as it is and only an opaque
/// alpha (and, for grey, copies of the one channel) is added: whole words
/// moved and masked, several pixels at once, instead of a sample at a
/// time. `None` for every other pair (and on big-endian machines, where
/// the word layouts below do not hold).
fn fast_path(info: &FrameInfo, texture: wgpu::TextureFormat) -> Option<RowFn> {
    use wgpu::TextureFormat::{Rgba8Unorm, Rgba16Unorm};
    if cfg!(target_endian = "big") {
        return None;
    }
    // Only into textures of the same integer samples: a 16-bit source
    // into half floats converts every sample.
    match (info.sample, info.channels, texture) {
        (SampleType::U8, 3, Rgba8Unorm) => Some(rgb8_to_rgba8),
        (SampleType::U8, 1, Rgba8Unorm) => Some(grey8_to_rgba8),
        (SampleType::U16, 3, Rgba16Unorm) => Some(rgb16_to_rgba16),
        (SampleType::U16, 1, Rgba16Unorm) => Some(grey16_to_rgba16),
        _ => None,
    }
}

/// Four RGB8 pixels (three little-endian words) into four RGBA8 words.
fn rgb8_to_rgba8(src: &[u8], dst: &mut [u8]) {
    const ALPHA: u32 = 0xFF00_0000;
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mut src4 = src.chunks_exact(12);
    let mut dst4 = dst.chunks_exact_mut(16);
    for (px, out) in (&mut src4).zip(&mut dst4) {
        let (a, b, c) = (word(&px[0..4]), word(&px[4..8]), word(&px[8..12]));
        let texels = [
            a | ALPHA,
            (a >> 24) | (b << 8) | ALPHA,
            (b >> 16) | (c << 16) | ALPHA,
            (c >> 8) | ALPHA,
        ];
        for (o, t) in out.chunks_exact_mut(4).zip(texels) {
            o.copy_from_slice(&t.to_le_bytes());
        }
    }
    expand::<u8, u8, 3>(src4.remainder(), dst4.into_remainder());
}

/// Grey8 pixels, each copied into R, G and B with an opaque alpha.
fn grey8_to_rgba8(src: &[u8], dst: &mut [u8]) {
    for (&v, out) in src.iter().zip(dst.chunks_exact_mut(4)) {
        let texel = (u32::from(v) * 0x0001_0101) | 0xFF00_0000;
        out.copy_from_slice(&texel.to_le_bytes());
    }
}

/// Two RGB16 pixels (a little-endian double word and a word) into two
/// RGBA16 double words.
fn rgb16_to_rgba16(src: &[u8], dst: &mut [u8]) {
    const ALPHA: u64 = 0xFFFF << 48;
    let mut src2 = src.chunks_exact(12);
    let mut dst2 = dst.chunks_exact_mut(16);
    for (px, out) in (&mut src2).zip(&mut dst2) {
        let mut a = [0u8; 8];
        a.copy_from_slice(&px[0..8]);
        let a = u64::from_le_bytes(a);
        let b = u64::from(u32::from_le_bytes([px[8], px[9], px[10], px[11]]));
        let first = (a & !ALPHA) | ALPHA;
        let second = (a >> 48) | (b << 16) | ALPHA;
        out[0..8].copy_from_slice(&first.to_le_bytes());
        out[8..16].copy_from_slice(&second.to_le_bytes());
    }
    expand::<u16, u16, 3>(src2.remainder(), dst2.into_remainder());
}

/// Grey16 pixels, each copied into R, G and B with an opaque alpha.
fn grey16_to_rgba16(src: &[u8], dst: &mut [u8]) {
    for (v, out) in src.chunks_exact(2).zip(dst.chunks_exact_mut(8)) {
        let v = u64::from(u16::from_le_bytes([v[0], v[1]]));
        let texel = (v * 0x0000_0001_0001_0001) | (0xFFFF << 48);
        out.copy_from_slice(&texel.to_le_bytes());
    }
}

/// Where channel `k` of an RGBA texel comes from, for a pixel of `C`
/// channels: grey fills R, G and B; a missing alpha is opaque (`None`).
const fn source_channel<const C: usize>(k: usize) -> Option<usize> {
    match (C, k) {
        (1 | 2, 0..=2) => Some(0),
        (2, 3) => Some(1),
        (3, 3) | (1, 3) => None,
        _ => Some(k),
    }
}

/// One row of `C`-channel pixels of `S` into RGBA texels of `T`.
fn expand<S: Sample, T: Target, const C: usize>(src: &[u8], dst: &mut [u8]) {
    let one = T::ONE.to_bytes();
    for (px, out) in src
        .chunks_exact(C * S::SIZE)
        .zip(dst.chunks_exact_mut(4 * T::SIZE))
    {
        for k in 0..4 {
            let bytes = match source_channel::<C>(k) {
                Some(c) => S::read(&px[c * S::SIZE..(c + 1) * S::SIZE])
                    .to::<T>()
                    .to_bytes(),
                None => one,
            };
            out[k * T::SIZE..(k + 1) * T::SIZE].copy_from_slice(&bytes.as_ref()[..T::SIZE]);
        }
    }
}

thread_local! {
    /// The float-to-half path's rows (RGBA floats, then halves), kept per
    /// decode thread.
    static ROWS: std::cell::RefCell<(Vec<f32>, Vec<f16>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// One row of `C`-channel floats into RGBA half floats: expanded to RGBA
/// floats, then converted as one slice.
fn floats_to_halves<const C: usize>(src: &[u8], dst: &mut [u8]) {
    use half::slice::HalfFloatSliceExt;
    ROWS.with_borrow_mut(|(rgba, halves)| {
        rgba.clear();
        for px in src.chunks_exact(4 * C) {
            for k in 0..4 {
                rgba.push(match source_channel::<C>(k) {
                    Some(c) => f32::read(&px[4 * c..4 * c + 4]),
                    None => 1.0,
                });
            }
        }
        let texels = rgba.len().min(dst.len() / 2);
        halves.resize(texels, f16::ZERO);
        halves.convert_from_f32_slice(&rgba[..texels]);
        for (h, out) in halves.iter().zip(dst.chunks_exact_mut(2)) {
            out.copy_from_slice(&h.to_bits().to_ne_bytes());
        }
    });
}

/// A sample type as stored in a frame.
trait Sample: Copy {
    const SIZE: usize;
    /// Reads one sample from exactly `SIZE` native-endian bytes.
    fn read(b: &[u8]) -> Self;
    /// The same value at `T`'s precision.
    fn to<T: Target>(self) -> T;
}

impl Sample for u8 {
    const SIZE: usize = 1;
    fn read(b: &[u8]) -> Self {
        b[0]
    }
    fn to<T: Target>(self) -> T {
        T::from_u8(self)
    }
}

impl Sample for u16 {
    const SIZE: usize = 2;
    fn read(b: &[u8]) -> Self {
        u16::from_ne_bytes([b[0], b[1]])
    }
    fn to<T: Target>(self) -> T {
        T::from_u16(self)
    }
}

impl Sample for f16 {
    const SIZE: usize = 2;
    fn read(b: &[u8]) -> Self {
        f16::from_bits(u16::from_ne_bytes([b[0], b[1]]))
    }
    fn to<T: Target>(self) -> T {
        T::from_f16(self)
    }
}

impl Sample for f32 {
    const SIZE: usize = 4;
    fn read(b: &[u8]) -> Self {
        f32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }
    fn to<T: Target>(self) -> T {
        T::from_f32(self)
    }
}

/// A texel's sample type, as the texture wants it.
trait Target: Copy {
    const ONE: Self;
    const SIZE: usize;
    fn from_u8(v: u8) -> Self;
    fn from_u16(v: u16) -> Self;
    fn from_f16(v: f16) -> Self;
    fn from_f32(v: f32) -> Self;
    /// Native-endian bytes; the first `SIZE` count.
    fn to_bytes(self) -> [u8; 4];
}

impl Target for u8 {
    const ONE: Self = u8::MAX;
    const SIZE: usize = 1;
    fn from_u8(v: u8) -> Self {
        v
    }
    fn from_u16(v: u16) -> Self {
        // Rounds to nearest: v * 255 / 65535 = v / 257.
        ((u32::from(v) + 128) / 257) as u8
    }
    fn from_f16(v: f16) -> Self {
        Self::from_f32(v.to_f32())
    }
    fn from_f32(v: f32) -> Self {
        (v.clamp(0.0, 1.0) * 255.0).round() as u8
    }
    fn to_bytes(self) -> [u8; 4] {
        [self, 0, 0, 0]
    }
}

impl Target for u16 {
    const ONE: Self = u16::MAX;
    const SIZE: usize = 2;
    fn from_u8(v: u8) -> Self {
        u16::from(v) * 257
    }
    fn from_u16(v: u16) -> Self {
        v
    }
    fn from_f16(v: f16) -> Self {
        Self::from_f32(v.to_f32())
    }
    fn from_f32(v: f32) -> Self {
        (v.clamp(0.0, 1.0) * 65535.0).round() as u16
    }
    fn to_bytes(self) -> [u8; 4] {
        let [a, b] = self.to_ne_bytes();
        [a, b, 0, 0]
    }
}

impl Target for f16 {
    const ONE: Self = f16::ONE;
    const SIZE: usize = 2;
    fn from_u8(v: u8) -> Self {
        f16::from_f32(f32::from(v) / 255.0)
    }
    fn from_u16(v: u16) -> Self {
        f16::from_f32(f32::from(v) / 65535.0)
    }
    fn from_f16(v: f16) -> Self {
        v
    }
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn to_bytes(self) -> [u8; 4] {
        let [a, b] = self.to_bits().to_ne_bytes();
        [a, b, 0, 0]
    }
}

impl Target for f32 {
    const ONE: Self = 1.0;
    const SIZE: usize = 4;
    fn from_u8(v: u8) -> Self {
        f32::from(v) / 255.0
    }
    fn from_u16(v: u16) -> Self {
        f32::from(v) / 65535.0
    }
    fn from_f16(v: f16) -> Self {
        v.to_f32()
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_bytes(self) -> [u8; 4] {
        self.to_ne_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn frame(width: u32, channels: u8, sample: SampleType, data: Vec<u8>) -> Frame {
        Frame {
            info: FrameInfo {
                width,
                height: 1,
                channels,
                sample,
                yuv: None,
            },
            data: Bytes::from(data).into(),
        }
    }

    fn u16s(values: &[u16]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    #[test]
    fn grey_and_rgb_expand_with_opaque_alpha() {
        let grey = frame(2, 1, SampleType::U8, vec![10, 200]);
        assert_eq!(
            texels(&grey, wgpu::TextureFormat::Rgba8Unorm),
            [10, 10, 10, 255, 200, 200, 200, 255]
        );
        let grey_alpha = frame(1, 2, SampleType::U8, vec![10, 20]);
        assert_eq!(
            texels(&grey_alpha, wgpu::TextureFormat::Rgba8Unorm),
            [10, 10, 10, 20]
        );
        let rgb8 = frame(2, 3, SampleType::U8, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(
            texels(&rgb8, wgpu::TextureFormat::Rgba8Unorm),
            [1, 2, 3, 255, 4, 5, 6, 255]
        );
        let rgb16 = frame(2, 3, SampleType::U16, u16s(&[1, 2, 3, 65535, 0, 7]));
        assert_eq!(
            texels(&rgb16, wgpu::TextureFormat::Rgba16Unorm),
            u16s(&[1, 2, 3, 65535, 65535, 0, 7, 65535])
        );
    }

    /// Deterministic bytes for a row of `n`.
    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn the_word_at_a_time_paths_match_the_sample_at_a_time_expansion() {
        // Widths that leave every remainder after the word loops.
        for width in [1usize, 2, 3, 4, 5, 7, 8, 13, 3840] {
            let cases: [(SampleType, u8, RowFn, RowFn); 4] = [
                (SampleType::U8, 3, rgb8_to_rgba8, expand::<u8, u8, 3>),
                (SampleType::U8, 1, grey8_to_rgba8, expand::<u8, u8, 1>),
                (SampleType::U16, 3, rgb16_to_rgba16, expand::<u16, u16, 3>),
                (SampleType::U16, 1, grey16_to_rgba16, expand::<u16, u16, 1>),
            ];
            for (sample, channels, fast, slow) in cases {
                let src = noise(width * channels as usize * sample.bytes(), width as u32);
                let mut want = vec![0u8; width * 4 * sample.bytes()];
                let mut got = vec![7u8; want.len()];
                slow(&src, &mut want);
                fast(&src, &mut got);
                assert_eq!(got, want, "{sample:?} x{channels}, {width} wide");
            }
        }
    }

    #[test]
    fn the_common_pairs_take_the_word_at_a_time_paths() {
        let info = |sample, channels| FrameInfo {
            width: 4,
            height: 1,
            channels,
            sample,
            yuv: None,
        };
        let rgba8 = wgpu::TextureFormat::Rgba8Unorm;
        let rgba16 = wgpu::TextureFormat::Rgba16Unorm;
        let pairs: [(SampleType, u8, wgpu::TextureFormat, RowFn); 4] = [
            (SampleType::U8, 3, rgba8, rgb8_to_rgba8),
            (SampleType::U8, 1, rgba8, grey8_to_rgba8),
            (SampleType::U16, 3, rgba16, rgb16_to_rgba16),
            (SampleType::U16, 1, rgba16, grey16_to_rgba16),
        ];
        for (sample, channels, texture, fast) in pairs {
            let chosen = row_converter(&info(sample, channels), texture);
            assert_eq!(
                chosen as usize, fast as usize,
                "{sample:?} x{channels} into {texture:?}"
            );
        }
    }

    #[test]
    fn sixteen_bit_rgb_and_grey_into_half_floats_are_converted_not_copied() {
        // Half floats are two bytes too, but 65535 is not a half float's
        // 1.0 (its bits are a NaN): these take the sample-by-sample path.
        let half = wgpu::TextureFormat::Rgba16Float;
        let rgb = frame(2, 3, SampleType::U16, u16s(&[65535, 0, 32768, 1, 2, 3]));
        let got = texels(&rgb, half);
        let want: Vec<u8> = [1.0f32, 0.0, 32768.0 / 65535.0, 1.0]
            .iter()
            .chain(&[1.0 / 65535.0, 2.0 / 65535.0, 3.0 / 65535.0, 1.0])
            .flat_map(|&v| f16::from_f32(v).to_bits().to_ne_bytes())
            .collect();
        assert_eq!(got, want);
        let grey = frame(1, 1, SampleType::U16, u16s(&[65535]));
        let one = f16::ONE.to_bits().to_ne_bytes();
        assert_eq!(texels(&grey, half), one.repeat(4));
    }

    #[test]
    fn samples_convert_to_the_textures_precision() {
        let rgba16 = frame(1, 4, SampleType::U16, u16s(&[0, 257, 65535, 32896]));
        assert_eq!(
            texels(&rgba16, wgpu::TextureFormat::Rgba8Unorm),
            [0, 1, 255, 128]
        );
        let rgb8 = frame(1, 3, SampleType::U8, vec![0, 255, 51]);
        let halves = texels(&rgb8, wgpu::TextureFormat::Rgba16Float);
        let got: Vec<f32> = halves
            .chunks_exact(2)
            .map(|b| f16::from_bits(u16::from_ne_bytes([b[0], b[1]])).to_f32())
            .collect();
        assert_eq!(got, [0.0, 1.0, f16::from_f32(0.2).to_f32(), 1.0]);
    }

    #[test]
    fn half_floats_keep_their_bits() {
        let data = u16s(&[0x3C00, 0x7BFF, 0x0001, 0xC000]);
        let rgba = frame(1, 4, SampleType::F16, data.clone());
        assert_eq!(texels(&rgba, wgpu::TextureFormat::Rgba16Float), data);
        let rgb = frame(1, 3, SampleType::F16, u16s(&[0x3C00, 0x7BFF, 0x0001]));
        assert_eq!(
            texels(&rgb, wgpu::TextureFormat::Rgba16Float),
            u16s(&[0x3C00, 0x7BFF, 0x0001, 0x3C00])
        );
    }

    #[test]
    fn the_float_to_half_row_path_matches_sample_by_sample_conversion() {
        let values = [0.0f32, 1.0, -2.5, 65504.0, 1e-8, 0.18, 7.0e5, f32::NAN];
        for channels in 1..=4u8 {
            let src: Vec<u8> = values
                .iter()
                .cycle()
                .take(2 * channels as usize)
                .flat_map(|v| v.to_ne_bytes())
                .collect();
            let got = texels(
                &frame(2, channels, SampleType::F32, src.clone()),
                wgpu::TextureFormat::Rgba16Float,
            );
            let mut want = vec![0u8; 16];
            by_channels::<f32, f16>(channels)(&src, &mut want);
            assert_eq!(got, want, "{channels} channel(s)");
        }
    }

    #[test]
    fn a_converted_frame_is_texels_in_a_recycled_buffer() {
        let buffers = FrameBuffers::new();
        let rgb = frame(2, 3, SampleType::U8, vec![1, 2, 3, 4, 5, 6]);
        let texture = wgpu::TextureFormat::Rgba8Unorm;
        let converted = to_texture(rgb, texture, &buffers).unwrap();
        assert!(is_texels(&converted.info, texture));
        assert_eq!(&converted.data[..], [1, 2, 3, 255, 4, 5, 6, 255]);
        drop(converted);
        let again = to_texture(frame(2, 3, SampleType::U8, vec![0; 6]), texture, &buffers).unwrap();
        assert_eq!(&again.data[..], [0, 0, 0, 255, 0, 0, 0, 255]);
        assert_eq!(
            buffers.stats().hits,
            1,
            "the second frame reused the first's buffer"
        );
        // Already texels: the same bytes, not a copy.
        let rgba = frame(1, 4, SampleType::U8, vec![9, 8, 7, 6]);
        let at = rgba.data.as_ptr();
        assert_eq!(
            to_texture(rgba, texture, &buffers).unwrap().data.as_ptr(),
            at
        );
    }
}
