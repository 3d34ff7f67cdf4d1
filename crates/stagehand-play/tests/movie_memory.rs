//! A movie opened again and again keeps none of the packets it read. A
//! test binary of its own: it measures the process's resident memory,
//! which tests running beside it in one process would move.

#![cfg(feature = "video")]

#[allow(dead_code)] // this binary uses only the movie writer
mod support;

use support::{has_ffmpeg, movie, temp_dir};

/// Resident memory of this process, bytes (Linux).
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn opening_a_movie_again_and_again_keeps_none_of_the_packets_it_read() {
    // Opening reads every packet to index the frames. Each packet read
    // into the same `Packet` again kept the one before: the whole file
    // stayed in memory after every open (and every packet a decoder read
    // past, while playing, likewise).
    if !has_ffmpeg("packets") {
        return;
    }
    let dir = temp_dir("packets");
    // Intra-only and large: about 10 MB of packets.
    let tags = "-c:v prores_ks -profile:v 3";
    let path = movie(&dir, "big.mov", "640x360", "yuv422p10le", 4, tags);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let _ = stagehand_play::source::movie::Movie::open(&path).unwrap();
    let Some(before) = resident() else {
        println!("SKIPPED: no /proc/self/statm to read resident memory from");
        return;
    };
    const OPENS: u64 = 20;
    for _ in 0..OPENS {
        drop(stagehand_play::source::movie::Movie::open(&path).unwrap());
    }
    let grew = resident().unwrap().saturating_sub(before);
    assert!(
        grew < OPENS * bytes / 4,
        "{OPENS} opens of a {bytes}-byte movie grew resident memory by {grew} bytes"
    );
}
