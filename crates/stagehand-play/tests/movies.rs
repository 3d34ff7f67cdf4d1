//! Movies end to end, written by the `ffmpeg` command: H.264 4:2:0 8-bit
//! (limited and full range, BT.709 and BT.601 tags), ProRes 4:2:2 10-bit,
//! FFV1 4:4:4 and 4:2:0 at an odd size. Their pictures are blocks of flat
//! Y'CbCr drawn by FFmpeg's `geq` filter, with a strip on top whose grey
//! level is the frame number. For chosen frames, what the player drew
//! (read back) matches FFmpeg's own RGB conversion of that frame (its
//! accurate one) within 2 code values per channel, away from block edges
//! (at a chroma edge the player filters chroma bilinearly at its siting,
//! FFmpeg's converter its own way); frames come out in timestamp
//! order, none twice; seeks land on the frame asked for. Bad input gets a
//! typed error or a warning. Without the `ffmpeg` command, each test says
//! SKIPPED.

#![cfg(feature = "video")]

mod support;

use stagehand_play::PlayError;
use std::path::Path;
use std::process::Command;
use support::{
    FPS, ffmpeg, ffmpeg_raw, has_ffmpeg, movie, options, pattern, run, run_with, temp_dir,
    worst_inside_blocks,
};

const FRAMES: u64 = 48;

/// FFmpeg's own decode of frame `n`, raw in `pix_fmt`, with `options`
/// given to the output.
fn ffmpeg_frame(path: &Path, n: u64, pix_fmt: &str, options: &[&str]) -> Vec<u8> {
    let select = format!("select=eq(n\\,{n})");
    let mut all = vec!["-vf", &select, "-frames:v", "1"];
    all.extend(options);
    ffmpeg_raw(path, pix_fmt, &all)
}

/// FFmpeg's own RGB conversion of frame `n`: tightly packed RGB8.
fn reference(path: &Path, n: u64) -> Vec<u8> {
    // Its accurate conversion (the default one rounds 10-bit sources up to
    // 3 code values off); chroma edges are left out of the comparison, so
    // its chroma filter does not matter.
    ffmpeg_frame(
        path,
        n,
        "rgb24",
        &["-sws_flags", "accurate_rnd+full_chroma_int"],
    )
}

/// Plays `path` (of `size`), saving `frames`, and checks each drawn frame
/// against FFmpeg's conversion of it, inside the blocks.
fn matches_ffmpeg(path: &Path, size: (u32, u32), frames: &[u64]) {
    matches_ffmpeg_on(path, size, frames, stagehand_play::wanted_features());
}

/// [`matches_ffmpeg`] on a device opened with `features`; returns the
/// texture format the planes went into.
fn matches_ffmpeg_on(
    path: &Path,
    size: (u32, u32),
    frames: &[u64],
    features: wgpu::Features,
) -> wgpu::TextureFormat {
    let summary = run_with(&options(path, size, frames.to_vec()), features).unwrap();
    assert_eq!(summary.frames.dropped, 0, "{summary:?}");
    assert_eq!(summary.saved.len(), frames.len());
    let (w, h) = size;
    for saved in &summary.saved {
        assert_eq!(saved.position, Some(saved.tick as usize));
        assert_eq!(saved.size, size);
        let want = reference(path, saved.tick);
        let (worst, compared) = worst_inside_blocks(&saved.rgba, &want, size);
        assert!(
            compared > (w * h / 2) as usize,
            "{compared} pixels compared"
        );
        assert!(
            worst.0 <= 2,
            "{}: frame {}: off by {} at ({}, {})",
            path.display(),
            saved.tick,
            worst.0,
            worst.1,
            worst.2
        );
    }
    summary.format.texture
}

#[test]
fn h264_420_8_bit_limited_range_bt709_draws_as_ffmpeg_converts_it() {
    if !has_ffmpeg("h264 bt709") {
        return;
    }
    let dir = temp_dir("h264-709");
    let tags = "-c:v libx264 -qp 0 -g 12 -bf 2 -colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range tv";
    let path = movie(&dir, "bt709.mp4", "320x240", "yuv420p", 1, tags);
    matches_ffmpeg(&path, (320, 240), &[0, 10, 37]);
}

