//! Human-readable numbers for the text report.

/// Formats a byte count as the report prints it: `784`, `65.5K`, `1.2M`, `33G`.
///
/// Decimal units (K = 1000), one decimal below 100 of a unit and none above,
/// so every figure is at most four characters plus its unit.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if bytes < 1000 {
        return bytes.to_string();
    }
    let mut value = bytes as f64;
    let mut unit = "";
    for u in UNITS {
        value /= 1000.0;
        unit = u;
        if value < 999.95 {
            break;
        }
    }
    if value < 99.95 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.0}{unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes_print_as_the_report_shows_them() {
        let cases = [
            (0, "0"),
            (784, "784"),
            (999, "999"),
            (1000, "1.0K"),
            (65_536, "65.5K"),
            (66_300, "66.3K"),
            (123_456, "123K"),
            (999_999, "1.0M"),
            (1_200_000, "1.2M"),
            (33_177_600, "33.2M"),
            (u64::MAX, "18.4E"),
        ];
        for (bytes, want) in cases {
            assert_eq!(human_bytes(bytes), want, "{bytes}");
        }
    }
}
