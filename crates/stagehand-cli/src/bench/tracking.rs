//! What counting costs: create and drop a small buffer with plain wgpu, with
//! the count alone, and through stagehand's device (checks, error scopes and
//! count).

use super::stats::{median, print_table, time_round};
use stagehand::{Gpu, ObjectKind, Tracked};

const DESC: wgpu::BufferDescriptor<'static> = wgpu::BufferDescriptor {
    label: None,
    size: 256,
    usage: wgpu::BufferUsages::COPY_DST.union(wgpu::BufferUsages::STORAGE),
    mapped_at_creation: false,
};

/// Runs the benchmark and prints its table.
pub fn run(gpu: &Gpu, rounds: usize, ops: usize) -> stagehand::Result<()> {
    let device = gpu.device();
    let raw: &wgpu::Device = device;
    let tracker = gpu.tracker();
    let mut plain = Vec::with_capacity(rounds);
    let mut counted = Vec::with_capacity(rounds);
    let mut full = Vec::with_capacity(rounds);
    let mut failed = None;
    for _ in 0..rounds {
        plain.push(time_round(ops, || drop(raw.create_buffer(&DESC))));
        counted.push(time_round(ops, || {
            drop(Tracked::new(
                tracker,
                ObjectKind::Buffer,
                DESC.size,
                None,
                raw.create_buffer(&DESC),
            ))
        }));
        full.push(time_round(ops, || {
            if let Err(e) = device.create_buffer(&DESC) {
                failed = Some(e);
            }
        }));
        // Let wgpu retire the dropped buffers between rounds.
        let _ = raw.poll(wgpu::PollType::Poll);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    print_table(
        "create + drop of a 256-byte buffer",
        &[
            ("wgpu create_buffer", median(&mut plain)),
            ("+ count (Tracked::new)", median(&mut counted)),
            ("stagehand create_buffer", median(&mut full)),
        ],
    );
    println!(
        "ratio: each variant's median over plain wgpu's; stagehand create_buffer adds descriptor checks and wgpu error scopes to the count."
    );
    Ok(())
}
