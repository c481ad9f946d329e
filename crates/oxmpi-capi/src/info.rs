//! Info objects: create, set, get, delete, count and name keys, dup, free.

use std::ffi::{c_char, c_int};

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::info::{self as hi, InfoHandle};
use oxmpi::ErrorClass;

use crate::boundary::{
    count, err, get, handle_of, int_of, mpi_fn, put, put_str, slice, str_arg, Handle,
};

/// `MPI_MAX_INFO_KEY`.
const MAX_INFO_KEY: usize = 256;

fn info(h: Handle) -> InfoHandle {
    InfoHandle::from_int(int_of(h))
}

mpi_fn! {
    /// `MPI_Get_hw_resource_info` (MPI-4.1): a new info object describing the hardware this
    /// process runs on (see `oxmpi::environment::hw_resources` for its keys).
    fn Get_hw_resource_info = MPI_Get_hw_resource_info / PMPI_Get_hw_resource_info(out: *mut Handle) on CommHandle::WORLD => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Get_hw_resource_info", "hw_info is NULL"));
        }
        put("Get_hw_resource_info", out, handle_of(hi::hw_resource_info()?.to_int()))
    }

    /// `MPI_Info_create`.
    fn Info_create = MPI_Info_create / PMPI_Info_create(out: *mut Handle) on CommHandle::WORLD => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Info_create", "info is NULL"));
        }
        put("Info_create", out, handle_of(hi::info_create()?.to_int()))
    }

    /// `MPI_Info_create_env`: what `MPI_INFO_ENV` holds, with `argv` (if given) as the
    /// command and its arguments; callable before `MPI_Init`.
    fn Info_create_env = MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *const *const c_char, out: *mut Handle) on CommHandle::WORLD => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Info_create_env", "info is NULL"));
        }
        let args = if argc > 0 && !argv.is_null() {
            // SAFETY: `argv` holds `argc` strings (the C `main`'s contract).
            let ptrs = unsafe { slice("Info_create_env", argv, argc as usize)? };
            let mut v = Vec::with_capacity(ptrs.len());
            for &p in ptrs {
                // SAFETY: each a NUL-terminated string, as above.
                v.push(unsafe { str_arg("Info_create_env", p)? }.to_string());
            }
            Some(v)
        } else {
            None
        };
        put("Info_create_env", out, handle_of(hi::info_create_env(args)?.to_int()))
    }

    /// `MPI_Info_dup`.
    fn Info_dup = MPI_Info_dup / PMPI_Info_dup(h: Handle, out: *mut Handle) on CommHandle::WORLD => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Info_dup", "newinfo is NULL"));
        }
        put("Info_dup", out, handle_of(hi::info_dup(info(h))?.to_int()))
    }

    /// `MPI_Info_set`.
    fn Info_set = MPI_Info_set / PMPI_Info_set(h: Handle, key: *const c_char, value: *const c_char) on CommHandle::WORLD => {
        hi::info_set(info(h), str_arg("Info_set", key)?, str_arg("Info_set", value)?)
    }

    /// `MPI_Info_get_string`: `*buflen` is the buffer size on entry and the value's length
    /// plus one on return; the value is truncated to fit.
    fn Info_get_string = MPI_Info_get_string / PMPI_Info_get_string(
        h: Handle, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int,
    ) on CommHandle::WORLD => {
        let cap = count("Info_get_string", get("Info_get_string", buflen)?)?;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Info_get_string", "flag is NULL"));
        }
        match hi::info_get(info(h), str_arg("Info_get_string", key)?)? {
            Some(v) => {
                if cap > 0 {
                    put_str("Info_get_string", value, cap, &v)?;
                }
                put("Info_get_string", buflen, v.len() as c_int + 1)?;
                put("Info_get_string", flag, 1)
            }
            None => put("Info_get_string", flag, 0),
        }
    }

    /// `MPI_Info_get` (deprecated in MPI-4.0, still common): at most `valuelen` bytes of the
    /// value, NUL-terminated (`value` holds `valuelen + 1` bytes).
    fn Info_get = MPI_Info_get / PMPI_Info_get(
        h: Handle, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int,
    ) on CommHandle::WORLD => {
        let cap = count("Info_get", valuelen)? + 1;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Info_get", "flag is NULL"));
        }
        match hi::info_get(info(h), str_arg("Info_get", key)?)? {
            Some(v) => {
                put_str("Info_get", value, cap, &v)?;
                put("Info_get", flag, 1)
            }
            None => put("Info_get", flag, 0),
        }
    }

    /// `MPI_Info_get_valuelen` (deprecated in MPI-4.0): the value's length without the NUL.
    fn Info_get_valuelen = MPI_Info_get_valuelen / PMPI_Info_get_valuelen(
        h: Handle, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int,
    ) on CommHandle::WORLD => {
        if flag.is_null() || valuelen.is_null() {
            return Err(err(ErrorClass::Arg, "Info_get_valuelen", "valuelen or flag is NULL"));
        }
        match hi::info_get(info(h), str_arg("Info_get_valuelen", key)?)? {
            Some(v) => {
                put("Info_get_valuelen", valuelen, v.len() as c_int)?;
                put("Info_get_valuelen", flag, 1)
            }
            None => put("Info_get_valuelen", flag, 0),
        }
    }

    /// `MPI_Info_delete`.
    fn Info_delete = MPI_Info_delete / PMPI_Info_delete(h: Handle, key: *const c_char) on CommHandle::WORLD => {
        hi::info_delete(info(h), str_arg("Info_delete", key)?)
    }

    /// `MPI_Info_get_nkeys`.
    fn Info_get_nkeys = MPI_Info_get_nkeys / PMPI_Info_get_nkeys(h: Handle, n: *mut c_int) on CommHandle::WORLD => {
        put("Info_get_nkeys", n, hi::info_get_nkeys(info(h))?)
    }

    /// `MPI_Info_get_nthkey`: `key` must hold `MPI_MAX_INFO_KEY` bytes.
    fn Info_get_nthkey = MPI_Info_get_nthkey / PMPI_Info_get_nthkey(h: Handle, n: c_int, key: *mut c_char) on CommHandle::WORLD => {
        let k = hi::info_get_nthkey(info(h), n)?;
        put_str("Info_get_nthkey", key, MAX_INFO_KEY, &k).map(drop)
    }

    /// `MPI_Info_free`.
    fn Info_free = MPI_Info_free / PMPI_Info_free(h: *mut Handle) on CommHandle::WORLD => {
        let mut i = info(get("Info_free", h)?);
        hi::info_free(&mut i)?;
        put("Info_free", h, handle_of(i.to_int()))
    }
}
