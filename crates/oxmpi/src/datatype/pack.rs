//! Pack and unpack between a typed buffer (origin + count elements of a [`Type`]) and a
//! packed byte stream, resumable at any byte offset of the stream, so a transport can pack
//! straight into its cells or blocks in pipelined chunks; iovec lists of the contiguous
//! pieces, for single-copy gathers (`process_vm_readv`); `pack_size`.
//!
//! Two forms: the raw one ([`pack_raw`], [`unpack_raw`]) on an address, for the C layer and
//! the transports, whose caller vouches for the memory; and a checked one ([`pack`],
//! [`unpack`]) on a slice, which first checks that every byte the type map touches lies in
//! the slice (a type reaching outside it is an [`ErrorClass::Buffer`] error, not UB).
//!
//! Contiguous types are one copy; the pieces of a vector of fixed-size runs are copied in a
//! flat loop, with fixed-size moves for the small run lengths that memcpy would make slow.
//!
//! # Standard sections
//! MPI-5.0 §5.2 (pack and unpack).

use std::ptr;

use super::build::Type;
use super::layout::Visit;
use crate::error::{Error, ErrorClass, Result};

/// Packed bytes of `count` elements (`MPI_Pack_size`; oxmpi adds no header).
pub fn pack_size(ty: &Type, count: u64) -> Result<u64> {
    ty.size().checked_mul(count).ok_or_else(|| {
        Error::new(
            ErrorClass::Count,
            format!(
                "pack_size: {count} elements of {} bytes overflow",
                ty.size()
            ),
        )
    })
}

/// The address `off` bytes from `origin`. A null origin is `MPI_BOTTOM`: offsets are then
/// absolute addresses (from `MPI_Get_address`), which the program exposed when it took them.
#[inline(always)]
fn at(origin: *const u8, off: i64) -> *const u8 {
    if origin.is_null() {
        ptr::with_exposed_provenance(off as usize)
    } else {
        origin.wrapping_offset(off as isize)
    }
}

/// Copies `n` bytes; fixed-size moves for the common element sizes, and two overlapping
/// moves for any other short piece (the blocks of an indexed type of a few elements each
/// called `memcpy` once per block).
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes, and the ranges do not overlap.
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: the caller guarantees both ranges for `n` bytes; unaligned accesses are used.
    unsafe {
        match n {
            4 => ptr::write_unaligned(dst as *mut u32, ptr::read_unaligned(src as *const u32)),
            8 => ptr::write_unaligned(dst as *mut u64, ptr::read_unaligned(src as *const u64)),
            16 => ptr::write_unaligned(dst as *mut u128, ptr::read_unaligned(src as *const u128)),
            // Not `bytecopy::copy_short`, whose size tests cost an indexed pack 1-2%.
            17..=32 => {
                let a = ptr::read_unaligned(src as *const u128);
                let b = ptr::read_unaligned(src.add(n - 16) as *const u128);
                ptr::write_unaligned(dst as *mut u128, a);
                ptr::write_unaligned(dst.add(n - 16) as *mut u128, b);
            }
            _ => crate::bytecopy::copy(dst, src, n),
        }
    }
}

/// Packs bytes `start..start + out.len()` of the packed stream of `count` elements of `ty`
/// at `origin` into `out`; returns the bytes written (fewer when the stream ends first).
///
/// # Safety
/// Every byte of data of the `count` elements (`origin + i * extent + ` the type map's
/// offsets; with a null `origin`, `MPI_BOTTOM`, the offsets are exposed absolute addresses)
/// must be readable for the duration of the call, and none may lie in `out`.
pub unsafe fn pack_raw(
    ty: &Type,
    origin: *const u8,
    count: u64,
    start: u64,
    out: &mut [u8],
) -> usize {
    let total = ty.size().saturating_mul(count);
    if start >= total || out.is_empty() {
        return 0;
    }
    let want = out.len().min((total - start) as usize);
    if ty.is_contiguous() {
        // SAFETY: the data of a contiguous type is `count * size` bytes from origin + lb,
        // readable by the caller's guarantee; `want` bytes from `start` lie within it. The
        // origin itself may lie outside the buffer (a negative lower bound, MPI_BOTTOM), so
        // the address is formed with wrapping arithmetic; only the result is dereferenced.
        unsafe {
            crate::bytecopy::copy(
                out.as_mut_ptr(),
                origin.wrapping_offset((ty.lb() as isize) + start as isize),
                want,
            )
        };
        return want;
    }
    let mut v = Copier {
        mem: origin as *mut u8,
        buf: out.as_mut_ptr(),
        pos: 0,
        want,
        pack: true,
    };
    ty.layout().walk_count(count, ty.extent(), start, &mut v);
    v.pos
}

