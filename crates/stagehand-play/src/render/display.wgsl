// The player's render pass for RGBA frames (after fullscreen.wgsl):
// sampling the frame on screen, with the display transform for
// scene-linear sources.

struct Params {
    // 2^exposure, applied before the transfer function.
    gain: f32,
    pad0: f32,
    pad1: f32,
    pad2: f32,
};

// Pipeline constants, so each pipeline compiles only its own path.
// The transfer function: 0 sRGB, 1 BT.709, 2 linear (none).
override TRANSFER: u32 = 0u;
// true when the source is scene-linear (float): transform it; false when
// it is display-referred already: draw it as it is.
override SCENE_LINEAR: bool = false;

@group(0) @binding(0) var frame: texture_2d<f32>;
@group(0) @binding(1) var frame_sampler: sampler;
@group(0) @binding(2) var<uniform> params: Params;

fn srgb(x: f32) -> f32 {
    if x <= 0.0031308 {
        return 12.92 * x;
    }
    return 1.055 * pow(x, 1.0 / 2.4) - 0.055;
}

fn bt709(x: f32) -> f32 {
    if x < 0.018 {
        return 4.5 * x;
    }
    return 1.099 * pow(x, 0.45) - 0.099;
}

fn encode(x: f32) -> f32 {
    let v = clamp(x * params.gain, 0.0, 1.0);
    switch TRANSFER {
        case 0u: { return srgb(v); }
        case 1u: { return bt709(v); }
        default: { return v; }
    }
}

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let c = textureSample(frame, frame_sampler, in.uv);
    if !SCENE_LINEAR {
        return c;
    }
    return vec4<f32>(encode(c.r), encode(c.g), encode(c.b), clamp(c.a, 0.0, 1.0));
}
