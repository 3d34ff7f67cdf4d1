//! The frame queue: frames come off the screen in order whatever order their
//! uploads land in, and the waits a player builds on (pre-roll, waiting for
//! one frame) wake when a frame lands.
//!
//! Landing order is steered with fill-in-place pushes whose closures (they
//! run on an upload worker) hold until the test opens their gate.

mod common;

use crossbeam_channel::{Receiver, Sender};
use stagehand_gpu::upload::{
    Cancel, CopyLayout, EngineConfig, FrameQueue, FrameQueueConfig, FrameStats, Upload,
    UploadEngine, UploadStatus, WaitReady,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest any step may take before the test gives up on it.
const WAIT: Duration = Duration::from_secs(30);

/// A frame's presentation time, in milliseconds.
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A fresh engine with `workers` workers and a queue of `depth` 16x16 slots
/// on it. The queue is the engine's first resource, so its slots are dealt
/// to the workers in turn: slot `i` fills on worker `i % workers`.
fn queue(workers: usize, depth: usize) -> (UploadEngine, FrameQueue) {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(
        gpu,
        EngineConfig {
            workers,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let config = FrameQueueConfig {
        depth,
        ..FrameQueueConfig::default()
    };
    let queue =
        FrameQueue::new(&engine, &common::texture_desc("frame", 16, 16, 1), config).unwrap();
    (engine, queue)
}

/// A gate a fill closure waits at until the test opens it (or drops it).
fn gate() -> (Sender<()>, Receiver<()>) {
    crossbeam_channel::bounded(1)
}

/// Pushes `frame` with a fill that holds its worker until `gate` opens.
fn push_held(queue: &FrameQueue, frame: u64, pts: Duration, gate: Receiver<()>) -> Upload {
    let fill = move |mut out: wgpu::WriteOnly<'_, [u8]>, _: &CopyLayout| {
        let _ = gate.recv_timeout(WAIT);
        out.fill(frame as u8);
    };
    queue.push_with(frame, pts, fill).unwrap()
}

/// Pushes `frame` with bytes, so it lands as soon as its worker is free.
fn push(queue: &FrameQueue, frame: u64, pts: Duration) -> Upload {
    queue
        .push(frame, pts, vec![frame as u8; 16 * 16 * 4].into())
        .unwrap()
}

/// Waits for an upload to land, failing the test with `what` if it does not.
fn landed(upload: &Upload, what: &str) {
    let outcome = upload
        .wait_timeout(WAIT)
        .unwrap_or_else(|| panic!("{what} did not land in {WAIT:?}"));
    assert_eq!(outcome.status, UploadStatus::Done, "{what}");
}

fn balanced(stats: FrameStats) {
    assert_eq!(
        stats.shown + stats.dropped + stats.failed + stats.discarded,
        stats.pushed,
        "shown + dropped + failed + discarded == pushed: {stats:?}"
    );
}

#[test]
fn present_never_shows_an_older_frame_than_the_one_on_screen() {
    let (_engine, queue) = queue(2, 3);
    let (open, held) = gate();
    // Frame 0 fills on worker 0 and holds there; frame 1 fills on worker 1
    // and lands first.
    let first = push_held(&queue, 0, ms(0), held);
    let second = push(&queue, 1, ms(10));
    landed(&second, "frame 1 (on its own worker, behind nothing)");
    assert!(!first.is_done(), "frame 0 is still held at its gate");
    let t = ms(1000);
    assert_eq!(queue.present(t).map(|p| p.frame), Some(1));
    // Now frame 0 lands, behind the frame on screen.
    open.send(()).unwrap();
    landed(&first, "frame 0");
    let again = queue.present(t).map(|p| p.frame);
    assert_eq!(
        again,
        Some(1),
        "frame 0 landed after frame 1 was shown: presenting again must keep \
         frame 1 on screen, not go back to frame 0"
    );
    let stats = queue.finish();
    assert_eq!(
        (stats.pushed, stats.shown, stats.dropped),
        (2, 1, 1),
        "{stats:?}"
    );
    balanced(stats);
}

#[test]
fn a_frame_landing_behind_the_one_on_screen_is_dropped_and_frees_its_slot() {
    let (_engine, queue) = queue(2, 2);
    let queue = Arc::new(queue);
    let (open, held) = gate();
    let first = push_held(&queue, 0, ms(0), held);
    let second = push(&queue, 1, ms(10));
    landed(&second, "frame 1");
    assert_eq!(queue.present(ms(1000)).map(|p| p.frame), Some(1));
    // Both slots are taken (frame 0 filling, frame 1 on screen): a producer
    // waits for one. Frame 0 landing stale must free its slot for it, with
    // no further present.
    let (done, pushed) = crossbeam_channel::bounded(1);
    let producer = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || {
            let result = queue.push(2, ms(20), vec![2u8; 16 * 16 * 4].into());
            let _ = done.send(result.map(|_| ()));
        })
    };
    std::thread::sleep(ms(50));
    assert!(pushed.is_empty(), "no slot is free before frame 0 lands");
    open.send(()).unwrap();
    landed(&first, "frame 0");
    let result = pushed.recv_timeout(Duration::from_secs(10));
    if result.is_err() {
        // Let the producer go before failing.
        queue.close();
    }
    producer.join().unwrap();
    assert!(
        matches!(result, Ok(Ok(()))),
        "frame 0 landed stale, so its slot should have gone to frame 2: {result:?}"
    );
    assert_eq!(queue.stats().dropped, 1, "frame 0 counts as dropped");
    assert_eq!(queue.preroll(1, WAIT), 1, "frame 2 lands");
    assert_eq!(queue.present(ms(1000)).map(|p| p.frame), Some(2));
    let stats = queue.finish();
    assert_eq!(
        (stats.pushed, stats.shown, stats.dropped),
        (3, 2, 1),
        "{stats:?}"
    );
    balanced(stats);
}

