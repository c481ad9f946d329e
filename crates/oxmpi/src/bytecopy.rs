//! Copying message bytes without the CPU's slow path.
//!
//! glibc's `memcpy` copies blocks of a few KiB and more with `rep movsb`. On AMD Zen cores that
//! instruction runs 15–30× slower when the destination lies 1–63 bytes after the source modulo
//! 4096 (measured here: 8 KiB in 4.9 µs instead of 0.1 µs). That is the common case for
//! messages: pool blocks and windows are page aligned, and `malloc` returns large buffers at a
//! page plus 16 bytes. Every copy of message payload (pool blocks in and out, staged and
//! arena bytes, one-sided transfers) goes through [`copy`], which takes a plain vector loop for
//! those distances and `memcpy` for all others.
//!
//! [`copy_handoff`] also gives the loop every copy of 1–4 KiB into or out of a shared-memory
//! pool block, whose lines the other core holds. Between its 512-byte vector loop and its
//! `rep movsb` threshold (2112 bytes on the AVX-512 Xeon this was measured on), glibc's
//! `memcpy` moves such a block markedly slower than this loop does: np 2 bandwidth at 2 KiB
//! 5.4–7.0 GB/s against 7.9–8.5 with the loop, 1.5 KiB 4.7–5.8 against 6.4–7.1, latency at
//! 2 KiB 0.69 against 0.60 µs; 1, 3 and 4 KiB unchanged (`oxrun -n 2 --bind-to core
//! oxmpi-bench bw|latency`, 3 interleaved rounds, page-aligned and page + 16 buffers alike).
//! Copies whose lines this core already holds stay with `memcpy`, which is the faster one in
//! cache (one-sided puts of 2 KiB: 113 GB/s against 65 through the loop).

/// Smallest copy that glibc may do with `rep movsb` (its threshold is 2 KiB for SSE2 and
/// grows with the vector width); smaller ones never take the slow path.
const REP_MOVSB_MIN: usize = 2048;

/// The band of sizes [`copy_handoff`] always gives to the loop (see the module's doc).
const LOOP_BAND: std::ops::Range<usize> = 1024..4096;

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// As for [`std::ptr::copy_nonoverlapping`]: `src` readable and `dst` writable for `n` bytes,
/// the two ranges disjoint.
#[inline]
pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    if n >= REP_MOVSB_MIN && short_distance(dst, src) {
        // SAFETY: the caller's contract, passed on.
        unsafe { copy_loop(dst, src, n) }
    } else {
        // SAFETY: the caller's contract, passed on.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
    }
}

/// [`copy`] of bytes handed between cores: into a shared-memory pool block that the other
/// core read last, or out of one it just wrote (see the module's doc).
///
/// # Safety
/// As for [`copy`].
#[inline]
pub(crate) unsafe fn copy_handoff(dst: *mut u8, src: *const u8, n: usize) {
    if LOOP_BAND.contains(&n) {
        // SAFETY: the caller's contract, passed on.
        unsafe { copy_loop(dst, src, n) }
    } else {
        // SAFETY: the caller's contract, passed on.
        unsafe { copy(dst, src, n) }
    }
}

/// Copies `n` bytes from `src` to `dst`, which may overlap (as `memmove`).
///
/// # Safety
/// As for [`std::ptr::copy`]: `src` readable and `dst` writable for `n` bytes.
#[inline]
pub(crate) unsafe fn copy_overlapping(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    if d.max(s) - d.min(s) < n {
        // SAFETY: the caller's contract, passed on; `ptr::copy` handles the overlap.
        unsafe { std::ptr::copy(src, dst, n) }
    } else {
        // SAFETY: the caller's contract, and the ranges are disjoint (checked above).
        unsafe { copy(dst, src, n) }
    }
}

/// Largest copy [`copy_short`] takes.
pub(crate) const SHORT_MAX: usize = 64;