/// Copies between the pieces the walk reports (in memory at `mem`) and the packed bytes
/// `buf[pos..want]`, in the direction `pack` says.
struct Copier {
    mem: *mut u8,
    buf: *mut u8,
    pos: usize,
    want: usize,
    pack: bool,
}

/// Moves `k` pieces of `N` bytes, `stride` apart in memory, packed in `buf`.
///
/// # Safety
/// The `k` memory pieces are data bytes of the elements (readable when packing, writable when
/// unpacking) and `buf` holds `k * N` bytes.
#[inline(always)]
unsafe fn strided_fixed<const N: usize>(
    mem: *mut u8,
    off: i64,
    stride: i64,
    buf: *mut u8,
    k: usize,
    pack: bool,
) {
    let m0 = at(mem, off) as *mut u8;
    for i in 0..k {
        let m = m0.wrapping_offset(i as isize * stride as isize) as *mut [u8; N];
        // SAFETY: by the function's contract; unaligned accesses.
        unsafe {
            let b = buf.add(i * N) as *mut [u8; N];
            if pack {
                ptr::write_unaligned(b, ptr::read_unaligned(m));
            } else {
                ptr::write_unaligned(m, ptr::read_unaligned(b));
            }
        }
    }
}

/// Packs `k` pieces of `N` bytes that lie every other `N` bytes (a vector of stride 2, the
/// shape of a matrix's every other column), two pieces per step at offsets known when
/// compiled, so the two loads land in one vector store. The gaps are never read (another
/// thread may own them). Unpacking writes each piece alone and is left to [`strided_fixed`].
///
/// # Safety
/// The `k` memory pieces (`2N` bytes apart from `off`) are readable data bytes of the
/// elements and `buf` holds `k * N` writable bytes.
#[inline(always)]
unsafe fn pack_every_other<const N: usize>(mem: *mut u8, off: i64, buf: *mut u8, k: usize) {
    let m0 = at(mem, off);
    let pairs = k / 2;
    for i in 0..pairs {
        // SAFETY: pieces 2i and 2i + 1 are data bytes the caller vouches for, and their
        // slots in `buf` are inside its `k * N` bytes.
        unsafe {
            let src = m0.wrapping_add(i * 4 * N);
            let a = ptr::read_unaligned(src as *const [u8; N]);
            let b = ptr::read_unaligned(src.wrapping_add(2 * N) as *const [u8; N]);
            let dst = buf.add(i * 2 * N);
            ptr::write_unaligned(dst as *mut [u8; N], a);
            ptr::write_unaligned(dst.add(N) as *mut [u8; N], b);
        }
    }
    if k % 2 == 1 {
        // SAFETY: the last piece and its slot in `buf`, as above.
        unsafe {
            let src = m0.wrapping_add((k - 1) * 2 * N);
            ptr::write_unaligned(
                buf.add((k - 1) * N) as *mut [u8; N],
                ptr::read_unaligned(src as *const [u8; N]),
            );
        }
    }
}

/// [`Copier`]'s [`Visit::runs`] in one direction, its position in a register: written back
/// through `self` after every piece, it was stored and reloaded around each copy (the copies'
/// raw pointers might have aliased it).
///
/// # Safety
/// The pieces are data bytes of the elements being copied (readable, or writable when
/// unpacking, by the caller's guarantee), `buf` holds `want` bytes, `pos <= want`.
#[inline(always)]
unsafe fn copy_runs<const PACK: bool>(
    mem: *mut u8,
    buf: *mut u8,
    mut pos: usize,
    want: usize,
    base: i64,
    runs: &[(i64, u64)],
    mut skip: u64,
) -> usize {
    for &(d, len) in runs {
        let n = ((len - skip) as usize).min(want - pos);
        let m = at(mem, base + d + skip as i64) as *mut u8;
        // SAFETY: by this function's contract; `pos + n <= want`.
        unsafe {
            if PACK {
                copy(m, buf.add(pos), n)
            } else {
                copy(buf.add(pos), m, n)
            }
        }
        pos += n;
        if pos == want {
            break;
        }
        skip = 0;
    }
    pos
}

