//! Plays a sequence (or synthetic frames) in a window from your own
//! program: `window [SOURCE]`. The screen opens first, so the GPU can be
//! opened on its display (the GL backend presents only through it).

use stagehand_gpu::upload::UploadEngine;
use stagehand_gpu::{Gpu, GpuOptions};
use stagehand_play::{PlayOptions, Screen, WindowOptions, engine_config, play_in, wanted_features};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("window: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let options = PlayOptions {
        source: std::env::args_os().nth(1).map(Into::into),
        size: (1280, 720),
        frames: Some(240),
        looped: true,
        ..PlayOptions::default()
    };
    let mut screen = Screen::open(&WindowOptions {
        size: (1280, 720),
        fullscreen: false,
        title: "stagehand play: example".into(),
        present: options.present,
    })?;
    let gpu = Arc::new(Gpu::open(&GpuOptions {
        wanted_features: wanted_features(),
        display: Some(screen.display_handle()),
        ..GpuOptions::default()
    })?);
    let engine = UploadEngine::new(Arc::clone(&gpu), engine_config(options.threads))?;
    let summary = play_in(&gpu, &engine, &options, &mut screen, |_| {
        ControlFlow::Continue(())
    })?;
    println!(
        "{} frames shown of {} in range, {} dropped",
        summary.frames.shown, summary.frames_in_range, summary.frames.dropped
    );
    Ok(())
}
