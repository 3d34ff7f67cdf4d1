//! The leak check names what a scenario left alive.

mod common;

use common::{buffer_desc, gpu, texture_desc};
use stagehand_gpu::diag::{LeakCheck, assert_no_leaks, check_leaks};

#[test]
fn scenario_that_drops_everything_passes() {
    let gpu = gpu();
    assert_no_leaks(gpu.tracker(), || {
        let buffer = gpu
            .device()
            .create_buffer(&buffer_desc("temp", 256))
            .unwrap();
        let texture = gpu
            .device()
            .create_texture(&texture_desc("temp", 8, 8, 1))
            .unwrap();
        let view = gpu
            .device()
            .create_texture_view(&texture, &Default::default())
            .unwrap();
        drop((view, texture, buffer));
    });
}

#[test]
fn kept_texture_fails_the_check_naming_type_and_label() {
    let gpu = gpu();
    let mut kept = Vec::new();
    let leaks = check_leaks(gpu.tracker(), || {
        kept.push(
            gpu.device()
                .create_texture(&texture_desc("leaky-frame", 4, 4, 1))
                .unwrap(),
        );
        drop(
            gpu.device()
                .create_buffer(&buffer_desc("fine", 16))
                .unwrap(),
        );
    })
    .expect_err("the texture is still alive");
    let msg = leaks.to_string();
    assert!(
        msg.contains("Texture: 1 alive (64 bytes), labelled \"leaky-frame\""),
        "{msg}"
    );
    assert!(!msg.contains("Buffer"), "{msg}");
    assert_eq!(leaks.kinds.len(), 1);
}

#[test]
#[should_panic(expected = "labelled \"kept-buffer\"")]
fn assert_no_leaks_panics_with_the_list() {
    let gpu = gpu();
    let check = LeakCheck::start(gpu.tracker());
    let kept = gpu
        .device()
        .create_buffer(&buffer_desc("kept-buffer", 16))
        .unwrap();
    let result = check.finish();
    drop(kept);
    if let Err(leaks) = result {
        panic!("{leaks}");
    }
}
