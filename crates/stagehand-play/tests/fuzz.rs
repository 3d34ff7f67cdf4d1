//! Mutation fuzzing of everything the player opens, on stable Rust.
//!
//! Small valid files are written first (PNG 8- and 16-bit, JPEG, TIFF, EXR
//! half ZIP and PIZ, WAV, and with the `video` feature and the `ffmpeg`
//! command an MP4, a MOV and an MKV), then mutated by a seeded generator:
//! bits flipped, the file cut short, a length or count field set to 0, 1,
//! 2^31-1, 2^32-1 or 2^63, bytes inserted or repeated. PNG chunks get
//! their checksums written again after a mutation, so the fields behind
//! them are parsed instead of refused at the checksum. Each case is opened
//! through the path the player uses ([`source::probe`], then
//! [`source::decode_into`]; [`Movie::open`]; [`AudioSource::probe`]), and
//! so are sequence patterns and size strings built from random pieces.
//!
//! Every case must end in a value or a typed error, without a panic,
//! within [`CASE_LIMIT`], with the process's peak resident memory at most
//! [`MEMORY_LIMIT`] above what it was before the case (the peak is reset
//! through `/proc/self/clear_refs` before each case: decoded frames live
//! in anonymous mappings a heap counter would not see).
//!
//! `a_few_thousand_mutated_files_end_in_a_value_or_a_typed_error` runs in
//! the test suite (seconds). The long run is ignored by default:
//!
//! ```sh
//! STAGEHAND_FUZZ_CASES=1000000 STAGEHAND_FUZZ_SEED=7 STAGEHAND_FUZZ_SECONDS=3600 \
//!     cargo test --release -p stagehand-play --features video --test fuzz -- --ignored --nocapture
//! ```
//!
//! A failure names the format, the seed and the case, and keeps the file
//! that caused it under the temporary directory it prints.

use stagehand_play::cache::buffers::FrameBuffers;
use stagehand_play::source::{self, Sequence};
use stagehand_play::{PlayError, parse_bytes};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest one case may take before it counts as a hang.
const CASE_LIMIT: Duration = Duration::from_secs(20);
/// Most the peak resident memory may grow in one case.
const MEMORY_LIMIT: u64 = 512 << 20;

/// The largest frame a case decodes, in pixels (4096 x 4096). A header
/// may claim up to 65536 a side; the player makes the frame's texture
/// before it decodes anything, so a frame past the device's limit is
/// refused there (a 787-byte JPEG claiming 65407x65535, found by this
/// harness, is refused in 0.1 s), and one within it costs what a real
/// frame of its size costs (16000x16000 from the same 787 bytes: 6.5 s
/// and 3.9 GB, as a real one would). Fuzzing is after the parsers, not
/// after that cost.
const MAX_DECODED_PIXELS: u64 = 4096 * 4096;

/// Cases per format in the quick run.
const QUICK_CASES: u64 = 400;

/// A small xorshift generator: the same seed, the same cases.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number below `n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The values a length or count field is set to.
const EDGES: [u64; 6] = [0, 1, 2, (1 << 31) - 1, (1 << 32) - 1, 1 << 63];

/// One seeded mutation of `seed`.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        if out.is_empty() {
            out.push(rng.next() as u8);
        }
        let at = rng.below(out.len() as u64) as usize;
        match rng.below(6) {
            // Bits flipped.
            0 => {
                for _ in 0..1 + rng.below(8) {
                    let i = rng.below(out.len() as u64) as usize;
                    out[i] ^= 1 << rng.below(8);
                }
            }
            // Cut short.
            1 => out.truncate(at),
            // A 32- or 64-bit field, either byte order (a 32-bit one is
            // the low half of the value: 2^63 becomes 0).
            kind @ (2 | 3) => {
                let v = *rng.pick(&EDGES);
                let big = rng.below(2) == 0;
                let bytes = if big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                };
                let bytes = match (kind, big) {
                    (3, _) => &bytes[..],
                    (_, true) => &bytes[4..],
                    (_, false) => &bytes[..4],
                };
                write_at(&mut out, at, bytes);
            }
            // Bytes inserted.
            4 => {
                let n = 1 + rng.below(64) as usize;
                let fill: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                out.splice(at..at, fill);
            }
            // A stretch repeated.
            _ => {
                let n = (1 + rng.below(256) as usize).min(out.len() - at);
                let copy = out[at..at + n].to_vec();
                out.splice(at..at, copy);
            }
        }
    }
    out
}

fn write_at(out: &mut [u8], at: usize, bytes: &[u8]) {
    let end = (at + bytes.len()).min(out.len());
    out[at..end].copy_from_slice(&bytes[..end - at]);
}

