//! The footage every player is given: image sequences and movies at the
//! bench's size, written once under `--dir` and found there again by the
//! next run. The 8-bit PNGs, the JPEGs and the movies come from the
//! `ffmpeg` command (its `testsrc2` picture), so they are written by a
//! reference tool, not by us; the 16-bit PNGs and the EXRs come from the
//! format crates (`stagehand_play::testdata`), which `ffmpeg` cannot write
//! in every flavour.

use stagehand_play::testdata::{self, Kind};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A kind of footage (`--kinds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Footage {
    /// 8-bit RGB PNG sequence (ffmpeg).
    Rgb8,
    /// 8-bit RGBA PNG sequence (ffmpeg).
    Rgba8,
    /// JPEG sequence, quality 2 (ffmpeg).
    Jpeg,
    /// 16-bit RGBA PNG sequence (the png crate).
    Png16,
    /// OpenEXR half RGBA, ZIP (the exr crate).
    ExrHalfZip,
    /// OpenEXR half RGBA, PIZ (the exr crate).
    ExrHalfPiz,
    /// OpenEXR float RGB, ZIP (the exr crate).
    ExrFloat,
    /// H.264 4:2:0 8-bit movie (ffmpeg, libx264).
    H264,
    /// ProRes 422 HQ 10-bit movie (ffmpeg, prores_ks).
    Prores,
}

/// Who writes a kind of footage.
enum Writer {
    /// The `ffmpeg` command, one file a frame: its output options and
    /// the files' extension.
    FfmpegFrames(&'static [&'static str], &'static str),
    /// The format crate, through the player's test data.
    Crate(Kind),
    /// The `ffmpeg` command, a movie: its output options and extension.
    FfmpegMovie(&'static [&'static str], &'static str),
}

impl Footage {
    /// Every kind, in table order.
    pub const ALL: [Footage; 9] = [
        Footage::Rgb8,
        Footage::Rgba8,
        Footage::Jpeg,
        Footage::Png16,
        Footage::ExrHalfZip,
        Footage::ExrHalfPiz,
        Footage::ExrFloat,
        Footage::H264,
        Footage::Prores,
    ];

    /// The name in the table and in folder names.
    pub fn name(self) -> &'static str {
        match self {
            Footage::Rgb8 => "png-rgb8",
            Footage::Rgba8 => "png-rgba8",
            Footage::Jpeg => "jpeg",
            Footage::Png16 => "png-16bit",
            Footage::ExrHalfZip => "exr-half-zip",
            Footage::ExrHalfPiz => "exr-half-piz",
            Footage::ExrFloat => "exr-float",
            Footage::H264 => "h264",
            Footage::Prores => "prores-hq",
        }
    }

    fn writer(self) -> Writer {
        match self {
            Footage::Rgb8 => Writer::FfmpegFrames(&["-pix_fmt", "rgb24"], "png"),
            Footage::Rgba8 => Writer::FfmpegFrames(&["-pix_fmt", "rgba"], "png"),
            Footage::Jpeg => Writer::FfmpegFrames(&["-pix_fmt", "yuvj420p", "-q:v", "2"], "jpg"),
            Footage::Png16 => Writer::Crate(Kind::Png16),
            Footage::ExrHalfZip => Writer::Crate(Kind::ExrHalfZip),
            Footage::ExrHalfPiz => Writer::Crate(Kind::ExrHalfPiz),
            Footage::ExrFloat => Writer::Crate(Kind::ExrFloat),
            Footage::H264 => Writer::FfmpegMovie(
                &[
                    "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-g", "48", "-pix_fmt",
                    "yuv420p",
                ],
                "mp4",
            ),
            Footage::Prores => Writer::FfmpegMovie(
                &[
                    "-c:v",
                    "prores_ks",
                    "-profile:v",
                    "3",
                    "-pix_fmt",
                    "yuv422p10le",
                ],
                "mov",
            ),
        }
    }

    /// Whether it is one movie file rather than a folder of frames.
    pub fn is_movie(self) -> bool {
        matches!(self.writer(), Writer::FfmpegMovie(..))
    }

    /// Frames of this kind for a `--length` of `length`: movies get twice
    /// as many (4 s at the default), a decoder's start-up being a smaller
    /// part of them.
    pub fn frames(self, length: u32) -> u32 {
        if self.is_movie() { length * 2 } else { length }
    }

    /// Bytes a pixel takes at most in the RAM cache (decoded samples,
    /// RGBA or planes at their precision), for a budget that holds them.
    pub fn cache_bytes_per_pixel(self) -> u64 {
        match self {
            Footage::Rgb8 | Footage::Rgba8 | Footage::Jpeg | Footage::H264 => 4,
            Footage::Png16 | Footage::ExrHalfZip | Footage::ExrHalfPiz | Footage::Prores => 8,
            Footage::ExrFloat => 16,
        }
    }

    /// Bytes a pixel takes at most as a texture, for a GPU tier that holds
    /// the whole footage.
    pub fn texture_bytes_per_pixel(self) -> u64 {
        match self {
            Footage::Rgb8 | Footage::Rgba8 | Footage::Jpeg | Footage::H264 => 4,
            _ => 8,
        }
    }
}

/// Footage on disk, complete.
#[derive(Clone, Debug)]
pub struct Written {
    /// Its kind.
    pub kind: Footage,
    /// The folder of frames, or the movie.
    pub path: PathBuf,
    /// Frames in it.
    pub frames: u32,
    /// The frames' files in natural order; empty for a movie.
    pub files: Vec<PathBuf>,
}

impl Written {
    /// Reads every file of the footage once, so that it is in the page
    /// cache when a player starts: without it, whichever player ran first
    /// after footage of another kind (or a player that used most of the
    /// memory) read its frames from disk, and its row looked slower than
    /// the others for a reason that is none of its own.
    pub fn warm(&self) {
        let files: Vec<&Path> = if self.files.is_empty() {
            vec![&self.path]
        } else {
            self.files.iter().map(PathBuf::as_path).collect()
        };
        for file in files {
            // A file that cannot be read is the player's to report.
            if let Ok(mut f) = std::fs::File::open(file) {
                let _ = std::io::copy(&mut f, &mut std::io::sink());
            }
        }
    }
}

/// Finds `kind` at `size` under `dir`, writing it first where it is not
/// there whole. The error says why it could not be written.
pub fn prepare(
    dir: &Path,
    kind: Footage,
    length: u32,
    size: (u32, u32),
) -> Result<Written, String> {
    let frames = kind.frames(length);
    let stem = format!("{}-{}x{}-{frames}", kind.name(), size.0, size.1);
    let written = match kind.writer() {
        Writer::FfmpegFrames(options, ext) => {
            let folder = dir.join(stem);
            if count(&folder, ext) != frames as usize {
                ffmpeg_frames(&folder, options, ext, frames, size)?;
            }
            sequence(kind, folder, ext)?
        }
        Writer::Crate(k) => {
            let folder = dir.join(stem);
            // It writes only the frames that are missing.
            testdata::write_sequence(&folder, k, frames, size).map_err(|e| e.to_string())?;
            let ext = if k == Kind::Png16 { "png" } else { "exr" };
            sequence(kind, folder, ext)?
        }
        Writer::FfmpegMovie(options, ext) => {
            let path = dir.join(format!("{stem}.{ext}"));
            if !path.is_file() {
                ffmpeg_movie(&path, options, ext, frames, size)?;
            }
            Written {
                kind,
                path,
                frames,
                files: Vec::new(),
            }
        }
    };
    if written.frames != frames {
        return Err(format!(
            "{} holds {} frames, not {frames}",
            written.path.display(),
            written.frames
        ));
    }
    Ok(written)
}

/// A folder's frames with extension `ext`, in natural order. Files left
/// half-written by an interrupted run (`*.part.*`) are not frames.
fn frame_files(folder: &Path, ext: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(&format!(".{ext}")) && !n.contains(".part."))
        .collect();
    names.sort_by(|a, b| stagehand_play::natural_cmp(a, b));
    names.into_iter().map(|n| folder.join(n)).collect()
}

fn count(folder: &Path, ext: &str) -> usize {
    frame_files(folder, ext).len()
}

fn sequence(kind: Footage, folder: PathBuf, ext: &str) -> Result<Written, String> {
    let files = frame_files(&folder, ext);
    let frames = u32::try_from(files.len()).map_err(|e| e.to_string())?;
    Ok(Written {
        kind,
        path: folder,
        frames,
        files,
    })
}

/// Writes `frames` frames into `folder` through a sibling `.part` folder
/// renamed once whole, so an interrupted run never leaves a short
/// sequence under the final name.
fn ffmpeg_frames(
    folder: &Path,
    options: &[&str],
    ext: &str,
    frames: u32,
    size: (u32, u32),
) -> Result<(), String> {
    let part = folder.with_extension("part");
    for old in [&part, &folder.to_path_buf()] {
        if old.exists() {
            std::fs::remove_dir_all(old).map_err(|e| format!("{}: {e}", old.display()))?;
        }
    }
    std::fs::create_dir_all(&part).map_err(|e| format!("{}: {e}", part.display()))?;
    ffmpeg(
        &part.join(format!("frame.%04d.{ext}")),
        options,
        frames,
        size,
    )?;
    std::fs::rename(&part, folder).map_err(|e| format!("{}: {e}", folder.display()))
}

/// Writes a movie through a `.part` name renamed once whole.
fn ffmpeg_movie(
    path: &Path,
    options: &[&str],
    ext: &str,
    frames: u32,
    size: (u32, u32),
) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let part = path.with_extension(format!("part.{ext}"));
    ffmpeg(&part, options, frames, size)?;
    std::fs::rename(&part, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `ffmpeg`'s moving test picture at 24 fps, `frames` of it, into `out`.
fn ffmpeg(out: &Path, options: &[&str], frames: u32, size: (u32, u32)) -> Result<(), String> {
    let source = format!("testsrc2=size={}x{}:rate=24", size.0, size.1);
    let result = Command::new("ffmpeg")
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args([
            "-f",
            "lavfi",
            "-i",
            &source,
            "-frames:v",
            &frames.to_string(),
        ])
        .args(options)
        .arg(out)
        .output();
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err("ffmpeg is not installed (scripts/setup installs it)".into())
        }
        Err(e) => Err(format!("ffmpeg: {e}")),
        Ok(done) if !done.status.success() => {
            let stderr = String::from_utf8_lossy(&done.stderr);
            let line = super::child::first_line(&stderr).unwrap_or("no message");
            Err(format!("ffmpeg failed ({}): {line}", done.status))
        }
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn movies_get_twice_the_frames_of_sequences() {
        assert_eq!(Footage::Jpeg.frames(48), 48);
        assert_eq!(Footage::H264.frames(48), 96);
        assert_eq!(Footage::Prores.frames(12), 24);
    }

    #[test]
    fn frames_are_listed_in_natural_order_without_parts() {
        let dir = std::env::temp_dir().join(format!("stagehand-footage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in [
            "frame.10.png",
            "frame.9.png",
            "frame.1.png",
            "frame.2.part.png",
            "x.txt",
        ] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        let names: Vec<String> = frame_files(&dir, "png")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(names, ["frame.1.png", "frame.9.png", "frame.10.png"]);
    }
}
