//! Every object kind is counted on creation and on drop, with exact bytes.

mod common;

use common::{SHADER, buffer_desc, gpu, texture_desc};
use stagehand_gpu::ObjectKind::{self, *};
use stagehand_gpu::diag::Snapshot;

const N: u64 = 3;

fn delta(before: &Snapshot, after: &Snapshot, kind: ObjectKind) -> (u64, u64) {
    let (b, a) = (before.get(kind), after.get(kind));
    (a.count - b.count, a.bytes - b.bytes)
}

#[test]
fn buffers_and_textures_count_objects_and_exact_bytes() {
    let gpu = gpu();
    let device = gpu.device();
    let before = gpu.tracker().snapshot();
    let buffers: Vec<_> = (0..N)
        .map(|i| device.create_buffer(&buffer_desc("b", 256 << i)).unwrap())
        .collect();
    // 64x64 RGBA8 with 3 mips: (4096 + 1024 + 256) texels of 4 bytes.
    let textures: Vec<_> = (0..N)
        .map(|_| {
            device
                .create_texture(&texture_desc("t", 64, 64, 3))
                .unwrap()
        })
        .collect();
    let after = gpu.tracker().snapshot();
    assert_eq!(delta(&before, &after, Buffer), (N, 256 + 512 + 1024));
    assert_eq!(
        delta(&before, &after, Texture),
        (N, N * 4 * (4096 + 1024 + 256))
    );
    drop((buffers, textures));
    let end = gpu.tracker().snapshot();
    assert_eq!(delta(&before, &end, Buffer), (0, 0));
    assert_eq!(delta(&before, &end, Texture), (0, 0));
}

#[test]
fn every_kind_is_counted_on_create_and_drop() {
    let gpu = gpu();
    let device = gpu.device();
    let before = gpu.tracker().snapshot();
    let texture = device
        .create_texture(&texture_desc("target", 16, 16, 1))
        .unwrap();
    let views: Vec<_> = (0..N)
        .map(|_| {
            device
                .create_texture_view(&texture, &Default::default())
                .unwrap()
        })
        .collect();
    let samplers: Vec<_> = (0..N)
        .map(|_| device.create_sampler(&Default::default()).unwrap())
        .collect();
    let bgl_desc = wgpu::BindGroupLayoutDescriptor {
        label: Some("empty"),
        entries: &[],
    };
    let bgls: Vec<_> = (0..N)
        .map(|_| device.create_bind_group_layout(&bgl_desc).unwrap())
        .collect();
    let bind_groups: Vec<_> = (0..N)
        .map(|_| {
            device
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &bgls[0],
                    entries: &[],
                })
                .unwrap()
        })
        .collect();
    let layout_desc = wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[],
        immediate_size: 0,
    };
    let layouts: Vec<_> = (0..N)
        .map(|_| device.create_pipeline_layout(&layout_desc).unwrap())
        .collect();
    let shader_desc = || wgpu::ShaderModuleDescriptor {
        label: Some("shader"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    };
    let shaders: Vec<_> = (0..N)
        .map(|_| device.create_shader_module(shader_desc()).unwrap())
        .collect();
    let render_desc = wgpu::RenderPipelineDescriptor {
        label: None,
        layout: Some(&layouts[0]),
        vertex: wgpu::VertexState {
            module: &shaders[0],
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[],
        },
        primitive: Default::default(),
        depth_stencil: None,
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &shaders[0],
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::TextureFormat::Rgba8Unorm.into())],
        }),
        multiview_mask: None,
        cache: None,
    };
    let render_pipelines: Vec<_> = (0..N)
        .map(|_| device.create_render_pipeline(&render_desc).unwrap())
        .collect();
    let compute_desc = wgpu::ComputePipelineDescriptor {
        label: None,
        layout: Some(&layouts[0]),
        module: &shaders[0],
        entry_point: Some("cs"),
        compilation_options: Default::default(),
        cache: None,
    };
    let compute_pipelines: Vec<_> = (0..N)
        .map(|_| device.create_compute_pipeline(&compute_desc).unwrap())
        .collect();
    let query_desc = wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Occlusion,
        count: 4,
    };
    let query_sets: Vec<_> = (0..N)
        .map(|_| device.create_query_set(&query_desc).unwrap())
        .collect();
    let bundle_desc = wgpu::RenderBundleEncoderDescriptor {
        label: None,
        color_formats: &[Some(wgpu::TextureFormat::Rgba8Unorm)],
        depth_stencil: None,
        sample_count: 1,
        multiview: None,
    };
    let bundle_encoders: Vec<_> = (0..N)
        .map(|_| device.create_render_bundle_encoder(&bundle_desc).unwrap())
        .collect();
    let mut encoders: Vec<_> = (0..N)
        .map(|_| device.create_command_encoder(&Default::default()).unwrap())
        .collect();

    let mid = gpu.tracker().snapshot();
    for kind in [
        TextureView,
        Sampler,
        BindGroupLayout,
        BindGroup,
        PipelineLayout,
        ShaderModule,
        RenderPipeline,
        ComputePipeline,
        QuerySet,
        RenderBundleEncoder,
        CommandEncoder,
    ] {
        let bytes = if kind == QuerySet { N * 4 * 8 } else { 0 };
        assert_eq!(delta(&before, &mid, kind), (N, bytes), "{kind}");
    }

    // Passes are counted while open, one at a time per encoder.
    for encoder in &mut encoders {
        let before_pass = gpu.tracker().stats(ComputePassEncoder).count;
        let pass = encoder.begin_compute_pass(&Default::default());
        assert_eq!(
            gpu.tracker().stats(ComputePassEncoder).count,
            before_pass + 1
        );
        drop(pass);
        let attachment = wgpu::RenderPassColorAttachment {
            view: &views[0],
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                store: wgpu::StoreOp::Store,
            },
        };
        let desc = wgpu::RenderPassDescriptor {
            color_attachments: &[Some(attachment)],
            ..Default::default()
        };
        let pass = encoder.begin_render_pass(&desc);
        assert_eq!(gpu.tracker().stats(RenderPassEncoder).count, 1);
        drop(pass);
    }
    assert_eq!(gpu.tracker().stats(RenderPassEncoder).peak_count, 1);
    assert_eq!(gpu.tracker().stats(RenderPassEncoder).created, N);

    let bundles: Vec<_> = bundle_encoders
        .into_iter()
        .map(|e| e.finish(&Default::default()).unwrap())
        .collect();
    let command_buffers: Vec<_> = encoders.into_iter().map(|e| e.finish().unwrap()).collect();
    let finished = gpu.tracker().snapshot();
    assert_eq!(delta(&before, &finished, RenderBundle), (N, 0));
    assert_eq!(delta(&before, &finished, CommandBuffer), (N, 0));
    assert_eq!(delta(&before, &finished, CommandEncoder), (0, 0));
    assert_eq!(delta(&before, &finished, RenderBundleEncoder), (0, 0));

    gpu.queue().submit(command_buffers).unwrap();
    assert_eq!(
        gpu.tracker().stats(CommandBuffer).count,
        before.get(CommandBuffer).count,
        "submitted buffers are consumed"
    );

    drop((
        bundles,
        query_sets,
        compute_pipelines,
        render_pipelines,
        shaders,
        layouts,
        bind_groups,
        bgls,
    ));
    drop((samplers, views, texture));
    let end = gpu.tracker().snapshot();
    for kind in ObjectKind::ALL {
        assert_eq!(
            delta(&before, &end, kind),
            (0, 0),
            "{kind} back to its start"
        );
    }
    assert_eq!(gpu.tracker().uncaptured_errors().0, 0);
}

