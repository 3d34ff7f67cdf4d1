// The planes in a normalised texture (R8Unorm, R16Unorm), sampled by the
// sampler's bilinear filter at coordinates clamped inside each plane, so
// no plane bleeds into its neighbour. Follows yuv.wgsl.

@group(0) @binding(0) var planes: texture_2d<f32>;
@group(0) @binding(1) var planes_sampler: sampler;

// The plane at `origin` of `size` sampled at texel coordinate `t`
// (texel centres at whole numbers), in code values.
fn plane(origin: vec2<f32>, size: vec2<f32>, t: vec2<f32>) -> f32 {
    let inside = clamp(t, vec2<f32>(0.0, 0.0), size - vec2<f32>(1.0, 1.0));
    let uv = (origin + inside + vec2<f32>(0.5, 0.5)) / vec2<f32>(TEXTURE_WIDTH, TEXTURE_HEIGHT);
    return textureSampleLevel(planes, planes_sampler, uv, 0.0).r * UNIT;
}
