//! The window's overlay: the timeline with its cache bar, and the
//! heads-up display.
//!
//! Three draws from one shader (`overlay.wgsl`), each inside its own
//! viewport and scissor: the strip along the bottom (a texel of cell state
//! per span of columns), the playhead over it (a 2-px white line), and the
//! text box top-left (a coverage texture rasterised here from font8x8's
//! glyphs, blended over the picture).
//!
//! The protocol:
//! 1. [`Overlay::new`] once per target format;
//! 2. [`Overlay::set_timeline`] and [`Overlay::set_text`] whenever what
//!    they show changes (both write through the queue, so before the
//!    submission that draws);
//! 3. [`Overlay::draw`] inside the caller's render pass, after the picture.

use super::{texture_2d, texture_entry, uniform_entry};
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::{Gpu, Result};

/// Height in pixels of the timeline strip at the bottom of the target.
pub const BAR_HEIGHT: u32 = 24;
/// The strip's rows, from its top, that cache cells fill; the rest is
/// background, so the playhead (the full height) stands out from them.
const BAND: (u32, u32) = (6, 18);
/// Width in pixels of the playhead line.
const PLAYHEAD_WIDTH: u32 = 2;
/// The strip's rows, from its top, of the white line that spans the in
/// and out points (above the cells' band, drawn only when they leave some
/// of the sequence out).
const RANGE_ROWS: (u32, u32) = (2, 4);
/// Most texels of cell state; longer timelines are bucketed.
const MAX_TEXELS: usize = 4096;
/// Texels per row of the cell texture. A 64 × 64 square holds
/// [`MAX_TEXELS`] within every adapter's size limit (a 4096-wide row would
/// not fit downlevel GL's 2048).
const CELL_ROW: u32 = 64;
/// Distance in pixels of the text box from the target's top-left corner.
const MARGIN: u32 = 8;
/// Pixels of box around the text on each side.
const PADDING: u32 = 4;
/// Side in pixels of a glyph at scale 1.
const GLYPH: u32 = 8;
/// Blank rows between lines of text, at scale 1.
const LINE_GAP: u32 = 2;
/// Largest glyph scale; larger requests are clamped to it.
const MAX_SCALE: u32 = 4;
/// Opacity of the black box behind the text.
const BOX_ALPHA: f32 = 0.6;
/// Bytes of the strip's uniform block: the palette, then the texel count.
const PARAMS_BYTES: usize = 80;

/// The strip's colours (RGBA, written as they are), indexed by
/// [`Cell::code`]: background (also [`Cell::Empty`]) a dark grey, RAM
/// green, device blue, gap dark red.
const PALETTE: [[f32; 4]; 4] = [
    [0.12, 0.12, 0.12, 1.0],
    [0.20, 0.55, 0.25, 1.0],
    [0.25, 0.45, 0.90, 1.0],
    [0.50, 0.10, 0.10, 1.0],
];

/// What the timeline shows for a position (or a bucket of positions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Cell {
    /// Not decoded: the strip's background, dark grey (0.12, 0.12, 0.12).
    #[default]
    Empty,
    /// Decoded and held in RAM: green (0.20, 0.55, 0.25).
    Ram,
    /// Uploaded to the GPU: blue (0.25, 0.45, 0.90).
    Device,
    /// No frame to show at this position: dark red (0.50, 0.10, 0.10).
    Gap,
}

impl Cell {
    /// The texel value, which the shader uses to index [`PALETTE`].
    fn code(self) -> u8 {
        match self {
            Cell::Empty => 0,
            Cell::Ram => 1,
            Cell::Device => 2,
            Cell::Gap => 3,
        }
    }

    /// The order buckets take their weakest state in: a bucket counts as
    /// cached only as far as all of its positions are, and a gap anywhere
    /// in it shows.
    fn rank(self) -> u8 {
        match self {
            Cell::Gap => 0,
            Cell::Empty => 1,
            Cell::Ram => 2,
            Cell::Device => 3,
        }
    }

    /// The weaker of two states.
    fn weakest(self, other: Cell) -> Cell {
        if other.rank() < self.rank() {
            other
        } else {
            self
        }
    }
}

/// The timeline last set.
#[derive(Debug)]
struct Timeline {
    /// Sequence positions.
    len: usize,
    /// The playhead's position; when some, less than `len`.
    playhead: Option<usize>,
    /// The in and out points (first position, one past the last), when
    /// they leave some of the sequence out.
    range: Option<(usize, usize)>,
}

/// The text box's coverage texture and its bind group.
struct TextBox {
    texture: Tracked<wgpu::Texture>,
    bind: Tracked<wgpu::BindGroup>,
    /// The texture's size, which is the box's: padding included.
    size: (u32, u32),
}

/// Draws the timeline strip and the heads-up display over a picture.
pub struct Overlay {
    bar_pipeline: Tracked<wgpu::RenderPipeline>,
    playhead_pipeline: Tracked<wgpu::RenderPipeline>,
    text_pipeline: Tracked<wgpu::RenderPipeline>,
    /// The text pipeline's bind group layout, for a new box texture.
    text_layout: Tracked<wgpu::BindGroupLayout>,
    /// [`CELL_ROW`]² texels of [`Cell::code`]s, the first
    /// `min(len, MAX_TEXELS)` of them the timeline's.
    cells: Tracked<wgpu::Texture>,
    /// The strip's uniform block ([`bar_params`]).
    params: Tracked<wgpu::Buffer>,
    bar_bind: Tracked<wgpu::BindGroup>,
    /// `None` until [`Overlay::set_timeline`]: no strip.
    timeline: Option<Timeline>,
    /// `None` while there is no text to show.
    text: Option<TextBox>,
    /// The lines and scale last rasterised, to skip unchanged ones.
    shown: Option<(Vec<String>, u32)>,
    /// Text uploads so far.
    uploads: u64,
    /// The cell codes and their count last written to `cells` and
    /// `params`, to skip writing them again: `None` before the first.
    written: Option<(Box<[u8; MAX_TEXELS]>, u32)>,
    /// Cell uploads so far.
    cell_uploads: u64,
}

