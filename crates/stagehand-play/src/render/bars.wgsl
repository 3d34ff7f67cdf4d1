// The letterbox's bars: black, over the parts of the target the picture
// leaves. Follows fullscreen.wgsl (its vertex stage: a triangle covering
// each bar's viewport).

@fragment
fn fs() -> @location(0) vec4<f32> {
    return vec4<f32>(0.0, 0.0, 0.0, 1.0);
}