/// Copies `n` ≤ [`SHORT_MAX`] bytes from `src` to `dst` with two overlapping loads and stores
/// of the largest width that fits, instead of a call into `memcpy` (a small message's payload
/// copy paid ~20 instructions for the call).
///
/// # Safety
/// As for [`std::ptr::copy_nonoverlapping`], and `n` ≤ [`SHORT_MAX`].
#[inline(always)]
pub(crate) unsafe fn copy_short(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= SHORT_MAX);
    /// Copies the first and the last `W` bytes of the `n` (W ≤ n ≤ 2W) at `src`.
    ///
    /// # Safety
    /// As for [`copy_short`], with W ≤ n.
    #[inline(always)]
    unsafe fn ends<const W: usize>(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: W ≤ n, so both W-byte ranges, at 0 and at n - W, lie inside the `n` bytes
        // the caller vouched for on either side; unaligned reads and writes need no alignment.
        unsafe {
            let a = src.cast::<[u8; W]>().read_unaligned();
            let b = src.add(n - W).cast::<[u8; W]>().read_unaligned();
            dst.cast::<[u8; W]>().write_unaligned(a);
            dst.add(n - W).cast::<[u8; W]>().write_unaligned(b);
        }
    }
    // SAFETY: each branch passes a width W with W ≤ n ≤ 2W; the byte loop stays below n.
    unsafe {
        if n >= 16 {
            if n > 32 {
                ends::<32>(dst, src, n)
            } else {
                ends::<16>(dst, src, n)
            }
        } else if n >= 8 {
            ends::<8>(dst, src, n)
        } else if n >= 4 {
            ends::<4>(dst, src, n)
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// Asks for the cache line holding `p` without waiting for it: a reader about to wait for
/// one line that another core writes asks for the next line it will read from that core at
/// the same time, so the two cross together rather than one after the other. Any address
/// will do: a prefetch reads nothing the program sees and never faults.
#[inline(always)]
pub(crate) fn prefetch_line(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(oxmpi_loom)))]
    // SAFETY: a prefetch is a hint with no effect the program can observe; it cannot fault,
    // whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(oxmpi_loom))))]
    let _ = p;
}

/// Copies `src` into the start of `dst` (`dst` at least as long).
#[inline]
pub(crate) fn copy_slice(dst: &mut [u8], src: &[u8]) {
    assert!(dst.len() >= src.len(), "copy_slice: destination too short");
    // SAFETY: both slices are valid for `src.len()` bytes, and a `&mut` cannot alias a `&`.
    unsafe { copy(dst.as_mut_ptr(), src.as_ptr(), src.len()) }
}

/// Whether `dst` lies 1–63 bytes after `src` modulo 4096 (the distances `rep movsb` handles
/// slowly).
#[inline]
fn short_distance(dst: *mut u8, src: *const u8) -> bool {
    let d = (dst as usize).wrapping_sub(src as usize) % 4096;
    (1..64).contains(&d)
}

/// A forward copy in 64-byte steps with unaligned 16-byte loads and stores, baseline x86-64.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(never)]
unsafe fn copy_loop(dst: *mut u8, src: *const u8, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: i + 64 <= n, so all four 16-byte loads and stores lie inside the ranges the
        // caller vouched for; unaligned forms need no alignment.
        unsafe {
            let s = src.add(i).cast::<__m128i>();
            let d = dst.add(i).cast::<__m128i>();
            let a = _mm_loadu_si128(s);
            let b = _mm_loadu_si128(s.add(1));
            let c = _mm_loadu_si128(s.add(2));
            let e = _mm_loadu_si128(s.add(3));
            _mm_storeu_si128(d, a);
            _mm_storeu_si128(d.add(1), b);
            _mm_storeu_si128(d.add(2), c);
            _mm_storeu_si128(d.add(3), e);
        }
        i += 64;
    }
    // SAFETY: the tail [i, n) lies inside both ranges; below 64 bytes memcpy uses no `rep`.
    unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i) }
}

