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
        let layout = super::filtered_texture_layout(gpu, "player blit")?;
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
        let sampler = super::linear_sampler(gpu, "player blit")?;
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
        self.bind_picture(gpu, picture)?;
        let Some((_, bind)) = &self.bound else {
            unreachable!("bound just above");
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("player blit"),
            color_attachments: &[Some(kept(view))],
            ..Default::default()
        });
        let (x, y, w, h) = viewport;
        pass.set_viewport(x, y, w.max(1.0), h.max(1.0), 0.0, 1.0);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, Some(&**bind), &[]);
        pass.draw(0..3, 0..1);
        Ok(())
    }

    /// Makes the bind group that draws `picture`, unless the one made
    /// last draws it.
    fn bind_picture(&mut self, gpu: &Gpu, picture: &wgpu::Texture) -> Result<()> {
        if self.bound.as_ref().is_none_or(|(t, _)| t != picture) {
            let picture_view = picture.create_view(&Default::default());
            let bind = super::filtered_texture_bind(
                gpu,
                "player blit",
                &self.layout,
                &picture_view,
                &self.sampler,
            )?;
            self.bound = Some((picture.clone(), bind));
        }
        Ok(())
    }
}

/// The target's attachment, keeping what it holds outside the draw.
fn kept(view: &wgpu::TextureView) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: wgpu::LoadOp::Load,
            store: wgpu::StoreOp::Store,
        },
    }
}
