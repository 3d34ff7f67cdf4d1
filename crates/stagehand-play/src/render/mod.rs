//! The player's render pass: the frame on screen fitted into the target
//! with its aspect ratio kept (black bars around it), through the display
//! transform for scene-linear sources (`display.wgsl`), or converted from
//! Y'CbCr (`yuv.wgsl`).

mod display;
pub mod overlay;
mod readback;
mod yuv;

pub use display::{Display, Transfer, encode};
pub use readback::read_texture;

use stagehand_gpu::Gpu;
use stagehand_gpu::Result;
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::upload::FrameQueue;

use crate::yuv::Yuv;

/// The offscreen target's format, headless.
pub const OUTPUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Draws frame-queue slots into the offscreen target, or into a window's
/// surface texture (with the overlay).
pub struct Renderer {
    shader: Tracked<wgpu::ShaderModule>,
    pipeline_layout: Tracked<wgpu::PipelineLayout>,
    /// Draws a frame into a target of `format`.
    pipeline: Tracked<wgpu::RenderPipeline>,
    display: Option<Display>,
    layout: Tracked<wgpu::BindGroupLayout>,
    /// `None` for an integer texture, read texel by texel.
    sampler: Option<Tracked<wgpu::Sampler>>,
    /// One bind group per frame-queue slot.
    binds: Vec<Tracked<wgpu::BindGroup>>,
    /// The display transform's parameters, for RGBA frames; `None` for
    /// Y'CbCr frames, whose parameters are pipeline constants.
    params: Option<Tracked<wgpu::Buffer>>,
    output: Tracked<wgpu::Texture>,
    output_view: Tracked<wgpu::TextureView>,
    /// The format of every target it draws into (8-bit, not sRGB).
    format: wgpu::TextureFormat,
    /// The frames' size, for the letterbox.
    frame_size: (u32, u32),
}