/// Elsewhere `memcpy` has no such slow path.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
#[inline]
unsafe fn copy_loop(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract, passed on.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_forward_distances_take_the_loop() {
        let base = 0x10_0000usize;
        let at = |off: usize| (base + off) as *mut u8;
        assert!(!short_distance(at(0), at(0) as *const u8));
        assert!(short_distance(at(16), at(0) as *const u8));
        assert!(short_distance(at(4096 + 63), at(0) as *const u8));
        assert!(!short_distance(at(64), at(0) as *const u8));
        assert!(!short_distance(at(0), at(16) as *const u8));
    }

    /// Every length around the vector step and every distance class, each byte checked, with
    /// guard bytes on both sides untouched.
    #[test]
    fn copies_every_byte_and_nothing_else() {
        let lens: &[usize] = if cfg!(miri) {
            &[0, 1, 63, 64, 65, 2048, 2111]
        } else {
            &[
                0,
                1,
                63,
                64,
                65,
                127,
                1023,
                1024,
                1500,
                2047,
                2048,
                2049,
                4095,
                4096,
                8191,
                65536 + 7,
            ]
        };
        let src: Vec<u8> = (0..70_000u32).map(|i| (i * 7 + 3) as u8).collect();
        for &n in lens {
            for src_off in [0usize, 1, 16] {
                for dist in [0usize, 1, 16, 48, 63, 64, 100] {
                    let mut dst = vec![0xAAu8; n + src_off + dist + 256];
                    let d0 = src_off + dist + 64;
                    copy_slice(&mut dst[d0..d0 + n], &src[src_off..src_off + n]);
                    assert_eq!(
                        &dst[d0..d0 + n],
                        &src[src_off..src_off + n],
                        "n={n} dist={dist}"
                    );
                    assert!(dst[..d0].iter().all(|&b| b == 0xAA), "before, n={n}");
                    assert!(dst[d0 + n..].iter().all(|&b| b == 0xAA), "after, n={n}");
                    // The loop itself, whatever distance these heap addresses happen to have.
                    dst.fill(0xAA);
                    // SAFETY: both ranges lie inside their vectors and are disjoint.
                    unsafe { copy_loop(dst.as_mut_ptr().add(d0), src.as_ptr().add(src_off), n) };
                    assert_eq!(&dst[d0..d0 + n], &src[src_off..src_off + n], "loop n={n}");
                    assert!(dst[..d0].iter().all(|&b| b == 0xAA), "loop before, n={n}");
                    assert!(
                        dst[d0 + n..].iter().all(|&b| b == 0xAA),
                        "loop after, n={n}"
                    );
                    // And the pool blocks' choice between the two.
                    dst.fill(0xAA);
                    // SAFETY: as above.
                    unsafe { copy_handoff(dst.as_mut_ptr().add(d0), src.as_ptr().add(src_off), n) };
                    assert_eq!(
                        &dst[d0..d0 + n],
                        &src[src_off..src_off + n],
                        "handoff n={n}"
                    );
                    assert!(
                        dst[..d0].iter().all(|&b| b == 0xAA),
                        "handoff before, n={n}"
                    );
                    assert!(
                        dst[d0 + n..].iter().all(|&b| b == 0xAA),
                        "handoff after, n={n}"
                    );
                }
            }
        }
    }

    /// Every short length at several alignments, each byte checked, guard bytes untouched.
    #[test]
    fn short_copies_every_byte_and_nothing_else() {
        let src: Vec<u8> = (0..200u32).map(|i| (i * 13 + 5) as u8).collect();
        for n in 0..=SHORT_MAX {
            for src_off in [0usize, 1, 7, 16, 33] {
                for dst_off in [0usize, 3, 8, 31] {
                    let mut dst = vec![0xAAu8; dst_off + n + 64];
                    // SAFETY: n bytes at either offset lie inside their vectors (src has 200,
                    // dst dst_off + n + 64), and the two vectors are distinct allocations.
                    unsafe {
                        copy_short(dst.as_mut_ptr().add(dst_off), src.as_ptr().add(src_off), n)
                    };
                    let got = &dst[dst_off..dst_off + n];
                    assert_eq!(
                        got,
                        &src[src_off..src_off + n],
                        "n={n} at {src_off}/{dst_off}"
                    );
                    assert!(dst[..dst_off].iter().all(|&b| b == 0xAA), "before, n={n}");
                    assert!(
                        dst[dst_off + n..].iter().all(|&b| b == 0xAA),
                        "after, n={n}"
                    );
                }
            }
        }
    }
}
