//! Every upload lands byte for byte: varied formats, sizes, regions, mips,
//! layers and source pitches, through every staging policy, read back from
//! the GPU and compared with a CPU mirror.

mod common;

use stagehand_gpu::upload::{
    EngineConfig, SourceLayout, StagingPolicy, StreamOptions, TextureRegion, UploadEngine,
    UploadStatus,
};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// xorshift: reproducible bytes without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() % u64::from(n.max(1))) as u32
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Reads back one layer of one mip level, tightly packed.
fn read_back(
    gpu: &stagehand_gpu::Gpu,
    texture: &wgpu::Texture,
    mip: u32,
    layer: u32,
    texel: u32,
) -> Vec<u8> {
    let w = (texture.width() >> mip).max(1);
    let h = (texture.height() >> mip).max(1);
    let pitch = (w * texel).next_multiple_of(256);
    let desc = wgpu::BufferDescriptor {
        label: Some("readback"),
        size: u64::from(pitch * h),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    };
    let buffer = gpu.device().create_buffer(&desc).unwrap();
    let mut encoder = gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    encoder.copy_texture_to_buffer(
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: mip,
            origin: wgpu::Origin3d {
                x: 0,
                y: 0,
                z: layer,
            },
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(pitch),
                rows_per_image: Some(h),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    buffer
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let view = buffer.slice(..).get_mapped_range().unwrap();
    let mut out = Vec::with_capacity((w * h * texel) as usize);
    for row in 0..h {
        let start = (row * pitch) as usize;
        out.extend_from_slice(&view[start..start + (w * texel) as usize]);
    }
    out
}

struct Case {
    format: wgpu::TextureFormat,
    texel: u32,
    size: (u32, u32, u32),
    mips: u32,
}

fn run(policy: StagingPolicy, case: &Case, uploads: usize, seed: u64) -> usize {
    run_with(
        EngineConfig::default(),
        StreamOptions {
            priority: Default::default(),
            policy,
            rows_per_submit: None,
        },
        case,
        uploads,
        seed,
    )
}

fn run_with(
    config: EngineConfig,
    options: StreamOptions,
    case: &Case,
    uploads: usize,
    seed: u64,
) -> usize {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(gpu.clone(), config).unwrap();
    let (w, h, layers) = case.size;
    let desc = wgpu::TextureDescriptor {
        label: Some("target"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: layers,
        },
        mip_level_count: case.mips,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: case.format,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    };
    let streamed = engine.create_texture_with(&desc, options).unwrap();
    let texel = case.texel as usize;
    // The CPU mirror: one tightly packed image per (mip, layer).
    let mut mirror: Vec<Vec<Vec<u8>>> = (0..case.mips)
        .map(|m| {
            (0..layers)
                .map(|_| vec![0u8; ((w >> m).max(1) * (h >> m).max(1)) as usize * texel])
                .collect()
        })
        .collect();
    // Start from known contents.
    for m in 0..case.mips {
        for l in 0..layers {
            let (mw, mh) = ((w >> m).max(1), (h >> m).max(1));
            let region = TextureRegion {
                mip_level: m,
                origin: wgpu::Origin3d { x: 0, y: 0, z: l },
                size: wgpu::Extent3d {
                    width: mw,
                    height: mh,
                    depth_or_array_layers: 1,
                },
            };
            let up = streamed
                .upload(
                    mirror[m as usize][l as usize].clone(),
                    region,
                    SourceLayout::default(),
                )
                .unwrap();
            assert_eq!(
                up.wait_timeout(WAIT).expect("landed").status,
                UploadStatus::Done
            );
        }
    }
    let mut rng = Rng(seed);
    let mut pending = Vec::new();
    for _ in 0..uploads {
        let m = rng.below(case.mips);
        let (mw, mh) = ((w >> m).max(1), (h >> m).max(1));
        let (rw, rh) = (1 + rng.below(mw), 1 + rng.below(mh));
        let (x, y, l) = (
            rng.below(mw - rw + 1),
            rng.below(mh - rh + 1),
            rng.below(layers),
        );
        let pad = rng.below(3) * 4 * case.texel;
        let pitch = rw * case.texel + pad;
        let mut data = rng.bytes((pitch * rh) as usize);
        let region = TextureRegion {
            mip_level: m,
            origin: wgpu::Origin3d { x, y, z: l },
            size: wgpu::Extent3d {
                width: rw,
                height: rh,
                depth_or_array_layers: 1,
            },
        };
        let layout = SourceLayout {
            format: Some(case.format),
            bytes_per_row: Some(u64::from(pitch)),
        };
        let up = streamed.upload(data.clone(), region, layout).unwrap();
        // The caller scribbles over its own buffer at once: the upload took
        // its own shared copy, so the mirror keeps what was handed over.
        let handed = data.clone();
        data.fill(0xEE);
        for row in 0..rh {
            let src = (row * pitch) as usize;
            let dst = (((y + row) * mw + x) * case.texel) as usize;
            let n = (rw * case.texel) as usize;
            mirror[m as usize][l as usize][dst..dst + n].copy_from_slice(&handed[src..src + n]);
        }
        pending.push((region, up));
    }
    for (i, (region, up)) in pending.iter().enumerate() {
        match up.wait_timeout(WAIT).expect("every upload ends").status {
            UploadStatus::Done => {}
            // Only a later upload to the very same region may replace one.
            UploadStatus::Superseded => assert!(
                pending[i + 1..].iter().any(|(r, _)| r == region),
                "superseded by nothing"
            ),
            other => panic!("upload ended {other:?}"),
        }
    }
    let mut mismatches = 0;
    for m in 0..case.mips {
        for l in 0..layers {
            let got = read_back(&gpu, streamed.texture(), m, l, case.texel);
            mismatches += got
                .iter()
                .zip(&mirror[m as usize][l as usize])
                .filter(|(a, b)| a != b)
                .count();
        }
    }
    mismatches
}

fn cases() -> Vec<Case> {
    use wgpu::TextureFormat as F;
    vec![
        Case {
            format: F::Rgba8Unorm,
            texel: 4,
            size: (67, 33, 2),
            mips: 3,
        },
        Case {
            format: F::R8Unorm,
            texel: 1,
            size: (301, 17, 1),
            mips: 2,
        },
        Case {
            format: F::Rgba16Float,
            texel: 8,
            size: (40, 40, 3),
            mips: 1,
        },
        Case {
            format: F::Rg32Float,
            texel: 8,
            size: (1, 1, 1),
            mips: 1,
        },
    ]
}

#[test]
fn ring_uploads_land_byte_for_byte() {
    for (i, case) in cases().iter().enumerate() {
        assert_eq!(
            run(StagingPolicy::Ring(3), case, 300, 1 + i as u64),
            0,
            "{:?}",
            case.format
        );
    }
}

#[test]
fn per_upload_staging_lands_byte_for_byte() {
    for (i, case) in cases().iter().enumerate() {
        assert_eq!(
            run(StagingPolicy::PerUpload(2), case, 150, 100 + i as u64),
            0,
            "{:?}",
            case.format
        );
    }
}

#[test]
fn synchronous_uploads_land_byte_for_byte() {
    for (i, case) in cases().iter().enumerate() {
        assert_eq!(
            run(StagingPolicy::Synchronous, case, 150, 200 + i as u64),
            0,
            "{:?}",
            case.format
        );
    }
}

#[test]
fn buffer_ranges_land_byte_for_byte() {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(gpu.clone(), EngineConfig::default()).unwrap();
    let desc = wgpu::BufferDescriptor {
        label: Some("streamed"),
        size: 4096,
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    };
    let streamed = engine.create_buffer(&desc, StagingPolicy::Ring(2)).unwrap();
    let mut mirror = vec![0u8; 4096];
    let mut rng = Rng(7);
    let mut last = None;
    for _ in 0..500 {
        let len = 4 * (1 + rng.below(64)) as usize;
        let offset = 4 * rng.below((4096 - len as u32) / 4 + 1) as usize;
        let data = rng.bytes(len);
        mirror[offset..offset + len].copy_from_slice(&data);
        last = Some(streamed.upload(data, offset as u64).unwrap());
    }
    assert_eq!(
        last.unwrap().wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
    let readback = gpu
        .device()
        .create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 4096,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
        .unwrap();
    let mut encoder = gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    encoder.copy_buffer_to_buffer(streamed.buffer(), 0, &readback, 0, 4096);
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    assert!(
        readback
            .slice(..)
            .get_mapped_range()
            .unwrap()
            .iter()
            .eq(mirror.iter()),
        "buffer contents differ"
    );
}

#[test]
fn strip_submissions_land_byte_for_byte() {
    for (i, case) in cases().iter().enumerate() {
        let options = StreamOptions {
            priority: Default::default(),
            policy: StagingPolicy::Ring(2),
            rows_per_submit: Some(5),
        };
        assert_eq!(
            run_with(EngineConfig::default(), options, case, 150, 300 + i as u64),
            0,
            "{:?}",
            case.format
        );
    }
}

#[test]
fn parallel_fill_lands_byte_for_byte() {
    // Pieces of one row-aligned 4 KiB or more, filled by three threads at
    // once: every case is cut into several.
    let config = EngineConfig {
        fill_threads: 3,
        chunk_bytes: 4096,
        ..EngineConfig::default()
    };
    for (i, case) in cases().iter().enumerate() {
        assert_eq!(
            run_with(
                config.clone(),
                StagingPolicy::Ring(2).into(),
                case,
                150,
                400 + i as u64
            ),
            0,
            "{:?}",
            case.format
        );
    }
}