#[test]
fn h264_420_8_bit_full_range_bt601_draws_as_ffmpeg_converts_it() {
    if !has_ffmpeg("h264 full range") {
        return;
    }
    let dir = temp_dir("h264-601-full");
    let tags = "-c:v libx264 -qp 0 -g 12 -colorspace bt470bg -color_range pc";
    let path = movie(&dir, "full.mov", "320x240", "yuvj420p", 1, tags);
    matches_ffmpeg(&path, (320, 240), &[3, 25]);
}

#[test]
fn prores_422_10_bit_draws_as_ffmpeg_converts_it() {
    if !has_ffmpeg("prores") {
        return;
    }
    let dir = temp_dir("prores");
    let tags = "-c:v prores_ks -profile:v 3 -colorspace bt709 -color_range tv";
    let path = movie(&dir, "hq.mov", "320x240", "yuv422p10le", 4, tags);
    matches_ffmpeg(&path, (320, 240), &[0, 20, 47]);
    // A device without 16-bit normalised textures gets the planes as
    // 16-bit integers, read texel by texel: the same picture.
    let format = matches_ffmpeg_on(&path, (320, 240), &[20], wgpu::Features::empty());
    assert_eq!(format, wgpu::TextureFormat::R16Uint);
}

#[test]
fn ffv1_444_and_an_odd_sized_420_draw_as_ffmpeg_converts_them() {
    if !has_ffmpeg("ffv1") {
        return;
    }
    let dir = temp_dir("ffv1");
    let tags = "-c:v ffv1 -colorspace bt709 -color_range tv";
    let path = movie(&dir, "444.mkv", "320x240", "yuv444p", 1, tags);
    matches_ffmpeg(&path, (320, 240), &[5]);
    // Drawn at 4:4:4 and subsampled on the way out: FFmpeg's sources
    // round 4:2:0 sizes down to even ones.
    let odd = format!("{tags} -pix_fmt yuv420p");
    let path = movie(&dir, "odd.mkv", "321x241", "yuv444p", 1, &odd);
    matches_ffmpeg(&path, (321, 241), &[5]);
}

/// Whether this FFmpeg has the encoder `name`; says SKIPPED if not.
fn has_encoder(test: &str, name: &str) -> bool {
    if !has_ffmpeg(test) {
        return false;
    }
    let listed = Command::new("ffmpeg")
        .args(["-hide_banner", "-encoders"])
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .any(|w| w == name)
        });
    if !listed {
        eprintln!("SKIPPED {test}: this ffmpeg has no {name} encoder");
    }
    listed
}

// The reference is FFmpeg's own decode of the same stream, so the
// comparison measures the player's conversion, not the codec; lossless
// where the codec has it, so the blocks stay flat (the comparison holds
// inside flat areas, where the two chroma filters agree).

/// Writes the pattern in `pix_fmt` with `encoder` and the arguments in
/// `tags` to `file`, and checks frames 0, 13 and 47 against FFmpeg.
fn codec_draws_as_ffmpeg_converts_it(encoder: &str, file: &str, pix_fmt: &str, tags: &str) {
    if !has_encoder(file, encoder) {
        return;
    }
    let dir = temp_dir(file.split('.').next().unwrap());
    let encode = format!("-c:v {encoder} {tags} -colorspace bt709 -color_range tv");
    let path = movie(&dir, file, "320x240", pix_fmt, 1, &encode);
    matches_ffmpeg(&path, (320, 240), &[0, 13, 47]);
}

#[test]
fn hevc_420_8_bit_draws_as_ffmpeg_converts_it() {
    let tags = "-x265-params log-level=none:keyint=12:lossless=1 -tag:v hvc1";
    codec_draws_as_ffmpeg_converts_it("libx265", "hevc.mp4", "yuv420p", tags);
}

