//! Info objects as ids (`MPI_Info`): ordered lists of string key/value pairs, and the
//! read-only `MPI_INFO_ENV` describing how the process was started.
//!
//! Errors: an id that is null, freed or never issued is [`ErrorClass::Info`]; an empty key or
//! one of more than [`MAX_KEY`] bytes is [`ErrorClass::InfoKey`], a value of more than
//! [`MAX_VAL`] bytes [`ErrorClass::InfoValue`], deleting a missing key
//! [`ErrorClass::InfoNoKey`]. As the standard allows, info objects work before init and after
//! finalize too: they need no runtime.
//!
//! # Standard sections
//! MPI-5.0 §10 (the info object), §11.2.3 (`MPI_INFO_ENV`).

use std::sync::{Arc, Mutex};

use super::env::check_ready;
use super::table::Table;
use crate::error::{Error, ErrorClass, Result};

/// Longest key in bytes (`MPI_MAX_INFO_KEY` less the terminating NUL).
pub const MAX_KEY: usize = 255;
/// Longest value in bytes (`MPI_MAX_INFO_VAL` less the terminating NUL).
pub const MAX_VAL: usize = 1023;

/// An info id (`MPI_Info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct InfoHandle(u32);

impl InfoHandle {
    /// `MPI_INFO_NULL`.
    pub const NULL: InfoHandle = InfoHandle(0x130);
    /// `MPI_INFO_ENV`: read-only, how this process was started.
    pub const ENV: InfoHandle = InfoHandle(0x131);

    /// The id as an integer (`MPI_Info_toint`).
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (`MPI_Info_fromint`).
    pub fn from_int(i: i32) -> InfoHandle {
        InfoHandle(i as u32)
    }
}

type Pairs = Arc<Mutex<Vec<(String, String)>>>;

static INFOS: Table<Pairs> = Table::new();

fn pairs(call: &str, h: InfoHandle) -> Result<Pairs> {
    if h == InfoHandle::ENV {
        return Ok(Arc::new(Mutex::new(env_pairs())));
    }
    INFOS.get(h.0).ok_or_else(|| {
        Error::new(
            ErrorClass::Info,
            format!(
                "{call}: {:#x} is not a live info object (null, freed, or never created)",
                h.0
            ),
        )
    })
}

fn lock(p: &Pairs) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
    // Pairs are pushed or replaced whole, so a poisoned lock is usable.
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// The keys of `MPI_INFO_ENV` this process can answer.
fn env_pairs() -> Vec<(String, String)> {
    env_pairs_of(std::env::args())
}

/// [`env_pairs`] with `args` (the command, then its arguments) for `command` and `argv`.
fn env_pairs_of(args: impl IntoIterator<Item = String>) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let mut args = args.into_iter();
    if let Some(cmd) = args.next() {
        v.push(("command".to_string(), cmd));
        let rest: Vec<String> = args.collect();
        if !rest.is_empty() {
            v.push(("argv".to_string(), rest.join(" ")));
        }
    }
    v.push(("host".to_string(), crate::processor_name()));
    if let Ok(d) = std::env::current_dir() {
        v.push(("wdir".to_string(), d.display().to_string()));
    }
    if let Ok(level) = super::env::query_thread() {
        let name = match level {
            crate::Threading::Single => "MPI_THREAD_SINGLE",
            crate::Threading::Funneled => "MPI_THREAD_FUNNELED",
            crate::Threading::Serialized => "MPI_THREAD_SERIALIZED",
            crate::Threading::Multiple => "MPI_THREAD_MULTIPLE",
        };
        v.push(("thread_level".to_string(), name.to_string()));
    }
    v
}

fn writable(call: &str, h: InfoHandle) -> Result<Pairs> {
    if h == InfoHandle::ENV {
        return Err(Error::new(
            ErrorClass::Info,
            format!("{call}: MPI_INFO_ENV is read-only"),
        ));
    }
    pairs(call, h)
}

fn check_key(call: &str, key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(Error::new(
            ErrorClass::InfoKey,
            format!(
                "{call}: a key must have 1 to {MAX_KEY} bytes, not {}",
                key.len()
            ),
        ));
    }
    Ok(())
}

fn put(call: &str, v: Vec<(String, String)>) -> Result<InfoHandle> {
    INFOS
        .insert(Arc::new(Mutex::new(v)))
        .map(InfoHandle)
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Other,
                format!("{call}: too many info objects are live"),
            )
        })
}

