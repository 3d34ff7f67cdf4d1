// The planes in an integer texture (R16Uint, where the device has no
// 16-bit normalised textures): each plane filtered bilinearly by hand from
// four exact loads. Follows yuv.wgsl.

@group(0) @binding(0) var planes: texture_2d<u32>;

// One code value of the plane at `origin` of `size`, clamped to its edge.
fn load(origin: vec2<f32>, size: vec2<f32>, p: vec2<i32>) -> f32 {
    let q = clamp(p, vec2<i32>(0, 0), vec2<i32>(size) - vec2<i32>(1, 1));
    return f32(textureLoad(planes, vec2<i32>(origin) + q, 0).r);
}

// The plane at `origin` of `size` filtered bilinearly at texel coordinate
// `t` (texel centres at whole numbers), in code values.
fn plane(origin: vec2<f32>, size: vec2<f32>, t: vec2<f32>) -> f32 {
    let f = floor(t);
    let w = t - f;
    let i = vec2<i32>(f);
    let a = load(origin, size, i);
    let b = load(origin, size, i + vec2<i32>(1, 0));
    let c = load(origin, size, i + vec2<i32>(0, 1));
    let d = load(origin, size, i + vec2<i32>(1, 1));
    return mix(mix(a, b, w.x), mix(c, d, w.x), w.y);
}