#[test]
fn equal_times_show_the_higher_frame_number() {
    let (_engine, queue) = queue(1, 3);
    for (frame, pts) in [(0, 0), (1, 10), (2, 20)] {
        landed(&push(&queue, frame, ms(pts)), "a frame");
    }
    // Frame 1 goes on screen and frame 0 is passed over, freeing slot 0:
    // frame 3 takes it, a lower slot than frame 2's, with the same time.
    assert_eq!(queue.present(ms(10)).map(|p| p.frame), Some(1));
    landed(&push(&queue, 3, ms(20)), "frame 3");
    assert_eq!(queue.ready(), 2);
    let shown = queue.present(ms(20)).map(|p| p.frame);
    assert_eq!(
        shown,
        Some(3),
        "frames 2 and 3 share a time: 3 is the newer"
    );
    assert_eq!(queue.ready(), 0, "frame 2 was passed over");
    assert_eq!(queue.present(ms(20)).map(|p| p.frame), Some(3));
    let stats = queue.finish();
    assert_eq!(
        (stats.pushed, stats.shown, stats.dropped),
        (4, 2, 2),
        "{stats:?}"
    );
    balanced(stats);
}

#[test]
fn shown_tells_the_frame_on_screen_without_advancing() {
    let (_engine, queue) = queue(2, 3);
    assert_eq!(queue.shown(), None);
    landed(&push(&queue, 0, ms(0)), "frame 0");
    assert_eq!(queue.shown(), None, "nothing is presented yet");
    let presented = queue.present(ms(0));
    assert_eq!(presented.map(|p| p.frame), Some(0));
    landed(&push(&queue, 1, ms(10)), "frame 1");
    // Frame 1 is due at 10 ms, but only present moves the queue on.
    assert_eq!(queue.shown(), presented);
    assert_eq!(queue.ready(), 1);
    let next = queue.present(ms(10));
    assert_eq!(next.map(|p| p.frame), Some(1));
    assert_eq!(queue.shown(), next);
    balanced(queue.finish());
}