/// Writes every PNG chunk's checksum again, so a mutated field is read
/// rather than refused at its checksum. Chunks that no longer fit are left
/// as they are.
fn fix_png_checksums(bytes: &mut [u8]) {
    let mut at = 8;
    while at + 12 <= bytes.len() {
        let len = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let Some(end) = (at + 8).checked_add(len as usize) else {
            return;
        };
        if end + 4 > bytes.len() {
            return;
        }
        let crc = crc32fast::hash(&bytes[at + 4..end]);
        bytes[end..end + 4].copy_from_slice(&crc.to_be_bytes());
        at = end + 4;
    }
}

/// What a case is opened as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Without the video feature there are no movie or sound seeds.
#[cfg_attr(not(feature = "video"), allow(dead_code))]
enum Opener {
    /// An image file: probed, then decoded, as a sequence's frame is.
    Image,
    /// A movie: opened (indexed, first frame decoded).
    Movie,
    /// A sound file: probed for `--audio`.
    Sound,
}

/// A valid file to mutate.
struct Seed {
    name: &'static str,
    ext: &'static str,
    bytes: Vec<u8>,
    opener: Opener,
}

/// Opens `path` as the player would; `Ok` with a word on what it was, or
/// the typed error.
fn open(opener: Opener, path: &Path, buffers: &Arc<FrameBuffers>) -> Result<String, PlayError> {
    match opener {
        Opener::Image => {
            let info = source::probe(path)?;
            if u64::from(info.width) * u64::from(info.height) > MAX_DECODED_PIXELS {
                // The player refuses these when it makes the frame's
                // texture, before any decoding, on a device whose limit
                // they pass; below it a frame costs what its size costs.
                return Ok(format!("{}x{}: not decoded", info.width, info.height));
            }
            let frame = source::decode_into(path, buffers)?;
            assert_eq!(
                (frame.info.width, frame.info.height),
                (info.width, info.height),
                "the decoded frame has the size its header gave"
            );
            assert_eq!(frame.data.len(), frame.info.bytes(), "a whole frame");
            let planes = open_jpeg_planes(path, info, buffers)?;
            Ok(format!("{}x{}{planes}", info.width, info.height))
        }
        Opener::Movie => open_movie(path),
        Opener::Sound => open_sound(path),
    }
}

/// A JPEG that goes up as its planes decoded that way too (FFmpeg's
/// decoder, writing into the player's frame buffers): `" planes"`, or
/// nothing for any other file.
#[cfg(feature = "video")]
fn open_jpeg_planes(
    path: &Path,
    rgb: stagehand_play::source::FrameInfo,
    buffers: &Arc<FrameBuffers>,
) -> Result<&'static str, PlayError> {
    let Some(yuv) = source::jpeg_planes(path)? else {
        return Ok("");
    };
    let expected = stagehand_play::source::FrameInfo {
        channels: 1,
        sample: stagehand_play::source::SampleType::U8,
        yuv: Some(yuv),
        ..rgb
    };
    let frame = source::decode_jpeg_planes(path, &expected, buffers)?;
    assert_eq!(frame.info, expected, "the planes have the layout read");
    assert_eq!(frame.data.len(), frame.info.bytes(), "a whole frame");
    Ok(" planes")
}

#[cfg(not(feature = "video"))]
fn open_jpeg_planes(
    _path: &Path,
    _rgb: stagehand_play::source::FrameInfo,
    _buffers: &Arc<FrameBuffers>,
) -> Result<&'static str, PlayError> {
    Ok("")
}

#[cfg(feature = "video")]
fn open_sound(path: &Path) -> Result<String, PlayError> {
    let probed = stagehand_play::audio::AudioSource::probe(path)?;
    Ok(if probed.is_some() {
        "sound"
    } else {
        "no sound"
    }
    .into())
}

#[cfg(not(feature = "video"))]
fn open_sound(_path: &Path) -> Result<String, PlayError> {
    unreachable!("sound seeds are written only with the video feature")
}

#[cfg(feature = "video")]
fn open_movie(path: &Path) -> Result<String, PlayError> {
    use stagehand_play::source::Frames;
    let movie = source::movie::Movie::open(path)?;
    Ok(format!("{} frames", movie.len()))
}

#[cfg(not(feature = "video"))]
fn open_movie(_path: &Path) -> Result<String, PlayError> {
    unreachable!("movie seeds are written only with the video feature")
}

/// The process's peak resident memory (VmHWM), bytes.
fn peak_resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resident memory now (VmRSS), bytes.
fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Starts a new peak: VmHWM becomes the resident size now.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// How the cases of one format ended.
#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    opened: u64,
    refused: u64,
    slowest: Duration,
    most_memory: u64,
}

