//! Payload patterns, identical to `bench/c/oxbench.c`, so both front ends verify the same way.

/// SplitMix64's finaliser.
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The seed naming one message: benchmark size, sender, receiver.
pub fn seed_of(size: usize, src: i32, dst: i32) -> u64 {
    mix(((size as u64) << 24) ^ ((src as u32 as u64) << 12) ^ dst as u32 as u64)
}

/// Byte `i` of the message named by `seed`.
pub fn pattern_byte(seed: u64, i: usize) -> u8 {
    (mix(seed.wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))) >> 56) as u8
}

/// Fills `buf` with the pattern.
pub fn fill(buf: &mut [u8], seed: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(seed, i);
    }
}

/// Fills `buf` with the complement of the pattern, so nothing matches before data arrives.
pub fn poison(buf: &mut [u8], seed: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = !pattern_byte(seed, i);
    }
}

/// The first byte of `buf` that differs from the pattern, with the expected and found values.
pub fn mismatch(buf: &[u8], seed: u64) -> Option<(usize, u8, u8)> {
    buf.iter()
        .enumerate()
        .find(|(i, &b)| b != pattern_byte(seed, *i))
        .map(|(i, &b)| (i, pattern_byte(seed, i), b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisoned_buffers_never_match_and_filled_ones_do() {
        let seed = seed_of(64, 0, 1);
        let mut b = vec![0u8; 64];
        poison(&mut b, seed);
        assert_eq!(mismatch(&b, seed).map(|m| m.0), Some(0));
        fill(&mut b, seed);
        assert_eq!(mismatch(&b, seed), None);
        b[10] ^= 1;
        assert_eq!(mismatch(&b, seed).map(|m| m.0), Some(10));
    }

    #[test]
    fn matches_the_c_definition() {
        // mix(0) and one pattern byte computed by hand from the C code's constants.
        assert_eq!(mix(0), 0);
        assert_eq!(seed_of(0, 0, 0), 0);
        assert_eq!(pattern_byte(0, 0), 0);
        assert_ne!(pattern_byte(0, 1), pattern_byte(0, 2));
    }
}