#[test]
fn ready_counts_landed_frames_not_yet_shown() {
    let (_engine, queue) = queue(2, 3);
    assert_eq!(queue.ready(), 0);
    let (open, held) = gate();
    let first = push(&queue, 0, ms(0));
    let second = push_held(&queue, 1, ms(10), held);
    landed(&first, "frame 0");
    assert_eq!(queue.ready(), 1, "frame 1 is still filling");
    open.send(()).unwrap();
    landed(&second, "frame 1");
    assert_eq!(queue.ready(), 2);
    assert_eq!(queue.present(ms(0)).map(|p| p.frame), Some(0));
    assert_eq!(queue.ready(), 1, "frame 0 is on screen, frame 1 waits");
    balanced(queue.finish());
}

#[test]
fn wait_ready_wakes_when_the_frame_lands() {
    let (_engine, queue) = queue(2, 3);
    let queue = Arc::new(queue);
    let (open, held) = gate();
    let upload = push_held(&queue, 0, ms(0), held);
    assert_eq!(queue.wait_ready(0, ms(20)), WaitReady::TimedOut);
    let waiter = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || {
            let answer = queue.wait_ready(0, Duration::MAX);
            (answer, Instant::now())
        })
    };
    std::thread::sleep(ms(20));
    open.send(()).unwrap();
    landed(&upload, "frame 0");
    let landed_at = Instant::now();
    let (answer, woke_at) = waiter.join().unwrap();
    assert_eq!(answer, WaitReady::Ready);
    // It woke on the landing itself: well before any polling period a busy
    // machine might stretch, and never more than a moment after.
    let late = woke_at.saturating_duration_since(landed_at);
    assert!(late < Duration::from_secs(1), "woke {late:?} after landing");
    assert_eq!(queue.wait_ready(0, Duration::ZERO), WaitReady::Ready);
    balanced(queue.finish());
}

#[test]
fn wait_ready_counts_a_later_frame_or_the_one_on_screen() {
    let (_engine, queue) = queue(2, 3);
    landed(&push(&queue, 4, ms(40)), "frame 4");
    // Frame 3 was never pushed (a player skipping ahead); 4 stands in.
    assert_eq!(queue.wait_ready(3, ms(0)), WaitReady::Ready);
    assert_eq!(queue.wait_ready(5, ms(10)), WaitReady::TimedOut);
    assert_eq!(queue.present(ms(40)).map(|p| p.frame), Some(4));
    assert_eq!(queue.wait_ready(4, ms(0)), WaitReady::Ready, "on screen");
    assert_eq!(queue.wait_ready(2, ms(0)), WaitReady::Ready, "passed");
    balanced(queue.finish());
}

#[test]
fn wait_ready_reports_a_cancelled_frame_as_failed() {
    // One worker: frame 0 holds it, so frame 1 waits queued and can be
    // cancelled.
    let (_engine, queue) = queue(1, 3);
    let (open, held) = gate();
    let first = push_held(&queue, 0, ms(0), held);
    let second = push(&queue, 1, ms(10));
    assert_eq!(second.cancel(), Cancel::Cancelled);
    assert_eq!(queue.wait_ready(1, WAIT), WaitReady::Failed);
    open.send(()).unwrap();
    landed(&first, "frame 0");
    assert_eq!(queue.wait_ready(0, WAIT), WaitReady::Ready);
    assert_eq!(queue.wait_ready(1, ms(0)), WaitReady::Failed);
    assert_eq!(queue.present(ms(10)).map(|p| p.frame), Some(0));
    let stats = queue.finish();
    assert_eq!(
        (stats.pushed, stats.shown, stats.failed),
        (2, 1, 1),
        "{stats:?}"
    );
    balanced(stats);
}

