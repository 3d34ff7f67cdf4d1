//! Bad descriptors get typed errors from stagehand, leave every count as it
//! was, raise nothing in wgpu's uncaptured-error handler, and do not panic.

mod common;

use common::{buffer_desc, gpu, texture_desc};
use stagehand_gpu::{Error, Gpu, GpuOptions, ObjectKind};

/// Runs `f`, expecting an error, and checks the counts did not move.
fn rejects<T: std::fmt::Debug>(gpu: &Gpu, f: impl FnOnce() -> stagehand_gpu::Result<T>) -> Error {
    let before = gpu.tracker().snapshot();
    let err = f().expect_err("bad input must be rejected");
    let after = gpu.tracker().snapshot();
    assert_eq!(before.kinds, after.kinds, "counts unchanged after: {err}");
    assert_eq!(
        gpu.tracker().uncaptured_errors().0,
        0,
        "nothing reached the uncaptured handler: {err}"
    );
    err
}

#[test]
fn zero_sized_texture_is_an_invalid_descriptor() {
    let gpu = gpu();
    let err = rejects(&gpu, || {
        gpu.device()
            .create_texture(&texture_desc("empty", 0, 16, 1))
    });
    assert!(
        matches!(
            err,
            Error::InvalidDescriptor {
                kind: ObjectKind::Texture,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("\"empty\"") && err.to_string().contains("zero extent"),
        "{err}"
    );
}

#[test]
fn too_many_mips_names_the_most_allowed() {
    let gpu = gpu();
    let err = rejects(&gpu, || {
        gpu.device()
            .create_texture(&texture_desc("mips", 64, 64, 8))
    });
    assert!(matches!(err, Error::InvalidDescriptor { .. }), "{err}");
    assert!(err.to_string().contains("outside 1..=7"), "{err}");
}

#[test]
fn texture_over_the_size_limit_is_an_invalid_descriptor() {
    let gpu = gpu();
    let max = gpu.device().limits().max_texture_dimension_2d;
    let err = rejects(&gpu, || {
        gpu.device()
            .create_texture(&texture_desc("huge", max + 1, 1, 1))
    });
    assert!(
        err.to_string().contains("exceeds the device's 2-D limit"),
        "{err}"
    );
}

#[test]
fn format_needing_a_feature_the_device_lacks_is_unsupported() {
    let gpu = gpu();
    let mut desc = texture_desc("bc1", 64, 64, 1);
    desc.format = wgpu::TextureFormat::Bc1RgbaUnorm;
    desc.usage = wgpu::TextureUsages::TEXTURE_BINDING;
    let err = rejects(&gpu, || gpu.device().create_texture(&desc));
    match err {
        Error::UnsupportedFormat { format, missing } => {
            assert_eq!(format, wgpu::TextureFormat::Bc1RgbaUnorm);
            assert!(missing.contains(wgpu::Features::TEXTURE_COMPRESSION_BC));
        }
        other => panic!("expected UnsupportedFormat, got {other}"),
    }
}

#[test]
fn usage_the_format_does_not_allow_is_unsupported() {
    let gpu = gpu();
    let mut desc = texture_desc("srgb-storage", 16, 16, 1);
    desc.format = wgpu::TextureFormat::Rgba8UnormSrgb;
    desc.usage = wgpu::TextureUsages::STORAGE_BINDING;
    let err = rejects(&gpu, || gpu.device().create_texture(&desc));
    assert!(matches!(err, Error::UnsupportedUsage { .. }), "{err}");
}

#[test]
fn bad_sample_count_is_an_invalid_descriptor() {
    let gpu = gpu();
    let mut desc = texture_desc("msaa", 16, 16, 1);
    desc.sample_count = 3;
    let err = rejects(&gpu, || gpu.device().create_texture(&desc));
    assert!(err.to_string().contains("sample_count 3"), "{err}");
}

#[test]
fn buffers_over_the_limit_or_with_bad_usage_are_invalid() {
    let gpu = gpu();
    let max = gpu.device().limits().max_buffer_size;
    let err = rejects(&gpu, || {
        gpu.device().create_buffer(&buffer_desc("huge", max + 1))
    });
    assert!(err.to_string().contains("max_buffer_size"), "{err}");
    let mut desc = buffer_desc("no-usage", 16);
    desc.usage = wgpu::BufferUsages::empty();
    let err = rejects(&gpu, || gpu.device().create_buffer(&desc));
    assert!(err.to_string().contains("usage is empty"), "{err}");
    desc.usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::VERTEX;
    let err = rejects(&gpu, || gpu.device().create_buffer(&desc));
    assert!(err.to_string().contains("MAP_READ"), "{err}");
    let mut desc = buffer_desc("unaligned", 3);
    desc.mapped_at_creation = true;
    let err = rejects(&gpu, || gpu.device().create_buffer(&desc));
    assert!(err.to_string().contains("multiple of 4"), "{err}");
}

#[test]
fn empty_query_set_is_invalid() {
    let gpu = gpu();
    let desc = wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Occlusion,
        count: 0,
    };
    let err = rejects(&gpu, || gpu.device().create_query_set(&desc));
    assert!(
        matches!(
            err,
            Error::InvalidDescriptor {
                kind: ObjectKind::QuerySet,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn shader_that_does_not_compile_is_a_validation_error_from_wgpu() {
    let gpu = gpu();
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some("broken"),
        source: wgpu::ShaderSource::Wgsl("fn main( { nonsense".into()),
    };
    let err = rejects(&gpu, || gpu.device().create_shader_module(desc));
    assert!(
        matches!(
            err,
            Error::Validation {
                kind: ObjectKind::ShaderModule,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("\"broken\""), "{err}");
}

#[test]
fn bind_group_not_matching_its_layout_is_a_validation_error() {
    let gpu = gpu();
    let entry = wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: true },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let layout = gpu
        .device()
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries: &[entry],
        })
        .unwrap();
    let desc = wgpu::BindGroupDescriptor {
        label: Some("missing-entry"),
        layout: &layout,
        entries: &[],
    };
    let err = rejects(&gpu, || gpu.device().create_bind_group(&desc));
    assert!(
        matches!(
            err,
            Error::Validation {
                kind: ObjectKind::BindGroup,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn encoder_errors_come_back_from_finish() {
    let gpu = gpu();
    let src = gpu.device().create_buffer(&buffer_desc("src", 16)).unwrap();
    let dst = gpu.device().create_buffer(&buffer_desc("dst", 16)).unwrap();
    let before = gpu.tracker().stats(ObjectKind::CommandBuffer);
    let mut encoder = gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    // `src` lacks COPY_SRC usage: the copy is recorded, and rejected at finish.
    encoder.copy_buffer_to_buffer(&src, 0, &dst, 0, 16);
    let err = encoder.finish().expect_err("invalid copy");
    assert!(matches!(err, Error::Validation { .. }), "{err}");
    assert_eq!(
        gpu.tracker().stats(ObjectKind::CommandBuffer).count,
        before.count
    );
    assert_eq!(gpu.tracker().stats(ObjectKind::CommandEncoder).count, 0);
    assert_eq!(gpu.tracker().uncaptured_errors().0, 0);
}

#[test]
fn unknown_backend_and_adapter_names_are_typed_errors() {
    let err = Gpu::open(&GpuOptions::backend("glide")).unwrap_err();
    assert!(
        matches!(err, Error::UnknownBackend(ref b) if b == "glide"),
        "{err}"
    );
    let options = GpuOptions {
        adapter: Some("no-such-adapter-anywhere".into()),
        ..GpuOptions::default()
    };
    let err = Gpu::open(&options).unwrap_err();
    assert!(matches!(err, Error::AdapterNotFound { .. }), "{err}");
}

#[test]
fn no_adapter_error_says_what_to_install() {
    // No DX12 or Metal on Linux: the search finds nothing.
    if cfg!(target_os = "windows") || cfg!(target_os = "macos") {
        eprintln!("SKIPPED: this machine may have a DX12 or Metal adapter");
        return;
    }
    let err = Gpu::open(&GpuOptions::backend("dx12,metal")).unwrap_err();
    assert!(matches!(err, Error::NoAdapter { .. }), "{err}");
    assert!(err.to_string().contains("mesa-vulkan-drivers"), "{err}");
}

#[test]
fn work_in_flight_survives_a_rejected_creation() {
    let gpu = gpu();
    let good = gpu
        .device()
        .create_buffer(&buffer_desc("good", 64))
        .unwrap();
    gpu.queue().write_buffer(&good, 0, &[7u8; 64]);
    let _ = gpu
        .device()
        .create_texture(&texture_desc("bad", 0, 0, 1))
        .unwrap_err();
    let encoder = gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    assert_eq!(gpu.tracker().stats(ObjectKind::Buffer).count, 1);
    assert_eq!(gpu.tracker().uncaptured_errors().0, 0);
}
