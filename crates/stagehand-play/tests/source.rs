//! The player's sources on real files: EXR, PNG, TIFF and JPEG files written
//! by the format crates themselves, decoded and compared sample for sample
//! (half bits, 16-bit values); `probe` agreeing with `decode`; and sequences
//! opened from folders and patterns, with gaps, ranges and typed errors.

use exr::prelude::{
    AnyChannel, AnyChannels, Blocks, Compression, Encoding, FlatSamples, Image, ImageAttributes,
    IntegerBounds, Layer, LayerAttributes, LineOrder, SmallVec, Vec2, WritableImage, f16,
    read_first_flat_layer_from_file,
};
use stagehand_play::PlayError;
use stagehand_play::source::{Frame, FrameInfo, SampleType, Sequence, decode, probe};
use std::path::{Path, PathBuf};

/// Odd sizes, so rows, tiles and blocks never divide evenly.
const W: usize = 37;
const H: usize = 21;

/// A folder under the system's temp folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "stagehand-source-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create a temp folder");
        Self(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Empty files: a sequence is found by names alone.
    fn touch(&self, names: &[&str]) {
        for name in names {
            std::fs::write(self.join(name), b"").expect("write a file");
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small deterministic generator of test samples.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }

    /// Halves from -5 to 15: negative, fractional and above 1.
    fn halves(&mut self, n: usize) -> Vec<f16> {
        (0..n)
            .map(|_| f16::from_f32((self.next() % 20_000) as f32 / 1000.0 - 5.0))
            .collect()
    }

    fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next() as f32 / 1e7 - 100.0).collect()
    }

    fn u16s(&mut self, n: usize) -> Vec<u16> {
        (0..n).map(|_| self.next() as u16).collect()
    }

    fn u8s(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn half_bytes(v: &[f16]) -> Vec<u8> {
    v.iter().flat_map(|h| h.to_bits().to_ne_bytes()).collect()
}

fn float_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_ne_bytes()).collect()
}

/// Planes of `sample` bytes per sample, interleaved pixel by pixel.
fn interleave(planes: &[Vec<u8>], sample: usize) -> Vec<u8> {
    let pixels = planes[0].len() / sample;
    let mut out = Vec::with_capacity(pixels * sample * planes.len());
    for i in 0..pixels {
        for plane in planes {
            out.extend_from_slice(&plane[i * sample..(i + 1) * sample]);
        }
    }
    out
}

fn info(width: usize, height: usize, channels: u8, sample: SampleType) -> FrameInfo {
    FrameInfo {
        width: width as u32,
        height: height as u32,
        channels,
        sample,
        yuv: None,
    }
}

/// Decodes `path`, checks the frame's info and samples, and that `probe`
/// says what `decode` produced.
fn check(path: &Path, want: FrameInfo, samples: &[u8], what: &str) -> Frame {
    let frame = decode(path).unwrap_or_else(|e| panic!("{what}: decode failed: {e}"));
    assert_eq!(
        frame.info, want,
        "{what}: the frame's size, channels and sample type"
    );
    assert_eq!(
        frame.data.len(),
        want.bytes(),
        "{what}: the frame holds info.bytes() bytes"
    );
    if let Some(at) = frame.data.iter().zip(samples).position(|(a, b)| a != b) {
        panic!("{what}: samples differ from the source's from byte {at}");
    }
    assert_eq!(frame.data.len(), samples.len(), "{what}: sample count");
    let probed = probe(path).unwrap_or_else(|e| panic!("{what}: probe failed: {e}"));
    assert_eq!(probed, frame.info, "{what}: probe agrees with decode");
    frame
}

