// Y'CbCr planes packed in one texture (see the player's yuv.rs),
// converted to R'G'B' as they are drawn: luma and chroma each filtered
// bilinearly at their own resolution and siting, then the stream's matrix
// and range. Follows fullscreen.wgsl; one of yuv_filtered.wgsl (a
// normalised texture, the sampler filters) or yuv_integer.wgsl (an integer
// texture, four exact loads a sample) follows it with `plane`.
//
// Every parameter is a pipeline constant (render/yuv.rs sets them from the
// stream's format), not a uniform: a software rasteriser then folds them
// into the code, where it would otherwise load each one for every pixel.

// The luma plane's size, and the chroma planes', in texels.
override LUMA_WIDTH: f32;
override LUMA_HEIGHT: f32;
override CHROMA_WIDTH: f32;
override CHROMA_HEIGHT: f32;
// The origins of the Cb and Cr planes in the texture.
override CB_X: f32;
override CB_Y: f32;
override CR_X: f32;
override CR_Y: f32;
// Chroma texel = luma texel * scale - shift, across and down.
override CHROMA_SCALE_X: f32;
override CHROMA_SCALE_Y: f32;
override CHROMA_SHIFT_X: f32;
override CHROMA_SHIFT_Y: f32;
// Normalisation: (code - offset) * scale, luma then chroma.
override LUMA_OFFSET: f32;
override LUMA_SCALE: f32;
override CHROMA_OFFSET: f32;
override CHROMA_SCALE: f32;
// The matrix rows from (Y', Cb, Cr) to R', G', B'.
override R_Y: f32;
override R_CB: f32;
override R_CR: f32;
override G_Y: f32;
override G_CB: f32;
override G_CR: f32;
override B_Y: f32;
override B_CB: f32;
override B_CR: f32;
// The texture's width and height; the code value a sample of 1.0 is (255
// or 65535; 1 for an integer texture, whose samples are codes).
override TEXTURE_WIDTH: f32;
override TEXTURE_HEIGHT: f32;
override UNIT: f32;

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let luma_size = vec2<f32>(LUMA_WIDTH, LUMA_HEIGHT);
    let chroma_size = vec2<f32>(CHROMA_WIDTH, CHROMA_HEIGHT);
    let t = in.uv * luma_size - vec2<f32>(0.5, 0.5);
    let c = t * vec2<f32>(CHROMA_SCALE_X, CHROMA_SCALE_Y) - vec2<f32>(CHROMA_SHIFT_X, CHROMA_SHIFT_Y);
    let y = plane(vec2<f32>(0.0, 0.0), luma_size, t);
    let cb = plane(vec2<f32>(CB_X, CB_Y), chroma_size, c);
    let cr = plane(vec2<f32>(CR_X, CR_Y), chroma_size, c);
    let v = vec3<f32>(
        (y - LUMA_OFFSET) * LUMA_SCALE,
        (cb - CHROMA_OFFSET) * CHROMA_SCALE,
        (cr - CHROMA_OFFSET) * CHROMA_SCALE,
    );
    let rgb = vec3<f32>(
        dot(vec3<f32>(R_Y, R_CB, R_CR), v),
        dot(vec3<f32>(G_Y, G_CB, G_CR), v),
        dot(vec3<f32>(B_Y, B_CB, B_CR), v),
    );
    return vec4<f32>(rgb, 1.0);
}
