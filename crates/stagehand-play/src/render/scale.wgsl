// The second step of drawing an enlarged Y'CbCr frame (render/upscale.rs):
// the frame, converted to R'G'B' at its own size already, filtered up to
// the picture's size on screen with one bilinear sample a pixel. Follows
// fullscreen.wgsl.

@group(0) @binding(0) var converted: texture_2d<f32>;
@group(0) @binding(1) var converted_sampler: sampler;

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    return textureSampleLevel(converted, converted_sampler, in.uv, 0.0);
}
