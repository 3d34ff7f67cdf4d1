// Y'CbCr planes packed in one normalised texture (R8Unorm, R16Unorm; see
// the player's yuv.rs), converted to R'G'B' as they are drawn: luma and
// chroma each sampled bilinearly by the sampler at their own resolution
// and siting (coordinates clamped inside each plane, so no plane bleeds
// into its neighbour), then the stream's matrix and range.

struct Out {
    @builtin(position) pos: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

struct Params {
    // Luma plane width, height; chroma plane width, height (texels).
    sizes: vec4<f32>,
    // Origins of the Cb and Cr planes in the texture: x, y, x, y.
    origins: vec4<f32>,
    // Chroma texel = luma texel * scale - shift: scale x, y, shift x, y.
    siting: vec4<f32>,
    // Normalisation: (code - offset) * scale, luma then chroma.
    range: vec4<f32>,
    // The matrix rows from (Y', Cb, Cr) to R', G', B'.
    r: vec4<f32>,
    g: vec4<f32>,
    b: vec4<f32>,
    // The texture's width, height; the code value a sample of 1.0 is
    // (255 or 65535).
    texture: vec4<f32>,
};

@group(0) @binding(0) var planes: texture_2d<f32>;
@group(0) @binding(1) var planes_sampler: sampler;
@group(0) @binding(2) var<uniform> params: Params;

@vertex
fn vs(@builtin(vertex_index) i: u32) -> Out {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: Out;
    out.pos = vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0);
    out.uv = uv;
    return out;
}

// The plane at `origin` of `size` sampled at texel coordinate `t`
// (texel centres at whole numbers), in code values.
fn plane(origin: vec2<f32>, size: vec2<f32>, t: vec2<f32>) -> f32 {
    let inside = clamp(t, vec2<f32>(0.0, 0.0), size - vec2<f32>(1.0, 1.0));
    let uv = (origin + inside + vec2<f32>(0.5, 0.5)) / params.texture.xy;
    return textureSampleLevel(planes, planes_sampler, uv, 0.0).r * params.texture.z;
}

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let luma_size = params.sizes.xy;
    let chroma_size = params.sizes.zw;
    let t = in.uv * luma_size - vec2<f32>(0.5, 0.5);
    let c = t * params.siting.xy - params.siting.zw;
    let y = plane(vec2<f32>(0.0, 0.0), luma_size, t);
    let cb = plane(params.origins.xy, chroma_size, c);
    let cr = plane(params.origins.zw, chroma_size, c);
    let v = vec3<f32>(
        (y - params.range.x) * params.range.y,
        (cb - params.range.z) * params.range.w,
        (cr - params.range.z) * params.range.w,
    );
    let rgb = vec3<f32>(dot(params.r.xyz, v), dot(params.g.xyz, v), dot(params.b.xyz, v));
    return vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}
