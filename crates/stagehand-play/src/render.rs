//! The player's render pass: a full-screen triangle sampling the frame on
//! screen, drawn into an offscreen target the size of a display window.

use stagehand_gpu::Gpu;
use stagehand_gpu::Result;
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::upload::FrameQueue;

const SHADER: &str = r#"
struct Out { @builtin(position) pos: vec4<f32>, @location(0) uv: vec2<f32> };

@vertex
fn vs(@builtin(vertex_index) i: u32) -> Out {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: Out;
    out.pos = vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0);
    out.uv = uv;
    return out;
}

@group(0) @binding(0) var frame: texture_2d<f32>;
@group(0) @binding(1) var linear: sampler;

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    return textureSample(frame, linear, in.uv);
}
"#;

/// The output target's format.
pub const OUTPUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Draws frame-queue slots into the output target.
pub struct Renderer {
    pipeline: Tracked<wgpu::RenderPipeline>,
    /// One bind group per frame-queue slot.
    binds: Vec<Tracked<wgpu::BindGroup>>,
    output: Tracked<wgpu::Texture>,
    output_view: Tracked<wgpu::TextureView>,
}

impl Renderer {
    /// A renderer for `queue`'s slots into a target of `size`.
    pub fn new(gpu: &Gpu, queue: &FrameQueue, size: (u32, u32)) -> Result<Self> {
        let device = gpu.device();
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("play"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        })?;
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("play"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &shader,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &shader,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(OUTPUT_FORMAT.into())],
            }),
            multiview_mask: None,
            cache: None,
        })?;
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("play"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        })?;
        let layout = pipeline.get_bind_group_layout(0);
        let binds = (0..queue.depth())
            .map(|slot| {
                let view = queue.texture(slot).create_view(&Default::default());
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("play frame"),
                    layout: &layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::TextureView(&view),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::Sampler(&sampler),
                        },
                    ],
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let output = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("play output"),
            size: wgpu::Extent3d {
                width: size.0,
                height: size.1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: OUTPUT_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        })?;
        let output_view = device.create_texture_view(&output, &Default::default())?;
        Ok(Self {
            pipeline,
            binds,
            output,
            output_view,
        })
    }

    /// Draws `slot` (or clears, before the first frame) and submits.
    pub fn draw(&self, gpu: &Gpu, slot: Option<usize>) -> Result<()> {
        let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
        {
            let attachment = wgpu::RenderPassColorAttachment {
                view: &self.output_view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
            };
            let desc = wgpu::RenderPassDescriptor {
                label: Some("play"),
                color_attachments: &[Some(attachment)],
                ..Default::default()
            };
            let mut pass = encoder.begin_render_pass(&desc);
            if let Some(bind) = slot.and_then(|s| self.binds.get(s)) {
                pass.set_pipeline(&self.pipeline);
                pass.set_bind_group(0, Some(&**bind), &[]);
                pass.draw(0..3, 0..1);
            }
        }
        gpu.queue().submit([encoder.finish()?])?;
        Ok(())
    }

    /// Reads back what the last draw put in the target: tightly packed RGBA8.
    pub fn read_back(&self, gpu: &Gpu) -> Result<(u32, u32, Vec<u8>)> {
        let (w, h) = (self.output.width(), self.output.height());
        let pitch = (w * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("play readback"),
            size: u64::from(pitch * h),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
        encoder.copy_texture_to_buffer(
            self.output.as_image_copy(),
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
        gpu.queue().submit([encoder.finish()?])?;
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
        let mapped = rx.recv().ok().and_then(|r| r.ok()).is_some();
        let view = buffer.slice(..).get_mapped_range();
        let mut out = Vec::with_capacity((w * h * 4) as usize);
        if let (true, Ok(view)) = (mapped, view) {
            for row in 0..h as usize {
                let start = row * pitch as usize;
                out.extend_from_slice(&view[start..start + (w * 4) as usize]);
            }
        }
        Ok((w, h, out))
    }
}
