// The window's overlay, drawn over the picture: the timeline strip (its
// cache cells, then the playhead) and the heads-up display's text box.
// Every colour is written as it is: the target is never an sRGB format.
// Follows fullscreen.wgsl (its `Out` and vertex stage: a triangle covering
// each draw's viewport, uv 0..1 across it).

struct Bar {
    // A colour per cell code (overlay.rs `Cell::code`): 0 empty, which is
    // also the strip's background; 1 in RAM; 2 on the device; 3 a gap.
    palette: array<vec4<f32>, 4>,
    // Texels of `cells` in use, from the first; 0: background only.
    count: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
};

// Geometry and the box's opacity; overlay.rs holds the values.
// The strip's height in pixels.
override BAR_HEIGHT: u32;
// The strip's rows (from its top) that cells fill: BAND_TOP..BAND_BOTTOM.
override BAND_TOP: u32;
override BAND_BOTTOM: u32;
// Texels per row of `cells`.
override CELL_ROW: u32;
// The text box's distance from the target's top-left corner, in pixels.
override MARGIN: u32;
// The opacity of the (black) box behind the text.
override BOX_ALPHA: f32;

@group(0) @binding(0) var cells: texture_2d<u32>;
@group(0) @binding(1) var<uniform> bar: Bar;
// Binding 2, not 0: one module declares both layouts' resources, and no
// two may share a binding.
@group(0) @binding(2) var text: texture_2d<f32>;

// The strip, its viewport exactly the strip: the cell under each column,
// in the band of rows; background elsewhere.
@fragment
fn fs_bar(in: Out) -> @location(0) vec4<f32> {
    let row = u32(in.uv.y * f32(BAR_HEIGHT));
    if bar.count == 0u || row < BAND_TOP || row >= BAND_BOTTOM {
        return bar.palette[0];
    }
    let texel = min(u32(in.uv.x * f32(bar.count)), bar.count - 1u);
    let code = textureLoad(cells, vec2<u32>(texel % CELL_ROW, texel / CELL_ROW), 0).r;
    return bar.palette[min(code, 3u)];
}

// The playhead: its viewport and scissor are the line itself.
@fragment
fn fs_playhead() -> @location(0) vec4<f32> {
    return vec4<f32>(1.0);
}

// The text box: white where a glyph covers the pixel, translucent black
// elsewhere. The texel comes from the pixel's own position (not the
// viewport), so a scissor that clips the box leaves the rest in place.
@fragment
fn fs_text(in: Out) -> @location(0) vec4<f32> {
    let last = vec2<i32>(textureDimensions(text)) - 1;
    let texel = clamp(vec2<i32>(floor(in.pos.xy)) - i32(MARGIN), vec2<i32>(0), last);
    let coverage = textureLoad(text, texel, 0).r;
    return vec4<f32>(vec3<f32>(coverage), mix(BOX_ALPHA, 1.0, coverage));
}
