//! Host memory imported as a device buffer (Vulkan's
//! `VK_EXT_external_memory_host`): copies read from it and write into it
//! in place, the memory outlives the buffer's last use, and a region the
//! device cannot take is an error, not a crash. On a device that cannot
//! import (GL), the tests say so and check only that.

mod common;

use memmap2::MmapMut;
use stagehand_gpu::{HostRegion, ObjectKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A mapping shared with the test, which reads it once the device is done,
/// counting the handles dropped.
struct Shared(Arc<MmapMut>, Arc<AtomicUsize>);

// SAFETY: the mapping stays mapped while this `Arc` holds it.
#[allow(unsafe_code)]
unsafe impl HostRegion for Shared {
    fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

fn wait(gpu: &stagehand_gpu::Gpu) {
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the device finished its work");
}

#[test]
#[allow(unsafe_code)] // imports host memory: the tests keep the promise
fn a_texture_copied_into_imported_host_memory_lands_there_and_the_memory_outlives_the_buffer() {
    let gpu = common::gpu();
    let Some(align) = gpu.device().host_import_alignment() else {
        eprintln!(
            "SKIPPED: {:?} cannot import host memory (no VK_EXT_external_memory_host)",
            gpu.info().backend
        );
        assert!(
            // SAFETY: nothing is imported where the device cannot import.
            unsafe {
                gpu.device()
                    .import_host_memory(Box::new(MmapMut::map_anon(4096).unwrap()), None)
            }
            .is_none()
        );
        return;
    };
    // 64 texels of 4 bytes a row (256 bytes, the copy's row alignment), 16 rows.
    let (w, h) = (64u32, 16u32);
    let len = ((w * 4 * h) as usize).next_multiple_of(align);
    let memory = Arc::new(MmapMut::map_anon(len).unwrap());
    let dropped = Arc::new(AtomicUsize::new(0));
    let region = Box::new(Shared(Arc::clone(&memory), Arc::clone(&dropped)));
    // SAFETY: the test reads the memory only after waiting for the copy.
    let buffer = unsafe { gpu.device().import_host_memory(region, Some("imported")) }
        .expect("the device imports")
        .expect("a page-aligned mapping imports");
    assert_eq!(buffer.size(), len as u64);

    let texels: Vec<u8> = (0..w * h * 4).map(|i| (i * 7 % 251) as u8).collect();
    let texture = gpu
        .device()
        .create_texture(&wgpu::TextureDescriptor {
            usage: wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST,
            ..common::texture_desc("source", w, h, 1)
        })
        .unwrap();
    gpu.queue().write_texture(
        texture.as_image_copy(),
        &texels,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(w * 4),
            rows_per_image: None,
        },
        texture.size(),
    );
    let mut encoder = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default())
        .unwrap();
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(w * 4),
                rows_per_image: None,
            },
        },
        texture.size(),
    );
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    wait(&gpu);
    assert_eq!(
        &memory[..texels.len()],
        &texels[..],
        "the copy wrote the host memory itself"
    );

    // And the other way: the imported memory as a copy's source.
    let back = read_back(&gpu, 256, |encoder, back| {
        encoder.copy_buffer_to_buffer(&buffer, 256, back, 0, 256);
    });
    assert_eq!(&back[..], &texels[256..512]);

    assert_eq!(
        dropped.load(Ordering::SeqCst),
        0,
        "held while the buffer lives"
    );
    let buffers = gpu.tracker().snapshot().get(ObjectKind::Buffer).count;
    drop(buffer);
    wait(&gpu);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "let go once the device destroyed the buffer"
    );
    assert_eq!(
        gpu.tracker().snapshot().get(ObjectKind::Buffer).count,
        buffers - 1,
        "the imported buffer was counted while it lived"
    );
}

#[test]
#[allow(unsafe_code)] // imports host memory: nothing uses it
fn host_memory_not_aligned_as_the_device_asks_is_an_error() {
    let gpu = common::gpu();
    let Some(align) = gpu.device().host_import_alignment() else {
        eprintln!("SKIPPED: this device cannot import host memory");
        return;
    };
    struct Offset(MmapMut);
    // SAFETY: 64 bytes into a mapping this value owns, to its end.
    #[allow(unsafe_code)]
    unsafe impl HostRegion for Offset {
        fn as_ptr(&self) -> *const u8 {
            self.0[64..].as_ptr()
        }
        fn len(&self) -> usize {
            self.0.len() - 64
        }
    }
    let region = Box::new(Offset(MmapMut::map_anon(4 * align).unwrap()));
    // SAFETY: the import is refused; nothing uses the memory.
    let err = unsafe { gpu.device().import_host_memory(region, Some("offset")) }
        .expect("the device imports")
        .expect_err("a start off the alignment is refused");
    assert!(err.to_string().contains("multiple of"), "{err}");
}

