//! The pool against the device: a pooled take + drop that hits its free list,
//! side by side with creating and dropping the same buffer, per size; then
//! pooled take + drop from 1, 2 and 4 threads sharing one pool.

use super::stats::{median, time_round};
use crate::Failure;
use crate::output::{self, OutputError};
use stagehand_gpu::Gpu;
use stagehand_gpu::backend::wgpu::buffer_pool;
use stagehand_gpu::pool::PoolConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST);
const SIZES: [(u64, &str); 4] = [
    (256, "256 B"),
    (64 << 10, "64 KiB"),
    (4 << 20, "4 MiB"),
    (64 << 20, "64 MiB"),
];
/// A round of slow operations stops early once it has run this long.
const ROUND_TIME: Duration = Duration::from_millis(20);

/// Operations that fit in about `ROUND_TIME`, from one timed call; at least 1.
fn calibrate(max_ops: usize, mut f: impl FnMut()) -> usize {
    let start = Instant::now();
    f();
    let one = start.elapsed().max(Duration::from_nanos(1));
    (ROUND_TIME.as_nanos() / one.as_nanos()).clamp(1, max_ops as u128) as usize
}

/// Runs the benchmark and prints its tables.
pub fn run(gpu: Arc<Gpu>, rounds: usize, ops: usize) -> Result<(), Failure> {
    let pool = buffer_pool(gpu.clone(), PoolConfig::named("bench")).map_err(pool_error)?;
    let raw: &wgpu::Device = gpu.device();
    output::println(
        "pooled take + drop (free-list hit) against create + drop of the same buffer\n",
    )?;
    output::println(&format!(
        "{:>8}  {:>12}  {:>14}  {:>14}  {:>10}",
        "size", "pool ns/op", "wgpu ns/op", "checked ns/op", "wgpu/pool"
    ))?;
    for (size, name) in SIZES {
        let desc = wgpu::BufferDescriptor {
            label: None,
            size,
            usage: USAGE,
            mapped_at_creation: false,
        };
        drop(pool.take(USAGE, size).map_err(pool_error)?); // warm: the first take allocates
        let slow_ops = calibrate(ops, || drop(raw.create_buffer(&desc)));
        let (mut hit, mut create, mut checked) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            for step in 0..3 {
                let _ = raw.poll(wgpu::PollType::Poll);
                match (round + step) % 3 {
                    0 => hit.push(time_round(ops, || drop(pool.take(USAGE, size)))),
                    1 => create.push(time_round(slow_ops, || drop(raw.create_buffer(&desc)))),
                    _ => checked.push(time_round(slow_ops, || {
                        drop(gpu.device().create_buffer(&desc))
                    })),
                }
            }
        }
        let (hit, create, checked) = (median(&mut hit), median(&mut create), median(&mut checked));
        output::println(&format!(
            "{name:>8}  {hit:>12.1}  {create:>14.1}  {checked:>14.1}  {:>10.0}",
            create / hit
        ))?;
    }
    output::println(
        "\nwgpu: plain wgpu create_buffer + drop; checked: stagehand's Device::create_buffer + drop.\n",
    )?;
    threads(&pool, rounds, ops * 10)?;
    Ok(())
}

fn threads(
    pool: &stagehand_gpu::backend::wgpu::BufferPool,
    rounds: usize,
    ops: usize,
) -> Result<(), OutputError> {
    output::println("pooled take + drop of 256 B from threads sharing one pool\n")?;
    output::println(&format!(
        "{:>8}  {:>16}  {:>14}",
        "threads", "ns/op per thread", "Mops/s total"
    ))?;
    for threads in [1usize, 2, 4] {
        let mut samples = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..ops {
                            drop(pool.take(USAGE, 256));
                        }
                    });
                }
            });
            samples.push(start.elapsed().as_nanos() as f64 / ops as f64);
        }
        let per_thread = median(&mut samples);
        output::println(&format!(
            "{threads:>8}  {per_thread:>16.1}  {:>14.2}",
            threads as f64 * 1e3 / per_thread
        ))?;
    }
    output::println(
        "\nns/op per thread: wall time of a round over the operations each thread ran (thread start included).",
    )
}

fn pool_error(e: stagehand_gpu::pool::PoolError) -> stagehand_gpu::Error {
    e.into()
}