/// Runs `cases` mutations of `seed` from `rng_seed`, each on a thread of
/// its own with [`CASE_LIMIT`]; panics naming the first case that panics,
/// hangs or takes too much memory.
fn run_cases(seed: &Seed, dir: &Path, rng_seed: u64, cases: u64, until: Instant) -> Tally {
    let mut rng = Rng::new(rng_seed ^ crc32fast::hash(seed.name.as_bytes()) as u64);
    let buffers = FrameBuffers::new();
    let mut tally = Tally::default();
    let measured = reset_peak();
    for case in 0..cases {
        if Instant::now() >= until {
            break;
        }
        let mut bytes = mutate(&seed.bytes, &mut rng);
        if seed.ext == "png" {
            fix_png_checksums(&mut bytes);
        }
        let path = dir.join(format!("{}-{case}.{}", seed.name, seed.ext));
        std::fs::write(&path, &bytes).expect("write the case");
        let before = resident().unwrap_or(0);
        if measured {
            reset_peak();
        }
        let started = Instant::now();
        let (tx, rx) = mpsc::channel();
        let (opener, p, b) = (seed.opener, path.clone(), Arc::clone(&buffers));
        std::thread::spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                open(opener, &p, &b)
            }));
            let _ = tx.send(result);
        });
        let what = format!(
            "{} case {case} of seed {rng_seed} ({} bytes, kept at {})",
            seed.name,
            bytes.len(),
            path.display()
        );
        let outcome = match rx.recv_timeout(CASE_LIMIT) {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(panic)) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                panic!("{what}: panicked: {message}");
            }
            Err(_) => panic!("{what}: still running after {CASE_LIMIT:?}"),
        };
        let took = started.elapsed();
        let grew = peak_resident().unwrap_or(0).saturating_sub(before);
        assert!(
            grew <= MEMORY_LIMIT,
            "{what}: peak resident memory grew by {} MB",
            grew >> 20
        );
        tally.cases += 1;
        match outcome {
            Ok(_) => tally.opened += 1,
            Err(_) => tally.refused += 1,
        }
        tally.slowest = tally.slowest.max(took);
        tally.most_memory = tally.most_memory.max(grew);
        // Kept only while it is the last case: a failure above keeps it.
        let _ = std::fs::remove_file(&path);
    }
    tally
}

/// The seed files, written fresh (movies only with `ffmpeg` and the
/// `video` feature; the reason is printed where they are left out).
fn seeds(dir: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    let image = |name, ext, write: &dyn Fn(&Path)| {
        let path = dir.join(format!("seed-{name}.{ext}"));
        write(&path);
        Seed {
            name,
            ext,
            bytes: std::fs::read(&path).expect("seed written"),
            opener: Opener::Image,
        }
    };
    let rgb =
        ::image::RgbImage::from_fn(40, 24, |x, y| ::image::Rgb([x as u8 * 6, y as u8 * 9, 77]));
    seeds.push(image("png8", "png", &|p| rgb.save(p).unwrap()));
    seeds.push(image("jpeg", "jpg", &|p| rgb.save(p).unwrap()));
    seeds.push(image("tiff", "tif", &|p| rgb.save(p).unwrap()));
    let rgba16 = ::image::ImageBuffer::<::image::Rgba<u16>, _>::from_fn(24, 16, |x, y| {
        ::image::Rgba([x as u16 * 2000, y as u16 * 3000, 999, 65535])
    });
    seeds.push(image("png16", "png", &|p| rgba16.save(p).unwrap()));
    for (name, compression) in [
        ("exr-zip", exr::compression::Compression::ZIP16),
        ("exr-piz", exr::compression::Compression::PIZ),
    ] {
        seeds.push(image(name, "exr", &|p| {
            stagehand_play::testdata::write_exr_half(p, (32, 20), compression, |x, y, c| {
                (x + y + c) as f32 / 64.0
            })
            .unwrap()
        }));
    }
    if cfg!(feature = "video") {
        seeds.push(Seed {
            name: "wav",
            ext: "wav",
            bytes: stagehand_play::testdata::wav_bytes(48_000, 2, 4_800),
            opener: Opener::Sound,
        });
    } else {
        eprintln!("SKIPPED the sound seed: sound files are read by FFmpeg (the video feature)");
    }
    seeds.extend(movie_seeds(dir));
    seeds
}