impl Renderer {
    /// A renderer for `queue`'s slots (frames of `frame_size`) into
    /// targets of `format` (an 8-bit format, not sRGB: the pass writes
    /// display-encoded values), with an offscreen target of `size`.
    /// `display` is the transform for scene-linear sources; `None` draws
    /// display-referred sources as they are stored. `yuv` says the slots
    /// hold a picture's Y'CbCr planes, packed ([`crate::yuv`]), converted
    /// to RGB as they are drawn.
    pub fn new(
        gpu: &Gpu,
        queue: &FrameQueue,
        frame_size: (u32, u32),
        size: (u32, u32),
        format: wgpu::TextureFormat,
        display: Option<Display>,
        yuv: Option<Yuv>,
    ) -> Result<Self> {
        let device = gpu.device();
        let frame_format = queue.texture(0).format();
        let sampling = Sampling::of(gpu, frame_format, yuv.is_some());
        let layout = sampling.layout(gpu)?;
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("play"),
            bind_group_layouts: &[Some(&*layout)],
            immediate_size: 0,
        })?;
        let source = match yuv {
            Some(_) => yuv::shader(frame_format),
            None => concat!(
                include_str!("fullscreen.wgsl"),
                include_str!("display.wgsl")
            ),
        };
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("play display"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        })?;
        let constants = match &yuv {
            Some(y) => yuv::constants(y, frame_size.0, frame_size.1, frame_format),
            None => Display::constants(display).to_vec(),
        };
        let pipeline = full_screen_pipeline(gpu, &shader, &pipeline_layout, format, &constants)?;
        let sampler = sampling.sampler(gpu)?;
        let params = match yuv {
            Some(_) => None,
            None => Some(Self::display_params(gpu, display)?),
        };
        let output = Self::target(gpu, size, format)?;
        let output_view = device.create_texture_view(&output, &Default::default())?;
        let mut renderer = Self {
            shader,
            pipeline_layout,
            pipeline,
            display,
            layout,
            sampler,
            binds: Vec::new(),
            params,
            output,
            output_view,
            format,
            frame_size,
        };
        renderer.binds = (0..queue.depth())
            .map(|slot| renderer.bind(gpu, queue.texture(slot)))
            .collect::<Result<Vec<_>>>()?;
        Ok(renderer)
    }

    /// The display transform's parameter block, written for `display`.
    fn display_params(gpu: &Gpu, display: Option<Display>) -> Result<Tracked<wgpu::Buffer>> {
        let params = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("play display"),
            size: display::PARAMS_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })?;
        gpu.queue()
            .write_buffer(&params, 0, &Display::params_of(display));
        Ok(params)
    }

    /// A bind group that draws `texture` (a frame like the queue's).
    pub fn bind(&self, gpu: &Gpu, texture: &wgpu::Texture) -> Result<Tracked<wgpu::BindGroup>> {
        let view = texture.create_view(&Default::default());
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::TextureView(&view),
        }];
        if let Some(sampler) = &self.sampler {
            entries.push(wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::Sampler(sampler),
            });
        }
        if let Some(params) = &self.params {
            entries.push(wgpu::BindGroupEntry {
                binding: 2,
                resource: params.as_entire_binding(),
            });
        }
        gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("play frame"),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// The bind group of frame-queue slot `slot`.
    pub fn slot(&self, slot: usize) -> Option<&wgpu::BindGroup> {
        self.binds.get(slot).map(|b| &**b)
    }

    fn target(
        gpu: &Gpu,
        size: (u32, u32),
        format: wgpu::TextureFormat,
    ) -> Result<Tracked<wgpu::Texture>> {
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
        gpu.device()
            .create_texture(&texture_2d("play output", size, format, usage))
    }

    /// The format it draws into.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// Gives the offscreen target another size (a window's, to read back
    /// what it presented).
    pub fn set_output_size(&mut self, gpu: &Gpu, size: (u32, u32)) -> Result<()> {
        if (self.output.width(), self.output.height()) != size {
            self.output = Self::target(gpu, size, self.format)?;
            self.output_view = gpu
                .device()
                .create_texture_view(&self.output, &Default::default())?;
        }
        Ok(())
    }

    /// Changes the display transform for the draws that follow: the
    /// exposure at once, the transfer function by a new pipeline.
    pub fn set_display(&mut self, gpu: &Gpu, display: Option<Display>) -> Result<()> {
        let Some(params) = &self.params else {
            // Y'CbCr frames are display-referred: nothing to transform.
            self.display = display;
            return Ok(());
        };
        if Display::constants(display) != Display::constants(self.display) {
            self.pipeline = full_screen_pipeline(
                gpu,
                &self.shader,
                &self.pipeline_layout,
                self.format,
                &Display::constants(display),
            )?;
        }
        self.display = display;
        gpu.queue()
            .write_buffer(params, 0, &Display::params_of(display));
        Ok(())
    }

    /// Draws the frame `bind` shows (or clears, before the first frame)
    /// into the offscreen target and submits.
    pub fn draw(&self, gpu: &Gpu, bind: Option<&wgpu::BindGroup>) -> Result<()> {
        self.draw_to(gpu, None, bind, None)
    }

    /// Draws the frame `bind` shows into `target` (a view of this
    /// renderer's format and its size; `None`: the offscreen target), with
    /// the overlay over it when given (the picture then fits above the
    /// timeline strip), and submits.
    pub fn draw_to(
        &self,
        gpu: &Gpu,
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        bind: Option<&wgpu::BindGroup>,
        overlay: Option<(&overlay::Overlay, bool)>,
    ) -> Result<()> {
        let (view, size) = target.unwrap_or((
            &self.output_view,
            (self.output.width(), self.output.height()),
        ));
        let area = match overlay {
            Some(_) => (size.0, size.1.saturating_sub(overlay::BAR_HEIGHT)),
            None => size,
        };
        let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("play"),
                color_attachments: &[Some(cleared(view))],
                ..Default::default()
            });
            if let Some(bind) = bind
                && area.0 > 0
                && area.1 > 0
            {
                let (x, y, w, h) = letterbox(self.frame_size, area);
                pass.set_viewport(x, y, w, h, 0.0, 1.0);
                pass.set_pipeline(&self.pipeline);
                pass.set_bind_group(0, Some(bind), &[]);
                pass.draw(0..3, 0..1);
            }
            if let Some((overlay, hud)) = overlay {
                overlay.draw(&mut pass, size, hud);
            }
        }
        gpu.queue().submit([encoder.finish()?])?;
        Ok(())
    }

    /// Reads back what the last draw put in the offscreen target: tightly
    /// packed RGBA8 (whatever the order of the target's channels).
    pub fn read_back(&self, gpu: &Gpu) -> Result<(u32, u32, Vec<u8>)> {
        let (w, h) = (self.output.width(), self.output.height());
        let mut texels = read_texture(gpu, &self.output, 4)?;
        if matches!(
            self.format,
            wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb
        ) {
            for px in texels.chunks_exact_mut(4) {
                px.swap(0, 2);
            }
        }
        Ok((w, h, texels))
    }
}

/// How a frame's texture is read: filtered through a sampler (a float
/// or normalised texture), or texel by texel (an integer one, or a float
/// one the device cannot filter: sampled nearest).
struct Sampling {
    /// The texture's sample type in the layout.
    sample_type: wgpu::TextureSampleType,
    /// The sampler's filter; `None`: no sampler (an integer texture).
    filter: Option<wgpu::FilterMode>,
    /// Whether the layout has the display transform's parameter block
    /// (RGBA frames).
    params: bool,
}

