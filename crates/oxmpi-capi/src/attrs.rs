//! Attributes and keyvals on communicators: the MPI-2 names (`MPI_Comm_create_keyval`, ...)
//! and the MPI-1 ones still found in old code (`MPI_Keyval_create`, `MPI_Attr_put`, ...).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use oxmpi::handle::comm::{self as hc, CommHandle, CopyPolicy, KeyvalHandle};
use oxmpi::{ErrorClass, Predefined, Result};

use crate::boundary::{comm, comm_handle, err, get, mpi_fn, put, Handle};

/// `MPI_Comm_copy_attr_function` (and the MPI-1 `MPI_Copy_function`, the same shape).
pub type CopyFunction =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` (and `MPI_Delete_function`).
pub type DeleteFunction = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// The predefined attributes' values: C receives a pointer to an `int` for them.
static PREDEFINED_VALUES: [AtomicI32; 7] = [const { AtomicI32::new(0) }; 7];

/// A keyval from copy and delete function pointers, where the copy values 0 and 1 are the
/// standard's `MPI_COMM_NULL_COPY_FN` and `MPI_COMM_DUP_FN` and a null delete function is
/// `MPI_COMM_NULL_DELETE_FN`.
fn create(copy: usize, delete: usize, extra: usize) -> Result<KeyvalHandle> {
    let copy = match copy {
        0 => CopyPolicy::Null,
        1 => CopyPolicy::Dup,
        f => {
            // SAFETY: a non-null, non-sentinel value is the address of the caller's copy
            // function (the MPI contract for this argument).
            let f: CopyFunction = unsafe { std::mem::transmute::<usize, CopyFunction>(f) };
            CopyPolicy::Call(Arc::new(
                move |c: CommHandle, k: KeyvalHandle, extra: usize, v: usize| {
                    let mut out: *mut c_void = std::ptr::null_mut();
                    let mut flag: c_int = 0;
                    // SAFETY: FFI call of the user's copy function with pointers to live locals.
                    let rc = unsafe {
                        f(
                            comm_handle(c),
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
                            "Comm_dup",
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
            move |c: CommHandle, k: KeyvalHandle, extra: usize, v: usize| {
                // SAFETY: FFI call of the user's delete function.
                let rc = unsafe {
                    f(
                        comm_handle(c),
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
        ) as hc::DeleteFn
    });
    hc::keyval_create(copy, delete, extra)
}

/// `MPI_Comm_get_attr`: writes the value (for predefined keys, a pointer to the `int`) to
/// `*out` and whether it is set to `*flag`.
///
/// # Safety
/// `out` valid for a pointer write, `flag` for an int write.
unsafe fn get_attr(
    name: &str,
    c: Handle,
    k: c_int,
    out: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    if out.is_null() || flag.is_null() {
        return Err(err(ErrorClass::Arg, name, "attribute_val or flag is NULL"));
    }
    let v = hc::comm_get_attr(comm(c), KeyvalHandle::from_int(k))?;
    let v = match (v, Predefined::from_key(k as u32)) {
        (Some(x), Some(p)) => {
            let i = Predefined::ALL.iter().position(|q| *q == p).unwrap_or(0);
            PREDEFINED_VALUES[i].store(x as i32, Ordering::Relaxed);
            Some(PREDEFINED_VALUES[i].as_ptr() as usize)
        }
        (v, _) => v,
    };
    // SAFETY: both pointers checked non-null; valid by contract.
    unsafe {
        if let Some(x) = v {
            put(name, out.cast::<*mut c_void>(), x as *mut c_void)?;
        }
        put(name, flag, v.is_some() as c_int)
    }
}

mpi_fn! {
    /// `MPI_Comm_create_keyval`.
    fn Comm_create_keyval = MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        copy: usize, delete: usize, keyval: *mut c_int, extra: *mut c_void,
    ) on CommHandle::WORLD => {
        if keyval.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_create_keyval", "keyval is NULL"));
        }
        put("Comm_create_keyval", keyval, create(copy, delete, extra as usize)?.to_int())
    }

    /// `MPI_Keyval_create` (MPI-1 name).
    fn Keyval_create = MPI_Keyval_create / PMPI_Keyval_create(
        copy: usize, delete: usize, keyval: *mut c_int, extra: *mut c_void,
    ) on CommHandle::WORLD => {
        if keyval.is_null() {
            return Err(err(ErrorClass::Arg, "Keyval_create", "keyval is NULL"));
        }
        put("Keyval_create", keyval, create(copy, delete, extra as usize)?.to_int())
    }

    /// `MPI_Comm_free_keyval`.
    fn Comm_free_keyval = MPI_Comm_free_keyval / PMPI_Comm_free_keyval(keyval: *mut c_int) on CommHandle::WORLD => {
        let mut k = KeyvalHandle::from_int(get("Comm_free_keyval", keyval)?);
        hc::keyval_free(&mut k)?;
        put("Comm_free_keyval", keyval, k.to_int())
    }

    /// `MPI_Keyval_free` (MPI-1 name).
    fn Keyval_free = MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) on CommHandle::WORLD => {
        let mut k = KeyvalHandle::from_int(get("Keyval_free", keyval)?);
        hc::keyval_free(&mut k)?;
        put("Keyval_free", keyval, k.to_int())
    }

    /// `MPI_Comm_set_attr`.
    fn Comm_set_attr = MPI_Comm_set_attr / PMPI_Comm_set_attr(c: Handle, k: c_int, v: *mut c_void) on comm(c) => {
        hc::comm_set_attr(comm(c), KeyvalHandle::from_int(k), v as usize)
    }

    /// `MPI_Attr_put` (MPI-1 name).
    fn Attr_put = MPI_Attr_put / PMPI_Attr_put(c: Handle, k: c_int, v: *mut c_void) on comm(c) => {
        hc::comm_set_attr(comm(c), KeyvalHandle::from_int(k), v as usize)
    }

    /// `MPI_Comm_get_attr`.
    fn Comm_get_attr = MPI_Comm_get_attr / PMPI_Comm_get_attr(c: Handle, k: c_int, out: *mut c_void, flag: *mut c_int) on comm(c) => {
        get_attr("Comm_get_attr", c, k, out, flag)
    }

    /// `MPI_Attr_get` (MPI-1 name).
    fn Attr_get = MPI_Attr_get / PMPI_Attr_get(c: Handle, k: c_int, out: *mut c_void, flag: *mut c_int) on comm(c) => {
        get_attr("Attr_get", c, k, out, flag)
    }

    /// `MPI_Comm_delete_attr`.
    fn Comm_delete_attr = MPI_Comm_delete_attr / PMPI_Comm_delete_attr(c: Handle, k: c_int) on comm(c) => {
        hc::comm_delete_attr(comm(c), KeyvalHandle::from_int(k))
    }

    /// `MPI_Attr_delete` (MPI-1 name).
    fn Attr_delete = MPI_Attr_delete / PMPI_Attr_delete(c: Handle, k: c_int) on comm(c) => {
        hc::comm_delete_attr(comm(c), KeyvalHandle::from_int(k))
    }
}