#[cfg(feature = "video")]
fn movie_seeds(dir: &Path) -> Vec<Seed> {
    let ffmpeg = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output();
    if !ffmpeg.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED movie seeds: no ffmpeg command here (scripts/setup installs it)");
        return Vec::new();
    }
    let mut seeds = Vec::new();
    for (name, ext, codecs) in [
        ("mp4", "mp4", "-c:v libx264 -pix_fmt yuv420p -g 4 -c:a aac"),
        ("mov", "mov", "-c:v prores_ks -profile:v 0 -c:a pcm_s16le"),
        ("mkv", "mkv", "-c:v ffv1 -c:a flac"),
    ] {
        let path = dir.join(format!("seed-{name}.{ext}"));
        let args = format!(
            "-v error -y -f lavfi -i testsrc2=size=64x48:rate=24 -f lavfi -i sine=frequency=440:sample_rate=8000 -t 0.5 {codecs} {}",
            path.display()
        );
        let status = std::process::Command::new("ffmpeg")
            .args(args.split(' '))
            .status()
            .expect("ffmpeg runs");
        assert!(status.success(), "ffmpeg wrote {name}");
        seeds.push(Seed {
            name,
            ext,
            bytes: std::fs::read(&path).unwrap(),
            opener: Opener::Movie,
        });
    }
    seeds
}

#[cfg(not(feature = "video"))]
fn movie_seeds(_dir: &Path) -> Vec<Seed> {
    eprintln!("SKIPPED movie seeds: built without the video feature");
    Vec::new()
}

/// Pattern and size strings from random pieces: each parses to a value or
/// a typed error.
fn strings(dir: &Path, rng_seed: u64, cases: u64) -> u64 {
    const PIECES: [&str; 16] = [
        "#",
        "####",
        "@@",
        "%04d",
        "%d",
        "%0",
        "%99999999999d",
        ".",
        "..",
        "/",
        "exr",
        "png",
        "shot",
        "1001",
        "\u{30ab}",
        "%",
    ];
    const SIZES: [&str; 12] = [
        "",
        "0",
        "1",
        "2G",
        "512M",
        "18446744073709551615",
        "-1",
        "1.5G",
        "1e30K",
        "G",
        " 4G",
        "99999999999999999999T",
    ];
    let mut rng = Rng::new(rng_seed);
    let folder = dir.join("strings");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("shot.1001.png"), b"not a png").unwrap();
    for _ in 0..cases {
        let name: String = (0..1 + rng.below(5)).map(|_| *rng.pick(&PIECES)).collect();
        let spec: PathBuf = folder.join(name);
        let range = match rng.below(3) {
            0 => None,
            1 => Some((rng.next() as i64, rng.next() as i64)),
            _ => Some((*rng.pick(&[i64::MIN, -1, 0, 1001, i64::MAX]), 1001)),
        };
        // Either a sequence or a typed error; never a panic.
        let _ = Sequence::open(&spec, range).map(|s| s.len());
        let size: String = (0..1 + rng.below(3)).map(|_| *rng.pick(&SIZES)).collect();
        let _ = parse_bytes(&size);
    }
    cases
}

fn fuzz_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-fuzz-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(rng_seed: u64, cases: u64, seconds: u64, name: &str) {
    let dir = fuzz_dir(name);
    eprintln!("fuzz: seed {rng_seed}, files under {}", dir.display());
    let until = Instant::now() + Duration::from_secs(seconds);
    for seed in seeds(&dir) {
        let tally = run_cases(&seed, &dir, rng_seed, cases, until);
        eprintln!(
            "fuzz {:<8} {:>7} cases: {:>7} opened, {:>7} refused; slowest {:.1} ms, peak memory +{} MB",
            seed.name,
            tally.cases,
            tally.opened,
            tally.refused,
            tally.slowest.as_secs_f64() * 1e3,
            tally.most_memory >> 20
        );
        assert!(
            tally.cases > 0 || Instant::now() >= until,
            "{} ran no case",
            seed.name
        );
    }
    let strings = strings(&dir, rng_seed, cases);
    eprintln!("fuzz strings  {strings:>7} cases: patterns and sizes, no panic");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_few_thousand_mutated_files_end_in_a_value_or_a_typed_error() {
    run(1, QUICK_CASES, 600, "quick");
}

#[test]
#[ignore = "long: STAGEHAND_FUZZ_CASES, STAGEHAND_FUZZ_SEED, STAGEHAND_FUZZ_SECONDS"]
fn a_long_run_of_mutated_files_ends_in_values_or_typed_errors() {
    run(
        env_u64("STAGEHAND_FUZZ_SEED", 7),
        env_u64("STAGEHAND_FUZZ_CASES", 1_000_000),
        env_u64("STAGEHAND_FUZZ_SECONDS", 3600),
        "long",
    );
}
