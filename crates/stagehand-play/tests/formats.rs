//! Full precision, end to end: sequences written by the format crates
//! themselves (EXR half with ZIP, PIZ and no compression, EXR float,
//! 16-bit PNG, 16-bit TIFF, grey PNG) played through the player. At each
//! saved tick, the frame texture read back equals the source exactly (half
//! bits, 16-bit values), and the drawn frame matches the display transform
//! of the source within one code value.

use half::f16;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::render::encode;
use stagehand_play::testdata;
use stagehand_play::{
    Display, FormatChoice, Mode, PlayOptions, PlaySummary, Transfer, engine_config, play,
};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const W: u32 = 40;
const H: u32 = 24;
const FRAMES: u32 = 3;

/// Scene-linear sample `c` of pixel (x, y) of frame `f`: -0.25 to about
/// 1.7, so negatives and values above 1 are covered.
fn linear(x: u32, y: u32, c: u32, f: u32) -> f32 {
    ((x * 7 + y * 13 + c * 5 + f * 11) % 64) as f32 / 32.0 - 0.25
}

/// 16-bit sample `c` of pixel (x, y) of frame `f`, spread over the range.
fn wide(x: u32, y: u32, c: u32, f: u32) -> u16 {
    ((x * 1009 + y * 4001 + c * 15013 + f * 7919) % 65536) as u16
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-fmt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_exr_half(dir: &Path, compression: exr::compression::Compression) {
    for f in 0..FRAMES {
        let path = dir.join(format!("shot.{:04}.exr", 1001 + f));
        let sample = |x, y, c| linear(x, y, c, f);
        testdata::write_exr_half(&path, (W, H), compression, sample).unwrap();
    }
}

fn write_exr_float(dir: &Path) {
    for f in 0..FRAMES {
        let path = dir.join(format!("shot.{:04}.exr", 1001 + f));
        testdata::write_exr_float(&path, (W, H), |x, y, c| linear(x, y, c, f)).unwrap();
    }
}

fn write_png16(dir: &Path, ext: &str) {
    for f in 0..FRAMES {
        let data: Vec<u16> = (0..H)
            .flat_map(|y| (0..W).flat_map(move |x| (0..4).map(move |c| wide(x, y, c, f))))
            .collect();
        let img = image::ImageBuffer::<image::Rgba<u16>, _>::from_raw(W, H, data).unwrap();
        img.save(dir.join(format!("plate_{}.{ext}", 1 + f)))
            .unwrap();
    }
}

fn write_grey(dir: &Path) {
    for f in 0..FRAMES {
        let data: Vec<u8> = (0..H)
            .flat_map(|y| (0..W).map(move |x| (wide(x, y, 0, f) >> 8) as u8))
            .collect();
        let img = image::GrayImage::from_raw(W, H, data).unwrap();
        img.save(dir.join(format!("grey.{}.png", 10 + f))).unwrap();
    }
}

fn run(dir: &Path, format: FormatChoice, display: Display) -> PlaySummary {
    let gpu = Arc::new(
        stagehand_gpu::Gpu::open(&stagehand_gpu::GpuOptions {
            wanted_features: stagehand_play::wanted_features(),
            ..Default::default()
        })
        .expect("tests need a GPU adapter"),
    );
    let engine = UploadEngine::new(gpu.clone(), engine_config(2)).unwrap();
    let options = PlayOptions {
        source: Some(dir.to_owned()),
        fps: 30.0,
        output_size: (W, H),
        format,
        display,
        mode: Mode::EveryFrame,
        save_ticks: (0..u64::from(FRAMES)).collect(),
        ..PlayOptions::default()
    };
    play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap()
}

fn has_16bit_norm() -> bool {
    stagehand_gpu::Gpu::open(&stagehand_gpu::GpuOptions {
        wanted_features: stagehand_play::wanted_features(),
        ..Default::default()
    })
    .unwrap()
    .device()
    .features()
    .contains(wgpu::Features::TEXTURE_FORMAT_16BIT_NORM)
}

fn u16s(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks_exact(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Checks every saved tick: the texture holds `texel(x, y, c, frame)`
/// exactly, and the drawn pixel is `drawn(x, y, c, frame)` within one.
fn check(
    summary: &PlaySummary,
    texels_of: impl Fn(&[u8]) -> Vec<f64>,
    texel: impl Fn(u32, u32, u32, u32) -> f64,
    drawn: impl Fn(u32, u32, u32, u32) -> f64,
) {
    assert_eq!(summary.frames.failed, 0);
    assert_eq!(summary.saved.len(), FRAMES as usize, "{summary:?}");
    for saved in &summary.saved {
        let frame = saved
            .frame
            .expect("every-frame mode has a frame at each tick") as u32;
        assert_eq!(
            u64::from(frame),
            saved.tick,
            "every-frame mode shows frame k at tick k"
        );
        let texels = texels_of(&saved.texels);
        assert_eq!(texels.len(), (W * H * 4) as usize);
        for y in 0..H {
            for x in 0..W {
                for c in 0..4 {
                    let at = ((y * W + x) * 4 + c) as usize;
                    assert_eq!(
                        texels[at],
                        texel(x, y, c, frame),
                        "frame {frame} texel ({x}, {y}) channel {c}"
                    );
                    let want = drawn(x, y, c, frame);
                    let got = f64::from(saved.rgba[at]);
                    assert!(
                        (got - want).abs() <= 1.0,
                        "frame {frame} drawn ({x}, {y}) channel {c}: {got}, want {want}"
                    );
                }
            }
        }
    }
}

fn exr_half_plays_exactly(compression: exr::compression::Compression, name: &str) {
    let dir = temp_dir(name);
    write_exr_half(&dir, compression);
    let display = Display::default();
    let summary = run(&dir, FormatChoice::Auto, display);
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba16Float);
    assert_eq!(summary.format.reduction, None, "half lands whole");
    let half = |x, y, c, f| f16::from_f32(linear(x, y, c, f));
    check(
        &summary,
        |b| u16s(b).into_iter().map(f64::from).collect(),
        |x, y, c, f| f64::from(half(x, y, c, f).to_bits()),
        |x, y, c, f| {
            let v = half(x, y, c, f).to_f32();
            if c == 3 {
                (v.clamp(0.0, 1.0) * 255.0).round().into()
            } else {
                (encode(v, display) * 255.0).round().into()
            }
        },
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn exr_half_zip_lands_bit_exact_and_draws_through_srgb() {
    exr_half_plays_exactly(exr::compression::Compression::ZIP16, "zip");
}

#[test]
fn exr_half_piz_lands_bit_exact_and_draws_through_srgb() {
    exr_half_plays_exactly(exr::compression::Compression::PIZ, "piz");
}

#[test]
fn exr_half_uncompressed_lands_bit_exact_and_draws_through_srgb() {
    exr_half_plays_exactly(exr::compression::Compression::Uncompressed, "raw");
}

#[test]
fn exr_float_as_rgba32f_lands_exactly_and_draws_with_exposure_and_rec709() {
    let dir = temp_dir("float");
    write_exr_float(&dir);
    let display = Display {
        transfer: Transfer::Rec709,
        exposure: -1.0,
    };
    let summary = run(&dir, FormatChoice::Rgba32f, display);
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba32Float);
    assert_eq!(summary.format.reduction, None);
    let value = |x, y, c, f| if c == 3 { 1.0 } else { linear(x, y, c, f) };
    check(
        &summary,
        |b| f32s(b).into_iter().map(f64::from).collect(),
        |x, y, c, f| f64::from(value(x, y, c, f)),
        |x, y, c, f| {
            if c == 3 {
                255.0
            } else {
                (encode(value(x, y, c, f), display) * 255.0).round().into()
            }
        },
    );
    // By default float is stored as half, and the summary says so.
    let halved = run(&dir, FormatChoice::Auto, Display::default());
    assert_eq!(halved.format.texture, wgpu::TextureFormat::Rgba16Float);
    assert!(
        halved.format.reduction.is_some(),
        "the reduction is reported"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn sixteen_bit_plays_exactly(ext: &str) {
    let dir = temp_dir(ext);
    write_png16(&dir, ext);
    let summary = run(&dir, FormatChoice::Auto, Display::default());
    if !has_16bit_norm() {
        // The fallback: half floats, said in the summary, and still drawn
        // as the display-referred values they are.
        assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba16Float);
        assert!(
            summary.format.reduction.is_some(),
            "the fallback is reported"
        );
        check_half_of_sixteen_bit(&summary);
        std::fs::remove_dir_all(dir).unwrap();
        return;
    }
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba16Unorm);
    assert_eq!(summary.format.reduction, None);
    check(
        &summary,
        |b| u16s(b).into_iter().map(f64::from).collect(),
        |x, y, c, f| f64::from(wide(x, y, c, f)),
        |x, y, c, f| (f64::from(wide(x, y, c, f)) / 257.0).round(),
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// 16-bit values stored as half floats (v / 65535 rounded to half) are
/// drawn as stored: display-referred, no transfer curve applied.
fn check_half_of_sixteen_bit(summary: &PlaySummary) {
    assert_eq!(
        summary.display, None,
        "an integer source is display-referred"
    );
    check(
        summary,
        |b| u16s(b).into_iter().map(f64::from).collect(),
        |x, y, c, f| f64::from(f16::from_f32(f32::from(wide(x, y, c, f)) / 65535.0).to_bits()),
        |x, y, c, f| (f64::from(wide(x, y, c, f)) / 257.0).round(),
    );
}

#[test]
fn sixteen_bit_stored_as_half_floats_is_drawn_as_stored_not_through_srgb() {
    let dir = temp_dir("png16-as-half");
    write_png16(&dir, "png");
    let summary = run(&dir, FormatChoice::Rgba16f, Display::default());
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba16Float);
    check_half_of_sixteen_bit(&summary);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn exr_in_rgba8_is_still_drawn_through_the_display_transform() {
    let dir = temp_dir("exr-as-8bit");
    write_exr_half(&dir, exr::compression::Compression::ZIP16);
    let display = Display {
        transfer: Transfer::Srgb,
        exposure: 0.5,
    };
    let summary = run(&dir, FormatChoice::Rgba8, display);
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba8Unorm);
    assert!(summary.format.reduction.is_some());
    assert_eq!(
        summary.display,
        Some(display),
        "a float source is scene-linear"
    );
    // The texture holds the linear values clamped to 0..1 in 8 bits; the
    // pass applies exposure and the curve to what the texture holds.
    let stored = |x, y, c, f| {
        let v = f16::from_f32(linear(x, y, c, f)).to_f32();
        (v.clamp(0.0, 1.0) * 255.0).round()
    };
    check(
        &summary,
        |b| b.iter().copied().map(f64::from).collect(),
        |x, y, c, f| f64::from(stored(x, y, c, f)),
        |x, y, c, f| {
            let v = stored(x, y, c, f) / 255.0;
            if c == 3 {
                (v * 255.0).round().into()
            } else {
                (encode(v, display) * 255.0).round().into()
            }
        },
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn png_16bit_lands_as_rgba16unorm_with_every_value() {
    sixteen_bit_plays_exactly("png");
}

#[test]
fn tiff_16bit_lands_as_rgba16unorm_with_every_value() {
    sixteen_bit_plays_exactly("tif");
}

#[test]
fn grey_png_is_expanded_to_rgba() {
    let dir = temp_dir("grey");
    write_grey(&dir);
    let summary = run(&dir, FormatChoice::Auto, Display::default());
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba8Unorm);
    assert_eq!(summary.format.source.channels, 1);
    let grey = |x, y, c, f| {
        if c == 3 {
            255.0
        } else {
            f64::from((wide(x, y, 0, f) >> 8) as u8)
        }
    };
    check(
        &summary,
        |b| b.iter().copied().map(f64::from).collect(),
        grey,
        grey,
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// An RGBA sequence whose rows are a whole number of the upload's row
/// alignment (64 texels of 4 bytes: 256) is decoded into frame buffers
/// laid out as staging would be. Where the GPU imports host memory
/// (lavapipe) every frame is copied to its texture from there, with no
/// copy into staging, and lands byte for byte; elsewhere (GL) each goes
/// through staging, the same bytes.
#[test]
fn rgba_frames_whose_rows_fit_the_upload_are_copied_from_where_they_were_decoded() {
    let (w, h) = (64u32, 24u32);
    let dir = temp_dir("rgba-in-place");
    let texel = |x: u32, y: u32, c: u32, f: u32| ((x * 3 + y * 5 + c * 61 + f * 17) % 256) as u8;
    for f in 0..FRAMES {
        let img = image::RgbaImage::from_fn(w, h, |x, y| {
            image::Rgba([0, 1, 2, 3].map(|c| texel(x, y, c, f)))
        });
        img.save(dir.join(format!("frame.{:04}.png", 1 + f)))
            .unwrap();
    }
    let gpu = Arc::new(
        stagehand_gpu::Gpu::open(&stagehand_gpu::GpuOptions {
            wanted_features: stagehand_play::wanted_features(),
            ..Default::default()
        })
        .expect("tests need a GPU adapter"),
    );
    let imports = gpu.device().host_import_alignment().is_some();
    let engine = UploadEngine::new(gpu.clone(), engine_config(2)).unwrap();
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 30.0,
        output_size: (w, h),
        mode: Mode::EveryFrame,
        save_ticks: (0..u64::from(FRAMES)).collect(),
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba8Unorm);
    let copied = summary.frame_buffers.map_or(0, |b| b.copied_in_place);
    if imports {
        assert_eq!(copied, u64::from(FRAMES), "{summary:?}");
    } else {
        eprintln!("this device cannot import host memory: every frame went through staging");
        assert_eq!(copied, 0, "{summary:?}");
    }
    assert_eq!(summary.saved.len(), FRAMES as usize);
    for saved in &summary.saved {
        let f = saved.tick as u32;
        for y in 0..h {
            for x in 0..w {
                for c in 0..4 {
                    let at = ((y * w + x) * 4 + c) as usize;
                    assert_eq!(
                        saved.texels[at],
                        texel(x, y, c, f),
                        "frame {f} ({x}, {y}) {c}"
                    );
                }
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