impl Overlay {
    /// An overlay drawn into targets of `format` (e.g. Bgra8Unorm,
    /// Rgba8Unorm, Rgba16Float; never an sRGB format, since its colours
    /// are written as they are).
    pub fn new(gpu: &Gpu, format: wgpu::TextureFormat) -> Result<Self> {
        debug_assert!(!format.is_srgb(), "overlay colours are not encoded");
        let (bar_layout, text_layout) = Self::layouts(gpu)?;
        let [bar_pipeline, playhead_pipeline, text_pipeline] =
            Self::pipelines(gpu, format, &bar_layout, &text_layout)?;
        let (cells, params, bar_bind) = Self::bar_resources(gpu, &bar_layout)?;
        Ok(Self {
            bar_pipeline,
            playhead_pipeline,
            text_pipeline,
            text_layout,
            cells,
            params,
            bar_bind,
            timeline: None,
            text: None,
            shown: None,
            uploads: 0,
            written: None,
            cell_uploads: 0,
        })
    }

    /// The bind group layouts of the strip (its cell texture and uniform
    /// block) and of the text box (its coverage texture).
    fn layouts(
        gpu: &Gpu,
    ) -> Result<(
        Tracked<wgpu::BindGroupLayout>,
        Tracked<wgpu::BindGroupLayout>,
    )> {
        let device = gpu.device();
        let bar_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("overlay bar"),
            entries: &[
                texture_entry(0, wgpu::TextureSampleType::Uint),
                uniform_entry(1),
            ],
        })?;
        let coverage = wgpu::TextureSampleType::Float { filterable: false };
        let text_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("overlay text"),
            entries: &[texture_entry(2, coverage)],
        })?;
        Ok((bar_layout, text_layout))
    }

    /// The strip's, the playhead's and the text box's pipelines, drawing
    /// into targets of `format`.
    fn pipelines(
        gpu: &Gpu,
        format: wgpu::TextureFormat,
        bar_layout: &wgpu::BindGroupLayout,
        text_layout: &wgpu::BindGroupLayout,
    ) -> Result<[Tracked<wgpu::RenderPipeline>; 3]> {
        let shader = gpu
            .device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("overlay"),
                source: wgpu::ShaderSource::Wgsl(
                    concat!(
                        include_str!("fullscreen.wgsl"),
                        include_str!("overlay.wgsl")
                    )
                    .into(),
                ),
            })?;
        let shaded = Shaded {
            gpu,
            shader: &shader,
            format,
        };
        let blend = Some(wgpu::BlendState::ALPHA_BLENDING);
        Ok([
            shaded.pipeline("fs_bar", Some(bar_layout), None)?,
            shaded.pipeline("fs_playhead", None, None)?,
            shaded.pipeline("fs_text", Some(text_layout), blend)?,
        ])
    }

    /// The strip's cell texture, uniform buffer (written with no cells)
    /// and their bind group.
    fn bar_resources(
        gpu: &Gpu,
        layout: &wgpu::BindGroupLayout,
    ) -> Result<(
        Tracked<wgpu::Texture>,
        Tracked<wgpu::Buffer>,
        Tracked<wgpu::BindGroup>,
    )> {
        let device = gpu.device();
        let usage = wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST;
        let size = (CELL_ROW, CELL_ROW);
        let format = wgpu::TextureFormat::R8Uint;
        let cells = device.create_texture(&texture_2d("overlay cells", size, format, usage))?;
        let params = Self::bar_params_buffer(gpu)?;
        let view = device.create_texture_view(&cells, &Default::default())?;
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("overlay bar"),
            layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(&view),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: params.as_entire_binding(),
                },
            ],
        })?;
        Ok((cells, params, bind))
    }

    /// The strip's uniform buffer, written with no cells.
    fn bar_params_buffer(gpu: &Gpu) -> Result<Tracked<wgpu::Buffer>> {
        let params = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("overlay bar"),
            size: PARAMS_BYTES as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })?;
        gpu.queue().write_buffer(&params, 0, &bar_params(0));
        Ok(params)
    }

    /// Sets the HUD's lines; re-rasterised and uploaded only when they or
    /// `scale` differ from the last. Chars outside ASCII 32..127 draw as
    /// '?'. Glyphs at scale `scale` (1 or 2: 8 or 16 px; clamped to 1..=4),
    /// white on a black box at 0.6 opacity with 4 px of padding, lines
    /// 2 px × `scale` apart. No lines, or only empty ones, show no box.
    /// Text that would make the box larger than the device's largest
    /// texture is cut off.
    pub fn set_text(&mut self, gpu: &Gpu, lines: &[String], scale: u32) -> Result<()> {
        let scale = scale.clamp(1, MAX_SCALE);
        let unchanged = self
            .shown
            .as_ref()
            .is_some_and(|(shown, s)| *s == scale && shown.as_slice() == lines);
        if unchanged {
            return Ok(());
        }
        let max_side = gpu.device().limits().max_texture_dimension_2d;
        match rasterise(lines, scale, max_side) {
            Some((size, pixels)) => self.upload_text(gpu, size, &pixels)?,
            None => self.text = None,
        }
        self.shown = Some((lines.to_vec(), scale));
        Ok(())
    }

    /// Writes a box of `size` coverage `pixels`, into the texture in place
    /// when it is that size already.
    fn upload_text(&mut self, gpu: &Gpu, size: (u32, u32), pixels: &[u8]) -> Result<()> {
        debug_assert_eq!(pixels.len(), size.0 as usize * size.1 as usize);
        let text = match self.text.take() {
            Some(text) if text.size == size => text,
            _ => self.text_box(gpu, size)?,
        };
        gpu.queue().write_texture(
            text.texture.as_image_copy(),
            pixels,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(size.0),
                rows_per_image: None,
            },
            extent(size),
        );
        self.text = Some(text);
        self.uploads += 1;
        Ok(())
    }

    /// A box texture of `size` and its bind group.
    fn text_box(&self, gpu: &Gpu, size: (u32, u32)) -> Result<TextBox> {
        let device = gpu.device();
        let usage = wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST;
        let format = wgpu::TextureFormat::R8Unorm;
        let texture = device.create_texture(&texture_2d("overlay text", size, format, usage))?;
        let view = device.create_texture_view(&texture, &Default::default())?;
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("overlay text"),
            layout: &self.text_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 2,
                resource: wgpu::BindingResource::TextureView(&view),
            }],
        })?;
        Ok(TextBox {
            texture,
            bind,
            size,
        })
    }

    /// Sets the timeline: one cell per sequence position, and the playhead
    /// position (`None`: no playhead; past the end: the last position).
    /// The cells are written to the device only when they changed: a
    /// playhead moving on costs no upload (on GL, writing a texture the
    /// last frame still reads waits for that frame).
    ///
    /// More than 4096 positions are bucketed to 4096 texels: position `p`
    /// of `len` falls in texel `p * 4096 / len`, and a texel shows the
    /// weakest state of its positions, in the order Gap < Empty < Ram <
    /// Device. So a bucket shows as on the device only when all of it is,
    /// and a gap anywhere in it shows. An empty slice draws the strip's
    /// background only, with no playhead.
    pub fn set_timeline(
        &mut self,
        gpu: &Gpu,
        cells: &[Cell],
        playhead: Option<usize>,
    ) -> Result<()> {
        self.set_timeline_texels(gpu, &bucket(cells), cells.len(), playhead)
    }

    /// The same, for `len` positions already in texels
    /// ([`timeline_texels`]).
    pub fn set_timeline_texels(
        &mut self,
        gpu: &Gpu,
        texels: &[Cell],
        len: usize,
        playhead: Option<usize>,
    ) -> Result<()> {
        debug_assert_eq!(texels.len(), len.min(MAX_TEXELS));
        let mut codes = Box::new([0u8; MAX_TEXELS]);
        for (code, cell) in codes.iter_mut().zip(texels) {
            *code = cell.code();
        }
        let count = texels.len() as u32;
        if self
            .written
            .as_ref()
            .is_none_or(|(written, n)| (written, *n) != (&codes, count))
        {
            self.write_cells(gpu, &codes, count);
            self.written = Some((codes, count));
        }
        let last = len.checked_sub(1);
        let range = self.timeline.as_ref().and_then(|t| t.range);
        self.timeline = Some(Timeline {
            len,
            playhead: playhead.zip(last).map(|(p, last)| p.min(last)),
            range: range.and_then(|range| marked(range, len)),
        });
        Ok(())
    }

    /// Marks the in and out points on the timeline: `first` to one past
    /// the last position played; whether what it marks changed. Nothing
    /// shows for the whole sequence, or before
    /// [`set_timeline`](Self::set_timeline).
    pub fn set_range(&mut self, (first, end): (usize, usize)) -> bool {
        let Some(timeline) = &mut self.timeline else {
            return false;
        };
        let range = marked((first, end), timeline.len);
        std::mem::replace(&mut timeline.range, range) != range
    }

    /// Writes `count` cell codes (the rest of `codes` zero) to the device.
    fn write_cells(&mut self, gpu: &Gpu, codes: &[u8; MAX_TEXELS], count: u32) {
        gpu.queue().write_texture(
            self.cells.as_image_copy(),
            codes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(CELL_ROW),
                rows_per_image: None,
            },
            extent((CELL_ROW, CELL_ROW)),
        );
        gpu.queue()
            .write_buffer(&self.params, 0, &bar_params(count));
        self.cell_uploads += 1;
    }

    /// Records the overlay's draws into `pass`, whose target is `target`
    /// pixels: the timeline strip (if set_timeline was called) and, when
    /// `hud`, the text box. An element that does not fit is skipped: the
    /// strip in a target less than [`BAR_HEIGHT`] tall; the box is clipped
    /// to the target. Leaves the pass's viewport and scissor covering the
    /// whole target.
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, target: (u32, u32), hud: bool) {
        if target.0 == 0 || target.1 == 0 {
            return;
        }
        if let Some(timeline) = &self.timeline {
            self.draw_bar(pass, target, timeline);
        }
        if let (true, Some(text)) = (hud, &self.text) {
            self.draw_text(pass, target, text);
        }
        clip(pass, (0, 0, target.0, target.1));
    }

    /// The strip and its playhead; nothing in a target too short for it.
    fn draw_bar(&self, pass: &mut wgpu::RenderPass<'_>, target: (u32, u32), timeline: &Timeline) {
        let rect = Self::bar_rect(target);
        if rect.3 < BAR_HEIGHT {
            return;
        }
        clip(pass, rect);
        pass.set_pipeline(&self.bar_pipeline);
        pass.set_bind_group(0, Some(&*self.bar_bind), &[]);
        pass.draw(0..3, 0..1);
        if let Some(range) = timeline.range {
            let (x, width) = range_span(rect.2, range, timeline.len);
            let rows = RANGE_ROWS.1 - RANGE_ROWS.0;
            clip(pass, (rect.0 + x, rect.1 + RANGE_ROWS.0, width, rows));
            pass.set_pipeline(&self.playhead_pipeline);
            pass.draw(0..3, 0..1);
        }
        if let Some(position) = timeline.playhead {
            let (x, width) = playhead_span(rect.2, position, timeline.len);
            clip(pass, (rect.0 + x, rect.1, width, rect.3));
            pass.set_pipeline(&self.playhead_pipeline);
            pass.draw(0..3, 0..1);
        }
    }

    /// The text box, clipped to the target. The viewport is the whole
    /// target: the shader finds its texel from the pixel's position.
    fn draw_text(&self, pass: &mut wgpu::RenderPass<'_>, target: (u32, u32), text: &TextBox) {
        let width = text.size.0.min(target.0.saturating_sub(MARGIN));
        let height = text.size.1.min(target.1.saturating_sub(MARGIN));
        if width == 0 || height == 0 {
            return;
        }
        pass.set_viewport(0.0, 0.0, target.0 as f32, target.1 as f32, 0.0, 1.0);
        pass.set_scissor_rect(MARGIN, MARGIN, width, height);
        pass.set_pipeline(&self.text_pipeline);
        pass.set_bind_group(0, Some(&*text.bind), &[]);
        pass.draw(0..3, 0..1);
    }

    /// The timeline strip: x, y, width, height in pixels of a target of
    /// `target`. The strip runs the target's full width along its bottom,
    /// [`BAR_HEIGHT`] tall; in a shorter target it is the whole height
    /// (and [`Overlay::draw`] skips it).
    pub fn bar_rect(target: (u32, u32)) -> (u32, u32, u32, u32) {
        let height = BAR_HEIGHT.min(target.1);
        (0, target.1 - height, target.0, height)
    }

    /// The sequence position (of `len`) under window x coordinate `x` on
    /// the bar; clamps to 0..len-1 (x outside the bar clamps too).
    /// `len == 0` → 0.
    pub fn position_at(target: (u32, u32), x: f64, len: usize) -> usize {
        let (left, _, width, _) = Self::bar_rect(target);
        if len == 0 || width == 0 {
            return 0;
        }
        let along = (x - f64::from(left)) / f64::from(width);
        // A NaN clamps to NaN, which the cast saturates to 0.
        (along * len as f64).floor().clamp(0.0, (len - 1) as f64) as usize
    }
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay")
            .field("timeline", &self.timeline)
            .field("text_box", &self.text.as_ref().map(|t| t.size))
            .field("lines", &self.shown.as_ref().map_or(0, |(l, _)| l.len()))
            .field("uploads", &self.uploads)
            .field("cell_uploads", &self.cell_uploads)
            .finish_non_exhaustive()
    }
}

