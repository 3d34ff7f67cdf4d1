//! What counting costs: create and drop a small buffer with plain wgpu, with
//! the count alone, and through stagehand's device (checks, error scopes and
//! count).

use super::stats::{median, print_table, time_round};
use crate::{Failure, output};
use stagehand_gpu::{Gpu, ObjectKind, Tracked};

const DESC: wgpu::BufferDescriptor<'static> = wgpu::BufferDescriptor {
    label: None,
    size: 256,
    usage: wgpu::BufferUsages::COPY_DST.union(wgpu::BufferUsages::STORAGE),
    mapped_at_creation: false,
};

/// Runs the benchmark and prints its table.
pub fn run(gpu: &Gpu, rounds: usize, ops: usize) -> Result<(), Failure> {
    let device = gpu.device();
    let raw: &wgpu::Device = device;
    let tracker = gpu.tracker();
    let mut samples = [const { Vec::new() }; 3];
    let mut failed = None;
    for round in 0..rounds {
        // Rotate which variant goes first, so none always runs on a warm or
        // cold allocator, and let wgpu retire dropped buffers before each.
        for step in 0..3 {
            let variant = (round + step) % 3;
            let _ = raw.poll(wgpu::PollType::Poll);
            let ns = match variant {
                0 => time_round(ops, || drop(raw.create_buffer(&DESC))),
                1 => time_round(ops, || {
                    let buffer = raw.create_buffer(&DESC);
                    drop(Tracked::new(
                        tracker,
                        ObjectKind::Buffer,
                        DESC.size,
                        None,
                        buffer,
                    ))
                }),
                _ => time_round(ops, || {
                    if let Err(e) = device.create_buffer(&DESC) {
                        failed = Some(e);
                    }
                }),
            };
            samples[variant].push(ns);
        }
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    print_table(
        "create + drop of a 256-byte buffer",
        &[
            ("wgpu create_buffer", median(&mut samples[0])),
            ("+ count (Tracked::new)", median(&mut samples[1])),
            ("stagehand create_buffer", median(&mut samples[2])),
        ],
    )?;
    output::println(
        "ratio: each variant's median over plain wgpu's; stagehand create_buffer adds descriptor checks and wgpu error scopes to the count.",
    )?;
    Ok(())
}
