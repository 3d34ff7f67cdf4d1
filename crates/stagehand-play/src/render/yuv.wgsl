// Y'CbCr planes packed in one texture (see the player's yuv.rs),
// converted to R'G'B' as they are drawn: luma and chroma each filtered
// bilinearly at their own resolution and siting, then the stream's matrix
// and range. Follows fullscreen.wgsl; one of yuv_filtered.wgsl (a
// normalised texture, the sampler filters) or yuv_integer.wgsl (an integer
// texture, four exact loads a sample) follows it with `plane`.

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
    // (255 or 65535; 1 for an integer texture, whose samples are codes).
    texture: vec4<f32>,
};

@group(0) @binding(2) var<uniform> params: Params;

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
