// A full-screen triangle, clipped to the letterbox viewport, with texture
// coordinates from 0 to 1 across the picture: the vertex stage every
// picture shader of the player starts with (the render pass prepends this
// file to display.wgsl, yuv.wgsl and overlay.wgsl).

struct Out {
    @builtin(position) pos: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

@vertex
fn vs(@builtin(vertex_index) i: u32) -> Out {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: Out;
    out.pos = vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0);
    out.uv = uv;
    return out;
}