/// What every overlay pipeline shares: the shader and the target format.
struct Shaded<'a> {
    gpu: &'a Gpu,
    shader: &'a wgpu::ShaderModule,
    format: wgpu::TextureFormat,
}

impl Shaded<'_> {
    /// The pipeline whose fragment stage is `entry`, reading `layout`'s
    /// bind group (if any) and writing with `blend` (`None`: replace).
    fn pipeline(
        &self,
        entry: &str,
        layout: Option<&wgpu::BindGroupLayout>,
        blend: Option<wgpu::BlendState>,
    ) -> Result<Tracked<wgpu::RenderPipeline>> {
        let device = self.gpu.device();
        let groups: &[Option<&wgpu::BindGroupLayout>] = match &layout {
            Some(_) => std::slice::from_ref(&layout),
            None => &[],
        };
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("overlay"),
            bind_group_layouts: groups,
            immediate_size: 0,
        })?;
        // The overrides are the module's, so both stages need them all.
        let constants = constants();
        let options = wgpu::PipelineCompilationOptions {
            constants: &constants,
            ..Default::default()
        };
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(entry),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: self.shader,
                entry_point: Some("vs"),
                compilation_options: options.clone(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: self.shader,
                entry_point: Some(entry),
                compilation_options: options,
                targets: &[Some(wgpu::ColorTargetState {
                    format: self.format,
                    blend,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        })
    }
}

