//! The player's render pass: the frame on screen fitted into the target
//! with its aspect ratio kept (black bars around it), through the display
//! transform for scene-linear sources (`display.wgsl`), or converted from
//! Y'CbCr (`yuv.wgsl`; first at the frame's own size when the picture is
//! much larger, `upscale.rs`).

mod bars;
pub mod blit;
mod display;
pub mod overlay;
pub(crate) mod readback;
mod upscale;
mod yuv;

pub use display::{Display, Transfer, encode};
use readback::Readback;
pub use readback::read_texture;

use stagehand_gpu::Gpu;
use stagehand_gpu::Result;
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::upload::FrameQueue;

use crate::yuv::Yuv;
use bars::Bars;
use upscale::Upscale;

/// The offscreen target's format, headless.
pub const OUTPUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// A frame to draw: the bind group that shows it ([`Renderer::slot`],
/// [`Renderer::bind`]) and a number naming its contents (the player's
/// tick), so that work done for one picture is not done again for it.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// The frame's bind group.
    pub bind: &'a wgpu::BindGroup,
    /// Names the picture: the same id means the same texels.
    pub id: u64,
}

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
    /// Where the offscreen target is read back to present it by copying.
    readback: Readback,
    /// The format of every target it draws into (8-bit, not sRGB).
    format: wgpu::TextureFormat,
    /// The frames' size, for the letterbox.
    frame_size: (u32, u32),
    /// Y'CbCr frames only: the conversion at the frame's size, for
    /// pictures much larger than it.
    upscale: Option<Upscale>,
    /// The letterbox's bars.
    bars: Bars,
}

/// The shader and pipelines a renderer draws with: the display
/// transform for RGBA frames, or the Y'CbCr conversion (and the upscale
/// that follows it) for a movie's planes.
struct Program {
    shader: Tracked<wgpu::ShaderModule>,
    pipeline_layout: Tracked<wgpu::PipelineLayout>,
    pipeline: Tracked<wgpu::RenderPipeline>,
    upscale: Option<Upscale>,
}

impl Program {
    /// The program that draws frames of `frame_size` in `frame_format`,
    /// read through `layout`, into targets of `format`: through `display`
    /// for RGBA frames, converted (and upscaled where that pays) for
    /// `yuv` ones.
    fn new(
        gpu: &Gpu,
        layout: &wgpu::BindGroupLayout,
        frame_format: wgpu::TextureFormat,
        frame_size: (u32, u32),
        format: wgpu::TextureFormat,
        display: Option<Display>,
        yuv: Option<Yuv>,
    ) -> Result<Self> {
        let pipeline_layout = Self::pipeline_layout(gpu, layout)?;
        let shader = Self::shader(gpu, frame_format, yuv.is_some())?;
        let constants = match &yuv {
            Some(y) => yuv::constants(y, frame_size.0, frame_size.1, frame_format),
            None => Display::constants(display).to_vec(),
        };
        let pipeline = full_screen_pipeline(gpu, &shader, &pipeline_layout, format, &constants)?;
        let upscale = match &yuv {
            Some(_) => {
                let into = Upscale::format(gpu, format);
                let convert =
                    full_screen_pipeline(gpu, &shader, &pipeline_layout, into, &constants)?;
                Some(Upscale::new(gpu, frame_size, into, convert, format)?)
            }
            None => None,
        };
        Ok(Self {
            shader,
            pipeline_layout,
            pipeline,
            upscale,
        })
    }

