//! The CUDA backend against the driver's own calls, side by side:
//! pooled take + drop against `cuMemAlloc` + `cuMemFree` per size, then
//! host-to-device bandwidth from pageable memory, from pinned staging, and
//! through the CUDA upload engine.

use super::stats::{median, time_round};
use crate::{Failure, output};
use bytes::Bytes;
use stagehand_gpu::backend::cuda::{Cuda, CudaError, DevicePool, Stream};
use stagehand_gpu::pool::PoolConfig;
use stagehand_gpu::upload::UploadStatus;
use stagehand_gpu::upload::cuda::CudaUploadEngine;
use stagehand_gpu::upload::{EngineConfig, StagingPolicy};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const ALLOC_SIZES: [(u64, &str); 4] = [
    (256, "256 B"),
    (MIB, "1 MiB"),
    (64 * MIB, "64 MiB"),
    (1024 * MIB, "1 GiB"),
];
const COPY_SIZES: [(u64, &str); 2] = [(4 * MIB, "4 MiB"), (256 * MIB, "256 MiB")];

/// Whatever went wrong: standard output, or anything else as one line.
type Result<T> = std::result::Result<T, Failure>;

fn text(e: impl std::fmt::Display) -> Failure {
    Failure::Other(e.to_string())
}

/// Runs both tables on device 0.
pub fn run(rounds: usize, ops: usize) -> Result<()> {
    let cuda = Cuda::open(0).map_err(|e| format!("CUDA unavailable: {e}"))?;
    let info = cuda.info();
    output::println(&format!(
        "device: {} (compute {}.{}, driver {}.{}), {rounds} rounds, median round\n",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.driver_version / 1000,
        (info.driver_version % 1000) / 10,
    ))?;
    let stream = cuda.new_stream().map_err(text)?;
    allocation(&cuda, &stream, rounds, ops)?;
    bandwidth(&cuda, &stream, rounds)?;
    Ok(())
}

/// Operations of `f` that fit in about 20 ms, from one timed call.
fn calibrate(max_ops: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<usize> {
    let start = Instant::now();
    f()?;
    let one = start.elapsed().max(Duration::from_nanos(1));
    Ok((Duration::from_millis(20).as_nanos() / one.as_nanos()).clamp(1, max_ops as u128) as usize)
}

fn allocation(cuda: &Cuda, stream: &Stream, rounds: usize, ops: usize) -> Result<()> {
    output::println("pooled take + drop (free-list hit) against cuMemAlloc + cuMemFree\n")?;
    output::println(&format!(
        "{:>8}  {:>12}  {:>18}  {:>10}",
        "size", "pool ns/op", "cuMemAlloc+Free ns", "ratio"
    ))?;
    let pool = DevicePool::new(cuda, PoolConfig::named("bench")).map_err(text)?;
    for (size, name) in ALLOC_SIZES {
        drop(pool.take(size, stream).map_err(text)?); // the first take allocates
        let mut raw = || cuda.alloc_device(size).map(drop).map_err(text);
        let raw_ops = calibrate(ops, &mut raw)?;
        let (mut pooled, mut direct) = (Vec::new(), Vec::new());
        let mut failed: Option<String> = None;
        for round in 0..rounds {
            for step in 0..2 {
                if (round + step) % 2 == 0 {
                    pooled.push(time_round(ops, || drop(pool.take(size, stream))));
                } else {
                    direct.push(time_round(raw_ops, || {
                        if let Err(e) = cuda.alloc_device(size) {
                            failed.get_or_insert(e.to_string());
                        }
                    }));
                }
            }
        }
        if let Some(e) = failed {
            return Err(format!("cuMemAlloc of {name} failed: {e}").into());
        }
        let (pooled, direct) = (median(&mut pooled), median(&mut direct));
        output::println(&format!(
            "{name:>8}  {pooled:>12.1}  {direct:>18.1}  {:>10.0}",
            direct / pooled
        ))?;
        pool.pool().trim();
    }
    output::println("\nratio: cuMemAlloc + cuMemFree time over pooled take + drop time.\n")?;
    Ok(())
}

fn bandwidth(cuda: &Cuda, stream: &Stream, rounds: usize) -> Result<()> {
    output::println("host-to-device bandwidth, GB/s (median round)\n")?;
    output::println(&format!(
        "{:>8}  {:>10}  {:>10}  {:>10}  {:>15}",
        "size", "pageable", "pinned", "engine", "engine/pinned"
    ))?;
    let pool = DevicePool::new(cuda, PoolConfig::named("bench")).map_err(text)?;
    let engine = CudaUploadEngine::new(cuda, EngineConfig::default()).map_err(text)?;
    for (size, name) in COPY_SIZES {
        let dst = Arc::new(pool.take(size, stream).map_err(text)?);
        let streamed = engine
            .create_buffer(Arc::clone(&dst), StagingPolicy::Ring(2))
            .map_err(text)?;
        let source: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
        let shared = Bytes::from(source.clone());
        let mut pinned = cuda.alloc_pinned(size).map_err(text)?;
        pinned.as_mut_slice().copy_from_slice(&source);
        let (mut pageable, mut staged, mut engined) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            for step in 0..3 {
                let start = Instant::now();
                match (round + step) % 3 {
                    0 => {
                        dst.write(0, &source).map_err(text)?;
                        pageable.push(start.elapsed());
                    }
                    1 => {
                        dst.write_pinned(0, &pinned, size as usize).map_err(text)?;
                        staged.push(start.elapsed());
                    }
                    _ => {
                        let up = streamed.upload(shared.clone(), 0).map_err(text)?;
                        let outcome = up
                            .wait_timeout(Duration::from_secs(60))
                            .ok_or("an engine upload took over 60 s")?;
                        if outcome.status != UploadStatus::Done {
                            return Err(format!("engine upload ended {:?}", outcome.status).into());
                        }
                        engined.push(start.elapsed());
                    }
                }
            }
        }
        let gbps = |samples: &mut Vec<Duration>| {
            let mut secs: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
            size as f64 / median(&mut secs) / 1e9
        };
        let (pageable, staged, engined) =
            (gbps(&mut pageable), gbps(&mut staged), gbps(&mut engined));
        output::println(&format!(
            "{name:>8}  {pageable:>10.2}  {staged:>10.2}  {engined:>10.2}  {:>14.0}%",
            100.0 * engined / staged
        ))?;
        check_copy(&dst, &source)?;
    }
    let workers = engine.stats().workers;
    output::println(&format!(
        "\npageable: cuMemcpyHtoDAsync from ordinary memory, then the stream waited on; pinned: the same from page-locked memory; engine: a streamed buffer's upload of shared bytes from ordinary memory through the upload engine, waited on ({workers} worker threads; parallel fill in chunks of at least 1 MiB).\n"
    ))?;
    Ok(())
}

/// Reads the destination back: the last copy of every round wrote `source`.
fn check_copy(dst: &stagehand_gpu::backend::cuda::DeviceBuffer, source: &[u8]) -> Result<()> {
    let mut back = vec![0u8; source.len()];
    dst.read(0, &mut back)
        .map_err(|e: CudaError| e.to_string())?;
    if back != source {
        return Err("the bytes read back differ from the bytes uploaded".into());
    }
    Ok(())
}