#[test]
fn context_counts_its_adapter_device_and_queue() {
    let gpu = gpu();
    let s = gpu.tracker().snapshot();
    for kind in [Adapter, Device, Queue] {
        assert_eq!(s.get(kind).count, 1, "{kind}");
    }
}

#[test]
fn peaks_keep_the_high_mark_until_reset() {
    let gpu = gpu();
    let device = gpu.device();
    let keep = device.create_buffer(&buffer_desc("keep", 1024)).unwrap();
    let burst: Vec<_> = (0..5)
        .map(|_| device.create_buffer(&buffer_desc("burst", 4096)).unwrap())
        .collect();
    drop(burst);
    let s = gpu.tracker().stats(Buffer);
    assert_eq!(
        (s.count, s.bytes, s.peak_count, s.peak_bytes),
        (1, 1024, 6, 1024 + 5 * 4096)
    );
    gpu.tracker().reset_peaks();
    let s = gpu.tracker().stats(Buffer);
    assert_eq!((s.peak_count, s.peak_bytes), (1, 1024));
    drop(keep);
    assert_eq!(
        gpu.tracker().stats(Buffer).peak_count,
        1,
        "a drop does not lower the peak"
    );
}

#[test]
fn eight_threads_creating_at_once_lose_no_count() {
    let gpu = gpu();
    let start = gpu.tracker().stats(Buffer);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let gpu = &gpu;
            s.spawn(move || {
                let mut held = Vec::new();
                for i in 0..100u64 {
                    held.push(
                        gpu.device()
                            .create_buffer(&buffer_desc("mt", 4 * (1 + (t + i) % 16)))
                            .unwrap(),
                    );
                    if i % 2 == 0 {
                        held.remove(0);
                    }
                }
            });
        }
    });
    let end = gpu.tracker().stats(Buffer);
    assert_eq!((end.count, end.bytes), (start.count, start.bytes));
    assert_eq!(end.created - start.created, 800);
}

#[test]
fn into_inner_stops_counting() {
    let gpu = gpu();
    let buffer = gpu
        .device()
        .create_buffer(&buffer_desc("handed-off", 64))
        .unwrap();
    assert_eq!(gpu.tracker().stats(Buffer).count, 1);
    let raw: wgpu::Buffer = buffer.into_inner();
    assert_eq!(gpu.tracker().stats(Buffer).count, 0);
    drop(raw);
}
