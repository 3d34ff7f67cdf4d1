//! The `stagehand` command, run as a user runs it.

use std::io::Write;
use std::process::Command;

fn stagehand(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_stagehand"))
        // Headless whatever the desktop: these tests are about the output.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn report_prints_every_section() {
    let out = stagehand(&["report"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in [
        "system",
        "adapter",
        "versions",
        "object_counts",
        "wgpu_report",
        #[cfg(feature = "cuda")]
        "cuda",
    ] {
        assert!(
            text.contains(&format!("\u{2588}\u{2588} {name}:")),
            "{name} missing:\n{text}"
        );
    }
}

/// Without a CUDA driver the `cuda` section is one line saying so.
#[cfg(feature = "cuda")]
#[test]
fn report_says_in_one_line_that_cuda_is_unavailable() {
    let out = stagehand(&["report"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let section = text
        .split("\u{2588}\u{2588} cuda:")
        .nth(1)
        .expect("a cuda section");
    let lines: Vec<&str> = section.lines().filter(|l| !l.trim().is_empty()).collect();
    if stagehand_gpu::backend::cuda::driver_present() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED report_says_in_one_line_that_cuda_is_unavailable: a CUDA driver is present"
        );
        assert!(lines.iter().any(|l| l.contains("device")), "{section}");
        return;
    }
    assert_eq!(lines.len(), 1, "{section}");
    assert!(lines[0].contains("unavailable") && lines[0].contains("no CUDA driver"));
}

#[test]
fn report_json_parses_and_carries_the_text_numbers() {
    let json = stagehand(&["report", "--json"]);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("valid JSON");
    let text = String::from_utf8_lossy(&stagehand(&["report"]).stdout).into_owned();
    let cpus = value["system"]["cpus"].as_u64().unwrap();
    assert!(text.contains(&format!("cpus:  {cpus}")), "{text}");
    let name = value["adapter"]["name"].as_str().unwrap();
    assert!(text.contains(name), "{text}");
    let devices = value["object_counts"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Device")
        .unwrap()["count"]
        .as_u64();
    assert_eq!(devices, Some(1));
}

#[test]
fn unknown_backend_fails_with_a_message_not_a_panic() {
    let out = stagehand(&["report", "--backend", "glide"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown backend \"glide\""), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn help_explains_every_option() {
    let out = stagehand(&["report", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for option in ["--json", "--backend", "--adapter"] {
        assert!(help.contains(option), "{option} missing:\n{help}");
    }
}
