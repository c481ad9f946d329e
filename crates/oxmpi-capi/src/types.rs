//! Datatype calls: every constructor (and its large-count `_c` form), commit and free, sizes
//! and extents, element counts, envelope and contents, names, `match_size` and the f90 types,
//! datatype keyvals and attributes, addresses, and pack/unpack (native and external32).
//!
//! Each call is a translation onto `oxmpi::handle::datatype` (datatypes as ids) and the
//! core's [`Type`] constructors; errors keep the core's classes (`MPI_ERR_TYPE` for a bad or
//! uncommitted datatype, `MPI_ERR_COUNT`, `MPI_ERR_ARG`, `MPI_ERR_TRUNCATE` for a pack that
//! does not fit).

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use oxmpi::datatype::envelope::{self, TypeClass};
use oxmpi::datatype::external32;
use oxmpi::datatype::pack;
use oxmpi::datatype::{Distribution, Order, Type};
use oxmpi::handle::comm::{CommHandle, KeyvalHandle};
use oxmpi::handle::datatype::{self as hd, TypeCopyPolicy, TypeHandle};
use oxmpi::{ErrorClass, Result};

use crate::boundary::{
    count, err, get, mpi_fn, mpi_value_fn, put, put_str, slice, slice_mut, str_arg, Handle,
    MpiStatus,
};
use crate::comm::UNDEFINED;
use crate::datatypes::{handle, id};

/// The core type behind C handle `h` (committed or not: constructors take either).
fn ty(call: &str, h: Handle) -> Result<Type> {
    if h as usize == crate::datatypes::NULL {
        return Err(err(ErrorClass::Type, call, "MPI_DATATYPE_NULL"));
    }
    hd::type_get(id(h as usize)).map_err(|e| err(e.class(), call, e.message()))
}

/// Stores a new type's handle in `*out`.
///
/// # Safety
/// `out` null or valid for a handle write.
unsafe fn new_type(call: &str, out: *mut Handle, t: Result<Type>, large: bool) -> Result<()> {
    if out.is_null() {
        return Err(err(ErrorClass::Arg, call, "newtype is NULL"));
    }
    let t = t.map_err(|e| err(e.class(), call, e.message()))?;
    let t = if large { t.with_large_counts() } else { t };
    let h = hd::type_from(t)?;
    // SAFETY: non-null, valid by contract.
    unsafe { put(call, out, handle(h)) }
}

/// `n` values at `p` widened to `i64` (`n` from a C count: negative is `MPI_ERR_COUNT`).
///
/// # Safety
/// `p` valid for `n` reads.
unsafe fn wide<T: Copy + Into<i64>>(call: &str, p: *const T, n: usize) -> Result<Vec<i64>> {
    // SAFETY: forwarded.
    Ok(unsafe { slice(call, p, n)? }
        .iter()
        .map(|&x| x.into())
        .collect())
}

/// Addresses (`MPI_Aint`, `isize`) as `i64`.
///
/// # Safety
/// `p` valid for `n` reads.
unsafe fn aints(call: &str, p: *const isize, n: usize) -> Result<Vec<i64>> {
    // SAFETY: forwarded.
    Ok(unsafe { slice(call, p, n)? }
        .iter()
        .map(|&x| x as i64)
        .collect())
}

fn order(call: &str, o: c_int) -> Result<Order> {
    match o {
        envelope::ORDER_C => Ok(Order::C),
        envelope::ORDER_FORTRAN => Ok(Order::Fortran),
        x => Err(err(ErrorClass::Arg, call, format!("order {x}"))),
    }
}

fn distribution(call: &str, d: c_int, darg: c_int) -> Result<Distribution> {
    let arg = |x: c_int| (x != envelope::DISTRIBUTE_DFLT_DARG).then_some(x as i64);
    match d {
        envelope::DISTRIBUTE_NONE => Ok(Distribution::None),
        envelope::DISTRIBUTE_BLOCK => Ok(Distribution::Block(arg(darg))),
        envelope::DISTRIBUTE_CYCLIC => Ok(Distribution::Cyclic(arg(darg))),
        x => Err(err(ErrorClass::Arg, call, format!("distribution {x}"))),
    }
}

/// The types of a struct constructor's `types` array.
///
/// # Safety
/// `p` valid for `n` reads.
unsafe fn types(call: &str, p: *const Handle, n: usize) -> Result<Vec<Type>> {
    // SAFETY: forwarded.
    unsafe { slice(call, p, n)? }
        .iter()
        .map(|&h| ty(call, h))
        .collect()
}

/// Writes an `i64` result as an `int`: `MPI_UNDEFINED` when it does not fit (what the
/// standard asks of `MPI_Type_size`/`MPI_Get_elements` in that case).
///
/// # Safety
/// `p` null or valid for an int write.
unsafe fn put_int(call: &str, p: *mut c_int, v: i64) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { put(call, p, c_int::try_from(v).unwrap_or(UNDEFINED)) }
}

/// Bytes received per a status, for counts.
///
/// # Safety
/// `status` null or valid for a read.
unsafe fn status_bytes(call: &str, status: *const MpiStatus) -> Result<u64> {
    // SAFETY: forwarded.
    Ok(unsafe { get(call, status)? }.bytes())
}

/// `MPI_Get_count` in any width: whole elements of `dt` in the bytes a status reports.
pub fn count_of(call: &str, bytes: u64, dt: Handle) -> Result<i64> {
    if let Some(p) = crate::datatypes::predef(dt as usize) {
        // Predefined types move their extent per element (pairs with their padding).
        return Ok(if bytes % p.size as u64 == 0 {
            (bytes / p.size as u64) as i64
        } else {
            UNDEFINED as i64
        });
    }
    let t = ty(call, dt)?;
    Ok(t.count_in(bytes).map_or(UNDEFINED as i64, |n| n as i64))
}

