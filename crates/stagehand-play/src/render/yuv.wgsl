// Y'CbCr planes packed in one integer texture (see the player's yuv.rs),
// for devices without 16-bit normalised textures: converted to R'G'B' as
// they are drawn, luma and chroma each filtered bilinearly (four exact
// loads each) at their own resolution and siting, then the stream's
// matrix and range. yuv_filtered.wgsl is the same with the sampler
// filtering, where the planes are in a normalised texture.

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
    // The texture's width, height; what one unit of a sample is in code
    // values (1 here: samples are code values).
    texture: vec4<f32>,
};

@group(0) @binding(0) var planes: texture_2d<u32>;
@group(0) @binding(2) var<uniform> params: Params;

@vertex
fn vs(@builtin(vertex_index) i: u32) -> Out {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: Out;
    out.pos = vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0);
    out.uv = uv;
    return out;
}

// One code value of the plane at `origin` of `size`, clamped to its edge.
fn load(origin: vec2<f32>, size: vec2<f32>, p: vec2<i32>) -> f32 {
    let q = clamp(p, vec2<i32>(0, 0), vec2<i32>(size) - vec2<i32>(1, 1));
    return f32(textureLoad(planes, vec2<i32>(origin) + q, 0).r);
}

// The plane filtered bilinearly at texel coordinate `t` (texel centres at
// whole numbers).
fn bilinear(origin: vec2<f32>, size: vec2<f32>, t: vec2<f32>) -> f32 {
    let f = floor(t);
    let w = t - f;
    let i = vec2<i32>(f);
    let a = load(origin, size, i);
    let b = load(origin, size, i + vec2<i32>(1, 0));
    let c = load(origin, size, i + vec2<i32>(0, 1));
    let d = load(origin, size, i + vec2<i32>(1, 1));
    return mix(mix(a, b, w.x), mix(c, d, w.x), w.y);
}

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let luma_size = params.sizes.xy;
    let chroma_size = params.sizes.zw;
    let t = in.uv * luma_size - vec2<f32>(0.5, 0.5);
    let c = t * params.siting.xy - params.siting.zw;
    let y = bilinear(vec2<f32>(0.0, 0.0), luma_size, t);
    let cb = bilinear(params.origins.xy, chroma_size, c);
    let cr = bilinear(params.origins.zw, chroma_size, c);
    let v = vec3<f32>(
        (y - params.range.x) * params.range.y,
        (cb - params.range.z) * params.range.w,
        (cr - params.range.z) * params.range.w,
    );
    let rgb = vec3<f32>(dot(params.r.xyz, v), dot(params.g.xyz, v), dot(params.b.xyz, v));
    return vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}