impl Sampling {
    /// How frames in `format` are read (`yuv`: packed Y'CbCr planes).
    fn of(gpu: &Gpu, format: wgpu::TextureFormat, yuv: bool) -> Self {
        if yuv && yuv::is_integer(format) {
            return Self {
                sample_type: wgpu::TextureSampleType::Uint,
                filter: None,
                params: false,
            };
        }
        // Rgba32Float filters only with an adapter feature: sample it
        // nearest where the device lacks it.
        let filterable = matches!(
            format.sample_type(None, Some(gpu.device().features())),
            Some(wgpu::TextureSampleType::Float { filterable: true })
        );
        Self {
            sample_type: wgpu::TextureSampleType::Float { filterable },
            filter: Some(if filterable {
                wgpu::FilterMode::Linear
            } else {
                wgpu::FilterMode::Nearest
            }),
            params: !yuv,
        }
    }

    /// The bind group layout: the texture at 0, the sampler at 1, the
    /// parameter block at 2 (each where there is one).
    fn layout(&self, gpu: &Gpu) -> Result<Tracked<wgpu::BindGroupLayout>> {
        let mut entries = vec![texture_entry(0, self.sample_type)];
        if let Some(filter) = self.filter {
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: 1,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Sampler(match filter {
                    wgpu::FilterMode::Linear => wgpu::SamplerBindingType::Filtering,
                    wgpu::FilterMode::Nearest => wgpu::SamplerBindingType::NonFiltering,
                }),
                count: None,
            });
        }
        if self.params {
            entries.push(uniform_entry(2));
        }
        gpu.device()
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("play frame"),
                entries: &entries,
            })
    }

    /// The sampler, where the texture is filtered.
    fn sampler(&self, gpu: &Gpu) -> Result<Option<Tracked<wgpu::Sampler>>> {
        let Some(filter) = self.filter else {
            return Ok(None);
        };
        let sampler = gpu.device().create_sampler(&wgpu::SamplerDescriptor {
            label: Some("play"),
            mag_filter: filter,
            min_filter: filter,
            ..Default::default()
        })?;
        Ok(Some(sampler))
    }
}

/// A pipeline drawing `shader`'s full-screen triangle (`vs`, `fs`) into
/// targets of `format`, with pipeline constants `constants`: each
/// pipeline then runs only its own arithmetic (a software rasteriser would
/// otherwise pay for every branch, and every uniform it loads, on every
/// pixel).
fn full_screen_pipeline(
    gpu: &Gpu,
    shader: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    format: wgpu::TextureFormat,
    constants: &[(&str, f64)],
) -> Result<Tracked<wgpu::RenderPipeline>> {
    gpu.device()
        .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("play"),
            layout: Some(layout),
            vertex: wgpu::VertexState {
                module: shader,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: shader,
                entry_point: Some("fs"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    ..Default::default()
                },
                targets: &[Some(format.into())],
            }),
            multiview_mask: None,
            cache: None,
        })
}

/// The target's attachment, cleared to black (the letterbox's bars).
fn cleared(view: &wgpu::TextureView) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
            store: wgpu::StoreOp::Store,
        },
    }
}

/// A fragment-stage binding of a plain 2-D texture.
pub(crate) fn texture_entry(
    binding: u32,
    sample_type: wgpu::TextureSampleType,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type,
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    }
}

/// A fragment-stage binding of a uniform buffer.
pub(crate) fn uniform_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A plain 2-D texture: one mip, one layer, one sample.
pub fn texture_2d(
    label: &'static str,
    size: (u32, u32),
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    }
}

/// The viewport that fits a `frame`-sized picture into `target` with its
/// aspect ratio kept, centred: x, y, width, height in pixels.
pub fn letterbox(frame: (u32, u32), target: (u32, u32)) -> (f32, f32, f32, f32) {
    let (fw, fh) = (f64::from(frame.0.max(1)), f64::from(frame.1.max(1)));
    let (tw, th) = (f64::from(target.0), f64::from(target.1));
    let scale = (tw / fw).min(th / fh);
    // Whole pixels, so a frame drawn at its own size maps texel to pixel;
    // never zero (a viewport must have an area).
    let w = (fw * scale).round().clamp(1.0, tw.max(1.0));
    let h = (fh * scale).round().clamp(1.0, th.max(1.0));
    let (x, y) = (((tw - w) / 2.0).floor(), ((th - h) / 2.0).floor());
    (x as f32, y as f32, w as f32, h as f32)
}

#[cfg(test)]
mod tests {
    use super::letterbox;

    #[test]
    fn letterbox_keeps_the_aspect_ratio() {
        assert_eq!(
            letterbox((3840, 2160), (1920, 1080)),
            (0.0, 0.0, 1920.0, 1080.0)
        );
        // A 16:9 frame in a square target: bars above and below.
        assert_eq!(
            letterbox((1600, 900), (800, 800)),
            (0.0, 175.0, 800.0, 450.0)
        );
        // A 4:3 frame in a 16:9 target: bars left and right.
        assert_eq!(
            letterbox((640, 480), (1920, 1080)),
            (240.0, 0.0, 1440.0, 1080.0)
        );
        // A sliver keeps at least a pixel.
        assert_eq!(letterbox((10_000, 10), (64, 36)).3, 1.0);
    }
}
