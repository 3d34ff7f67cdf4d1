//! JPEG sequences written by the `ffmpeg` command go to the GPU as the
//! Y'CbCr planes the files hold (4:2:0, 4:2:2, 4:4:4), decoded by FFmpeg
//! and converted in the render pass, and draw as FFmpeg's own RGB
//! conversion of each file within 3 code values inside the pattern's
//! blocks. A sequence whose files differ in subsampling, or played with a
//! texture format asked for, goes up as RGB texels as before. Without the
//! `ffmpeg` command, each test says SKIPPED.

#![cfg(feature = "video")]

// Its movie writer is not needed here.
#[allow(dead_code)]
mod support;

use stagehand_play::FormatChoice;
use std::path::{Path, PathBuf};
use support::{
    ffmpeg, ffmpeg_raw, has_ffmpeg, options, pattern, run, temp_dir, worst_inside_blocks,
};

const SIZE: (u32, u32) = (320, 240);

/// Writes `count` JPEGs of the pattern in `pix_fmt` into `dir`, numbered
/// from `first` (`f.0001.jpg`, ...).
fn jpegs(dir: &Path, pix_fmt: &str, first: u32, count: u32) {
    jpegs_of(dir, SIZE, pix_fmt, first, count);
}

/// [`jpegs`] of `size` (drawn at full chroma resolution, which keeps an
/// odd size, then subsampled as `pix_fmt` says).
fn jpegs_of(dir: &Path, size: (u32, u32), pix_fmt: &str, first: u32, count: u32) {
    let source = format!(
        "color=black:size={}x{}:rate=24,format=yuvj444p,{}",
        size.0,
        size.1,
        pattern(1)
    );
    ffmpeg(
        &format!(
            "-f lavfi -i {source} -frames:v {count} -q:v 2 -pix_fmt {pix_fmt} -start_number {first}"
        ),
        &dir.join("f.%04d.jpg"),
    );
}

/// FFmpeg's own RGB conversion of one JPEG: tightly packed RGB8.
fn reference(path: &Path) -> Vec<u8> {
    ffmpeg_raw(
        path,
        "rgb24",
        &["-sws_flags", "accurate_rnd+full_chroma_int"],
    )
}

fn file(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("f.{:04}.jpg", n + 1))
}