/// A frame laid out as staging would be, in host memory the device
/// imported (on GL, which cannot import, in a buffer of its own): copied
/// into a streamed texture in place, it lands byte for byte, and a source
/// too short for the frame is refused before anything is copied.
#[test]
#[allow(unsafe_code)] // imports host memory: read only after the upload lands
fn a_frame_copied_in_place_from_host_memory_lands_byte_for_byte() {
    use stagehand_gpu::upload::{
        EngineConfig, InPlace, StagingPolicy, TextureRegion, UploadEngine, UploadStatus,
    };
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(Arc::clone(&gpu), EngineConfig::default()).unwrap();
    // 60 texels of 4 bytes: rows of 240 bytes, 256 apart in staging.
    let (w, h) = (60u32, 9u32);
    let streamed = engine
        .create_texture(
            &wgpu::TextureDescriptor {
                usage: wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::TEXTURE_BINDING,
                ..common::texture_desc("in place", w, h, 1)
            },
            StagingPolicy::Ring(1),
        )
        .unwrap();
    let layout = streamed
        .layout_of(TextureRegion::frame(streamed.texture().size()))
        .unwrap();
    assert_eq!(layout.staging_pitch, 256);
    let offset = 512u64;
    let texel = |x: u32, y: u32| [x as u8, y as u8, (x * y) as u8, 0xa5];
    let mut bytes = vec![0u8; (offset + layout.staging_bytes()) as usize];
    for y in 0..h {
        for x in 0..w {
            let at = (offset + u64::from(y) * 256 + u64::from(x) * 4) as usize;
            bytes[at..at + 4].copy_from_slice(&texel(x, y));
        }
    }
    let buffer: wgpu::Buffer = match gpu.device().host_import_alignment() {
        Some(align) => {
            let mut memory = MmapMut::map_anon(bytes.len().next_multiple_of(align)).unwrap();
            memory[..bytes.len()].copy_from_slice(&bytes);
            let dropped = Arc::new(AtomicUsize::new(0));
            let region = Box::new(Shared(Arc::new(memory), dropped));
            // SAFETY: nothing on the CPU touches the memory once imported.
            let imported = unsafe { gpu.device().import_host_memory(region, Some("frame")) };
            (*imported.unwrap().unwrap()).clone()
        }
        None => {
            eprintln!(
                "this device cannot import host memory: the frame goes in a buffer of its own"
            );
            let made = gpu
                .device()
                .create_buffer(&wgpu::BufferDescriptor {
                    label: Some("frame"),
                    size: bytes.len() as u64,
                    usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
                .unwrap();
            gpu.queue().write_buffer(&made, 0, &bytes);
            (*made).clone()
        }
    };
    let region = TextureRegion::frame(streamed.texture().size());
    let short_at = buffer.size() - layout.staging_bytes() + 256;
    let short = InPlace::new(buffer.clone(), short_at, ());
    let refused = streamed
        .upload_in_place(region, short, stagehand_gpu::upload::IfFull::Wait)
        .unwrap()
        .wait();
    assert!(
        matches!(refused.status, UploadStatus::Failed(_)),
        "a source that ends before the frame is refused: {refused:?}"
    );
    let kept = Arc::new(AtomicUsize::new(0));
    struct Keep(Arc<AtomicUsize>);
    impl Drop for Keep {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let source = InPlace::new(buffer, offset, Keep(Arc::clone(&kept)));
    let outcome = streamed
        .upload_in_place(region, source, stagehand_gpu::upload::IfFull::Wait)
        .unwrap()
        .wait();
    assert_eq!(outcome.status, UploadStatus::Done, "{outcome:?}");
    assert_eq!(
        kept.load(Ordering::SeqCst),
        1,
        "held until the copy landed, then let go"
    );
    let got = read_rgba8(&gpu, streamed.texture());
    for y in 0..h {
        for x in 0..w {
            let at = ((y * w + x) * 4) as usize;
            assert_eq!(got[at..at + 4], texel(x, y), "texel ({x}, {y})");
        }
    }
}

/// The texels of a small RGBA8 texture (rows of at most 64 texels), packed.
fn read_rgba8(gpu: &stagehand_gpu::Gpu, texture: &wgpu::Texture) -> Vec<u8> {
    let (w, h) = (texture.width(), texture.height());
    let rows = read_back(gpu, u64::from(256 * h), |encoder, back| {
        encoder.copy_texture_to_buffer(
            texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: back,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(256),
                    rows_per_image: None,
                },
            },
            texture.size(),
        );
    });
    (0..h as usize)
        .flat_map(|y| rows[y * 256..y * 256 + w as usize * 4].to_vec())
        .collect()
}

/// The `size` bytes that the copy `record` records into a buffer of that
/// size, once the device has run it.
fn read_back(
    gpu: &stagehand_gpu::Gpu,
    size: u64,
    record: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
) -> Vec<u8> {
    let back = gpu
        .device()
        .create_buffer(&wgpu::BufferDescriptor {
            label: Some("read back"),
            size,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        })
        .unwrap();
    let mut encoder = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default())
        .unwrap();
    record(&mut encoder, &back);
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    back.slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    wait(gpu);
    back.slice(..).get_mapped_range().unwrap().to_vec()
}
