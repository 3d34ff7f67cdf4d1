//! The `versions` section: what stagehand was built from.

use crate::diag::report::{Block, Cell, Section, View};
use serde::Serialize;

/// Versions of stagehand, wgpu and the compiler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Versions {
    /// This crate's version.
    pub stagehand: String,
    /// The wgpu version in the build's lock file.
    pub wgpu: String,
    /// `rustc --version` of the compiler that built stagehand.
    pub rustc: String,
    /// `debug` or `release`.
    pub profile: String,
}

impl Versions {
    /// The versions this build was made with.
    pub fn collect() -> Self {
        Self {
            stagehand: env!("CARGO_PKG_VERSION").to_owned(),
            wgpu: env!("STAGEHAND_WGPU_VERSION").to_owned(),
            rustc: env!("STAGEHAND_RUSTC_VERSION").to_owned(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_owned(),
        }
    }
}

impl Section for Versions {
    fn name(&self) -> &str {
        "versions"
    }

    fn view(&self) -> View {
        let fields = vec![
            ("stagehand".into(), Cell::text(&self.stagehand)),
            ("wgpu".into(), Cell::text(&self.wgpu)),
            ("rustc".into(), Cell::text(&self.rustc)),
            ("profile".into(), Cell::text(&self.profile)),
        ];
        View {
            blocks: vec![Block::Fields(fields)],
            footnotes: vec![],
        }
    }
}