#[test]
fn wait_ready_returns_closed_when_the_frame_can_no_longer_come() {
    let (_engine, queue) = queue(2, 3);
    let queue = Arc::new(queue);
    landed(&push(&queue, 0, ms(0)), "frame 0");
    let waiter = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || queue.wait_ready(1, Duration::MAX))
    };
    std::thread::sleep(ms(20));
    queue.close();
    assert_eq!(waiter.join().unwrap(), WaitReady::Closed);
    assert_eq!(
        queue.wait_ready(0, ms(0)),
        WaitReady::Ready,
        "frame 0 is in hand"
    );
    balanced(queue.finish());
}

#[test]
fn wait_ready_after_close_still_waits_for_a_frame_in_flight() {
    let (_engine, queue) = queue(2, 3);
    let queue = Arc::new(queue);
    let (open, held) = gate();
    let upload = push_held(&queue, 0, ms(0), held);
    queue.close();
    let waiter = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || queue.wait_ready(0, WAIT))
    };
    std::thread::sleep(ms(20));
    open.send(()).unwrap();
    landed(&upload, "frame 0");
    assert_eq!(waiter.join().unwrap(), WaitReady::Ready);
    balanced(queue.finish());
}

#[test]
fn preroll_with_no_deadline_waits_for_the_frames() {
    let (_engine, queue) = queue(2, 3);
    let queue = Arc::new(queue);
    let (open, held) = gate();
    push(&queue, 0, ms(0));
    let held_frame = push_held(&queue, 1, ms(10), held);
    let prerolled = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || queue.preroll(2, Duration::MAX))
    };
    std::thread::sleep(ms(20));
    open.send(()).unwrap();
    landed(&held_frame, "frame 1");
    assert_eq!(prerolled.join().unwrap(), 2);
    assert_eq!(queue.preroll(2, Duration::MAX), 2, "already in hand");
    balanced(queue.finish());
}

#[test]
fn preroll_returns_short_when_no_frame_can_land_before_a_present() {
    let (_engine, queue) = queue(2, 2);
    landed(&push(&queue, 0, ms(0)), "frame 0");
    landed(&push(&queue, 1, ms(10)), "frame 1");
    assert_eq!(queue.present(ms(0)).map(|p| p.frame), Some(0));
    // One slot on screen, one ready, none free: a second ready frame needs
    // a present first, so waiting with no deadline would never end.
    assert_eq!(queue.preroll(2, Duration::MAX), 1);
    queue.close();
    assert_eq!(
        queue.preroll(3, Duration::MAX),
        1,
        "closed: nothing more comes"
    );
    balanced(queue.finish());
}

#[test]
fn finish_balances_frames_landing_out_of_order() {
    let (_engine, queue) = queue(2, 4);
    let (open, held) = gate();
    // Slots 0 and 2 fill on worker 0, 1 and 3 on worker 1: frame 0 holds
    // worker 0 (frame 2 queues behind it), frames 1 and 3 land.
    let first = push_held(&queue, 0, ms(0), held);
    let second = push(&queue, 1, ms(10));
    let third = push(&queue, 2, ms(20));
    let fourth = push(&queue, 3, ms(30));
    landed(&second, "frame 1");
    landed(&fourth, "frame 3");
    assert_eq!(queue.present(ms(10)).map(|p| p.frame), Some(1));
    assert_eq!(queue.present(ms(30)).map(|p| p.frame), Some(3));
    open.send(()).unwrap();
    landed(&first, "frame 0");
    landed(&third, "frame 2");
    assert_eq!(queue.present(ms(30)).map(|p| p.frame), Some(3));
    assert_eq!(queue.ready(), 0, "frames 0 and 2 landed stale");
    let stats = queue.finish();
    assert_eq!(
        (stats.pushed, stats.shown, stats.dropped),
        (4, 2, 2),
        "{stats:?}"
    );
    balanced(stats);
}