impl Visit for Copier {
    #[inline(always)]
    fn runs(&mut self, base: i64, runs: &[(i64, u64)], skip: u64) -> bool {
        // SAFETY: the walk reports data bytes of the elements; `copy_runs` stops at `want`.
        self.pos = unsafe {
            if self.pack {
                copy_runs::<true>(self.mem, self.buf, self.pos, self.want, base, runs, skip)
            } else {
                copy_runs::<false>(self.mem, self.buf, self.pos, self.want, base, runs, skip)
            }
        };
        self.pos < self.want
    }

    // Always inlined into the walk: once its copies grew, it stopped being, and the call per
    // piece cost a quarter of an indexed type's pack.
    #[inline(always)]
    fn run(&mut self, off: i64, len: u64) -> bool {
        self.runs(off, &[(0, len)], 0)
    }

    #[inline]
    fn strided(&mut self, off: i64, len: u64, stride: i64, n: u64) -> bool {
        let len = len as usize;
        // Whole pieces that fit, in one tight loop; then a partial one.
        let k = (n as usize).min((self.want - self.pos) / len);
        let buf = self.buf.wrapping_add(self.pos);
        // SAFETY: the `k` pieces are data runs the walk reported; `buf` has `k * len` bytes
        // left before `want`.
        unsafe {
            match len {
                4 if self.pack && stride == 8 => pack_every_other::<4>(self.mem, off, buf, k),
                8 if self.pack && stride == 16 => pack_every_other::<8>(self.mem, off, buf, k),
                16 if self.pack && stride == 32 => pack_every_other::<16>(self.mem, off, buf, k),
                4 => strided_fixed::<4>(self.mem, off, stride, buf, k, self.pack),
                8 => strided_fixed::<8>(self.mem, off, stride, buf, k, self.pack),
                16 => strided_fixed::<16>(self.mem, off, stride, buf, k, self.pack),
                _ => {
                    for i in 0..k {
                        let m = at(self.mem, off + i as i64 * stride) as *mut u8;
                        let b = buf.add(i * len);
                        if self.pack {
                            copy(m, b, len)
                        } else {
                            copy(b, m, len)
                        }
                    }
                }
            }
        }
        self.pos += k * len;
        if (k as u64) < n && self.pos < self.want {
            return self.run(off + k as i64 * stride, len as u64);
        }
        self.pos < self.want
    }
}

/// Unpacks `input` as bytes `start..start + input.len()` of the packed stream of `count`
/// elements of `ty` at `origin`; returns the bytes consumed.
///
/// # Safety
/// Every byte of data of the `count` elements must be writable for the duration of the call
/// (a null `origin` is `MPI_BOTTOM`, as in [`pack_raw`]) and none may lie in `input`.
pub unsafe fn unpack_raw(
    ty: &Type,
    origin: *mut u8,
    count: u64,
    start: u64,
    input: &[u8],
) -> usize {
    let total = ty.size().saturating_mul(count);
    if start >= total || input.is_empty() {
        return 0;
    }
    let want = input.len().min((total - start) as usize);
    if ty.is_contiguous() {
        // SAFETY: as in `pack_raw` (wrapping address arithmetic, in-bounds result), with the
        // data writable by the caller's guarantee.
        unsafe {
            crate::bytecopy::copy(
                origin.wrapping_offset((ty.lb() as isize) + start as isize),
                input.as_ptr(),
                want,
            )
        };
        return want;
    }
    // The copier only reads `buf` when unpacking.
    let mut v = Copier {
        mem: origin,
        buf: input.as_ptr() as *mut u8,
        pos: 0,
        want,
        pack: false,
    };
    ty.layout().walk_count(count, ty.extent(), start, &mut v);
    v.pos
}

/// The data bytes `count` elements touch, as offsets from the origin: `None` when none.
/// Offsets beyond the `i64` range are clamped to it (no buffer holds them).
pub fn span(ty: &Type, count: u64) -> Option<(i64, i64)> {
    if count == 0 || ty.size() == 0 {
        return None;
    }
    let (tlb, text) = ty.true_extent();
    let reach = (count as i128 - 1) * ty.extent() as i128;
    let clamp = |x: i128| x.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    Some((
        clamp(tlb as i128 + reach.min(0)),
        clamp(tlb as i128 + text as i128 + reach.max(0)),
    ))
}