    /// The pipeline layout: one bind group, of `layout`.
    fn pipeline_layout(
        gpu: &Gpu,
        layout: &wgpu::BindGroupLayout,
    ) -> Result<Tracked<wgpu::PipelineLayout>> {
        gpu.device()
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("play"),
                bind_group_layouts: &[Some(layout)],
                immediate_size: 0,
            })
    }

    /// The shader for frames in `frame_format`: the Y'CbCr conversion for
    /// a movie's planes (`yuv`), else the display transform.
    fn shader(
        gpu: &Gpu,
        frame_format: wgpu::TextureFormat,
        yuv: bool,
    ) -> Result<Tracked<wgpu::ShaderModule>> {
        let source = if yuv {
            yuv::shader(frame_format)
        } else {
            concat!(
                include_str!("fullscreen.wgsl"),
                include_str!("display.wgsl")
            )
        };
        gpu.device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("play display"),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            })
    }
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
        let Program {
            shader,
            pipeline_layout,
            pipeline,
            upscale,
        } = Program::new(gpu, &layout, frame_format, frame_size, format, display, yuv)?;
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
            readback: Readback::default(),
            format,
            frame_size,
            upscale,
            bars: Bars::new(gpu, format)?,
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
        // Sampled too: a caller draws the picture into its own target.
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT
            | wgpu::TextureUsages::COPY_SRC
            | wgpu::TextureUsages::TEXTURE_BINDING;
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

    /// The offscreen target: the picture as drawn (headless, and for a
    /// caller that draws it itself).
    pub fn output_texture(&self) -> &wgpu::Texture {
        &self.output
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

    /// Draws `frame` (or clears, before the first frame) into the
    /// offscreen target and submits.
    pub fn draw(&self, gpu: &Gpu, frame: Option<Frame<'_>>) -> Result<()> {
        self.draw_to(gpu, None, frame, None)
    }

    /// Draws `frame` into `target` (a view of this renderer's format and
    /// its size; `None`: the offscreen target), with the overlay over it
    /// when given (the picture then fits above the timeline strip), and
    /// submits: one pass into the target (after one at the frame's size,
    /// for a Y'CbCr frame much smaller than its picture, not yet
    /// converted).
    pub fn draw_to(
        &self,
        gpu: &Gpu,
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        frame: Option<Frame<'_>>,
        overlay: Option<(&overlay::Overlay, bool)>,
    ) -> Result<()> {
        let (view, size) = target.unwrap_or((&self.output_view, self.output_size()));
        let frame = frame.zip(self.picture_viewport(size, overlay.is_some()));
        let upscale = frame.and_then(|(_, (_, _, w, h))| self.upscale_for((w as u32, h as u32)));
        let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
        if let (Some(upscale), Some((frame, _))) = (upscale, frame) {
            upscale.convert(&mut encoder, frame.bind, frame.id);
        }
        {
            // The bars, the picture and the overlay draw every pixel.
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("play"),
                color_attachments: &[Some(drawn_over(view))],
                ..Default::default()
            });
            self.bars
                .draw(&mut pass, size, frame.map(|(_, viewport)| viewport));
            if let Some((frame, viewport)) = frame {
                self.draw_picture(&mut pass, frame, viewport, upscale);
            }
            if let Some((overlay, hud)) = overlay {
                overlay.draw(&mut pass, size, hud);
            }
        }
        gpu.queue().submit([encoder.finish()?])?;
        Ok(())
    }

    /// The offscreen target's size.
    fn output_size(&self) -> (u32, u32) {
        (self.output.width(), self.output.height())
    }

    /// Where the picture goes in a target of `size` (x, y, width, height),
    /// above the timeline strip where there is an `overlay`; `None` where
    /// no room is left for it.
    fn picture_viewport(&self, size: (u32, u32), overlay: bool) -> Option<(f32, f32, f32, f32)> {
        let area = if overlay {
            (size.0, size.1.saturating_sub(overlay::BAR_HEIGHT))
        } else {
            size
        };
        (area.0 > 0 && area.1 > 0).then(|| letterbox(self.frame_size, area))
    }

    /// The upscale to draw a picture of `picture` pixels through, where
    /// there is one and converting first pays.
    fn upscale_for(&self, picture: (u32, u32)) -> Option<&Upscale> {
        let upscale = self.upscale.as_ref()?;
        Upscale::pays(self.frame_size, picture).then_some(upscale)
    }

    /// Draws `frame` into `pass` at `viewport` (x, y, width, height):
    /// through `upscale`'s converted picture where given, else with this
    /// renderer's pipeline.
    fn draw_picture(
        &self,
        pass: &mut wgpu::RenderPass<'_>,
        frame: Frame<'_>,
        viewport: (f32, f32, f32, f32),
        upscale: Option<&Upscale>,
    ) {
        let (x, y, w, h) = viewport;
        pass.set_viewport(x, y, w, h, 0.0, 1.0);
        match upscale {
            Some(upscale) => upscale.draw(pass),
            None => {
                pass.set_pipeline(&self.pipeline);
                pass.set_bind_group(0, Some(frame.bind), &[]);
                pass.draw(0..3, 0..1);
            }
        }
    }

    /// The offscreen target the last draw went into.
    pub(crate) fn output(&self) -> &wgpu::Texture {
        &self.output
    }

    /// Copies the offscreen target (the last draw) into the read-back
    /// buffer kept for it, and hands `with` its rows (4 bytes a texel, in
    /// the target's format) and their pitch in bytes: a window presented
    /// by copying its pixels. `None` if the read failed (a lost device).
    pub(crate) fn read_output<R>(
        &mut self,
        gpu: &Gpu,
        with: impl FnOnce(&[u8], u32) -> R,
    ) -> Result<Option<R>> {
        self.readback.read(gpu, &self.output, with)
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

/// A pipeline drawing `fragment` (WGSL with an `fs` entry point, after
/// fullscreen.wgsl's vertex stage) into targets of `format`, reading
/// one bind group of `layout` where given, else none.
fn full_screen_program(
    gpu: &Gpu,
    label: &str,
    fragment: &str,
    layout: Option<&wgpu::BindGroupLayout>,
    format: wgpu::TextureFormat,
) -> Result<Tracked<wgpu::RenderPipeline>> {
    let device = gpu.device();
    let source = format!("{}{fragment}", include_str!("fullscreen.wgsl"));
    let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    })?;
    let groups = match layout {
        Some(layout) => vec![Some(layout)],
        None => Vec::new(),
    };
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &groups,
        immediate_size: 0,
    })?;
    full_screen_pipeline(gpu, &shader, &pipeline_layout, format, &[])
}

