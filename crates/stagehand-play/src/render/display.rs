//! The display transform: scene-linear light to display code values.
//! `display.wgsl` does it on the GPU; [`encode`] is the same arithmetic on
//! the CPU, for tests and for anyone checking a read-back.

use serde::Serialize;

/// The transfer function to the display (`Display::transfer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transfer {
    /// The sRGB curve (IEC 61966-2-1).
    #[default]
    Srgb,
    /// The BT.709 camera curve.
    Rec709,
    /// None: linear values straight to the display.
    Linear,
}

impl Transfer {
    /// The next one, in the order a key cycles them: sRGB, BT.709,
    /// linear, sRGB.
    pub fn next(self) -> Self {
        match self {
            Self::Srgb => Self::Rec709,
            Self::Rec709 => Self::Linear,
            Self::Linear => Self::Srgb,
        }
    }
}

impl std::str::FromStr for Transfer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "srgb" => Self::Srgb,
            "rec709" | "bt709" => Self::Rec709,
            "linear" => Self::Linear,
            _ => return Err(format!("{s:?}: expected srgb, rec709 or linear")),
        })
    }
}

/// How scene-linear frames are shown: exposure, then a transfer function.
/// Display-referred (integer) frames are drawn as they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Display {
    /// The transfer function.
    pub transfer: Transfer,
    /// Stops of exposure: values are multiplied by 2^exposure first.
    pub exposure: f32,
}

/// Bytes of the shader's parameter block.
pub(super) const PARAMS_BYTES: u64 = 16;

impl Display {
    /// The shader's parameter block for `display`: the exposure gain.
    pub(super) fn params_of(display: Option<Display>) -> [u8; PARAMS_BYTES as usize] {
        let gain = display.map_or(1.0, |d| d.exposure.exp2());
        let mut out = [0u8; PARAMS_BYTES as usize];
        out[0..4].copy_from_slice(&gain.to_le_bytes());
        out
    }

    /// The shader's pipeline constants for `display` (`None`: draw as
    /// stored).
    pub(super) fn constants(display: Option<Display>) -> [(&'static str, f64); 2] {
        let transfer = match display.map(|d| d.transfer) {
            Some(Transfer::Srgb) | None => 0.0,
            Some(Transfer::Rec709) => 1.0,
            Some(Transfer::Linear) => 2.0,
        };
        let scene_linear = if display.is_some() { 1.0 } else { 0.0 };
        [("TRANSFER", transfer), ("SCENE_LINEAR", scene_linear)]
    }
}

/// One scene-linear value through `display`: a display value in 0..1.
pub fn encode(value: f32, display: Display) -> f32 {
    let v = (value * display.exposure.exp2()).clamp(0.0, 1.0);
    match display.transfer {
        Transfer::Srgb if v <= 0.003_130_8 => 12.92 * v,
        Transfer::Srgb => 1.055 * v.powf(1.0 / 2.4) - 0.055,
        Transfer::Rec709 if v < 0.018 => 4.5 * v,
        Transfer::Rec709 => 1.099 * v.powf(0.45) - 0.099,
        Transfer::Linear => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_meet_their_reference_points() {
        let srgb = Display::default();
        assert_eq!(encode(0.0, srgb), 0.0);
        assert!((encode(1.0, srgb) - 1.0).abs() < 1e-6);
        assert!((encode(0.18, srgb) - 0.461_356).abs() < 1e-4, "18% grey");
        let rec = Display {
            transfer: Transfer::Rec709,
            exposure: 0.0,
        };
        assert!((encode(0.018, rec) - 0.081).abs() < 1e-3);
        let hot = Display {
            transfer: Transfer::Linear,
            exposure: 1.0,
        };
        assert_eq!(encode(0.25, hot), 0.5, "one stop doubles");
        assert_eq!(encode(-3.0, hot), 0.0, "negative light clamps to black");
    }
}