fn check(call: &str, ty: &Type, len: usize, origin: usize, count: u64) -> Result<()> {
    pack_size(ty, count)?;
    if let Some((lo, hi)) = span(ty, count) {
        let o = origin as i64;
        if o.saturating_add(lo) < 0 || o.saturating_add(hi) > len as i64 {
            return Err(Error::new(
                ErrorClass::Buffer,
                format!(
                    "{call}: {count} elements at offset {origin} touch bytes {}..{} of a {len}-byte buffer",
                    o.saturating_add(lo),
                    o.saturating_add(hi)
                ),
            ));
        }
    }
    Ok(())
}

/// [`pack_raw`] on the elements whose origin is byte `origin` of `buf`
/// ([`ErrorClass::Buffer`] if the type map reaches outside `buf`).
pub fn pack(
    ty: &Type,
    buf: &[u8],
    origin: usize,
    count: u64,
    start: u64,
    out: &mut [u8],
) -> Result<usize> {
    check("pack", ty, buf.len(), origin, count)?;
    // SAFETY: `check` proved every data byte of the elements lies in `buf`, which is borrowed
    // (readable, and distinct from the exclusively borrowed `out`) for the whole call.
    Ok(unsafe { pack_raw(ty, buf.as_ptr().wrapping_add(origin), count, start, out) })
}

/// [`unpack_raw`] into the elements whose origin is byte `origin` of `buf`; bytes of `buf`
/// outside the type map are left untouched.
pub fn unpack(
    ty: &Type,
    buf: &mut [u8],
    origin: usize,
    count: u64,
    start: u64,
    input: &[u8],
) -> Result<usize> {
    check("unpack", ty, buf.len(), origin, count)?;
    // SAFETY: `check` proved every data byte lies in `buf`, exclusively borrowed for the call
    // (so writable and distinct from `input`).
    Ok(unsafe {
        unpack_raw(
            ty,
            buf.as_mut_ptr().wrapping_add(origin),
            count,
            start,
            input,
        )
    })
}