/// `MPI_Get_elements` in any width: basic elements in the bytes a status reports.
pub fn elements_of(call: &str, bytes: u64, dt: Handle) -> Result<i64> {
    if let Some(p) = crate::datatypes::predef(dt as usize) {
        if matches!(p.kind, crate::datatypes::Kind::Pair(_)) {
            // A pair moves as its C struct: each is two basic elements.
            return Ok(if bytes % p.size as u64 == 0 {
                (2 * bytes / p.size as u64) as i64
            } else {
                UNDEFINED as i64
            });
        }
        return count_of(call, bytes, dt);
    }
    let t = ty(call, dt)?;
    Ok(t.elements_in(bytes).map_or(UNDEFINED as i64, |n| n as i64))
}

/// The byte range of `count` elements of `t` at `base`, as a slice and the origin's offset
/// in it (the slice covers exactly the bytes the type map touches).
///
/// # Safety
/// Every data byte of the elements must be readable (and writable for `mut` use) for `'a`.
unsafe fn region<'a>(
    call: &str,
    t: &Type,
    base: *const u8,
    count: u64,
) -> Result<(&'a mut [u8], usize)> {
    crate::datatypes::check_bottom(call, base.cast(), t, count)?;
    match pack::span(t, count) {
        None => Ok((&mut [], 0)),
        Some((lo, hi)) => {
            let start = base.wrapping_offset(lo as isize) as *mut u8;
            if start.is_null() {
                return Err(err(
                    ErrorClass::Buffer,
                    call,
                    "the buffer is NULL with a non-zero count",
                ));
            }
            let len = usize::try_from(hi - lo)
                .map_err(|_| err(ErrorClass::Count, call, "the data does not fit in memory"))?;
            // SAFETY: non-null; the caller guarantees the type map's bytes, which are
            // exactly `lo..hi` from `base` (the MPI contract for the buffer argument).
            Ok((
                unsafe { std::slice::from_raw_parts_mut(start, len) },
                (-lo) as usize,
            ))
        }
    }
}

/// `MPI_Pack` in any width.
///
/// # Safety
/// Buffers as the standard's contract.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_any(
    call: &str,
    inbuf: *const c_void,
    incount: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    position: &mut usize,
) -> Result<()> {
    let n = count(call, incount)?;
    let size = count(call, outsize)?;
    // SAFETY: `outbuf` valid for `outsize` bytes by contract.
    let out = unsafe { crate::boundary::recv_buf(call, outbuf, size)? };
    if inbuf.is_null() {
        let t = hd::type_committed(call, id(dt as usize))?;
        crate::datatypes::check_bottom(call, inbuf, &t, n as u64)?;
    }
    // SAFETY: the caller guarantees the elements' bytes, which do not overlap `outbuf`.
    unsafe { hd::pack_raw(inbuf.cast(), n as u64, id(dt as usize), out, position) }
        .map_err(|e| err(e.class(), call, e.message()))
}

/// `MPI_Unpack` in any width.
///
/// # Safety
/// Buffers as the standard's contract.
unsafe fn unpack_any(
    call: &str,
    inbuf: *const c_void,
    insize: i64,
    position: &mut usize,
    outbuf: *mut c_void,
    outcount: i64,
    dt: Handle,
) -> Result<()> {
    let n = count(call, outcount)?;
    let size = count(call, insize)?;
    // SAFETY: `inbuf` valid for `insize` bytes by contract.
    let input = unsafe { crate::boundary::send_buf(call, inbuf, size)? };
    if outbuf.is_null() {
        let t = hd::type_committed(call, id(dt as usize))?;
        crate::datatypes::check_bottom(call, outbuf.cast_const(), &t, n as u64)?;
    }
    // SAFETY: the caller guarantees the elements' bytes, which do not overlap `inbuf`.
    unsafe { hd::unpack_raw(input, position, outbuf.cast(), n as u64, id(dt as usize)) }
        .map_err(|e| err(e.class(), call, e.message()))
}

/// A position argument: read, checked non-negative.
///
/// # Safety
/// `p` null or valid for a read.
unsafe fn position<T: Copy + Into<i64>>(call: &str, p: *const T) -> Result<usize> {
    // SAFETY: forwarded.
    let v: i64 = unsafe { get(call, p)? }.into();
    usize::try_from(v).map_err(|_| err(ErrorClass::Arg, call, format!("position {v} is negative")))
}

/// `MPI_Pack_external` in any width.
///
/// # Safety
/// Buffers as the standard's contract.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_external_any(
    call: &str,
    rep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    p: &mut usize,
) -> Result<()> {
    // SAFETY: forwarded.
    let rep = unsafe { str_arg(call, rep)? };
    let t = hd::type_committed(call, id(dt as usize))?;
    let n = count(call, incount)? as u64;
    let size = count(call, outsize)?;
    // SAFETY: forwarded: `outbuf` valid for `outsize` bytes, the elements' bytes readable.
    let (out, (buf, origin)) = unsafe {
        (
            crate::boundary::recv_buf(call, outbuf, size)?,
            region(call, &t, inbuf.cast(), n)?,
        )
    };
    external32::pack_external(rep, &t, buf, origin, n, out, p)
}

/// `MPI_Unpack_external` in any width.
///
/// # Safety
/// Buffers as the standard's contract.
#[allow(clippy::too_many_arguments)]
unsafe fn unpack_external_any(
    call: &str,
    rep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    p: &mut usize,
    outbuf: *mut c_void,
    outcount: i64,
    dt: Handle,
) -> Result<()> {
    // SAFETY: forwarded.
    let rep = unsafe { str_arg(call, rep)? };
    let t = hd::type_committed(call, id(dt as usize))?;
    let n = count(call, outcount)? as u64;
    let size = count(call, insize)?;
    // SAFETY: forwarded: `inbuf` valid for `insize` bytes, the elements' bytes writable.
    let (input, (buf, origin)) = unsafe {
        (
            crate::boundary::send_buf(call, inbuf, size)?,
            region(call, &t, outbuf.cast_const().cast(), n)?,
        )
    };
    external32::unpack_external(rep, input, p, &t, buf, origin, n)
}

