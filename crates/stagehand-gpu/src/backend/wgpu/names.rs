//! wgpu's types from the names WebGPU and wgpu give them in text:
//! texture formats (`"rgba8unorm"`, `"rgba16float"`) and usage flags
//! (`"vertex|copy_dst"`), for callers that name them in a script or a
//! configuration file.

use crate::error::{Error, Result};

/// The texture format WebGPU calls `name` (`"rgba8unorm"`,
/// `"bgra8unorm-srgb"`, `"rgba16float"`, `"r32uint"`, ...).
pub fn texture_format(name: &str) -> Result<wgpu::TextureFormat> {
    let value = serde_json::Value::String(name.trim().to_ascii_lowercase());
    serde_json::from_value(value).map_err(|_| Error::UnknownName {
        what: "texture format",
        name: name.to_owned(),
        expected: "a WebGPU format name such as rgba8unorm, bgra8unorm, rgba16float, \
                   rgba32float, r8unorm, r16uint or rgba8unorm-srgb"
            .into(),
    })
}

/// The WebGPU name of `format`: the inverse of [`texture_format`].
pub fn texture_format_name(format: wgpu::TextureFormat) -> String {
    match serde_json::to_value(format) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{format:?}").to_ascii_lowercase(),
    }
}

/// Buffer usages from flag names joined by `|` (`"vertex|copy_dst"`,
/// case-insensitive, spaces allowed).
pub fn buffer_usages(names: &str) -> Result<wgpu::BufferUsages> {
    flags(
        names,
        "buffer usage",
        wgpu::BufferUsages::empty(),
        wgpu::BufferUsages::from_name,
        || wgpu::BufferUsages::all().iter_names().map(|(n, _)| n),
    )
}

/// Texture usages from flag names joined by `|`
/// (`"texture_binding|copy_dst"`).
pub fn texture_usages(names: &str) -> Result<wgpu::TextureUsages> {
    flags(
        names,
        "texture usage",
        wgpu::TextureUsages::empty(),
        wgpu::TextureUsages::from_name,
        || wgpu::TextureUsages::all().iter_names().map(|(n, _)| n),
    )
}

/// Parses `names` with `from_name`, naming every flag there is when one
/// is unknown.
fn flags<F, I>(
    names: &str,
    what: &'static str,
    empty: F,
    from_name: impl Fn(&str) -> Option<F>,
    all: impl Fn() -> I,
) -> Result<F>
where
    F: std::ops::BitOr<Output = F>,
    I: Iterator<Item = &'static str>,
{
    let mut out = empty;
    for name in names.split('|').map(str::trim) {
        let Some(flag) = from_name(&name.to_ascii_uppercase()) else {
            let known: Vec<String> = all().map(str::to_ascii_lowercase).collect();
            return Err(Error::UnknownName {
                what,
                name: name.to_owned(),
                expected: format!("flags joined by | from {}", known.join(", ")),
            });
        };
        out = out | flag;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_read_and_written_by_their_webgpu_names() {
        use wgpu::TextureFormat as F;
        assert_eq!(texture_format("rgba8unorm").unwrap(), F::Rgba8Unorm);
        assert_eq!(texture_format("RGBA16Float").unwrap(), F::Rgba16Float);
        assert_eq!(
            texture_format("bgra8unorm-srgb").unwrap(),
            F::Bgra8UnormSrgb
        );
        assert_eq!(texture_format_name(F::Rgba8UnormSrgb), "rgba8unorm-srgb");
        assert_eq!(texture_format_name(F::R32Uint), "r32uint");
        let err = texture_format("rgb8").unwrap_err().to_string();
        assert!(err.contains("unknown texture format \"rgb8\""), "{err}");
    }

    #[test]
    fn usages_are_flag_names_joined_by_bars() {
        use wgpu::BufferUsages as B;
        assert_eq!(buffer_usages("copy_dst").unwrap(), B::COPY_DST);
        assert_eq!(
            buffer_usages("vertex | COPY_DST").unwrap(),
            B::VERTEX | B::COPY_DST
        );
        assert_eq!(
            texture_usages("texture_binding|render_attachment").unwrap(),
            wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::RENDER_ATTACHMENT
        );
        let err = buffer_usages("vertex|vertx").unwrap_err().to_string();
        assert!(
            err.contains("\"vertx\"") && err.contains("copy_dst"),
            "{err}"
        );
        assert!(buffer_usages("").is_err());
    }
}
