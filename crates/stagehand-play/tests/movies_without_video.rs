//! A build without the `video` feature refuses a movie, saying that
//! movies need the feature, before it opens anything. (`scripts/test`
//! runs this with the feature off; a workspace build turns it on.)

#![cfg(not(feature = "video"))]

use stagehand_gpu::upload::UploadEngine;
use stagehand_play::{PlayError, PlayOptions, engine_config, play};
use std::ops::ControlFlow;
use std::sync::Arc;

#[test]
fn a_movie_is_refused_saying_it_needs_the_video_feature() {
    let gpu = Arc::new(stagehand_gpu::Gpu::open(&Default::default()).expect("a GPU adapter"));
    let engine = UploadEngine::new(gpu.clone(), engine_config(1)).unwrap();
    let options = PlayOptions {
        source: Some("/nonexistent/shot.mov".into()),
        ..PlayOptions::default()
    };
    let err = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap_err();
    assert!(matches!(err, PlayError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("`video` feature"), "{err}");
}