/// The attachment of a target the pass draws every pixel of: its
/// contents before the pass are not read, loaded or cleared.
pub(crate) fn drawn_over(view: &wgpu::TextureView) -> wgpu::RenderPassColorAttachment<'_> {
    // SAFETY: the one condition, that every pixel is written before it is
    // read or stored, is each caller's: the play pass draws the bars
    // around the picture and the picture; the upscale's pass draws its
    // whole target.
    #[allow(unsafe_code)]
    let undefined = unsafe { wgpu::LoadOpDontCare::enabled() };
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: wgpu::LoadOp::DontCare(undefined),
            store: wgpu::StoreOp::Store,
        },
    }
}

/// The target's attachment, cleared to black.
pub(crate) fn cleared(view: &wgpu::TextureView) -> wgpu::RenderPassColorAttachment<'_> {
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

/// A bind group layout of a filterable 2-D texture at 0 and a filtering
/// sampler at 1.
fn filtered_texture_layout(gpu: &Gpu, label: &str) -> Result<Tracked<wgpu::BindGroupLayout>> {
    gpu.device()
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &[
                texture_entry(0, wgpu::TextureSampleType::Float { filterable: true }),
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        })
}

/// A sampler that filters linearly, magnifying and minifying.
fn linear_sampler(gpu: &Gpu, label: &str) -> Result<Tracked<wgpu::Sampler>> {
    gpu.device().create_sampler(&wgpu::SamplerDescriptor {
        label: Some(label),
        mag_filter: wgpu::FilterMode::Linear,
        min_filter: wgpu::FilterMode::Linear,
        ..Default::default()
    })
}

