//! Capacity classes: eight per power of two.
//!
//! A request of `len` bytes rounds up to the next class. Up to 16 bytes every
//! size is its own class; above, the octave `(2^k, 2^(k+1)]` is cut into eight
//! equal steps of `2^(k-3)`, which is 1/8 of the octave's floor and 1/16 of
//! its ceiling. So a class is never smaller than the request, wastes less
//! than 1/8 of it, and sizes within one step share a class (and its buffers).

/// The capacity class of a request of `len` bytes; `0` for `0`.
///
/// Saturates at the largest class that fits in `u64` for lengths within one
/// step of `u64::MAX`.
pub const fn class_of(len: u64) -> u64 {
    let step = step_of(len);
    match len.div_ceil(step).checked_mul(step) {
        Some(class) => class,
        None => u64::MAX - (u64::MAX % step),
    }
}

/// The distance between neighbouring classes around `len`.
pub const fn step_of(len: u64) -> u64 {
    if len <= 16 {
        return 1;
    }
    // 2^k < len <= 2^(k+1); the step is 2^(k-3).
    let k = 63 - (len - 1).leading_zeros();
    1 << (k - 3)
}

/// The class's position among all classes, counting from `class_of(1) = 1`
/// at index 1: dense, so it can index an array of per-class data.
pub const fn class_index(len: u64) -> u32 {
    let class = class_of(len);
    if class <= 16 {
        return class as u32;
    }
    let k = 63 - (class - 1).leading_zeros();
    let within = ((class - (1 << k)) >> (k - 3)) as u32; // 1..=8
    16 + (k - 4) * 8 + within
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(len: u64) {
        let c = class_of(len);
        assert!(c >= len, "{len} -> {c}");
        assert!(
            (c - len) * 8 <= len.max(8),
            "{len} -> {c} wastes more than 1/8"
        );
        assert_eq!(class_of(c), c, "a class is its own class: {c}");
    }

    #[test]
    fn exhaustive_over_the_first_100_000_sizes() {
        assert_eq!(class_of(0), 0);
        for len in 1..=100_000 {
            check(len);
        }
    }

    #[test]
    fn sampled_up_to_2_pow_40_and_beyond() {
        for k in 4..=62u32 {
            let base = 1u64 << k;
            for len in [base - 1, base, base + 1, base + base / 3, 2 * base - 1] {
                check(len);
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(x % (1 << 40) + 1);
        }
        assert_eq!(class_of(u64::MAX), u64::MAX - (u64::MAX % (1 << 60)));
    }

    #[test]
    fn eight_classes_per_octave_and_neighbours_share() {
        let classes: Vec<u64> = (1025..=2048)
            .map(class_of)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(classes, [1152, 1280, 1408, 1536, 1664, 1792, 1920, 2048]);
        assert_eq!(class_of(1000), class_of(1020));
        assert_eq!(class_of(4 << 20), 4 << 20);
    }

    #[test]
    fn indices_are_dense_and_ordered() {
        let mut last = 0;
        let mut len = 1u64;
        while len < 1 << 40 {
            let idx = class_index(len);
            assert_eq!(idx, last + 1, "class {}", class_of(len));
            last = idx;
            len = class_of(len) + 1;
        }
    }

    #[test]
    fn const_friendly() {
        const C: u64 = class_of(1000);
        const I: u32 = class_index(17);
        assert_eq!((C, I), (1024, 17));
    }
}