/// `MPI_Pack_external_size` in any width.
///
/// # Safety
/// `rep` a NUL-terminated string.
unsafe fn pack_external_size_any(
    call: &str,
    rep: *const c_char,
    incount: i64,
    dt: Handle,
) -> Result<u64> {
    // SAFETY: forwarded.
    let rep = unsafe { str_arg(call, rep)? };
    let t = hd::type_committed(call, id(dt as usize))?;
    let n = count(call, incount)? as u64;
    external32::pack_external_size(rep, &t, n)
}

/// `MPI_Type_get_envelope` in any width: (integers, addresses, large counts, datatypes,
/// combiner).
fn envelope_of(call: &str, dt: Handle) -> Result<(usize, usize, usize, usize, c_int)> {
    let e =
        hd::type_get_envelope(id(dt as usize)).map_err(|e| err(e.class(), call, e.message()))?;
    Ok((
        e.integers,
        e.addresses,
        e.large_counts,
        e.datatypes,
        e.combiner as c_int,
    ))
}

/// `MPI_Type_get_contents` in any width.
///
/// # Safety
/// Arrays valid for their maximum lengths.
#[allow(clippy::too_many_arguments)]
unsafe fn contents(
    call: &str,
    dt: Handle,
    max_i: i64,
    max_a: i64,
    max_c: i64,
    max_d: i64,
    ints: *mut c_int,
    addrs: *mut isize,
    large: *mut i64,
    dts: *mut Handle,
) -> Result<()> {
    let (mi, ma, mc, md) = (
        count(call, max_i)?,
        count(call, max_a)?,
        count(call, max_c)?,
        count(call, max_d)?,
    );
    let e = hd::type_get_envelope(id(dt as usize))?;
    if e.combiner == envelope::CombinerKind::Named {
        return Err(err(
            ErrorClass::Type,
            call,
            "a predefined datatype has no contents",
        ));
    }
    if e.integers > mi || e.addresses > ma || e.large_counts > mc || e.datatypes > md {
        return Err(err(
            ErrorClass::Arg,
            call,
            "an array is shorter than the envelope says",
        ));
    }
    let (c, ids) = hd::type_get_contents(id(dt as usize))?;
    // SAFETY: each array valid for its maximum by contract, which is at least what we write.
    unsafe {
        slice_mut(call, ints, c.integers.len())?.copy_from_slice(&c.integers);
        for (d, s) in slice_mut(call, addrs, c.addresses.len())?
            .iter_mut()
            .zip(&c.addresses)
        {
            *d = *s as isize;
        }
        slice_mut(call, large, c.large_counts.len())?.copy_from_slice(&c.large_counts);
        for (d, s) in slice_mut(call, dts, ids.len())?.iter_mut().zip(&ids) {
            *d = handle(*s);
        }
    }
    Ok(())
}

/// C `MPI_Type_copy_attr_function`.
type CopyFunction =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// C `MPI_Type_delete_attr_function`.
type DeleteFunction = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// A datatype keyval from C function pointers (copy 0 and 1 are `MPI_TYPE_NULL_COPY_FN` and
/// `MPI_TYPE_DUP_FN`, a null delete is `MPI_TYPE_NULL_DELETE_FN`).
fn create_keyval(copy: usize, delete: usize, extra: usize) -> Result<KeyvalHandle> {
    let copy = match copy {
        0 => TypeCopyPolicy::Null,
        1 => TypeCopyPolicy::Dup,
        f => {
            // SAFETY: a non-null, non-sentinel value is the address of the caller's copy
            // function (the MPI contract for this argument).
            let f: CopyFunction = unsafe { std::mem::transmute::<usize, CopyFunction>(f) };
            TypeCopyPolicy::Call(Arc::new(
                move |t: TypeHandle, k: KeyvalHandle, extra: usize, v: usize| {
                    let mut out: *mut c_void = std::ptr::null_mut();
                    let mut flag: c_int = 0;
                    // SAFETY: FFI call of the user's copy function with pointers to live locals.
                    let rc = unsafe {
                        f(
                            handle(t),
                            k.to_int(),
                            extra as *mut c_void,
                            v as *mut c_void,
                            (&mut out as *mut *mut c_void).cast(),
                            &mut flag,
                        )
                    };
                    if rc != 0 {
                        return Err(err(
                            ErrorClass::Other,
                            "Type_dup",
                            format!("the attribute copy function returned {rc}"),
                        ));
                    }
                    Ok((flag != 0).then_some(out as usize))
                },
            ))
        }
    };
    let delete = (delete != 0).then(|| {
        // SAFETY: a non-null value is the address of the caller's delete function.
        let f: DeleteFunction = unsafe { std::mem::transmute::<usize, DeleteFunction>(delete) };
        Arc::new(
            move |t: TypeHandle, k: KeyvalHandle, extra: usize, v: usize| {
                // SAFETY: FFI call of the user's delete function.
                let rc = unsafe {
                    f(
                        handle(t),
                        k.to_int(),
                        v as *mut c_void,
                        extra as *mut c_void,
                    )
                };
                if rc != 0 {
                    return Err(err(
                        ErrorClass::Other,
                        "attribute delete",
                        format!("the delete function returned {rc}"),
                    ));
                }
                Ok(())
            },
        ) as hd::TypeDeleteFn
    });
    hd::type_create_keyval(copy, delete, extra)
}