/// A bind group of a [`filtered_texture_layout`]: `view` at 0, `sampler`
/// at 1.
fn filtered_texture_bind(
    gpu: &Gpu,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    view: &wgpu::TextureView,
    sampler: &wgpu::Sampler,
) -> Result<Tracked<wgpu::BindGroup>> {
    gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(view),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::Sampler(sampler),
            },
        ],
    })
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
    use super::*;
    use crate::yuv::{Chroma, Matrix, Range, Siting};
    use stagehand_gpu::GpuOptions;
    use stagehand_gpu::upload::{EngineConfig, FrameQueueConfig, UploadEngine};
    use std::sync::Arc;

    /// A 4:4:4 full-range picture, its planes stacked.
    const YUV: Yuv = Yuv {
        chroma: Chroma::S444,
        bits: 8,
        matrix: Matrix::Bt709,
        range: Range::Full,
        siting: Siting::Center,
    };
    const FRAME: (u32, u32) = (8, 6);

    /// Smooth planes, every colour inside the gamut: luma rising to the
    /// right and down, Cb across, Cr down; `shift` moves luma.
    fn planes(shift: u8) -> Vec<u8> {
        let (w, h) = FRAME;
        let texels = (0..h).flat_map(|y| (0..w).map(move |x| (x, y)));
        let luma = texels
            .clone()
            .map(|(x, y)| 60 + 12 * x + 9 * y + u32::from(shift));
        let cb = texels.clone().map(|(x, _)| 120 + 2 * x);
        let cr = texels.map(|(_, y)| 124 + 3 * y);
        luma.chain(cb).chain(cr).map(|v| v as u8).collect()
    }

    /// What bilinear filtering of the converted texels of `planes` gives
    /// at the centre of pixel (x, y) of a `target`-sized picture.
    fn filtered(planes: &[u8], target: (u32, u32), x: u32, y: u32) -> [f64; 3] {
        let (w, h) = FRAME;
        let n = (w * h) as usize;
        let rgb = |tx: i64, ty: i64| {
            let (tx, ty) = (tx.clamp(0, i64::from(w) - 1), ty.clamp(0, i64::from(h) - 1));
            let i = (ty * i64::from(w) + tx) as usize;
            YUV.to_rgb(
                u16::from(planes[i]),
                u16::from(planes[n + i]),
                u16::from(planes[2 * n + i]),
            )
        };
        let at = |p: u32, size: u32, frame: u32| {
            (f64::from(p) + 0.5) / f64::from(size) * f64::from(frame) - 0.5
        };
        let (tx, ty) = (at(x, target.0, w), at(y, target.1, h));
        let (x0, y0) = (tx.floor(), ty.floor());
        let (fx, fy) = (tx - x0, ty - y0);
        let (x0, y0) = (x0 as i64, y0 as i64);
        let mut out = [0.0; 3];
        for (c, v) in out.iter_mut().enumerate() {
            let texel = |dx, dy| f64::from(rgb(x0 + dx, y0 + dy)[c]);
            let top = texel(0, 0) * (1.0 - fx) + texel(1, 0) * fx;
            let bottom = texel(0, 1) * (1.0 - fx) + texel(1, 1) * fx;
            *v = top * (1.0 - fy) + bottom * fy;
        }
        out
    }

    /// The largest difference between what was drawn into `target` and
    /// the filtered conversion of `planes`.
    fn worst(drawn: &[u8], planes: &[u8], target: (u32, u32)) -> f64 {
        let mut worst = 0.0f64;
        for y in 0..target.1 {
            for x in 0..target.0 {
                let want = filtered(planes, target, x, y);
                let i = ((y * target.0 + x) * 4) as usize;
                for (c, w) in want.iter().enumerate() {
                    worst = worst.max((f64::from(drawn[i + c]) - w).abs());
                }
            }
        }
        worst
    }

    #[test]
    fn an_enlarged_yuv_frame_is_the_filtered_conversion_of_its_texels_converted_once() {
        let gpu = Arc::new(
            Gpu::open(&GpuOptions::default())
                .unwrap_or_else(|e| panic!("tests need a GPU adapter: {e}")),
        );
        let engine = UploadEngine::new(Arc::clone(&gpu), EngineConfig::default()).unwrap();
        let packed = YUV.packing(FRAME.0, FRAME.1).size;
        let usage = wgpu::TextureUsages::TEXTURE_BINDING;
        let desc = texture_2d("frame", packed, wgpu::TextureFormat::R8Unorm, usage);
        let config = FrameQueueConfig {
            depth: 2,
            ..FrameQueueConfig::default()
        };
        let queue = FrameQueue::new(&engine, &desc, config).unwrap();
        let target = (FRAME.0 * 4, FRAME.1 * 4);
        assert!(Upscale::pays(FRAME, target), "a picture 16 times the frame");
        let renderer = Renderer::new(
            &gpu,
            &queue,
            FRAME,
            target,
            wgpu::TextureFormat::Rgba8Unorm,
            None,
            Some(YUV),
        )
        .unwrap();
        let write = |planes: &[u8]| {
            gpu.queue().write_texture(
                queue.texture(0).as_image_copy(),
                planes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(packed.0),
                    rows_per_image: None,
                },
                queue.texture(0).size(),
            );
        };
        let draw = |id| {
            let bind = renderer.slot(0).unwrap();
            renderer.draw(&gpu, Some(Frame { bind, id })).unwrap();
            renderer.read_back(&gpu).unwrap().2
        };
        let first = planes(0);
        write(&first);
        let drawn = draw(1);
        let off = worst(&drawn, &first, target);
        assert!(off <= 2.0, "off by {off} from the filtered conversion");
        // New texels under the same id: the picture converted stays.
        let second = planes(20);
        write(&second);
        assert_eq!(draw(1), drawn, "picture 1 is converted once");
        let off = worst(&draw(2), &second, target);
        assert!(off <= 2.0, "picture 2: off by {off}");
    }

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