/// The shader's override constants.
fn constants() -> [(&'static str, f64); 6] {
    [
        ("BAR_HEIGHT", f64::from(BAR_HEIGHT)),
        ("BAND_TOP", f64::from(BAND.0)),
        ("BAND_BOTTOM", f64::from(BAND.1)),
        ("CELL_ROW", f64::from(CELL_ROW)),
        ("MARGIN", f64::from(MARGIN)),
        ("BOX_ALPHA", f64::from(BOX_ALPHA)),
    ]
}

/// A one-layer extent of `size`.
fn extent(size: (u32, u32)) -> wgpu::Extent3d {
    wgpu::Extent3d {
        width: size.0,
        height: size.1,
        depth_or_array_layers: 1,
    }
}

/// Sets both viewport and scissor to `rect` (x, y, width, height), which
/// lies inside the target and has an area.
fn clip(pass: &mut wgpu::RenderPass<'_>, rect: (u32, u32, u32, u32)) {
    debug_assert!(rect.2 > 0 && rect.3 > 0, "an empty rect: {rect:?}");
    let (x, y, w, h) = rect;
    pass.set_viewport(x as f32, y as f32, w as f32, h as f32, 0.0, 1.0);
    pass.set_scissor_rect(x, y, w, h);
}

/// The strip's uniform block: [`PALETTE`], then `count`, the texels in use.
fn bar_params(count: u32) -> [u8; PARAMS_BYTES] {
    let mut out = [0u8; PARAMS_BYTES];
    let floats = PALETTE.iter().flatten();
    for (bytes, value) in out.chunks_exact_mut(4).zip(floats) {
        bytes.copy_from_slice(&value.to_le_bytes());
    }
    out[64..68].copy_from_slice(&count.to_le_bytes());
    out
}

/// The texel that position `position` of `len` falls in, of `texels`.
fn texel_of(position: usize, len: usize, texels: usize) -> usize {
    (position as u128 * texels as u128 / len as u128) as usize
}

/// The texels for `cells`: one per position up to [`MAX_TEXELS`];
/// beyond, buckets of positions ([`texel_of`]), each showing the weakest
/// state ([`Cell::rank`]) of its positions.
fn bucket(cells: &[Cell]) -> Vec<Cell> {
    let texels = cells.len().min(MAX_TEXELS);
    // Device is the strongest state, so it stands for "no position yet";
    // with no more texels than positions, every texel gets at least one.
    let mut out = vec![Cell::Device; texels];
    for (position, &cell) in cells.iter().enumerate() {
        let texel = &mut out[texel_of(position, cells.len(), texels)];
        *texel = texel.weakest(cell);
    }
    out
}

/// The texels of a timeline of `len` positions, the same as
/// `bucket` of its cells, from where each state stands: `gaps` as runs,
/// the positions `held` in RAM, and those `on_device` (the GPU tier; a
/// position held in both shows as on the device). Its cost follows the
/// texels, the runs and the positions given, not `len`.
pub fn timeline_texels(
    len: usize,
    gaps: &crate::source::Gaps,
    held: &[usize],
    on_device: &[usize],
) -> Vec<Cell> {
    let texels = len.min(MAX_TEXELS);
    let (device, ram) = tier_counts(len, texels, held, on_device);
    (0..texels)
        .map(|t| {
            // The positions whose texel is t: from ceil(t len / texels).
            let start = (t as u128 * len as u128).div_ceil(texels as u128) as usize;
            let end = ((t as u128 + 1) * len as u128).div_ceil(texels as u128) as usize;
            if gaps.count_in(start..end) > 0 {
                Cell::Gap
            } else if device[t] + ram[t] < end - start {
                Cell::Empty
            } else if ram[t] > 0 {
                Cell::Ram
            } else {
                Cell::Device
            }
        })
        .collect()
}

/// Positions of a timeline of `len` on the device and (only) in RAM, per
/// texel of `texels`: `held` and `on_device` as [`timeline_texels`] takes
/// them, each position counted once.
fn tier_counts(
    len: usize,
    texels: usize,
    held: &[usize],
    on_device: &[usize],
) -> (Vec<usize>, Vec<usize>) {
    let mut device = vec![0usize; texels];
    let mut ram = vec![0usize; texels];
    let mut seen = std::collections::HashSet::with_capacity(on_device.len());
    for &p in on_device.iter().filter(|&&p| p < len) {
        if seen.insert(p) {
            device[texel_of(p, len, texels)] += 1;
        }
    }
    for &p in held.iter().filter(|&&p| p < len && !seen.contains(&p)) {
        ram[texel_of(p, len, texels)] += 1;
    }
    (device, ram)
}

/// In and out points `(first, end)` as the timeline of `len` positions
/// marks them: `None` for the whole sequence or a range that does not fit
/// it.
fn marked((first, end): (usize, usize), len: usize) -> Option<(usize, usize)> {
    let fits = first < end && end <= len;
    (fits && (first, end) != (0, len)).then_some((first, end))
}

/// The columns of a strip `width` pixels wide (at least 1) that positions
/// `first` to `end` (one past the last) of `len` cover: x from the strip's
/// left, and width (at least 1).
fn range_span(width: u32, (first, end): (usize, usize), len: usize) -> (u32, u32) {
    debug_assert!(width > 0 && first < end && end <= len);
    let column = |p: usize| (p as u128 * u128::from(width) / len as u128) as u32;
    let x = column(first).min(width - 1);
    (x, column(end).saturating_sub(x).max(1))
}

/// The playhead's columns on a strip `width` pixels wide (at least 1):
/// x from the strip's left, and width; centred on the middle of
/// `position`'s span, kept inside the strip.
fn playhead_span(width: u32, position: usize, len: usize) -> (u32, u32) {
    debug_assert!(width > 0 && position < len);
    let line = PLAYHEAD_WIDTH.min(width);
    let middle = (position as f64 + 0.5) / len as f64 * f64::from(width);
    let x = middle.floor() as i64 - i64::from(PLAYHEAD_WIDTH / 2);
    (x.clamp(0, i64::from(width - line)) as u32, line)
}

/// The glyph drawn for `c`: font8x8's, a byte per row with bit 0 the
/// leftmost pixel; '?' for anything outside ASCII 32..127.
fn glyph(c: char) -> [u8; 8] {
    let code = match u32::from(c) {
        code @ 32..127 => code,
        _ => u32::from('?'),
    };
    font8x8::legacy::BASIC_LEGACY[code as usize]
}

/// The text box's coverage for `lines` at `scale`, one byte per pixel
/// (255 where a glyph bit is set), and its size: [`PADDING`] all round,
/// lines [`LINE_GAP`] × `scale` apart. Columns and lines that would make a
/// side exceed `max_side` are dropped. `None` when no character remains.
fn rasterise(lines: &[String], scale: u32, max_side: u32) -> Option<((u32, u32), Vec<u8>)> {
    let cell = GLYPH * scale;
    let pitch = cell + LINE_GAP * scale;
    let room = max_side.saturating_sub(2 * PADDING);
    let max_cols = (room / cell) as usize;
    let max_rows = ((room + LINE_GAP * scale) / pitch) as usize;
    let lines = &lines[..lines.len().min(max_rows)];
    let cols = lines.iter().map(|l| l.chars().count()).max()?.min(max_cols);
    if cols == 0 {
        return None;
    }
    let rows = lines.len() as u32;
    let size = (
        2 * PADDING + cols as u32 * cell,
        2 * PADDING + rows * pitch - LINE_GAP * scale,
    );
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize];
    for (row, line) in (0..).zip(lines) {
        for (col, c) in (0..).zip(line.chars().take(cols)) {
            let at = (PADDING + col * cell, PADDING + row * pitch);
            stamp(&mut pixels, size.0, at, glyph(c), scale);
        }
    }
    Some((size, pixels))
}