/// A new info object holding what `MPI_INFO_ENV` holds, with `args` (the command, then its
/// arguments; `None`: this process's) for `command` and `argv` (`MPI_Info_create_env`). Also
/// before init and after finalize, where `thread_level` is left out.
pub fn info_create_env(args: Option<Vec<String>>) -> Result<InfoHandle> {
    let v = match args {
        Some(a) => env_pairs_of(a),
        None => env_pairs(),
    };
    put("info_create_env", v)
}

/// A new, empty info object (`MPI_Info_create`).
pub fn info_create() -> Result<InfoHandle> {
    put("info_create", Vec::new())
}

/// A new info object holding `pairs` (`MPI_Abi_get_info` and other calls that return one).
pub fn info_from(pairs: &[(&str, &str)]) -> Result<InfoHandle> {
    check_ready("info_from")?;
    put(
        "info_from",
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// A new info object describing the hardware this process runs on
/// (`MPI_Get_hw_resource_info`; the keys are [`crate::environment::hw_resources`]'s).
pub fn hw_resource_info() -> Result<InfoHandle> {
    check_ready("get_hw_resource_info")?;
    put("get_hw_resource_info", crate::environment::hw_resources())
}

/// A new info object with the Fortran ABI facts of this library (`MPI_Abi_get_fortran_info`;
/// the keys are [`crate::datatype::predefined::fortran_abi_info`]'s).
pub fn fortran_abi_info() -> Result<InfoHandle> {
    check_ready("abi_get_fortran_info")?;
    put(
        "abi_get_fortran_info",
        crate::datatype::predefined::fortran_abi_info(),
    )
}

/// A copy of `h` (`MPI_Info_dup`).
pub fn info_dup(h: InfoHandle) -> Result<InfoHandle> {
    let v = lock(&pairs("info_dup", h)?).clone();
    put("info_dup", v)
}

/// Sets `key` to `value` (`MPI_Info_set`), replacing an earlier value in place.
pub fn info_set(h: InfoHandle, key: &str, value: &str) -> Result<()> {
    check_key("info_set", key)?;
    if value.len() > MAX_VAL {
        return Err(Error::new(
            ErrorClass::InfoValue,
            format!(
                "info_set: a value may have up to {MAX_VAL} bytes, not {}",
                value.len()
            ),
        ));
    }
    let p = writable("info_set", h)?;
    let mut v = lock(&p);
    match v.iter_mut().find(|(k, _)| k == key) {
        Some(pair) => pair.1 = value.to_string(),
        None => v.push((key.to_string(), value.to_string())),
    }
    Ok(())
}

/// The value of `key`, if set (`MPI_Info_get_string`).
pub fn info_get(h: InfoHandle, key: &str) -> Result<Option<String>> {
    check_key("info_get", key)?;
    let p = pairs("info_get", h)?;
    let v = lock(&p);
    Ok(v.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
}

/// Removes `key` (`MPI_Info_delete`); [`ErrorClass::InfoNoKey`] if it is not set.
pub fn info_delete(h: InfoHandle, key: &str) -> Result<()> {
    check_key("info_delete", key)?;
    let p = writable("info_delete", h)?;
    let mut v = lock(&p);
    let i = v.iter().position(|(k, _)| k == key).ok_or_else(|| {
        Error::new(
            ErrorClass::InfoNoKey,
            format!("info_delete: key {key:?} is not set"),
        )
    })?;
    v.remove(i);
    Ok(())
}

/// Number of keys set (`MPI_Info_get_nkeys`).
pub fn info_get_nkeys(h: InfoHandle) -> Result<i32> {
    Ok(lock(&pairs("info_get_nkeys", h)?).len() as i32)
}

/// The `n`th key, in the order keys were first set (`MPI_Info_get_nthkey`);
/// [`ErrorClass::Arg`] if there are not that many.
pub fn info_get_nthkey(h: InfoHandle, n: i32) -> Result<String> {
    let p = pairs("info_get_nthkey", h)?;
    let v = lock(&p);
    usize::try_from(n)
        .ok()
        .and_then(|i| v.get(i))
        .map(|(k, _)| k.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Arg,
                format!("info_get_nthkey: no key {n} (there are {})", v.len()),
            )
        })
}

/// Frees `*h` and sets it to [`InfoHandle::NULL`] (`MPI_Info_free`).
pub fn info_free(h: &mut InfoHandle) -> Result<()> {
    writable("info_free", *h)?;
    INFOS.remove(h.0);
    *h = InfoHandle::NULL;
    Ok(())
}