/// Writes one EXR part with `channels` (any order; the crate sorts them).
fn write_exr(
    path: &Path,
    size: (usize, usize),
    channels: Vec<(&str, FlatSamples)>,
    encoding: Encoding,
) {
    let list: Vec<AnyChannel<FlatSamples>> = channels
        .into_iter()
        .map(|(name, samples)| AnyChannel::new(name, samples))
        .collect();
    let layer = Layer::new(
        size,
        LayerAttributes::default(),
        encoding,
        AnyChannels::sort(SmallVec::from_vec(list)),
    );
    Image::from_layer(layer)
        .write()
        .to_file(path)
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn scan_lines(compression: Compression) -> Encoding {
    Encoding {
        compression,
        blocks: Blocks::ScanLines,
        line_order: LineOrder::Increasing,
    }
}

fn unsupported_reason(result: Result<impl std::fmt::Debug, PlayError>, what: &str) -> String {
    match result {
        Err(PlayError::Unsupported { reason, .. }) => reason,
        other => panic!("{what}: expected Unsupported, got {other:?}"),
    }
}

#[test]
fn exr_half_rgba_keeps_its_half_bits_with_every_lossless_compression() {
    let dir = TempDir::new("exr-half");
    let mut rng = Lcg(1);
    let [r, g, b, a] = [(); 4].map(|_| rng.halves(W * H));
    let want = interleave(
        &[
            half_bytes(&r),
            half_bytes(&g),
            half_bytes(&b),
            half_bytes(&a),
        ],
        2,
    );
    let tiles = |compression| Encoding {
        compression,
        blocks: Blocks::Tiles(Vec2(16, 8)),
        line_order: LineOrder::Increasing,
    };
    let encodings = [
        ("uncompressed", scan_lines(Compression::Uncompressed)),
        ("rle", scan_lines(Compression::RLE)),
        ("zips", scan_lines(Compression::ZIP1)),
        ("zip", scan_lines(Compression::ZIP16)),
        ("piz", scan_lines(Compression::PIZ)),
        ("pxr24", scan_lines(Compression::PXR24)),
        ("zip-tiles", tiles(Compression::ZIP16)),
        (
            "piz-tiles-decreasing",
            Encoding {
                line_order: LineOrder::Decreasing,
                ..tiles(Compression::PIZ)
            },
        ),
    ];
    for (name, encoding) in encodings {
        let path = dir.join(&format!("{name}.exr"));
        write_exr(
            &path,
            (W, H),
            vec![
                ("R", FlatSamples::F16(r.clone())),
                ("G", FlatSamples::F16(g.clone())),
                ("B", FlatSamples::F16(b.clone())),
                ("A", FlatSamples::F16(a.clone())),
            ],
            encoding,
        );
        check(
            &path,
            info(W, H, 4, SampleType::F16),
            &want,
            &format!("half RGBA EXR, {name}: RGBA order, half bits exact"),
        );
    }
}

#[test]
fn exr_float_rgb_keeps_its_floats() {
    let dir = TempDir::new("exr-float");
    let mut rng = Lcg(2);
    let [r, g, b] = [(); 3].map(|_| rng.floats(W * H));
    let path = dir.join("float.exr");
    write_exr(
        &path,
        (W, H),
        vec![
            ("B", FlatSamples::F32(b.clone())),
            ("G", FlatSamples::F32(g.clone())),
            ("R", FlatSamples::F32(r.clone())),
        ],
        scan_lines(Compression::ZIP16),
    );
    let want = interleave(&[float_bytes(&r), float_bytes(&g), float_bytes(&b)], 4);
    check(
        &path,
        info(W, H, 3, SampleType::F32),
        &want,
        "float RGB EXR (ZIP): three F32 channels, bits exact",
    );
}

#[test]
fn exr_luminance_is_grey_with_or_without_alpha() {
    let dir = TempDir::new("exr-y");
    let mut rng = Lcg(3);
    let y = rng.halves(W * H);
    let a = rng.halves(W * H);
    let path = dir.join("y.exr");
    write_exr(
        &path,
        (W, H),
        vec![("Y", FlatSamples::F16(y.clone()))],
        scan_lines(Compression::PIZ),
    );
    check(
        &path,
        info(W, H, 1, SampleType::F16),
        &half_bytes(&y),
        "Y-only EXR: one F16 channel",
    );
    let path = dir.join("ya.exr");
    write_exr(
        &path,
        (W, H),
        vec![
            ("y", FlatSamples::F16(y.clone())),
            ("a", FlatSamples::F16(a.clone())),
        ],
        scan_lines(Compression::RLE),
    );
    check(
        &path,
        info(W, H, 2, SampleType::F16),
        &interleave(&[half_bytes(&y), half_bytes(&a)], 2),
        "lower-case y and a EXR: grey and alpha, names matched without case",
    );
}

#[test]
fn exr_mixed_half_and_float_becomes_float() {
    let dir = TempDir::new("exr-mixed");
    let mut rng = Lcg(4);
    let r = rng.halves(W * H);
    let g = rng.halves(W * H);
    let b = rng.floats(W * H);
    let path = dir.join("mixed.exr");
    write_exr(
        &path,
        (W, H),
        vec![
            ("R", FlatSamples::F16(r.clone())),
            ("G", FlatSamples::F16(g.clone())),
            ("B", FlatSamples::F32(b.clone())),
            // Not chosen: neither its type nor its samples matter.
            ("Z", FlatSamples::U32(vec![7; W * H])),
        ],
        scan_lines(Compression::ZIP1),
    );
    let widen = |v: &[f16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
    let want = interleave(
        &[
            float_bytes(&widen(&r)),
            float_bytes(&widen(&g)),
            float_bytes(&b),
        ],
        4,
    );
    check(
        &path,
        info(W, H, 3, SampleType::F32),
        &want,
        "half R, G and float B (and a u32 Z not read): all F32, halves widened exactly",
    );
}

#[test]
fn exr_layers_prefer_unprefixed_channels_then_the_first_layer() {
    let dir = TempDir::new("exr-layers");
    let mut rng = Lcg(5);
    let [r, g, b, dr, dg, db] = [(); 6].map(|_| rng.halves(W * H));
    let path = dir.join("both.exr");
    write_exr(
        &path,
        (W, H),
        vec![
            ("diffuse.R", FlatSamples::F16(dr.clone())),
            ("diffuse.G", FlatSamples::F16(dg.clone())),
            ("diffuse.B", FlatSamples::F16(db.clone())),
            ("R", FlatSamples::F16(r.clone())),
            ("G", FlatSamples::F16(g.clone())),
            ("B", FlatSamples::F16(b.clone())),
        ],
        scan_lines(Compression::ZIP16),
    );
    check(
        &path,
        info(W, H, 3, SampleType::F16),
        &interleave(&[half_bytes(&r), half_bytes(&g), half_bytes(&b)], 2),
        "unprefixed R, G, B win over diffuse.R, .G, .B",
    );
    let path = dir.join("prefixed.exr");
    write_exr(
        &path,
        (W, H),
        vec![
            ("beauty.R", FlatSamples::F16(r.clone())),
            ("beauty.G", FlatSamples::F16(g.clone())),
            ("beauty.B", FlatSamples::F16(b.clone())),
            ("spec.R", FlatSamples::F16(dr.clone())),
            ("spec.G", FlatSamples::F16(dg.clone())),
            ("spec.B", FlatSamples::F16(db.clone())),
        ],
        scan_lines(Compression::ZIP16),
    );
    check(
        &path,
        info(W, H, 3, SampleType::F16),
        &interleave(&[half_bytes(&r), half_bytes(&g), half_bytes(&b)], 2),
        "without unprefixed channels, the first layer (beauty) is read",
    );
}

#[test]
fn exr_frame_is_the_data_window() {
    let dir = TempDir::new("exr-window");
    let mut rng = Lcg(6);
    let y = rng.halves(W * H);
    let attributes = LayerAttributes {
        layer_position: Vec2(7, -3),
        ..LayerAttributes::default()
    };
    let layer = Layer::new(
        (W, H),
        attributes,
        scan_lines(Compression::ZIP16),
        AnyChannels::sort(SmallVec::from_vec(vec![AnyChannel::new(
            "Y",
            FlatSamples::F16(y.clone()),
        )])),
    );
    let display = IntegerBounds::new(Vec2(0, 0), Vec2(64, 48));
    let path = dir.join("window.exr");
    Image::new(ImageAttributes::new(display), layer)
        .write()
        .to_file(&path)
        .expect("write an EXR with a data window inside a larger display window");
    check(
        &path,
        info(W, H, 1, SampleType::F16),
        &half_bytes(&y),
        "data window 37x21 at (7,-3) in a 64x48 display window: the frame is the data window",
    );
}

#[test]
fn exr_lossy_compressions_decode_as_the_crate_decodes() {
    let dir = TempDir::new("exr-lossy");
    let mut rng = Lcg(7);
    let [r, g, b, a] = [(); 4].map(|_| rng.halves(W * H));
    for (name, compression) in [("b44", Compression::B44), ("b44a", Compression::B44A)] {
        let path = dir.join(&format!("{name}.exr"));
        write_exr(
            &path,
            (W, H),
            vec![
                ("R", FlatSamples::F16(r.clone())),
                ("G", FlatSamples::F16(g.clone())),
                ("B", FlatSamples::F16(b.clone())),
                ("A", FlatSamples::F16(a.clone())),
            ],
            scan_lines(compression),
        );
        // The crate's own decode: channels sorted A, B, G, R.
        let image = read_first_flat_layer_from_file(&path).expect("the crate reads its own file");
        let planes: Vec<Vec<u8>> = image
            .layer_data
            .channel_data
            .list
            .iter()
            .rev()
            .map(|c| match &c.sample_data {
                FlatSamples::F16(v) => half_bytes(v),
                other => panic!("{name}: the crate read {other:?}"),
            })
            .collect();
        let want = interleave(
            &[
                planes[0].clone(),
                planes[1].clone(),
                planes[2].clone(),
                planes[3].clone(),
            ],
            2,
        );
        check(
            &path,
            info(W, H, 4, SampleType::F16),
            &want,
            &format!("{name} (lossy): the same half bits as the exr crate's own decode"),
        );
    }
}

#[test]
fn exr_without_rgb_or_y_is_unsupported_naming_its_channels() {
    let dir = TempDir::new("exr-z");
    let path = dir.join("depth.exr");
    write_exr(
        &path,
        (W, H),
        vec![("Z", FlatSamples::F32(vec![1.5; W * H]))],
        scan_lines(Compression::ZIP16),
    );
    for (what, reason) in [
        ("decode", unsupported_reason(decode(&path), "Z-only decode")),
        ("probe", unsupported_reason(probe(&path), "Z-only probe")),
    ] {
        assert!(
            reason.contains("no RGB or Y channels") && reason.contains('Z'),
            "{what} of a Z-only EXR says it has no RGB or Y and names Z: {reason}"
        );
    }
    let path = dir.join("ids.exr");
    write_exr(
        &path,
        (W, H),
        vec![
            ("R", FlatSamples::U32(vec![1; W * H])),
            ("G", FlatSamples::U32(vec![2; W * H])),
            ("B", FlatSamples::U32(vec![3; W * H])),
        ],
        scan_lines(Compression::ZIP16),
    );
    let reason = unsupported_reason(decode(&path), "u32 RGB decode");
    assert!(
        reason.contains("unsigned"),
        "RGB channels of 32-bit unsigned integers are unsupported: {reason}"
    );
}

/// The bytes of an EXR header before the compression attribute's value.
const COMPRESSION: &[u8] = b"compression\0compression\0\x01\0\0\0";

/// Rewrites the value after `attribute` in an EXR header from `old` to `new`.
fn patch(bytes: &mut [u8], attribute: &[u8], old: &[u8], new: &[u8]) {
    let at = bytes
        .windows(attribute.len())
        .position(|w| w == attribute)
        .expect("the header has the attribute")
        + attribute.len();
    assert_eq!(&bytes[at..at + old.len()], old, "the value written");
    bytes[at..at + new.len()].copy_from_slice(new);
}

#[test]
fn exr_htj2k_is_refused_from_the_header() {
    let dir = TempDir::new("exr-htj2k");
    let path = dir.join("htj2k.exr");
    write_exr(
        &path,
        (W, H),
        vec![("Y", FlatSamples::F16(Lcg(8).halves(W * H)))],
        scan_lines(Compression::Uncompressed),
    );
    // Mark the file HTJ2K (code 10, 256 lines per block: one chunk for 21
    // lines): its blocks are not HTJ2K, so only a decision made from the
    // header gives the compression's name.
    let mut bytes = std::fs::read(&path).expect("read the EXR back");
    patch(&mut bytes, COMPRESSION, &[0], &[10]);
    patch(
        &mut bytes,
        b"chunkCount\0int\0\x04\0\0\0",
        &(H as i32).to_le_bytes(),
        &1i32.to_le_bytes(),
    );
    std::fs::write(&path, bytes).expect("rewrite the EXR");
    for (what, reason) in [
        ("decode", unsupported_reason(decode(&path), "HTJ2K decode")),
        ("probe", unsupported_reason(probe(&path), "HTJ2K probe")),
    ] {
        assert!(
            reason.contains("HTJ2K"),
            "{what} of an HTJ2K EXR names the compression: {reason}"
        );
    }
}

/// A 24x16 half RGB EXR, DWAA-compressed, written by OpenEXR 3.5.3 (its
/// Python bindings) from smooth gradients; the DCT changes 1067 of its
/// 1152 samples, so the lossy path is exercised. Identical as DWAB but for
/// the compression attribute (one block either way).
const DWAA_EXR: &[u8] = &[
    0x76, 0x2f, 0x31, 0x01, 0x02, 0x00, 0x00, 0x00, 0x63, 0x68, 0x61, 0x6e, 0x6e, 0x65, 0x6c, 0x73,
    0x00, 0x63, 0x68, 0x6c, 0x69, 0x73, 0x74, 0x00, 0x37, 0x00, 0x00, 0x00, 0x42, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x47, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x52, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x63, 0x6f, 0x6d, 0x70, 0x72, 0x65, 0x73, 0x73, 0x69, 0x6f, 0x6e, 0x00, 0x63,
    0x6f, 0x6d, 0x70, 0x72, 0x65, 0x73, 0x73, 0x69, 0x6f, 0x6e, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08,
    0x64, 0x61, 0x74, 0x61, 0x57, 0x69, 0x6e, 0x64, 0x6f, 0x77, 0x00, 0x62, 0x6f, 0x78, 0x32, 0x69,
    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00,
    0x00, 0x0f, 0x00, 0x00, 0x00, 0x64, 0x69, 0x73, 0x70, 0x6c, 0x61, 0x79, 0x57, 0x69, 0x6e, 0x64,
    0x6f, 0x77, 0x00, 0x62, 0x6f, 0x78, 0x32, 0x69, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x00, 0x00, 0x6c, 0x69, 0x6e,
    0x65, 0x4f, 0x72, 0x64, 0x65, 0x72, 0x00, 0x6c, 0x69, 0x6e, 0x65, 0x4f, 0x72, 0x64, 0x65, 0x72,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x70, 0x69, 0x78, 0x65, 0x6c, 0x41, 0x73, 0x70, 0x65, 0x63,
    0x74, 0x52, 0x61, 0x74, 0x69, 0x6f, 0x00, 0x66, 0x6c, 0x6f, 0x61, 0x74, 0x00, 0x04, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x80, 0x3f, 0x73, 0x63, 0x72, 0x65, 0x65, 0x6e, 0x57, 0x69, 0x6e, 0x64, 0x6f,
    0x77, 0x43, 0x65, 0x6e, 0x74, 0x65, 0x72, 0x00, 0x76, 0x32, 0x66, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x73, 0x63, 0x72, 0x65, 0x65, 0x6e, 0x57, 0x69,
    0x6e, 0x64, 0x6f, 0x77, 0x57, 0x69, 0x64, 0x74, 0x68, 0x00, 0x66, 0x6c, 0x6f, 0x61, 0x74, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x74, 0x79, 0x70, 0x65, 0x00, 0x73, 0x74, 0x72,
    0x69, 0x6e, 0x67, 0x00, 0x0d, 0x00, 0x00, 0x00, 0x73, 0x63, 0x61, 0x6e, 0x6c, 0x69, 0x6e, 0x65,
    0x69, 0x6d, 0x61, 0x67, 0x65, 0x00, 0x5e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x6a, 0x06, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd5, 0x05,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbf, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x00,
    0x52, 0x00, 0x14, 0x01, 0x47, 0x00, 0x24, 0x01, 0x42, 0x00, 0x34, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x09, 0xff, 0x00, 0x00, 0x75, 0x03, 0x00, 0x00, 0x5b, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x17, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xb8, 0x5f, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd, 0x61, 0x7f, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xfa, 0x86, 0xff, 0xe4, 0xaf, 0xfe, 0x47, 0xff, 0xe4, 0x9f, 0xfe, 0x44, 0xfc, 0xe4,
    0xaf, 0xce, 0x4a, 0xfd, 0xe4, 0x7f, 0xde, 0x4a, 0xfd, 0xe4, 0x6f, 0xde, 0x4a, 0xfd, 0xe4, 0xaf,
    0xde, 0x4a, 0xfd, 0xe4, 0x6f, 0xde, 0x49, 0xfd, 0xe4, 0x7f, 0xfe, 0x47, 0xfd, 0xe4, 0x8f, 0xce,
    0x49, 0xfc, 0xe4, 0x7f, 0xce, 0x4a, 0xfc, 0xe4, 0xaf, 0xde, 0x47, 0xfc, 0x64, 0xaf, 0xd6, 0x48,
    0xfd, 0xe4, 0x7f, 0xde, 0x49, 0xfd, 0xe4, 0x9f, 0xce, 0x4a, 0xfc, 0xe4, 0x8f, 0xde, 0x4a, 0xfc,
    0xe4, 0xaf, 0xce, 0x49, 0xfd, 0xe4, 0xaf, 0xc8, 0x4a, 0xfc, 0x44, 0x9f, 0xca, 0x4a, 0xfc, 0x24,
    0x8f, 0xc0, 0x4a, 0xfc, 0x44, 0xaf, 0xc6, 0x48, 0xfc, 0xe4, 0x9f, 0xce, 0x4a, 0xfc, 0xe4, 0xaf,
    0xc2, 0x49, 0xfc, 0xa4, 0xaf, 0xde, 0x4a, 0xfc, 0x64, 0xaf, 0xc6, 0x49, 0xfd, 0xe4, 0xaf, 0xce,
    0x4a, 0xfc, 0xe4, 0x8f, 0xc6, 0x49, 0xfc, 0xe4, 0xaf, 0xd6, 0x4a, 0xfc, 0x24, 0xaf, 0xda, 0x4a,
    0xfc, 0xe4, 0x9f, 0xc2, 0x4a, 0xfc, 0x44, 0xaf, 0xc4, 0x4a, 0xfc, 0x64, 0xaf, 0xc6, 0x4a, 0xfd,
    0x44, 0xaf, 0xc4, 0x4a, 0xfe, 0x84, 0xaf, 0xd4, 0x4a, 0xfc, 0x04, 0xaf, 0xc0, 0x4a, 0xfc, 0x04,
    0xaf, 0xd0, 0x4a, 0xfd, 0xa4, 0x9f, 0xce, 0x4a, 0xfc, 0xa4, 0xaf, 0xca, 0x4a, 0xfd, 0x14, 0xaf,
    0xc3, 0x4a, 0x00, 0xaf, 0xd1, 0xca, 0xfc, 0x64, 0xaf, 0xc6, 0x4a, 0xfc, 0xa4, 0xaf, 0xd0, 0x4a,
    0xff, 0x04, 0xaf, 0xde, 0x4a, 0xfc, 0x74, 0xaf, 0xc4, 0x4a, 0xfe, 0xcc, 0xaf, 0xf0, 0xca, 0xff,
    0xff, 0xf0, 0x22, 0xbf, 0x2d, 0x2b, 0xf2, 0xd2, 0xbf, 0x5f, 0x2b, 0xf0, 0x52, 0xbf, 0xf6, 0x2b,
    0xfe, 0x42, 0xbf, 0xff, 0xfd, 0xe8, 0xaf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf4, 0xf2, 0xbf, 0x87,
    0x2b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf6, 0x41, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xf5, 0x84, 0xff, 0xff, 0xff, 0x42, 0x3f, 0xff, 0xff, 0xd0, 0x6f,
    0xfe, 0x4a, 0xff, 0xe4, 0x7f, 0xfe, 0x49, 0xff, 0xe4, 0x4f, 0xde, 0x48, 0xfd, 0xe4, 0x7f, 0xfe,
    0x46, 0xfd, 0xe4, 0x9f, 0xde, 0x48, 0xff, 0xe4, 0x5f, 0xc6, 0x49, 0xfc, 0x64, 0x8f, 0xce, 0x48,
    0xfd, 0xe4, 0x6f, 0xce, 0x49, 0xfe, 0xe4, 0x6f, 0xc6, 0x49, 0xfc, 0x64, 0x8f, 0xce, 0x48, 0xfd,
    0xe4, 0x8f, 0xc6, 0x49, 0xfd, 0x64, 0x9f, 0xde, 0x46, 0xfc, 0xe4, 0x9f, 0xce, 0x47, 0xfc, 0x24,
    0x9f, 0xc2, 0x49, 0xfd, 0x64, 0x7f, 0xc2, 0x49, 0xfc, 0xa4, 0x8f, 0xce, 0x49, 0xfc, 0xe4, 0x8f,
    0xc6, 0x49, 0xfc, 0x64, 0x7f, 0xd6, 0x49, 0xfc, 0x64, 0x8f, 0xc6, 0x49, 0xfd, 0x64, 0x8f, 0xc6,
    0x49, 0xfd, 0x64, 0x8f, 0xde, 0x47, 0xfc, 0xe4, 0x9f, 0xce, 0x49, 0xfc, 0xe4, 0x8f, 0xce, 0x49,
    0xfc, 0x64, 0x9f, 0xc6, 0x48, 0xfd, 0xe4, 0x8f, 0xce, 0x49, 0xfc, 0xe4, 0x8f, 0xc2, 0x49, 0xfc,
    0xa4, 0x9f, 0xce, 0x48, 0xfc, 0x64, 0x9f, 0xc6, 0x48, 0xfc, 0x64, 0x9f, 0xc6, 0x48, 0xfd, 0x24,
    0x9f, 0xce, 0x49, 0xfc, 0xa4, 0x9f, 0xc2, 0x49, 0xfc, 0xa4, 0x9f, 0xc8, 0x49, 0xfc, 0x44, 0x8f,
    0xc6, 0x49, 0xf0, 0x9f, 0xd5, 0x49, 0xfc, 0xa4, 0x9f, 0xc2, 0x49, 0xf0, 0x9f, 0x09, 0xfc, 0x84,
    0x8f, 0xc6, 0x49, 0xfc, 0x64, 0x9f, 0xc2, 0x49, 0xfc, 0x24, 0x9f, 0xc2, 0x49, 0xfc, 0x04, 0x9f,
    0xc0, 0x49, 0xfe, 0x24, 0x9f, 0xe6, 0x49, 0xfd, 0xc4, 0x9f, 0xc8, 0x49, 0xfe, 0x24, 0x9f, 0xc3,
    0x49, 0xfc, 0xb4, 0x9f, 0xca, 0x49, 0xfc, 0xc4, 0x8f, 0xc2, 0x49, 0xfc, 0x8c, 0x9f, 0xc3, 0xc8,
    0xfc, 0x84, 0x9f, 0xc2, 0x49, 0xfc, 0x94, 0x9f, 0xc3, 0x49, 0xfc, 0x44, 0x9f, 0xc0, 0x49, 0xfc,
    0x0c, 0x9f, 0xc7, 0xc9, 0xfc, 0x04, 0x9f, 0xc2, 0xc9, 0xfd, 0x7c, 0x9f, 0xc0, 0x49, 0xff, 0xff,
    0xf4, 0x02, 0x7f, 0x25, 0x27, 0xf1, 0x12, 0x7f, 0x41, 0x27, 0xff, 0xff, 0xc3, 0x09, 0xfc, 0xa4,
    0x9f, 0xc9, 0x49, 0xfc, 0x74, 0x9f, 0xfb, 0x49, 0xff, 0xff, 0xf1, 0xa2, 0x7f, 0x86, 0x27, 0xf0,
    0x92, 0x7f, 0x22, 0x27, 0xf1, 0xd2, 0x7f, 0x10, 0x27, 0xff, 0xff, 0xff, 0xff, 0x0d, 0x27, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7a, 0x14, 0x01, 0xc9,
    0x1c, 0x81, 0xc7, 0x24, 0x90, 0x3b, 0x1f, 0xce, 0x8b, 0x65, 0x42, 0x72, 0x93, 0x63, 0x71, 0x66,
    0x10, 0x10, 0x6c, 0x43, 0x7b, 0x3e, 0xde, 0x62, 0xd2, 0xdc, 0x32, 0xd5, 0x8e, 0x1d, 0x4f, 0xf7,
    0xaf, 0x57, 0x5d, 0x7b, 0x0f, 0x64, 0x72, 0x21, 0xb0, 0x1e, 0x87, 0xb8, 0x5f, 0x09, 0xc1, 0xa0,
    0xc1, 0x0c, 0x14, 0x2e, 0xe3, 0xd7, 0x45, 0x11, 0x10, 0x99, 0xbc, 0x6d, 0x4e, 0xb7, 0x59, 0xf9,
    0x1e, 0xb5, 0x86, 0x78, 0x9b, 0x83, 0x8f, 0x23, 0xdc, 0x5e, 0x3a, 0x76, 0xbf, 0xbb, 0x3c, 0xdb,
    0x7f, 0xaf, 0x56, 0x1f, 0xfb, 0x3e, 0xea, 0x9f, 0x43, 0xd0, 0xc4, 0x0f, 0x60, 0x31, 0x80, 0xf3,
    0x8b, 0xd2, 0x3b, 0xc4, 0x85, 0x32, 0x6c, 0x5f, 0x5d, 0x48, 0x46, 0x92, 0xd5, 0xed, 0x56, 0x77,
    0xaf, 0xf9, 0xa5, 0xd8, 0x6d, 0x92, 0x61, 0xf8, 0xea, 0x08, 0x8d, 0x06, 0x29, 0xc3, 0x33, 0x79,
    0x5f, 0x84, 0x71, 0x38, 0xef, 0x49, 0xae, 0x97, 0x17, 0x3b, 0xab, 0x6b, 0xc1, 0xea, 0x77, 0x21,
    0x68, 0x88, 0x71, 0x0e, 0x5e, 0x89, 0x97, 0x8a, 0x00, 0xc8, 0x66, 0x9a, 0x05, 0x0a, 0xb1, 0x1b,
    0xca, 0x35, 0x17, 0x5e, 0xcf, 0x89, 0x23, 0x6b, 0xf7, 0xc7, 0xd7, 0x76, 0x80, 0x81, 0xb6, 0xc9,
    0x2d, 0x61, 0xd7, 0xd6, 0xaf, 0x39, 0x86, 0x0c, 0x99, 0x38, 0x07, 0x81, 0x90, 0xf1, 0x3d, 0x4a,
    0x30, 0x14, 0x5e, 0x0c, 0x56, 0x5f, 0xf9, 0xae, 0xfa, 0x54, 0x84, 0x68, 0x12, 0x40, 0x67, 0x26,
    0x47, 0xe8, 0x23, 0x38, 0xaf, 0x52, 0x40, 0x84, 0xf3, 0x51, 0x81, 0x25, 0x2a, 0x3b, 0xd5, 0x94,
    0xb2, 0x00, 0x45, 0x25, 0x7e, 0xbd, 0x7b, 0x5f, 0x5d, 0xff, 0x10, 0x77, 0x21, 0x7a, 0x04, 0x3f,
    0x0e, 0x85, 0x68, 0xa1, 0x21, 0x58, 0x2c, 0x5a, 0x9d, 0x54, 0x17, 0x6a, 0xcc, 0x53, 0x4f, 0x81,
    0xa1, 0x08, 0x3b, 0x43, 0x3e, 0x9c, 0x4c, 0xca, 0x16, 0x93, 0x56, 0x2f, 0xa4, 0x8c, 0xdd, 0xcf,
    0x6d, 0x7e, 0x2e, 0xad, 0xeb, 0xf1, 0x6f, 0x40, 0xbd, 0xb2, 0x5f, 0x10, 0x42, 0x55, 0x44, 0xd5,
    0x09, 0xe3, 0x0a, 0x45, 0xd6, 0x62, 0xe7, 0xff, 0xed, 0x5f, 0x16, 0x22, 0xbf, 0xe8, 0x36, 0x13,
    0xf6, 0x4e, 0x47, 0x70, 0x30, 0x0e, 0x5a, 0x22, 0xb5, 0x1d, 0x12, 0x04, 0xac, 0xc6, 0x42, 0x45,
    0x47, 0x91, 0x39, 0xd4, 0xb7, 0x7b, 0xae, 0x00, 0x0f, 0xda, 0x31, 0xb2, 0xdf, 0xaf, 0xde, 0xc3,
    0x25, 0xb2, 0x20, 0x1e, 0xc3, 0xb0, 0xdc, 0x34, 0x0a, 0x82, 0x33, 0x11, 0x94, 0x2b, 0x06, 0xd7,
    0x05, 0xa0, 0xf8, 0xb4, 0x12, 0x56, 0x02, 0xd6, 0x49, 0x60, 0x9a, 0x2b, 0xb4, 0x45, 0x31, 0x42,
    0x3b, 0x74, 0x47, 0x4d, 0x14, 0x19, 0xd3, 0x4c, 0x53, 0x47, 0x88, 0xe8, 0x8e, 0x68, 0xa6, 0xdf,
    0x86, 0xff, 0xbf, 0xbd, 0x7e, 0x7d, 0x26, 0x50, 0x01, 0xb0, 0xe1, 0x44, 0xd8, 0xbe, 0x98, 0x86,
    0x8d, 0x89, 0x99, 0x4c, 0x58, 0x27, 0xfe, 0xcb, 0xad, 0x3e, 0x5b, 0xf4, 0x3e, 0xae, 0xf3, 0xae,
    0x83, 0xb6, 0xe4, 0xbc, 0x78, 0x04, 0x07, 0x60, 0x08, 0xd4, 0x06, 0x12, 0x92, 0x5b, 0x0c, 0x52,
    0x86, 0x17, 0xf8, 0x61, 0x85, 0x92, 0x8c, 0x52, 0xf7, 0x72, 0x12, 0xdf, 0x93, 0x69, 0xf0, 0x3e,
    0x32, 0x03, 0xcf, 0x45, 0x81, 0x11, 0xac, 0x2e, 0x58, 0x7a, 0xf0, 0x4f, 0x43, 0x56, 0xcd, 0x85,
    0x2b, 0xa0, 0xab, 0xaa, 0x31, 0x8c, 0x47, 0xfb, 0xbb, 0xb1, 0x34, 0x1b, 0xff, 0xff, 0xcb, 0xfd,
    0x6b, 0x5e, 0xf7, 0xb6, 0x4c, 0xc1, 0xc2, 0x93, 0x57, 0x8e, 0x92, 0x93, 0x11, 0xe7, 0xd6, 0x30,
    0xcd, 0xf5, 0x92, 0x4f, 0x43, 0xfb, 0xbf, 0xe8, 0x3b, 0x95, 0xe3, 0x41, 0x44, 0x7d, 0x4a, 0x72,
    0x6b, 0x67, 0x0a, 0x78, 0x00, 0xdc, 0xb9, 0xf7, 0x0c, 0x44, 0x58, 0xad, 0x87, 0x10, 0xf5, 0xfb,
    0xa0, 0x5f, 0x27, 0x31, 0x08, 0xf2, 0x69, 0x2d, 0x91, 0x09, 0x41, 0x30, 0x6a, 0x61, 0x23, 0xa3,
    0x90, 0x15, 0x5d, 0x3b, 0x6e, 0xe8, 0x54, 0x2e, 0x58, 0x76, 0xd6, 0x76, 0x94, 0x51, 0xf8, 0x8e,
    0x68, 0xf0, 0x86, 0x89, 0xfb, 0xfb, 0xfb, 0xf7, 0xed, 0x96, 0x1e, 0xad, 0xa4, 0xbe, 0x4a, 0xa1,
    0x40, 0x2c, 0x04, 0x88, 0xd2, 0xe2, 0x9e, 0x16, 0xcc, 0xbd, 0x8d, 0x7a, 0xfd, 0x7f, 0xae, 0xdf,
    0x20, 0x78, 0x5e, 0x01, 0x24, 0x00, 0xdb, 0xff, 0xd3, 0x84, 0xa8, 0x0d, 0x35, 0xfe, 0xad, 0xe3,
    0x5d, 0x4e, 0x49, 0xda, 0x49, 0x42, 0xcc, 0x7e, 0x15, 0xff, 0xbe, 0x81, 0x80, 0x82, 0x81, 0x80,
    0xf6, 0x82, 0x84, 0x81, 0x81, 0x7c, 0xf5, 0x8a, 0x82, 0xf9, 0x00, 0x83, 0x6a, 0xd0, 0x13, 0xc0,
];

/// FNV-1a (64-bit) of the samples OpenEXR 3.5.3 decodes from
/// [`DWAA_EXR`]: half bits, little-endian, R, G, B interleaved.
const DWAA_OPENEXR_FNV: u64 = 0x3e06_5129_0420_223b;

fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn exr_dwaa_and_dwab_decode_as_openexr_decodes() {
    let dir = TempDir::new("exr-dwa");
    for (name, code) in [("dwaa", 8u8), ("dwab", 9)] {
        let mut bytes = DWAA_EXR.to_vec();
        patch(&mut bytes, COMPRESSION, &[8], &[code]);
        let path = dir.join(&format!("{name}.exr"));
        std::fs::write(&path, bytes).expect("write the DWA EXR");
        let frame = decode(&path).unwrap_or_else(|e| panic!("{name}: decode failed: {e}"));
        assert_eq!(
            frame.info,
            info(24, 16, 3, SampleType::F16),
            "{name}: half RGB stays three F16 channels"
        );
        assert_eq!(
            probe(&path).unwrap(),
            frame.info,
            "{name}: probe agrees with decode"
        );
        let le = frame
            .data
            .chunks_exact(2)
            .flat_map(|s| u16::from_ne_bytes([s[0], s[1]]).to_le_bytes());
        assert_eq!(
            fnv1a(le),
            DWAA_OPENEXR_FNV,
            "{name}: the samples are bit for bit OpenEXR's own decode"
        );
    }
}

#[test]
fn broken_and_missing_files_get_typed_errors() {
    let dir = TempDir::new("broken");
    let exr_path = dir.join("garbage.exr");
    let png_path = dir.join("garbage.png");
    std::fs::write(&exr_path, b"not an exr at all").unwrap();
    std::fs::write(&png_path, b"\x89PNG\r\n\x1a\nshort").unwrap();
    assert!(
        matches!(decode(&exr_path), Err(PlayError::Decode { .. })),
        "a file that is not an EXR is a Decode error"
    );
    assert!(
        matches!(decode(&png_path), Err(PlayError::Decode { .. })),
        "a truncated PNG is a Decode error"
    );
    for name in ["missing.exr", "missing.png"] {
        assert!(
            matches!(decode(&dir.join(name)), Err(PlayError::Io { .. })),
            "decoding a missing {name} is an Io error"
        );
        assert!(
            matches!(probe(&dir.join(name)), Err(PlayError::Io { .. })),
            "probing a missing {name} is an Io error"
        );
    }
}

/// A little-endian TIFF of one strip of 8 bytes whose header claims
/// `width`x`height` RGBA at 16 bits a sample (8 bytes a pixel).
fn tiff_claiming(width: u32, height: u32) -> Vec<u8> {
    // (tag, type, value): type 3 is a SHORT, 4 a LONG; one value each.
    let bits_at = 8 + 2 + 10 * 12 + 4;
    let strip_at = bits_at + 8;
    let entries: [(u16, u16, u32, u32); 10] = [
        (256, 4, 1, width),
        (257, 4, 1, height),
        (258, 3, 4, bits_at as u32), // BitsPerSample: 4 shorts, stored after the IFD
        (259, 3, 1, 1),              // no compression
        (262, 3, 1, 2),              // RGB
        (273, 4, 1, strip_at as u32),
        (277, 3, 1, 4),
        (278, 4, 1, height), // one strip
        (279, 4, 1, 8),
        (338, 3, 1, 2), // the fourth sample is unassociated alpha
    ];
    let mut tiff = b"II*\0".to_vec();
    tiff.extend_from_slice(&8u32.to_le_bytes());
    tiff.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for (tag, kind, count, value) in entries {
        tiff.extend_from_slice(&tag.to_le_bytes());
        tiff.extend_from_slice(&kind.to_le_bytes());
        tiff.extend_from_slice(&count.to_le_bytes());
        tiff.extend_from_slice(&value.to_le_bytes());
    }
    tiff.extend_from_slice(&0u32.to_le_bytes());
    for _ in 0..4 {
        tiff.extend_from_slice(&16u16.to_le_bytes());
    }
    tiff.extend_from_slice(&[0; 8]);
    tiff
}

/// Found by the fuzz harness (`tests/fuzz.rs`, seed 7, TIFF case 20424):
/// a SampleFormat tag with no values made the `tiff` crate index an empty
/// list, and the player panicked while probing the file.
#[test]
fn a_tiff_whose_sample_format_tag_holds_no_value_is_a_decode_error_not_a_panic() {
    let dir = TempDir::new("tiff-empty-tag");
    let path = dir.join("empty-tag.tif");
    let mut tiff = tiff_claiming(4, 4);
    // An eleventh entry after ExtraSamples (338): SampleFormat (339), a
    // SHORT, with a count of 0.
    let count_at = 8;
    tiff[count_at..count_at + 2].copy_from_slice(&11u16.to_le_bytes());
    let after_entries = 8 + 2 + 10 * 12;
    let mut entry = Vec::new();
    for (v, n) in [(339u32, 2), (3, 2), (0, 4), (0, 4)] {
        entry.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    tiff.splice(after_entries..after_entries, entry);
    // The offsets the entries give moved by the inserted 12 bytes.
    let shift = |tiff: &mut Vec<u8>, entry: usize| {
        let at = 8 + 2 + entry * 12 + 8;
        let v = u32::from_le_bytes(tiff[at..at + 4].try_into().unwrap()) + 12;
        tiff[at..at + 4].copy_from_slice(&v.to_le_bytes());
    };
    shift(&mut tiff, 2); // BitsPerSample's values
    shift(&mut tiff, 5); // the strip
    std::fs::write(&path, &tiff).unwrap();
    for (what, result) in [
        ("probing", probe(&path).map(|_| ())),
        ("decoding", decode(&path).map(|_| ())),
    ] {
        match result {
            Err(PlayError::Decode { path: p, reason }) => {
                assert_eq!(p, path, "{what}");
                assert!(reason.contains("decoder failed"), "{what}: {reason}");
            }
            Err(PlayError::Unsupported { .. }) => {}
            other => panic!("{what}: expected a decode error, got {other:?}"),
        }
    }
}

#[test]
fn a_tiff_claiming_4294967295_pixels_a_side_is_refused_without_overflowing_its_size() {
    let dir = TempDir::new("huge-header");
    let path = dir.join("huge.tif");
    std::fs::write(&path, tiff_claiming(u32::MAX, u32::MAX)).unwrap();
    let reason = unsupported_reason(probe(&path), "probing a TIFF 4294967295 pixels a side");
    assert!(reason.contains("4294967295x4294967295"), "{reason}");
    let reason = unsupported_reason(decode(&path), "decoding it");
    assert!(reason.contains("at most 65536"), "{reason}");
}

#[test]
fn png_16_bit_keeps_16_bits() {
    let dir = TempDir::new("png16");
    let mut rng = Lcg(9);
    let (w, h) = (W as u32, H as u32);
    let rgba = rng.u16s(W * H * 4);
    let path = dir.join("rgba16.png");
    image::ImageBuffer::<image::Rgba<u16>, _>::from_raw(w, h, rgba.clone())
        .unwrap()
        .save(&path)
        .expect("write a 16-bit RGBA PNG");
    let ne = |v: &[u16]| v.iter().flat_map(|s| s.to_ne_bytes()).collect::<Vec<u8>>();
    check(
        &path,
        info(W, H, 4, SampleType::U16),
        &ne(&rgba),
        "16-bit RGBA PNG: four U16 channels, values exact",
    );
    let rgb = rng.u16s(W * H * 3);
    let path = dir.join("rgb16.png");
    image::ImageBuffer::<image::Rgb<u16>, _>::from_raw(w, h, rgb.clone())
        .unwrap()
        .save(&path)
        .expect("write a 16-bit RGB PNG");
    check(
        &path,
        info(W, H, 3, SampleType::U16),
        &ne(&rgb),
        "16-bit RGB PNG: three U16 channels, values exact",
    );
    let la = rng.u16s(W * H * 2);
    let path = dir.join("la16.png");
    image::ImageBuffer::<image::LumaA<u16>, _>::from_raw(w, h, la.clone())
        .unwrap()
        .save(&path)
        .expect("write a 16-bit grey and alpha PNG");
    check(
        &path,
        info(W, H, 2, SampleType::U16),
        &ne(&la),
        "16-bit grey-alpha PNG: two U16 channels",
    );
}

#[test]
fn png_8_bit_grey_is_one_channel() {
    let dir = TempDir::new("png8");
    let grey = Lcg(10).u8s(W * H);
    let path = dir.join("grey.png");
    image::GrayImage::from_raw(W as u32, H as u32, grey.clone())
        .unwrap()
        .save(&path)
        .expect("write an 8-bit grey PNG");
    check(
        &path,
        info(W, H, 1, SampleType::U8),
        &grey,
        "8-bit grey PNG: one U8 channel",
    );
    let rgba = Lcg(11).u8s(W * H * 4);
    let path = dir.join("rgba.png");
    image::RgbaImage::from_raw(W as u32, H as u32, rgba.clone())
        .unwrap()
        .save(&path)
        .expect("write an 8-bit RGBA PNG");
    check(
        &path,
        info(W, H, 4, SampleType::U8),
        &rgba,
        "8-bit RGBA PNG: four U8 channels",
    );
}

#[test]
fn tiff_16_bit_keeps_16_bits() {
    let dir = TempDir::new("tiff16");
    let mut rng = Lcg(12);
    let (w, h) = (W as u32, H as u32);
    let ne = |v: &[u16]| v.iter().flat_map(|s| s.to_ne_bytes()).collect::<Vec<u8>>();
    let rgb = rng.u16s(W * H * 3);
    let path = dir.join("rgb16.tif");
    image::ImageBuffer::<image::Rgb<u16>, _>::from_raw(w, h, rgb.clone())
        .unwrap()
        .save(&path)
        .expect("write a 16-bit RGB TIFF");
    check(
        &path,
        info(W, H, 3, SampleType::U16),
        &ne(&rgb),
        "16-bit RGB TIFF: three U16 channels, values exact",
    );
    let grey = rng.u16s(W * H);
    let path = dir.join("grey16.tiff");
    image::ImageBuffer::<image::Luma<u16>, _>::from_raw(w, h, grey.clone())
        .unwrap()
        .save(&path)
        .expect("write a 16-bit grey TIFF");
    check(
        &path,
        info(W, H, 1, SampleType::U16),
        &ne(&grey),
        "16-bit grey TIFF: one U16 channel",
    );
}

#[test]
fn jpeg_decodes_as_the_image_crate_decodes() {
    let dir = TempDir::new("jpeg");
    let rgb = Lcg(13).u8s(W * H * 3);
    let path = dir.join("frame.jpg");
    image::RgbImage::from_raw(W as u32, H as u32, rgb)
        .unwrap()
        .save(&path)
        .expect("write a JPEG");
    let want = image::open(&path)
        .expect("the image crate reads its JPEG")
        .to_rgb8();
    check(
        &path,
        info(W, H, 3, SampleType::U8),
        want.as_raw(),
        "RGB JPEG (lossy): three U8 channels, the image crate's own samples",
    );
    let grey = Lcg(14).u8s(W * H);
    let path = dir.join("grey.jpeg");
    image::GrayImage::from_raw(W as u32, H as u32, grey)
        .unwrap()
        .save(&path)
        .expect("write a grey JPEG");
    let want = image::open(&path)
        .expect("the image crate reads its JPEG")
        .to_luma8();
    check(
        &path,
        info(W, H, 1, SampleType::U8),
        want.as_raw(),
        "grey JPEG: one U8 channel",
    );
}

#[test]
fn a_png_named_tif_decodes_by_its_content() {
    let dir = TempDir::new("misnamed");
    let grey = Lcg(15).u8s(W * H);
    let png = dir.join("grey.png");
    image::GrayImage::from_raw(W as u32, H as u32, grey.clone())
        .unwrap()
        .save(&png)
        .unwrap();
    let tif = dir.join("grey.tif");
    std::fs::rename(&png, &tif).unwrap();
    check(
        &tif,
        info(W, H, 1, SampleType::U8),
        &grey,
        "a PNG named .tif: the format is told by the file's first bytes",
    );
}

/// `(number, is a file)` for each entry.
fn numbers(sequence: &Sequence) -> Vec<(Option<i64>, bool)> {
    (0..sequence.len())
        .map(|p| sequence.entry(p).unwrap())
        .map(|e| (e.number, e.path.is_some()))
        .collect()
}

fn invalid_option(result: Result<Sequence, PlayError>, what: &str) -> String {
    match result {
        Err(PlayError::InvalidOption(message) | PlayError::BadOption { message, .. }) => message,
        other => panic!("{what}: expected an invalid option, got {other:?}"),
    }
}

#[test]
fn a_pattern_of_hashes_finds_frames_and_counts_gaps() {
    let dir = TempDir::new("seq-hash");
    dir.touch(&[
        "shot_v003.1001.exr",
        "shot_v003.1002.exr",
        "shot_v003.1004.exr",
        "shot_v003.1005.exr",
        "shot_v003.10000.exr",
        "shot_v003.101.exr",
        "shot_v003.01006.exr",
        "shot_v004.1003.exr",
        ".shot_v003.1003.exr",
        "shot_v003.1003.png",
    ]);
    let sequence = Sequence::open(&dir.join("shot_v003.####.exr"), None).unwrap();
    assert_eq!(
        sequence.files(),
        5,
        "####: 1001, 1002, 1004, 1005 and 10000 (wider, unpadded)"
    );
    assert_eq!(
        sequence.number_range(),
        Some((1001, 10000)),
        "frames 1001 to 10000: 101 (too narrow) and 01006 (padded to 5) do not match ####"
    );
    assert_eq!(sequence.len(), 10000 - 1001 + 1, "one entry per number");
    assert_eq!(
        sequence.gaps(),
        sequence.len() - 5,
        "every missing number is a gap"
    );
    assert_eq!(
        sequence.entry(2).unwrap().path,
        None,
        "1003 is a gap: the hidden file, the PNG and v004 are not this sequence"
    );
    assert_eq!(
        sequence.path(0),
        Some(dir.join("shot_v003.1001.exr").as_path()),
        "entries hold the files' paths"
    );
    let at = Sequence::open(&dir.join("shot_v003.@@@@.exr"), None).unwrap();
    assert_eq!(numbers(&at), numbers(&sequence), "@@@@ is the same as ####");
}

#[test]
fn a_printf_pattern_finds_frames_and_gaps() {
    let dir = TempDir::new("seq-printf");
    dir.touch(&[
        "plate.0098.png",
        "plate.0099.png",
        "plate.0101.png",
        "plate.98.png",
    ]);
    let sequence = Sequence::open(&dir.join("plate.%04d.png"), None).unwrap();
    assert_eq!(
        numbers(&sequence),
        [
            (Some(98), true),
            (Some(99), true),
            (Some(100), false),
            (Some(101), true)
        ],
        "%04d: 98, 99, 101 padded to four digits, 100 a gap; plate.98.png does not match"
    );
    assert_eq!(sequence.gaps(), 1, "one gap counted");
    let any = Sequence::open(&dir.join("plate.%d.png"), None);
    assert!(
        matches!(any, Err(PlayError::InvalidOption(_))),
        "%d takes any width, so plate.98.png and plate.0098.png are both frame 98: refused"
    );
    let one = Sequence::open(&dir.join("plate.#.png"), Some((99, 101))).unwrap();
    assert_eq!(
        numbers(&one),
        [(Some(99), true), (Some(100), false), (Some(101), true)],
        "a single # takes any width; a range leaves the duplicate 98 out"
    );
}

#[test]
fn a_range_trims_to_the_files_it_holds() {
    let dir = TempDir::new("seq-range");
    dir.touch(&["f.0010.exr", "f.0012.exr", "f.0013.exr", "f.0020.exr"]);
    let pattern = dir.join("f.####.exr");
    let wide = Sequence::open(&pattern, Some((1, 15))).unwrap();
    assert_eq!(
        numbers(&wide),
        [
            (Some(10), true),
            (Some(11), false),
            (Some(12), true),
            (Some(13), true)
        ],
        "a range wider than the files: no gaps before the first or after the last kept"
    );
    let inner = Sequence::open(&pattern, Some((11, 19))).unwrap();
    assert_eq!(
        numbers(&inner),
        [(Some(12), true), (Some(13), true)],
        "a range starting on a gap starts at the next file"
    );
    let message = invalid_option(Sequence::open(&pattern, Some((14, 19))), "a range of gaps");
    assert!(
        message.contains("14-19") && message.contains("10 to 20"),
        "a range that holds no file says so, and where the files are: {message}"
    );
    invalid_option(Sequence::open(&pattern, Some((20, 10))), "first after last");
}

#[test]
fn a_folder_of_one_sequence_plays_it_with_gaps() {
    let dir = TempDir::new("seq-folder");
    dir.touch(&[
        "a_v2.0003.exr",
        "a_v2.0001.exr",
        "a_v2.0005.exr",
        "notes.txt",
        ".DS_Store",
        "._a_v2.0002.exr",
    ]);
    std::fs::create_dir(dir.join("a_v2.0004.exr")).unwrap();
    let sequence = Sequence::open(&dir.0, None).unwrap();
    assert_eq!(
        numbers(&sequence),
        [
            (Some(1), true),
            (Some(2), false),
            (Some(3), true),
            (Some(4), false),
            (Some(5), true)
        ],
        "frames 1 to 5 with gaps; hidden files, a sub-folder and notes.txt are skipped"
    );
    assert_eq!(sequence.spec, dir.0, "the spec is what was opened");
    let ranged = Sequence::open(&dir.0, Some((3, 5))).unwrap();
    assert_eq!(ranged.len(), 3, "a range applies to a folder's numbers");
}

#[test]
fn a_folder_without_numbers_plays_in_natural_order() {
    let dir = TempDir::new("seq-names");
    dir.touch(&["beta.png", "alpha.exr", "gamma.jpg"]);
    let sequence = Sequence::open(&dir.0, None).unwrap();
    let names: Vec<String> = (0..sequence.len())
        .map(|p| sequence.entry(p).unwrap())
        .map(|e| {
            assert_eq!(e.number, None, "names without numbers carry no number");
            e.path
                .as_ref()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        ["alpha.exr", "beta.png", "gamma.jpg"],
        "natural order"
    );
    let ranged = Sequence::open(&dir.0, Some((2, 2))).unwrap();
    assert_eq!(
        ranged.first_file().and_then(|p| p.file_name()),
        Some(std::ffi::OsStr::new("beta.png")),
        "a range counts unnumbered files from 1"
    );
}

#[test]
fn a_folder_of_two_sequences_asks_for_a_pattern() {
    let dir = TempDir::new("seq-two");
    dir.touch(&[
        "beauty.0001.exr",
        "beauty.0002.exr",
        "beauty.0003.exr",
        "matte.0001.png",
        "matte.0002.png",
    ]);
    let message = invalid_option(Sequence::open(&dir.0, None), "two sequences");
    assert!(
        message.contains("beauty.####.exr (3 files)")
            && message.contains("matte.####.png (2 files)")
            && message.contains("pattern"),
        "the error names both sequences and asks for a pattern: {message}"
    );
    let chosen = Sequence::open(&dir.join("matte.####.png"), None).unwrap();
    assert_eq!(chosen.files(), 2, "a pattern picks one of them");
}

#[test]
fn empty_folders_and_patterns_without_files_are_no_frames() {
    let dir = TempDir::new("seq-empty");
    assert!(
        matches!(Sequence::open(&dir.0, None), Err(PlayError::NoFrames(_))),
        "an empty folder has no frames"
    );
    dir.touch(&["readme.txt", ".hidden.exr"]);
    assert!(
        matches!(Sequence::open(&dir.0, None), Err(PlayError::NoFrames(_))),
        "a folder of no image files has no frames"
    );
    assert!(
        matches!(
            Sequence::open(&dir.join("shot.####.exr"), None),
            Err(PlayError::NoFrames(_))
        ),
        "a pattern that matches nothing has no frames"
    );
}

#[test]
fn missing_paths_are_io_errors() {
    let dir = TempDir::new("seq-missing");
    for spec in [
        dir.join("no-such-folder"),
        dir.join("no-such-file.0001.exr"),
        dir.join("no-such-folder").join("shot.####.exr"),
    ] {
        match Sequence::open(&spec, None) {
            Err(PlayError::Io { path, reason }) => {
                assert!(
                    !reason.is_empty(),
                    "{}: the OS's reason is given",
                    spec.display()
                );
                assert!(
                    spec.starts_with(&path),
                    "{}: the error names the missing path, not {}",
                    spec.display(),
                    path.display()
                );
            }
            other => panic!("{}: expected Io, got {other:?}", spec.display()),
        }
    }
}

#[test]
fn one_file_is_a_sequence_of_one() {
    let dir = TempDir::new("seq-one");
    dir.touch(&["plate.0042.exr", "still.png"]);
    let numbered = Sequence::open(&dir.join("plate.0042.exr"), None).unwrap();
    assert_eq!(
        numbers(&numbered),
        [(Some(42), true)],
        "its number read from the name"
    );
    let still = Sequence::open(&dir.join("still.png"), None).unwrap();
    assert_eq!(numbers(&still), [(None, true)], "a name without a number");
    invalid_option(
        Sequence::open(&dir.join("plate.0042.exr"), Some((1, 10))),
        "a range without the file's number",
    );
}

#[test]
fn sequences_too_far_apart_are_refused_not_allocated() {
    let dir = TempDir::new("seq-huge");
    dir.touch(&["f.1.exr", "f.2000000000.exr"]);
    let message = invalid_option(Sequence::open(&dir.0, None), "numbers 1 and 2000000000");
    assert!(
        message.contains("range"),
        "the error suggests a range: {message}"
    );
    let ranged = Sequence::open(&dir.0, Some((1, 1000))).unwrap();
    assert_eq!(ranged.len(), 1, "a range makes it playable");
}

#[test]
fn a_sequence_of_real_frames_decodes() {
    let dir = TempDir::new("seq-decode");
    let mut rng = Lcg(16);
    let frames: Vec<Vec<f16>> = (0..3).map(|_| rng.halves(W * H)).collect();
    for (n, y) in [1001, 1002, 1004].iter().zip(&frames) {
        write_exr(
            &dir.join(&format!("comp.{n}.exr")),
            (W, H),
            vec![("Y", FlatSamples::F16(y.clone()))],
            scan_lines(Compression::PIZ),
        );
    }
    let sequence = Sequence::open(&dir.join("comp.####.exr"), None).unwrap();
    assert_eq!(sequence.gaps(), 1, "1003 is a gap");
    let decoded: Vec<Vec<u8>> = (0..sequence.len())
        .filter_map(|p| sequence.path(p))
        .map(|p| decode(p).expect("each frame decodes").data.to_vec())
        .collect();
    let want: Vec<Vec<u8>> = frames.iter().map(|y| half_bytes(y)).collect();
    assert_eq!(
        decoded, want,
        "each file decodes to its own samples, in frame order"
    );
}