#[test]
fn a_jpeg_sequence_goes_up_as_its_ycbcr_planes_and_draws_as_ffmpeg_converts_it() {
    if !has_ffmpeg("JPEG planes") {
        return;
    }
    // An odd size too: partial blocks at the right and bottom edges, and
    // chroma planes of half a pixel more.
    for (pix_fmt, chroma, size) in [
        ("yuvj420p", "4:2:0", SIZE),
        ("yuvj422p", "4:2:2", SIZE),
        ("yuvj444p", "4:4:4", SIZE),
        ("yuvj420p", "4:2:0", (321, 241)),
    ] {
        let dir = temp_dir(&format!("jpeg-{pix_fmt}-{}", size.0));
        jpegs_of(&dir, size, pix_fmt, 1, 4);
        let summary = run(&options(&dir, size, vec![0, 1, 2, 3])).unwrap();
        assert_eq!(summary.frames.shown, 4, "{summary:?}");
        assert_eq!(
            summary.format.texture,
            wgpu::TextureFormat::R8Unorm,
            "{pix_fmt}"
        );
        let source = serde_json::to_value(summary.format.source).unwrap();
        assert_eq!(source["yuv"]["chroma"], chroma, "{source}");
        assert_eq!(source["yuv"]["matrix"], "bt601", "{source}");
        assert_eq!(source["yuv"]["range"], "full", "{source}");
        // The decoder wrote into the player's frame buffers.
        assert!(summary.frame_buffers.is_some(), "{summary:?}");
        for saved in &summary.saved {
            let want = reference(&file(&dir, saved.tick));
            let (worst, compared) = worst_inside_blocks(&saved.rgba, &want, size);
            assert!(compared > (size.0 * size.1 / 2) as usize);
            // JPEG's chroma is lossy and rings near block edges, where the
            // player's bilinear chroma and FFmpeg's converter part by up to
            // 3 code values (at 321x241); a wrong matrix or range moves
            // these saturated colours by more.
            assert!(
                worst.0 <= 3,
                "{pix_fmt}: frame {}: off by {} at ({}, {})",
                saved.tick,
                worst.0,
                worst.1,
                worst.2
            );
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_jpeg_sequence_as_planes_decodes_into_recycled_frame_buffers() {
    if !has_ffmpeg("JPEG planes into frame buffers") {
        return;
    }
    // Each file is decoded by a decoder of its own; were its frame memory
    // the decoder's, every frame would be memory never touched before,
    // faulted in and cleared page by page. With no frame kept after its
    // upload, a handful of buffers serve the whole sequence.
    let len = 24;
    let dir = temp_dir("jpeg-recycled");
    jpegs(&dir, "yuvj420p", 1, len);
    let summary = run(&stagehand_play::PlayOptions {
        cache_bytes: Some(0),
        read_behind: 0.0,
        ..options(&dir, SIZE, vec![])
    })
    .unwrap();
    assert_eq!(summary.frames.shown, u64::from(len), "{summary:?}");
    assert_eq!(summary.format.texture, wgpu::TextureFormat::R8Unorm);
    let buffers = summary
        .frame_buffers
        .expect("the JPEG decoder writes into the player's frame buffers");
    assert_eq!(
        buffers.allocated + buffers.reused,
        u64::from(len),
        "one buffer a frame: {buffers:?}"
    );
    assert!(
        buffers.allocated <= 8,
        "buffers given back are taken again: {buffers:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_jpeg_sequence_whose_files_differ_in_subsampling_goes_up_as_rgb() {
    if !has_ffmpeg("JPEG mixed subsampling") {
        return;
    }
    let dir = temp_dir("jpeg-mixed");
    jpegs(&dir, "yuvj420p", 1, 2);
    jpegs(&dir, "yuvj444p", 3, 2);
    let summary = run(&options(&dir, SIZE, vec![1, 2])).unwrap();
    assert_eq!(summary.frames.shown, 4, "{summary:?}");
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba8Unorm);
    assert_eq!(summary.format.source.yuv, None);
    assert_eq!(summary.format.source.channels, 3);
    // Decoded to RGB by another decoder: the pattern, near enough.
    for saved in &summary.saved {
        let want = reference(&file(&dir, saved.tick));
        let (worst, _) = worst_inside_blocks(&saved.rgba, &want, SIZE);
        assert!(worst.0 <= 4, "frame {}: off by {}", saved.tick, worst.0);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// FFmpeg writes limited-range JPEGs with a "CS=ITU601" comment, and its
/// decoder then gives limited-range planes: such a sequence goes up as RGB
/// (it was refused, every file "changed since it was opened").
#[test]
fn a_jpeg_sequence_marked_as_video_range_goes_up_as_rgb() {
    if !has_ffmpeg("JPEG in video range") {
        return;
    }
    let dir = temp_dir("jpeg-itu601");
    ffmpeg(
        &format!(
            "-f lavfi -i color=black:size={}x{}:rate=24,format=yuv420p,{} -frames:v 2 -q:v 2 \
             -pix_fmt yuv420p -strict -1",
            SIZE.0,
            SIZE.1,
            pattern(1)
        ),
        &dir.join("f.%04d.jpg"),
    );
    let summary = run(&options(&dir, SIZE, vec![])).unwrap();
    assert_eq!(summary.frames.shown, 2, "{summary:?}");
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba8Unorm);
    assert_eq!(summary.format.source.yuv, None);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_texture_format_asked_for_keeps_a_jpeg_sequence_rgb() {
    if !has_ffmpeg("JPEG with --format") {
        return;
    }
    let dir = temp_dir("jpeg-format");
    jpegs(&dir, "yuvj420p", 1, 2);
    let mut o = options(&dir, SIZE, vec![]);
    o.format = FormatChoice::Rgba16f;
    let summary = run(&o).unwrap();
    assert_eq!(summary.frames.shown, 2, "{summary:?}");
    assert_eq!(summary.format.texture, wgpu::TextureFormat::Rgba16Float);
    assert_eq!(summary.format.source.yuv, None);
    let _ = std::fs::remove_dir_all(dir);
}

/// `bytes` of a JPEG without its Huffman-table segments (as Motion-JPEG
/// frames come: the decoder then takes the standard tables).
fn without_huffman_tables(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes[..2].to_vec();
    let mut at = 2;
    while at + 4 <= bytes.len() && bytes[at] == 0xff && bytes[at + 1] != 0xda {
        let len = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        if bytes[at + 1] != 0xc4 {
            out.extend(&bytes[at..at + 2 + len]);
        }
        at += 2 + len;
    }
    out.extend(&bytes[at..]);
    out
}

/// One decoder per file: what a file's segments set in FFmpeg's decoder
/// (here its Huffman tables) never reaches the next file. The first file
/// carries tables made for its own picture; the second none, so it must
/// be read with the standard ones, as FFmpeg reads it alone. One decode
/// thread, so the same thread decodes both.
#[test]
fn what_one_jpeg_sets_in_the_decoder_does_not_reach_the_next() {
    if !has_ffmpeg("JPEG decoder state") {
        return;
    }
    let dir = temp_dir("jpeg-tables");
    let source = format!(
        "color=black:size={}x{}:rate=24,format=yuvj444p,{}",
        SIZE.0,
        SIZE.1,
        pattern(1)
    );
    let write = |n: u32, huffman: &str| {
        ffmpeg(
            &format!(
                "-f lavfi -i {source} -vf select=eq(n\\,{n}) -frames:v 1 -q:v 2 \
                 -pix_fmt yuvj420p -huffman {huffman}"
            ),
            &file(&dir, u64::from(n)),
        );
    };
    write(0, "optimal");
    write(1, "default");
    let second = file(&dir, 1);
    let stripped = without_huffman_tables(&std::fs::read(&second).unwrap());
    std::fs::write(&second, stripped).unwrap();
    let mut o = options(&dir, SIZE, vec![0, 1]);
    o.threads = 1;
    let summary = run(&o).unwrap();
    assert_eq!(summary.format.texture, wgpu::TextureFormat::R8Unorm);
    for saved in &summary.saved {
        let want = reference(&file(&dir, saved.tick));
        let (worst, _) = worst_inside_blocks(&saved.rgba, &want, SIZE);
        assert!(worst.0 <= 3, "frame {}: off by {}", saved.tick, worst.0);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_jpeg_cut_short_in_a_planes_sequence_is_an_error_naming_it() {
    if !has_ffmpeg("JPEG cut short") {
        return;
    }
    // Its header is whole, so the sequence opens as planes; half its
    // scan is gone. FFmpeg's decoder would give the picture with the
    // rest left as the buffer held it (another frame's rows, once buffers
    // are recycled): the player refuses the file instead, as it does a
    // PNG cut short.
    let dir = temp_dir("jpeg-cut-short");
    jpegs(&dir, "yuvj420p", 1, 4);
    let cut = file(&dir, 2);
    let whole = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let error = run(&options(&dir, SIZE, vec![])).expect_err("a JPEG cut short is refused");
    let message = error.to_string();
    assert!(
        message.contains(&cut.display().to_string()),
        "the error names the file: {message}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