macro_rules! constructors {
    ($($(#[$doc:meta])* $name:ident, $mpi:ident / $pmpi:ident, $large:expr, ($($a:ident: $t:ty),*) => |$c:ident| $body:expr;)*) => {
        mpi_fn! { $(
            $(#[$doc])*
            fn $name = $mpi / $pmpi($($a: $t,)* out: *mut Handle) on CommHandle::WORLD => {
                let $c = stringify!($name);
                // Argument errors (`?` inside) return at once; the constructor's own result
                // goes through `new_type`.
                let t: Result<Type> = $body;
                new_type($c, out, t, $large)
            }
        )* }
    };
}

constructors! {
    /// `MPI_Type_contiguous`.
    Type_contiguous, MPI_Type_contiguous / PMPI_Type_contiguous, false, (n: c_int, old: Handle) =>
        |c| Type::contiguous(n.into(), &ty(c, old)?);
    /// `MPI_Type_contiguous_c`.
    Type_contiguous_c, MPI_Type_contiguous_c / PMPI_Type_contiguous_c, true, (n: i64, old: Handle) =>
        |c| Type::contiguous(n, &ty(c, old)?);
    /// `MPI_Type_vector`.
    Type_vector, MPI_Type_vector / PMPI_Type_vector, false, (n: c_int, bl: c_int, stride: c_int, old: Handle) =>
        |c| Type::vector(n.into(), bl.into(), stride.into(), &ty(c, old)?);
    /// `MPI_Type_vector_c`.
    Type_vector_c, MPI_Type_vector_c / PMPI_Type_vector_c, true, (n: i64, bl: i64, stride: i64, old: Handle) =>
        |c| Type::vector(n, bl, stride, &ty(c, old)?);
    /// `MPI_Type_create_hvector`.
    Type_create_hvector, MPI_Type_create_hvector / PMPI_Type_create_hvector, false, (n: c_int, bl: c_int, stride: isize, old: Handle) =>
        |c| Type::hvector(n.into(), bl.into(), stride as i64, &ty(c, old)?);
    /// `MPI_Type_create_hvector_c`.
    Type_create_hvector_c, MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c, true, (n: i64, bl: i64, stride: i64, old: Handle) =>
        |c| Type::hvector(n, bl, stride, &ty(c, old)?);
    /// `MPI_Type_indexed`.
    Type_indexed, MPI_Type_indexed / PMPI_Type_indexed, false, (n: c_int, bls: *const c_int, ds: *const c_int, old: Handle) =>
        |c| { let k = count(c, n)?; Type::indexed(&wide(c, bls, k)?, &wide(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_indexed_c`.
    Type_indexed_c, MPI_Type_indexed_c / PMPI_Type_indexed_c, true, (n: i64, bls: *const i64, ds: *const i64, old: Handle) =>
        |c| { let k = count(c, n)?; Type::indexed(&wide(c, bls, k)?, &wide(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_hindexed`.
    Type_create_hindexed, MPI_Type_create_hindexed / PMPI_Type_create_hindexed, false, (n: c_int, bls: *const c_int, ds: *const isize, old: Handle) =>
        |c| { let k = count(c, n)?; Type::hindexed(&wide(c, bls, k)?, &aints(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_hindexed_c`.
    Type_create_hindexed_c, MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c, true, (n: i64, bls: *const i64, ds: *const i64, old: Handle) =>
        |c| { let k = count(c, n)?; Type::hindexed(&wide(c, bls, k)?, &wide(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_indexed_block`.
    Type_create_indexed_block, MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block, false, (n: c_int, bl: c_int, ds: *const c_int, old: Handle) =>
        |c| { let k = count(c, n)?; Type::indexed_block(bl.into(), &wide(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_indexed_block_c`.
    Type_create_indexed_block_c, MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c, true, (n: i64, bl: i64, ds: *const i64, old: Handle) =>
        |c| { let k = count(c, n)?; Type::indexed_block(bl, &wide(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_hindexed_block`.
    Type_create_hindexed_block, MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block, false, (n: c_int, bl: c_int, ds: *const isize, old: Handle) =>
        |c| { let k = count(c, n)?; Type::hindexed_block(bl.into(), &aints(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_hindexed_block_c`.
    Type_create_hindexed_block_c, MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c, true, (n: i64, bl: i64, ds: *const i64, old: Handle) =>
        |c| { let k = count(c, n)?; Type::hindexed_block(bl, &wide(c, ds, k)?, &ty(c, old)?) };
    /// `MPI_Type_create_struct`.
    Type_create_struct, MPI_Type_create_struct / PMPI_Type_create_struct, false, (n: c_int, bls: *const c_int, ds: *const isize, ts: *const Handle) =>
        |c| { let k = count(c, n)?; Type::structure(&wide(c, bls, k)?, &aints(c, ds, k)?, &types(c, ts, k)?) };
    /// `MPI_Type_create_struct_c`.
    Type_create_struct_c, MPI_Type_create_struct_c / PMPI_Type_create_struct_c, true, (n: i64, bls: *const i64, ds: *const i64, ts: *const Handle) =>
        |c| { let k = count(c, n)?; Type::structure(&wide(c, bls, k)?, &wide(c, ds, k)?, &types(c, ts, k)?) };
    /// `MPI_Type_create_subarray`.
    Type_create_subarray, MPI_Type_create_subarray / PMPI_Type_create_subarray, false, (nd: c_int, sizes: *const c_int, subs: *const c_int, starts: *const c_int, o: c_int, old: Handle) =>
        |c| { let k = count(c, nd)?; Type::subarray(&wide(c, sizes, k)?, &wide(c, subs, k)?, &wide(c, starts, k)?, order(c, o)?, &ty(c, old)?) };
    /// `MPI_Type_create_subarray_c`.
    Type_create_subarray_c, MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c, true, (nd: c_int, sizes: *const i64, subs: *const i64, starts: *const i64, o: c_int, old: Handle) =>
        |c| { let k = count(c, nd)?; Type::subarray(&wide(c, sizes, k)?, &wide(c, subs, k)?, &wide(c, starts, k)?, order(c, o)?, &ty(c, old)?) };
    /// `MPI_Type_create_darray`.
    Type_create_darray, MPI_Type_create_darray / PMPI_Type_create_darray, false, (size: c_int, rank: c_int, nd: c_int, gsizes: *const c_int, distribs: *const c_int, dargs: *const c_int, psizes: *const c_int, o: c_int, old: Handle) =>
        |c| {
            let k = count(c, nd)?;
            let ds = slice(c, distribs, k)?.iter().zip(slice(c, dargs, k)?).map(|(&d, &a)| distribution(c, d, a)).collect::<Result<Vec<_>>>()?;
            Type::darray(size, rank, &wide(c, gsizes, k)?, &ds, slice(c, psizes, k)?, order(c, o)?, &ty(c, old)?)
        };
    /// `MPI_Type_create_darray_c`.
    Type_create_darray_c, MPI_Type_create_darray_c / PMPI_Type_create_darray_c, true, (size: c_int, rank: c_int, nd: c_int, gsizes: *const i64, distribs: *const c_int, dargs: *const c_int, psizes: *const c_int, o: c_int, old: Handle) =>
        |c| {
            let k = count(c, nd)?;
            let ds = slice(c, distribs, k)?.iter().zip(slice(c, dargs, k)?).map(|(&d, &a)| distribution(c, d, a)).collect::<Result<Vec<_>>>()?;
            Type::darray(size, rank, &wide(c, gsizes, k)?, &ds, slice(c, psizes, k)?, order(c, o)?, &ty(c, old)?)
        };
    /// `MPI_Type_create_resized`.
    Type_create_resized, MPI_Type_create_resized / PMPI_Type_create_resized, false, (old: Handle, lb: isize, extent: isize) =>
        |c| Type::resized(&ty(c, old)?, lb as i64, extent as i64);
    /// `MPI_Type_create_resized_c`.
    Type_create_resized_c, MPI_Type_create_resized_c / PMPI_Type_create_resized_c, true, (old: Handle, lb: i64, extent: i64) =>
        |c| Type::resized(&ty(c, old)?, lb, extent);
}

mpi_fn! {
    /// `MPI_Type_dup`: the same type map and committed state; attributes copied.
    fn Type_dup = MPI_Type_dup / PMPI_Type_dup(old: Handle, out: *mut Handle) on CommHandle::WORLD => {
        ty("Type_dup", old)?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Type_dup", "newtype is NULL"));
        }
        put("Type_dup", out, handle(hd::type_dup(id(old as usize))?))
    }

    /// `MPI_Type_commit`.
    fn Type_commit = MPI_Type_commit / PMPI_Type_commit(dt: *mut Handle) on CommHandle::WORLD => {
        let h = get("Type_commit", dt)?;
        ty("Type_commit", h)?;
        hd::type_commit(id(h as usize))
    }

    /// `MPI_Type_free`: sets `*dt` to `MPI_DATATYPE_NULL`; operations in flight keep the type.
    fn Type_free = MPI_Type_free / PMPI_Type_free(dt: *mut Handle) on CommHandle::WORLD => {
        let h = get("Type_free", dt)?;
        ty("Type_free", h)?;
        let mut t = id(h as usize);
        let res = hd::type_free(&mut t);
        if t == TypeHandle::NULL {
            put("Type_free", dt, handle(t))?;
        }
        res
    }

    /// `MPI_Type_size`: `MPI_UNDEFINED` if it does not fit an `int`.
    fn Type_size = MPI_Type_size / PMPI_Type_size(dt: Handle, size: *mut c_int) on CommHandle::WORLD => {
        ty("Type_size", dt)?;
        put_int("Type_size", size, hd::type_size(id(dt as usize))?)
    }

    /// `MPI_Type_size_c`.
    fn Type_size_c = MPI_Type_size_c / PMPI_Type_size_c(dt: Handle, size: *mut i64) on CommHandle::WORLD => {
        ty("Type_size_c", dt)?;
        put("Type_size_c", size, hd::type_size(id(dt as usize))?)
    }

    /// `MPI_Type_size_x`.
    fn Type_size_x = MPI_Type_size_x / PMPI_Type_size_x(dt: Handle, size: *mut i64) on CommHandle::WORLD => {
        ty("Type_size_x", dt)?;
        put("Type_size_x", size, hd::type_size(id(dt as usize))?)
    }

    /// `MPI_Type_get_extent`.
    fn Type_get_extent = MPI_Type_get_extent / PMPI_Type_get_extent(dt: Handle, lb: *mut isize, extent: *mut isize) on CommHandle::WORLD => {
        ty("Type_get_extent", dt)?;
        let (l, e) = hd::type_get_extent(id(dt as usize))?;
        put("Type_get_extent", lb, l as isize)?;
        put("Type_get_extent", extent, e as isize)
    }

    /// `MPI_Type_get_extent_c`.
    fn Type_get_extent_c = MPI_Type_get_extent_c / PMPI_Type_get_extent_c(dt: Handle, lb: *mut i64, extent: *mut i64) on CommHandle::WORLD => {
        ty("Type_get_extent_c", dt)?;
        let (l, e) = hd::type_get_extent(id(dt as usize))?;
        put("Type_get_extent_c", lb, l)?;
        put("Type_get_extent_c", extent, e)
    }

    /// `MPI_Type_get_extent_x`.
    fn Type_get_extent_x = MPI_Type_get_extent_x / PMPI_Type_get_extent_x(dt: Handle, lb: *mut i64, extent: *mut i64) on CommHandle::WORLD => {
        ty("Type_get_extent_x", dt)?;
        let (l, e) = hd::type_get_extent(id(dt as usize))?;
        put("Type_get_extent_x", lb, l)?;
        put("Type_get_extent_x", extent, e)
    }

    /// `MPI_Type_get_true_extent`.
    fn Type_get_true_extent = MPI_Type_get_true_extent / PMPI_Type_get_true_extent(dt: Handle, lb: *mut isize, extent: *mut isize) on CommHandle::WORLD => {
        ty("Type_get_true_extent", dt)?;
        let (l, e) = hd::type_get_true_extent(id(dt as usize))?;
        put("Type_get_true_extent", lb, l as isize)?;
        put("Type_get_true_extent", extent, e as isize)
    }

    /// `MPI_Type_get_true_extent_c`.
    fn Type_get_true_extent_c = MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c(dt: Handle, lb: *mut i64, extent: *mut i64) on CommHandle::WORLD => {
        ty("Type_get_true_extent_c", dt)?;
        let (l, e) = hd::type_get_true_extent(id(dt as usize))?;
        put("Type_get_true_extent_c", lb, l)?;
        put("Type_get_true_extent_c", extent, e)
    }

    /// `MPI_Type_get_true_extent_x`.
    fn Type_get_true_extent_x = MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(dt: Handle, lb: *mut i64, extent: *mut i64) on CommHandle::WORLD => {
        ty("Type_get_true_extent_x", dt)?;
        let (l, e) = hd::type_get_true_extent(id(dt as usize))?;
        put("Type_get_true_extent_x", lb, l)?;
        put("Type_get_true_extent_x", extent, e)
    }

    /// `MPI_Get_elements`: basic elements received (partial elements of a derived type count).
    fn Get_elements = MPI_Get_elements / PMPI_Get_elements(status: *const MpiStatus, dt: Handle, n: *mut c_int) on CommHandle::WORLD => {
        let b = status_bytes("Get_elements", status)?;
        put_int("Get_elements", n, elements_of("Get_elements", b, dt)?)
    }

    /// `MPI_Get_elements_c`.
    fn Get_elements_c = MPI_Get_elements_c / PMPI_Get_elements_c(status: *const MpiStatus, dt: Handle, n: *mut i64) on CommHandle::WORLD => {
        let b = status_bytes("Get_elements_c", status)?;
        put("Get_elements_c", n, elements_of("Get_elements_c", b, dt)?)
    }

    /// `MPI_Get_elements_x`.
    fn Get_elements_x = MPI_Get_elements_x / PMPI_Get_elements_x(status: *const MpiStatus, dt: Handle, n: *mut i64) on CommHandle::WORLD => {
        let b = status_bytes("Get_elements_x", status)?;
        put("Get_elements_x", n, elements_of("Get_elements_x", b, dt)?)
    }

    /// `MPI_Get_count`: `MPI_UNDEFINED` if the bytes are not a whole number of elements.
    fn Get_count = MPI_Get_count / PMPI_Get_count(status: *const MpiStatus, dt: Handle, n: *mut c_int) on CommHandle::WORLD => {
        let b = status_bytes("Get_count", status)?;
        put_int("Get_count", n, count_of("Get_count", b, dt)?)
    }

    /// `MPI_Get_count_c`.
    fn Get_count_c = MPI_Get_count_c / PMPI_Get_count_c(status: *const MpiStatus, dt: Handle, n: *mut i64) on CommHandle::WORLD => {
        let b = status_bytes("Get_count_c", status)?;
        put("Get_count_c", n, count_of("Get_count_c", b, dt)?)
    }

    /// `MPI_Type_get_envelope`.
    fn Type_get_envelope = MPI_Type_get_envelope / PMPI_Type_get_envelope(dt: Handle, ni: *mut c_int, na: *mut c_int, nd: *mut c_int, combiner: *mut c_int) on CommHandle::WORLD => {
        ty("Type_get_envelope", dt)?;
        let (i, a, l, d, k) = envelope_of("Type_get_envelope", dt)?;
        if l > 0 {
            return Err(err(ErrorClass::Type, "Type_get_envelope", "the type was built with large counts: use MPI_Type_get_envelope_c"));
        }
        put("Type_get_envelope", ni, i as c_int)?;
        put("Type_get_envelope", na, a as c_int)?;
        put("Type_get_envelope", nd, d as c_int)?;
        put("Type_get_envelope", combiner, k)
    }

    /// `MPI_Type_get_envelope_c`.
    fn Type_get_envelope_c = MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(dt: Handle, ni: *mut i64, na: *mut i64, nc: *mut i64, nd: *mut i64, combiner: *mut c_int) on CommHandle::WORLD => {
        ty("Type_get_envelope_c", dt)?;
        let (i, a, l, d, k) = envelope_of("Type_get_envelope_c", dt)?;
        put("Type_get_envelope_c", ni, i as i64)?;
        put("Type_get_envelope_c", na, a as i64)?;
        put("Type_get_envelope_c", nc, l as i64)?;
        put("Type_get_envelope_c", nd, d as i64)?;
        put("Type_get_envelope_c", combiner, k)
    }

    /// `MPI_Type_get_contents`: derived old types come back as new handles the caller frees.
    fn Type_get_contents = MPI_Type_get_contents / PMPI_Type_get_contents(dt: Handle, mi: c_int, ma: c_int, md: c_int, ints: *mut c_int, addrs: *mut isize, dts: *mut Handle) on CommHandle::WORLD => {
        ty("Type_get_contents", dt)?;
        contents("Type_get_contents", dt, mi.into(), ma.into(), 0, md.into(), ints, addrs, std::ptr::null_mut(), dts)
    }

    /// `MPI_Type_get_contents_c`.
    fn Type_get_contents_c = MPI_Type_get_contents_c / PMPI_Type_get_contents_c(dt: Handle, mi: i64, ma: i64, mc: i64, md: i64, ints: *mut c_int, addrs: *mut isize, large: *mut i64, dts: *mut Handle) on CommHandle::WORLD => {
        ty("Type_get_contents_c", dt)?;
        contents("Type_get_contents_c", dt, mi, ma, mc, md, ints, addrs, large, dts)
    }

    /// `MPI_Type_set_name`.
    fn Type_set_name = MPI_Type_set_name / PMPI_Type_set_name(dt: Handle, name: *const c_char) on CommHandle::WORLD => {
        ty("Type_set_name", dt)?;
        let s = str_arg("Type_set_name", name)?;
        hd::type_set_name(id(dt as usize), s)
    }

    /// `MPI_Type_get_name`: at most `MPI_MAX_OBJECT_NAME` bytes with the NUL.
    fn Type_get_name = MPI_Type_get_name / PMPI_Type_get_name(dt: Handle, name: *mut c_char, len: *mut c_int) on CommHandle::WORLD => {
        // mpi4py and others name the null handle like the predefined ones.
        let s = if dt as usize == 0x200 {
            "MPI_DATATYPE_NULL".to_string()
        } else {
            ty("Type_get_name", dt)?;
            hd::type_get_name(id(dt as usize))?
        };
        let n = put_str("Type_get_name", name, crate::comm::MAX_OBJECT_NAME, &s)?;
        put("Type_get_name", len, n)
    }

    /// `MPI_Type_match_size`.
    fn Type_match_size = MPI_Type_match_size / PMPI_Type_match_size(class: c_int, size: c_int, out: *mut Handle) on CommHandle::WORLD => {
        let class = match class {
            192 => TypeClass::Integer,
            193 => TypeClass::Real,
            194 => TypeClass::Complex,
            x => return Err(err(ErrorClass::Arg, "Type_match_size", format!("type class {x}"))),
        };
        let size = count("Type_match_size", size)?;
        put("Type_match_size", out, handle(hd::type_match_size(class, size)?))
    }

    /// `MPI_Type_get_value_index`: the predefined pair type of `value` and `index`, or
    /// `MPI_DATATYPE_NULL` when there is none.
    fn Type_get_value_index = MPI_Type_get_value_index / PMPI_Type_get_value_index(value: Handle, index: Handle, out: *mut Handle) on CommHandle::WORLD => {
        let (v, i) = (ty("Type_get_value_index", value)?, ty("Type_get_value_index", index)?);
        let pair = match (v.as_predefined(), i.as_predefined()) {
            (Some(v), Some(i)) => envelope::value_index(v, i),
            _ => None,
        };
        let h = pair.map_or(crate::datatypes::NULL as Handle, |p| handle(TypeHandle::of(p)));
        put("Type_get_value_index", out, h)
    }

    /// `MPI_Type_create_f90_integer`.
    fn Type_create_f90_integer = MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer(r: c_int, out: *mut Handle) on CommHandle::WORLD => {
        put("Type_create_f90_integer", out, handle(hd::type_create_f90_integer(r)?))
    }

    /// `MPI_Type_create_f90_real`.
    fn Type_create_f90_real = MPI_Type_create_f90_real / PMPI_Type_create_f90_real(p: c_int, r: c_int, out: *mut Handle) on CommHandle::WORLD => {
        put("Type_create_f90_real", out, handle(hd::type_create_f90_real(p, r)?))
    }

    /// `MPI_Type_create_f90_complex`.
    fn Type_create_f90_complex = MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex(p: c_int, r: c_int, out: *mut Handle) on CommHandle::WORLD => {
        put("Type_create_f90_complex", out, handle(hd::type_create_f90_complex(p, r)?))
    }

    /// `MPI_Type_create_keyval`.
    fn Type_create_keyval = MPI_Type_create_keyval / PMPI_Type_create_keyval(copy: *mut c_void, delete: *mut c_void, k: *mut c_int, extra: *mut c_void) on CommHandle::WORLD => {
        if k.is_null() {
            return Err(err(ErrorClass::Arg, "Type_create_keyval", "keyval is NULL"));
        }
        let kv = create_keyval(copy as usize, delete as usize, extra as usize)?;
        put("Type_create_keyval", k, kv.to_int())
    }

    /// `MPI_Type_free_keyval`: sets `*k` to `MPI_KEYVAL_INVALID`.
    fn Type_free_keyval = MPI_Type_free_keyval / PMPI_Type_free_keyval(k: *mut c_int) on CommHandle::WORLD => {
        let mut kv = KeyvalHandle::from_int(get("Type_free_keyval", k)?);
        hd::type_free_keyval(&mut kv)?;
        put("Type_free_keyval", k, kv.to_int())
    }

    /// `MPI_Type_set_attr`.
    fn Type_set_attr = MPI_Type_set_attr / PMPI_Type_set_attr(dt: Handle, k: c_int, v: *mut c_void) on CommHandle::WORLD => {
        ty("Type_set_attr", dt)?;
        hd::type_set_attr(id(dt as usize), KeyvalHandle::from_int(k), v as usize)
    }

    /// `MPI_Type_get_attr`: the value is written through `v` (a `void **`).
    fn Type_get_attr = MPI_Type_get_attr / PMPI_Type_get_attr(dt: Handle, k: c_int, v: *mut c_void, flag: *mut c_int) on CommHandle::WORLD => {
        ty("Type_get_attr", dt)?;
        if v.is_null() || flag.is_null() {
            return Err(err(ErrorClass::Arg, "Type_get_attr", "attribute_val or flag is NULL"));
        }
        match hd::type_get_attr(id(dt as usize), KeyvalHandle::from_int(k))? {
            Some(x) => {
                put("Type_get_attr", v.cast::<*mut c_void>(), x as *mut c_void)?;
                put("Type_get_attr", flag, 1)
            }
            None => put("Type_get_attr", flag, 0),
        }
    }

    /// `MPI_Type_delete_attr`.
    fn Type_delete_attr = MPI_Type_delete_attr / PMPI_Type_delete_attr(dt: Handle, k: c_int) on CommHandle::WORLD => {
        ty("Type_delete_attr", dt)?;
        hd::type_delete_attr(id(dt as usize), KeyvalHandle::from_int(k))
    }

    /// `MPI_Get_address`.
    fn Get_address = MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut isize) on CommHandle::WORLD => {
        put("Get_address", address, hd::get_address(location) as isize)
    }

    /// `MPI_Pack`.
    fn Pack = MPI_Pack / PMPI_Pack(inbuf: *const c_void, incount: c_int, dt: Handle, outbuf: *mut c_void, outsize: c_int, pos: *mut c_int, c: Handle) on crate::boundary::comm(c) => {
        let mut p = position("Pack", pos)?;
        pack_any("Pack", inbuf, incount.into(), dt, outbuf, outsize.into(), &mut p)?;
        put("Pack", pos, p as c_int)
    }

    /// `MPI_Pack_c`.
    fn Pack_c = MPI_Pack_c / PMPI_Pack_c(inbuf: *const c_void, incount: i64, dt: Handle, outbuf: *mut c_void, outsize: i64, pos: *mut i64, c: Handle) on crate::boundary::comm(c) => {
        let mut p = position("Pack_c", pos)?;
        pack_any("Pack_c", inbuf, incount, dt, outbuf, outsize, &mut p)?;
        put("Pack_c", pos, p as i64)
    }

    /// `MPI_Unpack`.
    fn Unpack = MPI_Unpack / PMPI_Unpack(inbuf: *const c_void, insize: c_int, pos: *mut c_int, outbuf: *mut c_void, outcount: c_int, dt: Handle, c: Handle) on crate::boundary::comm(c) => {
        let mut p = position("Unpack", pos)?;
        unpack_any("Unpack", inbuf, insize.into(), &mut p, outbuf, outcount.into(), dt)?;
        put("Unpack", pos, p as c_int)
    }

    /// `MPI_Unpack_c`.
    fn Unpack_c = MPI_Unpack_c / PMPI_Unpack_c(inbuf: *const c_void, insize: i64, pos: *mut i64, outbuf: *mut c_void, outcount: i64, dt: Handle, c: Handle) on crate::boundary::comm(c) => {
        let mut p = position("Unpack_c", pos)?;
        unpack_any("Unpack_c", inbuf, insize, &mut p, outbuf, outcount, dt)?;
        put("Unpack_c", pos, p as i64)
    }

    /// `MPI_Pack_size`: an upper bound (here exact) of the bytes `MPI_Pack` writes.
    fn Pack_size = MPI_Pack_size / PMPI_Pack_size(incount: c_int, dt: Handle, c: Handle, size: *mut c_int) on crate::boundary::comm(c) => {
        count("Pack_size", incount)?;
        let n = hd::pack_size(incount.into(), id(dt as usize))?;
        let n = c_int::try_from(n).map_err(|_| err(ErrorClass::Count, "Pack_size", "the size does not fit an int"))?;
        put("Pack_size", size, n)
    }

    /// `MPI_Pack_size_c`.
    fn Pack_size_c = MPI_Pack_size_c / PMPI_Pack_size_c(incount: i64, dt: Handle, c: Handle, size: *mut i64) on crate::boundary::comm(c) => {
        count("Pack_size_c", incount)?;
        put("Pack_size_c", size, hd::pack_size(incount, id(dt as usize))?)
    }

    /// `MPI_Pack_external` ("external32": big-endian, fixed sizes).
    fn Pack_external = MPI_Pack_external / PMPI_Pack_external(rep: *const c_char, inbuf: *const c_void, incount: c_int, dt: Handle, outbuf: *mut c_void, outsize: isize, pos: *mut isize) on CommHandle::WORLD => {
        let mut p = position("Pack_external", pos.cast_const().cast::<i64>())?;
        pack_external_any("Pack_external", rep, inbuf, incount.into(), dt, outbuf, outsize as i64, &mut p)?;
        put("Pack_external", pos, p as isize)
    }

    /// `MPI_Pack_external_c`.
    fn Pack_external_c = MPI_Pack_external_c / PMPI_Pack_external_c(rep: *const c_char, inbuf: *const c_void, incount: i64, dt: Handle, outbuf: *mut c_void, outsize: i64, pos: *mut i64) on CommHandle::WORLD => {
        let mut p = position("Pack_external_c", pos)?;
        pack_external_any("Pack_external_c", rep, inbuf, incount, dt, outbuf, outsize, &mut p)?;
        put("Pack_external_c", pos, p as i64)
    }

    /// `MPI_Unpack_external`.
    fn Unpack_external = MPI_Unpack_external / PMPI_Unpack_external(rep: *const c_char, inbuf: *const c_void, insize: isize, pos: *mut isize, outbuf: *mut c_void, outcount: c_int, dt: Handle) on CommHandle::WORLD => {
        let mut p = position("Unpack_external", pos.cast_const().cast::<i64>())?;
        unpack_external_any("Unpack_external", rep, inbuf, insize as i64, &mut p, outbuf, outcount.into(), dt)?;
        put("Unpack_external", pos, p as isize)
    }

    /// `MPI_Unpack_external_c`.
    fn Unpack_external_c = MPI_Unpack_external_c / PMPI_Unpack_external_c(rep: *const c_char, inbuf: *const c_void, insize: i64, pos: *mut i64, outbuf: *mut c_void, outcount: i64, dt: Handle) on CommHandle::WORLD => {
        let mut p = position("Unpack_external_c", pos)?;
        unpack_external_any("Unpack_external_c", rep, inbuf, insize, &mut p, outbuf, outcount, dt)?;
        put("Unpack_external_c", pos, p as i64)
    }

    /// `MPI_Pack_external_size`.
    fn Pack_external_size = MPI_Pack_external_size / PMPI_Pack_external_size(rep: *const c_char, incount: c_int, dt: Handle, size: *mut isize) on CommHandle::WORLD => {
        let s = pack_external_size_any("Pack_external_size", rep, incount.into(), dt)?;
        put("Pack_external_size", size, s as isize)
    }

    /// `MPI_Pack_external_size_c`.
    fn Pack_external_size_c = MPI_Pack_external_size_c / PMPI_Pack_external_size_c(rep: *const c_char, incount: i64, dt: Handle, size: *mut i64) on CommHandle::WORLD => {
        let s = pack_external_size_any("Pack_external_size_c", rep, incount, dt)?;
        put("Pack_external_size_c", size, s as i64)
    }
}

mpi_value_fn! {
    /// `MPI_Aint_add`: `base + disp` as address arithmetic.
    fn MPI_Aint_add / PMPI_Aint_add(base: isize, disp: isize) -> isize {
        hd::aint_add(base as i64, disp as i64) as isize
    }

    /// `MPI_Aint_diff`: `a - b` as address arithmetic.
    fn MPI_Aint_diff / PMPI_Aint_diff(a: isize, b: isize) -> isize {
        hd::aint_diff(a as i64, b as i64) as isize
    }
}
