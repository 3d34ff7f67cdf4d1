//! Natural order of file names: `frame_9.png` before `frame_10.png`.

use std::cmp::Ordering;

/// Compares two names, runs of digits by their value and the rest by text.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (na, ra) = split_digits(a);
                let (nb, rb) = split_digits(b);
                let order = compare_digits(na, nb);
                if order != Ordering::Equal {
                    return order;
                }
                (a, b) = (ra, rb);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                (a, b) = (&a[x.len_utf8()..], &b[y.len_utf8()..]);
            }
        }
    }
}

/// Compares two runs of digits by their value, then the shorter (fewer
/// leading zeros) first.
fn compare_digits(na: &str, nb: &str) -> Ordering {
    let by_value = na
        .trim_start_matches('0')
        .len()
        .cmp(&nb.trim_start_matches('0').len());
    by_value
        .then_with(|| na.trim_start_matches('0').cmp(nb.trim_start_matches('0')))
        .then(na.len().cmp(&nb.len()))
}

/// Splits a name at the end of its leading run of digits.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::natural_cmp;

    #[test]
    fn numbers_sort_by_value() {
        let mut names = vec![
            "frame_10.png",
            "frame_9.png",
            "frame_100.png",
            "frame_1.png",
            "a.png",
            "frame_09.png",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "a.png",
                "frame_1.png",
                "frame_9.png",
                "frame_09.png",
                "frame_10.png",
                "frame_100.png"
            ]
        );
    }
}