#[test]
fn vp9_420_8_bit_draws_as_ffmpeg_converts_it() {
    let tags = "-lossless 1 -deadline realtime -cpu-used 8 -g 12";
    codec_draws_as_ffmpeg_converts_it("libvpx-vp9", "vp9.webm", "yuv420p", tags);
}

#[test]
fn av1_420_8_bit_draws_as_ffmpeg_converts_it() {
    let tags = "-aom-params lossless=1 -cpu-used 8 -g 12";
    codec_draws_as_ffmpeg_converts_it("libaom-av1", "av1.mkv", "yuv420p", tags);
}

#[test]
fn dnxhr_hq_422_8_bit_draws_as_ffmpeg_converts_it() {
    let tags = "-profile:v dnxhr_hq";
    codec_draws_as_ffmpeg_converts_it("dnxhd", "dnxhr.mov", "yuv422p", tags);
}

/// The frame number a drawn picture carries in its strip.
fn frame_number(rgba: &[u8], w: u32) -> u64 {
    // Limited range: code 16 + 4n is grey (4n / 219) * 255.
    let grey = f64::from(rgba[(4 * w as usize) * 4 + (w as usize / 2) * 4]);
    (grey * 219.0 / 255.0 / 4.0).round() as u64
}

#[test]
fn every_frame_comes_out_once_in_timestamp_order() {
    if !has_ffmpeg("order") {
        return;
    }
    let dir = temp_dir("order");
    // B-frames: decode order differs from presentation order.
    let tags = "-c:v libx264 -qp 0 -g 12 -bf 3";
    let path = movie(&dir, "order.mp4", "128x96", "yuv420p", 1, tags);
    let summary = run(&options(&path, (128, 96), (0..FRAMES).collect())).unwrap();
    assert_eq!(summary.frames_in_range, FRAMES);
    assert_eq!(summary.frames.shown, FRAMES, "{summary:?}");
    let numbers: Vec<u64> = summary
        .saved
        .iter()
        .map(|s| frame_number(&s.rgba, 128))
        .collect();
    assert_eq!(numbers, (0..FRAMES).collect::<Vec<_>>());
}

#[test]
fn a_seek_lands_on_the_frame_asked_for_from_any_keyframe() {
    if !has_ffmpeg("seek") {
        return;
    }
    let dir = temp_dir("seek");
    let tags = "-c:v libx264 -qp 0 -g 12 -bf 2";
    let path = movie(&dir, "seek.mkv", "128x96", "yuv420p", 1, tags);
    seeks_land(&path, &[0, 5, 12, 30, 47]);
}

/// Plays two frames of the 128x96 movie at `path` from each of `starts`
/// and checks they are the frames asked for.
fn seeks_land(path: &Path, starts: &[i64]) {
    for &start in starts {
        let mut o = options(path, (128, 96), vec![0, 1]);
        o.seek = Some(start);
        o.frames = Some(2.min(FRAMES - start as u64));
        o.save_ticks.truncate(o.frames.unwrap() as usize);
        let summary = run(&o).unwrap();
        let got: Vec<u64> = summary
            .saved
            .iter()
            .map(|s| frame_number(&s.rgba, 128))
            .collect();
        let want: Vec<u64> = (start as u64..).take(got.len()).collect();
        assert_eq!(got, want, "--seek {start}");
    }
}

#[test]
fn an_avi_whose_index_marks_every_frame_a_keyframe_seeks_and_lands_as_an_intact_one() {
    // An AVI's index (idx1) says which chunks are keyframes; here it says
    // every one is, though only every 12th is. A seek must not start
    // decoding at a frame that is no keyframe (a broken picture) nor fall
    // back to decoding from frame 0: the H.264 stream's own keyframes
    // decide.
    if !has_ffmpeg("all-key avi") {
        return;
    }
    let dir = temp_dir("all-key-avi");
    let tags = "-c:v libx264 -qp 0 -g 12 -bf 0";
    let intact = movie(&dir, "intact.avi", "128x96", "yuv420p", 1, tags);
    let mut bytes = std::fs::read(&intact).unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == b"idx1")
        .expect("an AVI index");
    let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    let mut marked = 0;
    for entry in (at + 8..at + 8 + len).step_by(16) {
        if &bytes[entry + 2..entry + 4] == b"dc" {
            // AVIIF_KEYFRAME.
            bytes[entry + 4] |= 0x10;
            marked += 1;
        }
    }
    assert_eq!(marked, FRAMES, "one index entry a frame");
    let all_key = dir.join("all-key.avi");
    std::fs::write(&all_key, bytes).unwrap();
    seeks_land(&all_key, &[0, 5, 13, 30, 47]);
}

