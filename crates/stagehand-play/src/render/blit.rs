//! [`Blit`]: the picture a player drew, drawn again into a target the
//! caller owns, in the caller's render pass or command encoder, at the
//! caller's viewport (bilinear when the sizes differ).

use stagehand_gpu::Gpu;
use stagehand_gpu::Result;
use stagehand_gpu::diag::Tracked;

/// Draws one texture (the player's picture) into targets of one format.
pub struct Blit {
    pipeline: Tracked<wgpu::RenderPipeline>,
    layout: Tracked<wgpu::BindGroupLayout>,
    sampler: Tracked<wgpu::Sampler>,
    /// The bind group of the texture drawn last, and that texture.
    bound: Option<(wgpu::Texture, Tracked<wgpu::BindGroup>)>,
    format: wgpu::TextureFormat,
}

impl Blit {
    /// A blit into targets of `format`.
    pub fn new(gpu: &Gpu, format: wgpu::TextureFormat) -> Result<Self> {
        let device = gpu.device();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("player blit"),
            entries: &[
                super::texture_entry(0, wgpu::TextureSampleType::Float { filterable: true }),
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        })?;
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("player blit"),
            bind_group_layouts: &[Some(&*layout)],
            immediate_size: 0,
        })?;
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("player blit"),
            source: wgpu::ShaderSource::Wgsl(
                concat!(include_str!("fullscreen.wgsl"), include_str!("blit.wgsl")).into(),
            ),
        })?;
        let pipeline = super::full_screen_pipeline(gpu, &shader, &pipeline_layout, format, &[])?;
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("player blit"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        })?;
        Ok(Self {
            pipeline,
            layout,
            sampler,
            bound: None,
            format,
        })
    }

    /// The format of the targets it draws into.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// Records a pass into `encoder` drawing `picture` into `view` (of
    /// this blit's format) at `viewport` (x, y, width, height in pixels);
    /// the rest of the target keeps what it had.
    pub fn draw(
        &mut self,
        gpu: &Gpu,
        encoder: &mut wgpu::CommandEncoder,
        picture: &wgpu::Texture,
        view: &wgpu::TextureView,
        viewport: (f32, f32, f32, f32),
    ) -> Result<()> {
        if self.bound.as_ref().is_none_or(|(t, _)| t != picture) {
            let picture_view = picture.create_view(&Default::default());
            let bind = gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("player blit"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::TextureView(&picture_view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Sampler(&self.sampler),
                    },
                ],
            })?;
            self.bound = Some((picture.clone(), bind));
        }
        let Some((_, bind)) = &self.bound else {
            unreachable!("bound just above");
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("player blit"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        let (x, y, w, h) = viewport;
        pass.set_viewport(x, y, w.max(1.0), h.max(1.0), 0.0, 1.0);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, Some(&**bind), &[]);
        pass.draw(0..3, 0..1);
        Ok(())
    }
}