#[test]
fn wait_ready_waits_for_the_frame_itself_when_a_later_one_lands_first() {
    // Two workers: frame 0 is held on one while frame 1 lands on the other.
    let (_engine, queue) = queue(2, 3);
    let (open, held) = gate();
    let first = push_held(&queue, 0, ms(0), held);
    landed(&push(&queue, 1, ms(10)), "frame 1");
    assert_eq!(
        queue.wait_ready(0, ms(20)),
        WaitReady::TimedOut,
        "frame 1 landing says nothing of frame 0, still loading"
    );
    open.send(()).unwrap();
    landed(&first, "frame 0");
    assert_eq!(queue.wait_ready(0, WAIT), WaitReady::Ready);
    assert_eq!(queue.present(ms(0)).map(|p| p.frame), Some(0));
    balanced(queue.finish());
}

#[test]
fn a_seek_discards_the_frames_before_it_and_frees_their_slots() {
    let (_engine, queue) = queue(1, 3);
    let first = push(&queue, 0, ms(0));
    landed(&first, "frame 0");
    assert_eq!(queue.present(ms(0)).map(|p| p.frame), Some(0));
    // Frames 1 and 2 were pushed for where playback was; one has landed,
    // one is still on its way when the player seeks past both.
    let one = push(&queue, 1, ms(10));
    landed(&one, "frame 1");
    let (open, held) = gate();
    let two = push_held(&queue, 2, ms(20), held);
    queue.discard_before(10);
    // The frame on screen stays until a frame of the new place replaces it.
    assert_eq!(queue.present(ms(25)).map(|p| p.frame), Some(0));
    drop(open);
    landed(&two, "frame 2");
    assert_eq!(queue.present(ms(25)).map(|p| p.frame), Some(0));
    assert_eq!(
        queue.ready(),
        0,
        "discarded frames are not waiting to be shown"
    );
    // Both slots came free: two frames of the new place fit beside the screen.
    let ten = push(&queue, 10, ms(100));
    let eleven = push(&queue, 11, ms(110));
    landed(&ten, "frame 10");
    landed(&eleven, "frame 11");
    assert_eq!(queue.present(ms(100)).map(|p| p.frame), Some(10));
    let stats = queue.finish();
    assert_eq!(stats.discarded, 2, "{stats:?}");
    assert_eq!(stats.dropped, 1, "frame 11 was never shown: {stats:?}");
    balanced(stats);
}

#[test]
fn a_producer_waiting_for_a_slot_wakes_when_a_seek_frees_one() {
    let (_engine, queue) = queue(1, 2);
    landed(&push(&queue, 0, ms(0)), "frame 0");
    landed(&push(&queue, 1, ms(10)), "frame 1");
    let queue = Arc::new(queue);
    let producer = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || push(&queue, 5, ms(50)))
    };
    std::thread::sleep(ms(50));
    assert!(
        !producer.is_finished(),
        "every slot is taken: the push waits"
    );
    queue.discard_before(5);
    let five = producer.join().unwrap();
    landed(&five, "frame 5");
    assert_eq!(queue.present(ms(50)).map(|p| p.frame), Some(5));
    assert_eq!(queue.finish().discarded, 2);
}

#[test]
fn a_frame_is_coming_from_its_push_until_it_lands() {
    // What a realtime render loop asks before it waits for its tick's
    // frame to land: only a frame pushed and not yet landed is coming.
    let (_engine, queue) = queue(2, 3);
    assert!(!queue.is_coming(0), "never pushed");
    let (open, held) = gate();
    let upload = push_held(&queue, 0, ms(0), held);
    assert!(queue.is_coming(0), "filling");
    assert!(!queue.is_coming(1), "another frame");
    open.send(()).unwrap();
    landed(&upload, "frame 0");
    assert!(!queue.is_coming(0), "landed");
    assert_eq!(queue.present(ms(0)).map(|p| p.frame), Some(0));
    assert!(!queue.is_coming(0), "on screen");
    balanced(queue.finish());
}
