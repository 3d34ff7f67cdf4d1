//! Records the compiler and wgpu versions for the report's `versions` section.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=STAGEHAND_RUSTC_VERSION={version}");

    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let wgpu = find_lock(&manifest)
        .and_then(|lock| {
            println!("cargo:rerun-if-changed={}", lock.display());
            locked_version(&std::fs::read_to_string(lock).ok()?, "wgpu")
        })
        .unwrap_or_else(|| "unknown (no Cargo.lock found)".into());
    println!("cargo:rustc-env=STAGEHAND_WGPU_VERSION={wgpu}");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The nearest `Cargo.lock` at or above `dir`: the workspace's, or the
/// dependent project's when stagehand is built as a dependency from a path.
fn find_lock(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|p| p.is_file())
}

/// The version of package `name` in a lock file's text.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == wanted {
            let version = lines.next()?.trim().strip_prefix("version = \"")?;
            return Some(version.trim_end_matches('"').to_owned());
        }
    }
    None
}