/// The contiguous pieces `(offset from origin, length)` of packed bytes `start..start +
/// max_bytes` of `count` elements, at most `max_pieces` of them (an iovec list for a
/// single-copy gather or scatter); returns the pieces and the packed bytes they cover.
pub fn pieces(
    ty: &Type,
    count: u64,
    start: u64,
    max_bytes: u64,
    max_pieces: usize,
) -> (Vec<(i64, u64)>, u64) {
    let total = ty.size().saturating_mul(count);
    let mut v = Vec::new();
    if start >= total || max_bytes == 0 || max_pieces == 0 {
        return (v, 0);
    }
    let want = max_bytes.min(total - start);
    let mut got = 0u64;
    ty.layout()
        .walk_count(count, ty.extent(), start, &mut |off: i64, len: u64| {
            let n = len.min(want - got);
            match v.last_mut() {
                Some((o, l)) if *o + *l as i64 == off => *l += n,
                _ => v.push((off, n)),
            }
            got += n;
            got < want && v.len() < max_pieces
        });
    if v.len() > max_pieces {
        v.truncate(max_pieces);
    }
    (v, got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::predefined::Predefined;

    #[test]
    fn vector_packs_resumably_and_leaves_gaps_untouched() {
        let t = Type::vector(3, 1, 2, &Type::predefined(Predefined::INT)).unwrap();
        let src: Vec<u8> = (0..20).collect();
        let mut out = [0u8; 12];
        assert_eq!(pack(&t, &src, 0, 1, 0, &mut out).unwrap(), 12);
        assert_eq!(out, [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19]);
        let mut part = [0u8; 5];
        assert_eq!(pack(&t, &src, 0, 1, 6, &mut part).unwrap(), 5);
        assert_eq!(part, [10, 11, 16, 17, 18]);
        let mut dst = [0xEEu8; 20];
        assert_eq!(unpack(&t, &mut dst, 0, 1, 0, &out[..7]).unwrap(), 7);
        assert_eq!(unpack(&t, &mut dst, 0, 1, 7, &out[7..]).unwrap(), 5);
        for (i, b) in dst.iter().enumerate() {
            if (i / 4) % 2 == 0 {
                assert_eq!(*b as usize, i);
            } else {
                assert_eq!(*b, 0xEE, "gap byte {i}");
            }
        }
        assert_eq!(pack_size(&t, 3).unwrap(), 36);
        assert_eq!(
            pack_size(&t, u64::MAX).unwrap_err().class(),
            ErrorClass::Count
        );
    }

    #[test]
    fn stride_two_vectors_pack_from_any_offset_and_unpack_leaving_gaps() {
        for (elem, pre) in [
            (4usize, Predefined::INT),
            (8, Predefined::DOUBLE),
            (16, Predefined::LONG_DOUBLE),
        ] {
            // Long runs natively; the interpreter checks the short ones.
            let long = if cfg!(miri) { 7 } else { 64 };
            for blocks in [1usize, 2, 7, long] {
                let t = Type::vector(blocks as i64, 1, 2, &Type::predefined(pre)).unwrap();
                let span = (2 * blocks - 1) * elem;
                let src: Vec<u8> = (0..span).map(|i| (i % 251) as u8).collect();
                let want: Vec<u8> = (0..span)
                    .filter(|i| (i / elem) % 2 == 0)
                    .map(|i| (i % 251) as u8)
                    .collect();
                let size = blocks * elem;
                // Every start, including ones inside a piece, and short outputs.
                for start in 0..size {
                    for n in [1, elem, 3 * elem + 1, size] {
                        let n = n.min(size - start);
                        let mut out = vec![0xEEu8; n];
                        assert_eq!(pack(&t, &src, 0, 1, start as u64, &mut out).unwrap(), n);
                        assert_eq!(out, want[start..start + n], "{elem} {blocks} {start} {n}");
                    }
                }
                let mut dst = vec![0xEEu8; span];
                assert_eq!(unpack(&t, &mut dst, 0, 1, 0, &want).unwrap(), size);
                for (i, b) in dst.iter().enumerate() {
                    let data = (i / elem) % 2 == 0;
                    assert_eq!(*b, if data { (i % 251) as u8 } else { 0xEE }, "byte {i}");
                }
            }
        }
    }

    #[test]
    fn types_reaching_outside_the_slice_are_buffer_errors() {
        let t = Type::hvector(2, 1, -8, &Type::predefined(Predefined::DOUBLE)).unwrap();
        let buf = [0u8; 16];
        let mut out = [0u8; 16];
        assert_eq!(
            pack(&t, &buf, 0, 1, 0, &mut out).unwrap_err().class(),
            ErrorClass::Buffer
        );
        assert_eq!(pack(&t, &buf, 8, 1, 0, &mut out).unwrap(), 16);
        assert_eq!(
            pack(&t, &buf, 8, 2, 0, &mut out).unwrap_err().class(),
            ErrorClass::Buffer
        );
        let mut m = [0u8; 16];
        assert_eq!(
            unpack(&t, &mut m, 9, 1, 0, &out).unwrap_err().class(),
            ErrorClass::Buffer
        );
    }

    #[test]
    fn pieces_give_iovecs_merged_across_elements() {
        let t = Type::vector(2, 2, 3, &Type::predefined(Predefined::BYTE)).unwrap();
        // Runs [0,2) [3,5); extent 5, so element 1's first run merges with element 0's last.
        let (v, n) = pieces(&t, 2, 0, 100, 10);
        assert_eq!(v, vec![(0, 2), (3, 4), (8, 2)]);
        assert_eq!(n, 8);
        let (v, n) = pieces(&t, 2, 1, 4, 10);
        assert_eq!((v, n), (vec![(1, 1), (3, 3)], 4));
        let (v, n) = pieces(&t, 2, 0, 100, 1);
        assert_eq!((v, n), (vec![(0, 2)], 2));
    }

    #[test]
    fn absolute_addresses_from_bottom() {
        let a = [1u32, 2];
        let b = [3u32, 4];
        let addr = |p: &u32| (p as *const u32).expose_provenance() as i64;
        let t = Type::hindexed(
            &[1, 1],
            &[addr(&b[1]), addr(&a[0])],
            &Type::predefined(Predefined::INT),
        )
        .unwrap();
        let mut out = [0u8; 8];
        // SAFETY: the two addresses are of live, exposed `u32`s.
        let n = unsafe { pack_raw(&t, ptr::null(), 1, 0, &mut out) };
        assert_eq!(n, 8);
        assert_eq!(out, [4u32.to_ne_bytes(), 1u32.to_ne_bytes()].concat()[..]);
    }

    #[test]
    fn contiguous_types_are_one_copy_from_lb() {
        let t = Type::resized(
            &Type::contiguous(2, &Type::predefined(Predefined::INT)).unwrap(),
            0,
            8,
        )
        .unwrap();
        assert!(t.is_contiguous());
        let src: Vec<u8> = (0..24).collect();
        let mut out = [0u8; 10];
        assert_eq!(pack(&t, &src, 0, 3, 3, &mut out).unwrap(), 10);
        assert_eq!(out, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    }
}