/// Sets the pixels of `glyph`'s bits, each `scale` × `scale`, with its top
/// left at `at`, in `pixels`, rows `stride` bytes long.
fn stamp(pixels: &mut [u8], stride: u32, at: (u32, u32), glyph: [u8; 8], scale: u32) {
    for (y, bits) in (0..).zip(glyph) {
        for x in (0..8).filter(|x| (bits >> x) & 1 == 1) {
            for dy in 0..scale {
                let top = (at.1 + y * scale + dy) * stride;
                let start = (top + at.0 + x * scale) as usize;
                pixels[start..start + scale as usize].fill(255);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stagehand_gpu::GpuOptions;

    /// The target the GPU tests draw into.
    const TARGET: (u32, u32) = (320, 120);
    /// What the tests clear the target to: a mid grey, so the box's
    /// darkening shows.
    const CLEAR: f64 = 0.5;

    /// Opens the adapter `WGPU_BACKEND` names, or fails the test.
    fn gpu() -> Gpu {
        Gpu::open(&GpuOptions::default())
            .unwrap_or_else(|e| panic!("tests need a GPU adapter: {e}"))
    }

    /// The overlay drawn over a `CLEAR` grey Rgba8Unorm target of `size`:
    /// tightly packed rows.
    fn render(gpu: &Gpu, overlay: &Overlay, size: (u32, u32), hud: bool) -> Vec<u8> {
        let format = wgpu::TextureFormat::Rgba8Unorm;
        render_as(gpu, overlay, size, hud, format)
    }

    /// [`render`] into a target of `format`.
    fn render_as(
        gpu: &Gpu,
        overlay: &Overlay,
        size: (u32, u32),
        hud: bool,
        format: wgpu::TextureFormat,
    ) -> Vec<u8> {
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
        let desc = texture_2d("overlay test", size, format, usage);
        let texture = gpu.device().create_texture(&desc).unwrap();
        let view = gpu
            .device()
            .create_texture_view(&texture, &Default::default())
            .unwrap();
        let mut encoder = gpu
            .device()
            .create_command_encoder(&Default::default())
            .unwrap();
        {
            let grey = wgpu::Color {
                r: CLEAR,
                g: CLEAR,
                b: CLEAR,
                a: 1.0,
            };
            let attachment = wgpu::RenderPassColorAttachment {
                view: &view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(grey),
                    store: wgpu::StoreOp::Store,
                },
            };
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("overlay test"),
                color_attachments: &[Some(attachment)],
                ..Default::default()
            });
            overlay.draw(&mut pass, size, hud);
        }
        gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
        let texel = format.block_copy_size(None).unwrap();
        super::super::read_texture(gpu, &texture, texel).unwrap()
    }

    /// The RGB of pixel (x, y) of a `TARGET`-sized read-back.
    fn rgb(pixels: &[u8], x: u32, y: u32) -> [u8; 3] {
        let at = ((y * TARGET.0 + x) * 4) as usize;
        [pixels[at], pixels[at + 1], pixels[at + 2]]
    }

    /// `colour` (0..1) as 8-bit values.
    fn eight_bit(colour: [f32; 4]) -> [u8; 3] {
        colour.map(|v| (v * 255.0).round() as u8)[..3]
            .try_into()
            .unwrap()
    }

    /// Whether two pixels agree within the GPU's rounding.
    fn near(a: [u8; 3], b: [u8; 3]) -> bool {
        a.iter().zip(b).all(|(&a, b)| a.abs_diff(b) <= 2)
    }

    /// The grey the tests clear to.
    fn clear() -> [u8; 3] {
        eight_bit([CLEAR as f32; 4])
    }

    /// Every pixel of rows `rows` that is not `expected`, as (x, y).
    fn off_pixels(pixels: &[u8], rows: std::ops::Range<u32>, expected: [u8; 3]) -> Vec<(u32, u32)> {
        rows.flat_map(|y| (0..TARGET.0).map(move |x| (x, y)))
            .filter(|&(x, y)| !near(rgb(pixels, x, y), expected))
            .collect()
    }

    const TEN: [Cell; 10] = [
        Cell::Empty,
        Cell::Ram,
        Cell::Device,
        Cell::Gap,
        Cell::Ram,
        Cell::Ram,
        Cell::Device,
        Cell::Device,
        Cell::Empty,
        Cell::Gap,
    ];

    #[test]
    fn timeline_draws_cells_in_the_band_and_a_white_playhead() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_timeline(&gpu, &TEN, Some(4)).unwrap();
        let pixels = render(&gpu, &overlay, TARGET, true);
        let (_, top, width, _) = Overlay::bar_rect(TARGET);
        let span = width / TEN.len() as u32;
        let background = eight_bit(PALETTE[0]);
        let band = top + (BAND.0 + BAND.1) / 2;
        // The playhead sits in the middle of position 4's span.
        let head = 4 * span + span / 2;
        for (i, cell) in (0..).zip(TEN) {
            // A quarter in, clear of the playhead.
            let x = i * span + span / 4;
            let want = eight_bit(PALETTE[usize::from(cell.code())]);
            assert!(near(rgb(&pixels, x, band), want), "cell {i} {cell:?}");
            assert!(near(rgb(&pixels, x, top + BAND.0 - 1), background));
            assert!(near(rgb(&pixels, x, top + BAND.1), background));
            assert_eq!(
                Overlay::position_at(TARGET, f64::from(x), TEN.len()),
                i as usize
            );
        }
        for y in top..TARGET.1 {
            for x in [head - 1, head] {
                assert_eq!(rgb(&pixels, x, y), [255; 3], "playhead at ({x}, {y})");
            }
            assert_ne!(rgb(&pixels, head - 2, y), [255; 3]);
            assert_ne!(rgb(&pixels, head + 1, y), [255; 3]);
        }
        assert_eq!(
            off_pixels(&pixels, 0..top, clear()),
            vec![],
            "above the strip"
        );
    }

    #[test]
    fn in_and_out_points_draw_a_white_line_over_their_span_above_the_cells() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_timeline(&gpu, &TEN, None).unwrap();
        overlay.set_range((2, 5));
        let pixels = render(&gpu, &overlay, TARGET, true);
        let (_, top, width, _) = Overlay::bar_rect(TARGET);
        let span = width / TEN.len() as u32;
        let line = top + RANGE_ROWS.0;
        for x in 0..width {
            let inside = (2 * span..5 * span).contains(&x);
            let white = rgb(&pixels, x, line) == [255; 3];
            assert_eq!(white, inside, "column {x} of the range line");
            assert_ne!(rgb(&pixels, x, top + RANGE_ROWS.1), [255; 3]);
        }
        // The whole sequence, or a range that does not fit, marks nothing.
        for range in [(0, TEN.len()), (4, 4), (3, 11)] {
            overlay.set_range(range);
            let pixels = render(&gpu, &overlay, TARGET, true);
            let marked = (0..width).filter(|&x| rgb(&pixels, x, line) == [255; 3]);
            assert_eq!(marked.count(), 0, "{range:?}");
        }
    }

    #[test]
    fn empty_timeline_draws_background_only() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_timeline(&gpu, &[], Some(3)).unwrap();
        let pixels = render(&gpu, &overlay, TARGET, true);
        let top = Overlay::bar_rect(TARGET).1;
        let background = eight_bit(PALETTE[0]);
        assert_eq!(off_pixels(&pixels, top..TARGET.1, background), vec![]);
        assert_eq!(off_pixels(&pixels, 0..top, clear()), vec![]);
    }

    #[test]
    fn no_timeline_set_draws_no_strip() {
        let gpu = gpu();
        let overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        let pixels = render(&gpu, &overlay, TARGET, true);
        assert_eq!(off_pixels(&pixels, 0..TARGET.1, clear()), vec![]);
    }

    /// Checks glyph `c` drawn at `scale` in the box's first column of the
    /// first line: set bits white, unset ones the grey darkened by the box.
    fn assert_glyph(pixels: &[u8], c: char, scale: u32) {
        let dark = eight_bit([CLEAR as f32 * (1.0 - BOX_ALPHA); 4]);
        let origin = MARGIN + PADDING;
        for (y, bits) in (0..).zip(glyph(c)) {
            for x in 0..8 {
                let want = if (bits >> x) & 1 == 1 { [255; 3] } else { dark };
                for (dx, dy) in [(0, 0), (scale - 1, scale - 1)] {
                    let (px, py) = (origin + x * scale + dx, origin + y * scale + dy);
                    let got = rgb(pixels, px, py);
                    assert!(
                        near(got, want),
                        "{c:?} bit ({x}, {y}) at ({px}, {py}): {got:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn hud_draws_glyphs_on_a_translucent_box() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        let lines = ["L#".to_owned(), "AB".to_owned()];
        overlay.set_text(&gpu, &lines, 1).unwrap();
        let pixels = render(&gpu, &overlay, TARGET, true);
        assert_glyph(&pixels, 'L', 1);
        let dark = eight_bit([CLEAR as f32 * (1.0 - BOX_ALPHA); 4]);
        let (w, h) = (2 * PADDING + 2 * GLYPH, 2 * PADDING + 2 * GLYPH + LINE_GAP);
        // The box's corners are padding, the pixels just past them untouched.
        let (right, bottom) = (MARGIN + w - 1, MARGIN + h - 1);
        for (x, y) in [
            (MARGIN, MARGIN),
            (right, MARGIN),
            (MARGIN, bottom),
            (right, bottom),
        ] {
            assert!(near(rgb(&pixels, x, y), dark), "corner ({x}, {y})");
        }
        let in_box =
            |(x, y): &(u32, u32)| (MARGIN..=right).contains(x) && (MARGIN..=bottom).contains(y);
        let outside: Vec<_> = off_pixels(&pixels, 0..TARGET.1, clear())
            .into_iter()
            .filter(|p| !in_box(p))
            .collect();
        assert_eq!(outside, vec![], "drawn outside the box");
        let hidden = render(&gpu, &overlay, TARGET, false);
        assert_eq!(off_pixels(&hidden, 0..TARGET.1, clear()), vec![], "hud off");
    }

    #[test]
    fn a_moving_playhead_uploads_no_cells() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_timeline(&gpu, &TEN, Some(1)).unwrap();
        overlay.set_timeline(&gpu, &TEN, Some(2)).unwrap();
        assert_eq!(
            overlay.cell_uploads, 1,
            "the same cells again upload nothing"
        );
        let pixels = render(&gpu, &overlay, TARGET, false);
        let moved = render_playhead_at(&gpu, 2);
        assert_eq!(pixels, moved, "the playhead drawn where it moved to");
        let mut more = TEN;
        more[0] = Cell::Gap;
        overlay.set_timeline(&gpu, &more, Some(2)).unwrap();
        assert_eq!(overlay.cell_uploads, 2, "changed cells upload");
    }

    /// The timeline `TEN` with its playhead at `position`, drawn by a
    /// fresh overlay.
    fn render_playhead_at(gpu: &Gpu, position: usize) -> Vec<u8> {
        let mut overlay = Overlay::new(gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_timeline(gpu, &TEN, Some(position)).unwrap();
        render(gpu, &overlay, TARGET, false)
    }

    #[test]
    fn hud_scales_glyphs_and_uploads_only_changes() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_text(&gpu, &["A".to_owned()], 2).unwrap();
        overlay.set_text(&gpu, &["A".to_owned()], 2).unwrap();
        assert_eq!(overlay.uploads, 1, "the same text again uploads nothing");
        assert_glyph(&render(&gpu, &overlay, TARGET, true), 'A', 2);
        // Same size, new glyph: the texture is written in place.
        let texture = overlay.text.as_ref().map(|t| (*t.texture).clone());
        overlay.set_text(&gpu, &["\u{e9}".to_owned()], 2).unwrap();
        assert_eq!(overlay.uploads, 2);
        assert_eq!(overlay.text.as_ref().map(|t| (*t.texture).clone()), texture);
        assert_glyph(&render(&gpu, &overlay, TARGET, true), '?', 2);
        overlay.set_text(&gpu, &[], 2).unwrap();
        let pixels = render(&gpu, &overlay, TARGET, true);
        assert_eq!(
            off_pixels(&pixels, 0..TARGET.1, clear()),
            vec![],
            "no lines, no box"
        );
    }

    #[test]
    fn small_targets_draw_without_validation_errors() {
        let gpu = gpu();
        let mut overlay = Overlay::new(&gpu, wgpu::TextureFormat::Rgba8Unorm).unwrap();
        overlay.set_timeline(&gpu, &TEN, Some(9)).unwrap();
        let lines = ["a line longer than a small target is wide".to_owned()];
        overlay.set_text(&gpu, &lines, 2).unwrap();
        for size in [
            (1, 1),
            (2, 2),
            (9, 9),
            (1, 30),
            (3, 24),
            (40, 23),
            (40, 30),
            (600, 16),
        ] {
            // `render` fails on any error the pass recorded.
            let pixels = render(&gpu, &overlay, size, true);
            assert_eq!(pixels.len(), (size.0 * size.1 * 4) as usize);
        }
    }

    #[test]
    fn other_formats_get_the_same_values() {
        let gpu = gpu();
        let (x, y) = (TARGET.0 / 10 + 4, TARGET.1 - BAR_HEIGHT / 2);
        let at = ((y * TARGET.0 + x) * 4) as usize;
        let ram = eight_bit(PALETTE[1]);
        let bgra = wgpu::TextureFormat::Bgra8Unorm;
        let mut overlay = Overlay::new(&gpu, bgra).unwrap();
        overlay.set_timeline(&gpu, &TEN, Some(0)).unwrap();
        overlay.set_text(&gpu, &["ok".to_owned()], 1).unwrap();
        let pixels = render_as(&gpu, &overlay, TARGET, true, bgra);
        let got = [pixels[at + 2], pixels[at + 1], pixels[at]];
        assert!(near(got, ram), "{got:?}");
        let half = wgpu::TextureFormat::Rgba16Float;
        let mut overlay = Overlay::new(&gpu, half).unwrap();
        overlay.set_timeline(&gpu, &TEN, Some(0)).unwrap();
        let pixels = render_as(&gpu, &overlay, TARGET, true, half);
        let channel = |c: usize| {
            let bytes = [pixels[2 * (at + c)], pixels[2 * (at + c) + 1]];
            half::f16::from_le_bytes(bytes).to_f32()
        };
        for (c, want) in PALETTE[1].iter().take(3).enumerate() {
            assert!((channel(c) - want).abs() < 1e-3, "channel {c}");
        }
    }

    #[test]
    fn bar_rect_runs_along_the_bottom() {
        assert_eq!(Overlay::bar_rect((320, 120)), (0, 96, 320, 24));
        assert_eq!(Overlay::bar_rect((50, 10)), (0, 0, 50, 10));
        assert_eq!(Overlay::bar_rect((0, 0)), (0, 0, 0, 0));
    }

    #[test]
    fn position_at_maps_the_bar_and_clamps() {
        let t = (320, 120);
        assert_eq!(Overlay::position_at(t, 0.0, 10), 0);
        assert_eq!(Overlay::position_at(t, 31.9, 10), 0);
        assert_eq!(Overlay::position_at(t, 32.0, 10), 1);
        assert_eq!(Overlay::position_at(t, 319.9, 10), 9);
        assert_eq!(Overlay::position_at(t, -40.0, 10), 0);
        assert_eq!(Overlay::position_at(t, 1e9, 10), 9);
        assert_eq!(Overlay::position_at(t, f64::NAN, 10), 0);
        assert_eq!(Overlay::position_at(t, 100.0, 0), 0);
        assert_eq!(Overlay::position_at((0, 0), 100.0, 10), 0);
        assert_eq!(Overlay::position_at(t, 160.0, 100_000), 50_000);
    }

    #[test]
    fn playhead_sits_on_its_position_inside_the_strip() {
        for (position, len) in [(0, 10), (4, 10), (9, 10), (0, 1), (777, 1000)] {
            let (x, w) = playhead_span(320, position, len);
            assert_eq!(w, PLAYHEAD_WIDTH);
            assert!(x + w <= 320);
            let under = Overlay::position_at(TARGET, f64::from(x + w / 2), len);
            // Exact while a position spans a pixel or more; within the
            // positions a pixel spans when they are narrower.
            let slack = len / 320;
            assert!(
                under.abs_diff(position) <= slack,
                "{position} of {len}: {under}"
            );
        }
        assert_eq!(playhead_span(320, 4, 10), (143, 2));
        assert_eq!(playhead_span(1, 0, 10), (0, 1));
    }

    #[test]
    fn up_to_4096_positions_take_a_texel_each() {
        assert_eq!(bucket(&TEN), TEN);
        assert_eq!(bucket(&[]), vec![]);
        assert_eq!(bucket(&[Cell::Ram; MAX_TEXELS]).len(), MAX_TEXELS);
    }

    #[test]
    fn buckets_show_their_weakest_position() {
        let mut cells = vec![Cell::Device; 10_000];
        cells[5_000] = Cell::Ram;
        cells[7_000] = Cell::Gap;
        cells[7_001] = Cell::Empty;
        cells[9_999] = Cell::Empty;
        let texels = bucket(&cells);
        assert_eq!(texels.len(), MAX_TEXELS);
        let at = |p| texels[texel_of(p, cells.len(), MAX_TEXELS)];
        assert_eq!(at(5_000), Cell::Ram);
        assert_eq!(at(7_000), Cell::Gap, "a gap beats empty in the same bucket");
        assert_eq!(at(9_999), Cell::Empty);
        let marked = [5_000, 7_000, 7_001, 9_999].map(|p| texel_of(p, cells.len(), MAX_TEXELS));
        let others = (0..MAX_TEXELS).filter(|t| !marked.contains(t));
        assert!(others.map(|t| texels[t]).all(|c| c == Cell::Device));
        assert_eq!(Cell::Ram.weakest(Cell::Empty), Cell::Empty);
        assert_eq!(Cell::Device.weakest(Cell::Ram), Cell::Ram);
        assert_eq!(Cell::Empty.weakest(Cell::Gap), Cell::Gap);
    }

    #[test]
    fn timeline_texels_are_the_buckets_of_every_positions_cell() {
        use crate::source::Gaps;
        for len in [1usize, 7, 4_096, 4_097, 10_000, 123_457] {
            let frames: Vec<usize> = (0..len).filter(|p| p % 97 != 5).collect();
            let gaps = Gaps::between(frames.iter().copied(), len);
            let held: Vec<usize> = frames.iter().copied().filter(|p| p % 3 != 0).collect();
            let on_device: Vec<usize> = frames.iter().copied().filter(|p| p % 5 == 0).collect();
            let mut cells = vec![Cell::Empty; len];
            for &p in &held {
                cells[p] = Cell::Ram;
            }
            for &p in &on_device {
                cells[p] = Cell::Device;
            }
            for run in gaps.runs() {
                cells[run.clone()].fill(Cell::Gap);
            }
            assert_eq!(
                timeline_texels(len, &gaps, &held, &on_device),
                bucket(&cells),
                "{len} positions"
            );
        }
        // Ten million positions, two of them frames: a few thousand texels
        // from one run, no per-position cells.
        let len = 10_000_000;
        let gaps = Gaps::between([0, len - 1], len);
        let texels = timeline_texels(len, &gaps, &[0], &[]);
        assert_eq!(texels.len(), MAX_TEXELS);
        assert_eq!(
            texels[0],
            Cell::Gap,
            "position 1 is a gap in the first texel"
        );
        assert!(texels.iter().all(|&c| c == Cell::Gap));
    }

    #[test]
    fn every_bucket_is_a_run_of_positions() {
        for len in [4_097, 5_000, 8_192, 10_000, 123_457] {
            let mut first = vec![usize::MAX; MAX_TEXELS];
            let mut count = vec![0usize; MAX_TEXELS];
            for p in 0..len {
                let t = texel_of(p, len, MAX_TEXELS);
                first[t] = first[t].min(p);
                count[t] += 1;
            }
            assert!(count.iter().all(|&c| c > 0), "{len}: an empty bucket");
            for t in 1..MAX_TEXELS {
                assert_eq!(first[t], first[t - 1] + count[t - 1], "{len}: texel {t}");
            }
        }
    }

    #[test]
    fn glyph_bit_zero_is_the_leftmost_pixel() {
        // 'L': its stem in columns 1-2 of every row but the last, its foot
        // turning up at column 6 in rows 4-5. Read bit 7 first and it
        // would be a mirrored L.
        let l = glyph('L');
        assert!(l.iter().take(7).all(|row| row & 0b110 == 0b110));
        assert!(l.iter().all(|row| row & 0x80 == 0));
        assert_eq!((l[4] & 0x40, l[5] & 0x40, l[6]), (0x40, 0x40, 0x7F));
        let ((w, h), pixels) = rasterise(&["L".to_owned()], 1, 8192).unwrap();
        assert_eq!((w, h), (2 * PADDING + GLYPH, 2 * PADDING + GLYPH));
        let at = |x: u32, y: u32| pixels[((PADDING + y) * w + PADDING + x) as usize];
        let stem = (at(1, 3), at(2, 3), at(0, 3), at(6, 3));
        assert_eq!(stem, (255, 255, 0, 0));
        assert_eq!((at(6, 4), at(0, 6), at(6, 6), at(7, 6)), (255, 255, 255, 0));
    }

    #[test]
    fn characters_outside_printable_ascii_draw_as_a_question_mark() {
        assert_eq!(glyph('\u{e9}'), glyph('?'));
        assert_eq!(glyph('\t'), glyph('?'));
        assert_eq!(glyph('\u{7f}'), glyph('?'));
        assert_ne!(glyph('~'), glyph('?'));
        let raster = |s: &str| rasterise(&[s.to_owned()], 2, 8192);
        assert_eq!(raster("a\u{1F600}"), raster("a?"));
    }

    #[test]
    fn rasterised_text_fits_the_device_limit() {
        let long = vec!["x".repeat(1_000); 500];
        let ((w, h), pixels) = rasterise(&long, 2, 2048).unwrap();
        assert!(w <= 2048 && h <= 2048, "{w} x {h}");
        assert_eq!(pixels.len(), (w * h) as usize);
        assert_eq!(rasterise(&[], 1, 2048), None);
        assert_eq!(rasterise(&[String::new(), String::new()], 1, 2048), None);
        // Empty lines between others keep their place.
        let ((_, h), _) = rasterise(&["a".into(), String::new(), "b".into()], 1, 2048).unwrap();
        assert_eq!(h, 2 * PADDING + 3 * (GLYPH + LINE_GAP) - LINE_GAP);
    }
}