#[test]
fn an_intra_only_movie_lands_on_the_frame_asked_for_near_and_far() {
    if !has_ffmpeg("intra seek") {
        return;
    }
    let dir = temp_dir("intra-seek");
    // Every frame a keyframe: frames on the way are not even decoded.
    let tags = "-c:v prores_ks -profile:v 3";
    let path = movie(&dir, "intra.mov", "128x96", "yuv422p10le", 4, tags);
    seeks_land(&path, &[0, 2, 5, 30, 47]);
}

#[test]
fn a_variable_rate_movie_shows_each_frame_for_as_long_as_its_timestamps_say() {
    if !has_ffmpeg("vfr") {
        return;
    }
    let dir = temp_dir("vfr");
    let path = dir.join("vfr.mp4");
    // 24 frames: the first 12 two ticks of 24 fps each, the rest one.
    // Its average rate is 16 fps; its base rate, 24, shows every frame.
    let source = format!(
        "color=black:size=128x96:rate={FPS},format=yuv420p,{},setpts='if(lt(N,12),2*N,N+12)/(24*TB)'",
        pattern(1)
    );
    ffmpeg(
        &format!("-f lavfi -i {source} -frames:v 24 -fps_mode vfr -c:v libx264 -qp 0 -bf 2"),
        &path,
    );
    assert_eq!(stagehand_play::source::nominal_rate(&path), Some(24.0));
    let ticks = 36;
    let summary = run(&options(&path, (128, 96), (0..ticks).collect())).unwrap();
    assert_eq!(summary.frames_in_range, ticks, "{summary:?}");
    let got: Vec<u64> = summary
        .saved
        .iter()
        .map(|s| frame_number(&s.rgba, 128))
        .collect();
    let want: Vec<u64> = (0..ticks)
        .map(|t| if t < 24 { t / 2 } else { t - 12 })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_file_that_is_not_a_movie_is_a_decode_error() {
    let dir = temp_dir("not-a-movie");
    let path = dir.join("notes.mov");
    std::fs::write(&path, b"these are notes, not a movie\n".repeat(100)).unwrap();
    let err = run(&options(&path, (64, 64), vec![])).unwrap_err();
    assert!(matches!(err, PlayError::Decode { .. }), "{err}");
    assert!(err.to_string().contains("not a movie"), "{err}");
}

/// Found by the fuzz harness (`tests/fuzz.rs`, seed 11): ProRes copies
/// its frame header's matrix byte into the frame's colour-space tag as it
/// is, and reading a value outside FFmpeg's list through ffmpeg-next's
/// enum crashed the player (a segmentation fault). Such a frame is
/// untagged: it plays, converted as an untagged frame of its size.
#[test]
fn a_prores_frame_tagged_with_an_unknown_matrix_plays_as_untagged() {
    if !has_ffmpeg("a_prores_frame_tagged_with_an_unknown_matrix_plays_as_untagged") {
        return;
    }
    let dir = temp_dir("prores-unknown-matrix");
    let good = movie(
        &dir,
        "good.mov",
        "64x48",
        "yuv422p10le",
        4,
        "-c:v prores_ks -profile:v 3",
    );
    let mut bytes = std::fs::read(&good).unwrap();
    // Each frame: its size, `icpf`, then the frame header, whose byte 16
    // is the matrix (colour space) code.
    let mut at = 0;
    let mut frames = 0;
    while let Some(i) = bytes[at..].windows(4).position(|w| w == b"icpf") {
        let matrix = at + i + 4 + 16;
        bytes[matrix] = 200;
        frames += 1;
        at = matrix;
    }
    assert_eq!(frames, 48, "every frame's header was found");
    let bad = dir.join("unknown-matrix.mov");
    std::fs::write(&bad, &bytes).unwrap();
    let summary = run(&options(&bad, (64, 48), vec![0])).expect("it plays");
    assert_eq!(summary.frames.shown, FRAMES, "{summary:?}");
}

#[test]
fn a_missing_movie_is_an_io_error() {
    let err = run(&options(
        Path::new("/nonexistent/shot.mov"),
        (64, 64),
        vec![],
    ))
    .unwrap_err();
    assert!(matches!(err, PlayError::Io { .. }), "{err}");
}

#[test]
fn a_movie_without_video_is_refused_as_unsupported() {
    if !has_ffmpeg("no video") {
        return;
    }
    let dir = temp_dir("no-video");
    let path = dir.join("tone.mp4");
    ffmpeg("-f lavfi -i sine=frequency=440:duration=1 -c:a aac", &path);
    let err = run(&options(&path, (64, 64), vec![])).unwrap_err();
    assert!(matches!(err, PlayError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("no video stream"), "{err}");
}

#[test]
fn a_pixel_format_the_player_does_not_take_is_refused_before_playback() {
    if !has_ffmpeg("rgb") {
        return;
    }
    let dir = temp_dir("rgb");
    let path = dir.join("rgb.avi");
    ffmpeg(
        "-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 4 -c:v rawvideo -pix_fmt rgb24",
        &path,
    );
    let err = run(&options(&path, (64, 48), vec![])).unwrap_err();
    assert!(matches!(err, PlayError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("pixel format"), "{err}");
}

#[test]
fn a_movie_wider_than_the_device_takes_is_refused_by_its_declared_size_before_decoding() {
    // The stream's own header says how large its pictures are: a movie
    // the device cannot hold in a texture is refused from that, before
    // its packets are indexed or its first frame decoded (a hostile
    // header can claim a picture of gigabytes).
    if !has_ffmpeg("too wide") {
        return;
    }
    let (gpu, _) = support::gpu_and_engine(stagehand_play::wanted_features());
    let max = gpu.device().limits().max_texture_dimension_2d;
    drop(gpu);
    let dir = temp_dir("too-wide");
    let path = dir.join("wide.mkv");
    let width = max + 16;
    ffmpeg(
        &format!("-f lavfi -i color=gray:size={width}x16:rate=24 -frames:v 2 -c:v ffv1"),
        &path,
    );
    let err = run(&options(&path, (64, 64), vec![])).unwrap_err();
    assert!(matches!(err, PlayError::Unsupported { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("{width}x16")) && message.contains(&max.to_string()),
        "names the declared size and the device's limit: {message}"
    );
}

#[test]
fn a_truncated_movie_plays_up_to_the_damage_and_says_where() {
    if !has_ffmpeg("truncated") {
        return;
    }
    let dir = temp_dir("truncated");
    let tags = "-c:v libx264 -qp 0 -g 12";
    let whole = movie(&dir, "whole.mkv", "128x96", "yuv420p", 1, tags);
    let bytes = std::fs::read(&whole).unwrap();
    let path = dir.join("cut.mkv");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let summary = run(&options(&path, (128, 96), vec![])).unwrap();
    assert!(
        summary.frames_in_range > 0 && summary.frames_in_range < FRAMES,
        "{}",
        summary.frames_in_range
    );
    assert_eq!(summary.frames.shown, summary.frames_in_range, "{summary:?}");
    assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
    assert!(
        summary.warnings[0].contains("damaged"),
        "{:?}",
        summary.warnings
    );
}

#[test]
fn a_transport_stream_cut_together_from_two_pieces_plays_both() {
    // Two pieces of MPEG-TS one after the other (a capture cut together,
    // a broadcast's seam): the demuxer flags the packet at the seam as
    // damaged, and the stream goes on past it. Only a damaged packet at
    // the very end is where a file was cut short.
    if !has_ffmpeg("ts seam") {
        return;
    }
    let dir = temp_dir("ts-seam");
    // Each piece with its sound, at a rate of its own.
    let piece = |name: &str, hz: u32, offset: u32| {
        let path = dir.join(name);
        ffmpeg(
            &format!(
                "-f lavfi -i testsrc2=size=320x240:rate=24 -f lavfi -i sine=sample_rate={hz} -t 2 -c:v libx264 -c:a mp2 -output_ts_offset {offset} -f mpegts"
            ),
            &path,
        );
        std::fs::read(path).unwrap()
    };
    let mut joined = piece("a.ts", 44_100, 0);
    joined.extend(piece("b.ts", 48_000, 2));
    let path = dir.join("joined.ts");
    std::fs::write(&path, joined).unwrap();
    let summary = run(&options(&path, (128, 96), vec![])).unwrap();
    assert!(
        summary.frames_in_range >= 2 * FRAMES - 2,
        "both pieces' {} frames play: {} did, warnings {:?}",
        2 * FRAMES,
        summary.frames_in_range,
        summary.warnings
    );
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
}

#[test]
fn format_and_range_options_meant_for_sequences_are_refused_for_movies() {
    if !has_ffmpeg("options") {
        return;
    }
    let dir = temp_dir("options");
    let tags = "-c:v libx264 -qp 0";
    let path = movie(&dir, "m.mp4", "64x48", "yuv420p", 1, tags);
    let mut o = options(&path, (64, 48), vec![]);
    o.format = stagehand_play::FormatChoice::Rgba16f;
    let err = run(&o).unwrap_err();
    assert!(
        matches!(
            err,
            PlayError::BadOption {
                field: stagehand_play::Field::Format,
                ..
            }
        ),
        "{err}"
    );
    let mut o = options(&path, (64, 48), vec![]);
    o.range = Some((0, 10));
    assert!(matches!(
        run(&o).unwrap_err(),
        PlayError::BadOption {
            field: stagehand_play::Field::Range,
            ..
        }
    ));
    let mut o = options(&path, (64, 48), vec![]);
    o.seek = Some(48);
    let err = run(&o).unwrap_err();
    assert!(err.to_string().contains("frames 0 to 47"), "{err}");
}

#[test]
fn a_movie_frame_goes_into_staging_from_the_decoders_own_planes_with_no_copy_between() {
    // A movie frame was copied from the decoder's planes into a packed
    // buffer, then again from that buffer into staging. Now the decoder's
    // planes are held as they are and each row goes straight into place.
    // An odd size makes every plane's line size wider than its rows.
    use stagehand_play::cache::buffers::FrameBuffers;
    use stagehand_play::convert::format::fill_staging;
    use stagehand_play::source::{Frames, Pixels};
    if !has_ffmpeg("planes held") {
        return;
    }
    let dir = temp_dir("planes-held");
    let path = movie(&dir, "odd.mkv", "321x241", "yuv420p", 4, "-c:v ffv1");
    let movie = stagehand_play::source::movie::Movie::open(&path).unwrap();
    let buffers = FrameBuffers::new();
    let frame = movie.decode(5, &buffers).unwrap();
    let Pixels::Planes(planes) = &frame.data else {
        panic!("the frame was packed into a buffer: {:?}", frame.data);
    };
    // Its planes are the player's frame buffers, one after another: an
    // odd size is not decoded in the upload's layout (the decoder writes
    // past its rows), so it goes into staging row by row.
    let taken = buffers.stats();
    assert!(taken.misses > 0, "the decoder wrote into the frame buffers");
    let pitch_of = |f: &stagehand_play::source::Frame| f.info.row_bytes().next_multiple_of(256);
    assert_eq!(frame.laid_out_as_staging(pitch_of(&frame)), None);

    let info = frame.info;
    let (row, height) = (info.row_bytes(), info.texture_size().1 as usize);
    let pitch = row.next_multiple_of(256);
    let mut staging = vec![0xEEu8; pitch * height];
    fill_staging(
        &frame,
        wgpu::TextureFormat::R8Unorm,
        &mut (&mut staging[..]).into(),
        pitch,
    )
    .unwrap();
    assert!(!planes.is_packed(), "staging was filled from a packed copy");

    // Every plane lands where the packing puts it, sample for sample what
    // FFmpeg decodes.
    let packing = info.yuv.unwrap().packing(info.width, info.height);
    // FFmpeg's planes one after another.
    let raw = ffmpeg_frame(&path, 5, "yuv420p", &[]);
    let mut at = 0;
    for rect in packing.planes {
        let (x, w) = (rect.x as usize, rect.width as usize);
        for y in 0..rect.height as usize {
            let start = (rect.y as usize + y) * pitch + x;
            assert_eq!(
                &staging[start..start + w],
                &raw[at..at + w],
                "{rect:?}, row {y}"
            );
            at += w;
        }
    }
    assert_eq!(at, raw.len(), "every sample compared");
    // Read on the CPU, it is the same packed frame.
    for y in 0..height {
        assert_eq!(
            &frame.data[y * row..(y + 1) * row],
            &staging[y * pitch..y * pitch + row]
        );
    }
}

/// A movie whose size lets its decoder write only inside its rows (16-pixel
/// multiples, coded as shown, its chroma planes starting on 64-byte
/// boundaries in the packed layout) is decoded into the player's frame
/// buffers laid out as its upload lays the frame out in staging. Where the
/// device imports host memory (lavapipe) each frame after the first (which
/// comes from the look at the movie when it opens) is copied to the GPU
/// from there, with no copy into staging; elsewhere (GL) it goes through
/// staging. Either way the drawn frames are FFmpeg's.
fn decoded_in_the_uploads_layout(file: &str, pix_fmt: &str, tags: &str) {
    use stagehand_play::cache::buffers::FrameBuffers;
    use stagehand_play::source::Frames;
    if !has_ffmpeg(file) {
        return;
    }
    let dir = temp_dir(file.split('.').next().unwrap());
    let path = movie(&dir, file, "256x144", pix_fmt, 1, tags);
    let (gpu, _engine) = support::gpu_and_engine(stagehand_play::wanted_features());
    let imports = gpu.device().host_import_alignment().is_some();
    let movie = stagehand_play::source::movie::Movie::open(&path).unwrap();
    let buffers = FrameBuffers::importing(std::sync::Arc::clone(&gpu));
    let frame = movie.decode(5, &buffers).unwrap();
    let pitch = frame.info.row_bytes().next_multiple_of(256);
    let start = frame
        .laid_out_as_staging(pitch)
        .expect("decoded in the upload's layout");
    assert_eq!(
        buffers.in_place_at(start).is_some(),
        imports,
        "the GPU finds the frame where it lies exactly where it imports host memory"
    );
    drop((frame, movie));

    let summary = run(&options(&path, (256, 144), vec![0, 13, 47])).unwrap();
    let copied = summary.frame_buffers.map_or(0, |b| b.copied_in_place);
    if imports {
        assert_eq!(copied, FRAMES - 1, "{summary:?}");
    } else {
        eprintln!(
            "{file}: this device cannot import host memory: every frame went through staging"
        );
        assert_eq!(copied, 0, "{summary:?}");
    }
    matches_ffmpeg(&path, (256, 144), &[0, 13, 47]);
}

#[test]
fn h264_in_the_uploads_layout_is_copied_from_where_it_was_decoded_and_draws_as_ffmpeg_converts_it()
{
    let tags = "-c:v libx264 -qp 0 -colorspace bt709 -color_range tv";
    decoded_in_the_uploads_layout("h264-in-place.mp4", "yuv420p", tags);
}

#[test]
fn prores_in_the_uploads_layout_is_copied_from_where_it_was_decoded_and_draws_as_ffmpeg_converts_it()
 {
    let tags = "-c:v prores_ks -profile:v 3 -colorspace bt709 -color_range tv";
    decoded_in_the_uploads_layout("prores-in-place.mov", "yuv422p10le", tags);
}
