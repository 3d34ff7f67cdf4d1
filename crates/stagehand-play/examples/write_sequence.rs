//! Writes a test sequence: `write_sequence DIR KIND FRAMES WIDTHxHEIGHT`,
//! KIND one of the names `stagehand bench play` prints (png-8bit,
//! png-16bit, exr-half-zip, exr-half-piz, exr-float-zip). Frames already
//! there are kept. Prints the pattern that names them.

use stagehand_play::testdata::{Kind, write_sequence};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(pattern) => {
            println!("{}", pattern.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("write_sequence: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<PathBuf, String> {
    let [dir, kind, frames, size] = args else {
        return Err("usage: write_sequence DIR KIND FRAMES WIDTHxHEIGHT".into());
    };
    let kind = Kind::ALL
        .into_iter()
        .find(|k| k.name() == kind)
        .ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            format!("{kind:?}: expected one of {}", names.join(", "))
        })?;
    let frames: u32 = frames
        .parse()
        .ok()
        .filter(|n| (1..=10_000).contains(n))
        .ok_or_else(|| format!("{frames:?}: expected 1 to 10000 frames"))?;
    let (w, h) = size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .filter(|&(w, h)| (1..=16_384).contains(&w) && (1..=16_384).contains(&h))
        .ok_or_else(|| format!("{size:?}: expected WIDTHxHEIGHT, each 1 to 16384"))?;
    write_sequence(&PathBuf::from(dir), kind, frames, (w, h)).map_err(|e| e.to_string())
}
