//! Names of communicators (`MPI_Comm_set_name`, `MPI_Comm_get_name`), for tools and
//! messages. The predefined communicators are named `MPI_COMM_WORLD` and `MPI_COMM_SELF`
//! until renamed; others have an empty name.
//!
//! # Standard sections
//! MPI-5.0 §7.8 (naming objects).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::comm::CommHandle;
use crate::error::{Error, ErrorClass, Result};

/// Longest name in bytes (`MPI_MAX_OBJECT_NAME` less the terminating NUL).
pub const MAX_NAME: usize = 127;

static NAMES: Mutex<Option<HashMap<u32, String>>> = Mutex::new(None);

fn names() -> MutexGuard<'static, Option<HashMap<u32, String>>> {
    // Names are inserted whole, so a poisoned lock is usable.
    NAMES.lock().unwrap_or_else(|p| p.into_inner())
}

fn key(c: CommHandle) -> u32 {
    c.to_int() as u32
}

/// Names communicator `c` (`MPI_Comm_set_name`); [`ErrorClass::Arg`] for a name longer
/// than [`MAX_NAME`] bytes.
pub fn comm_set_name(c: CommHandle, name: &str) -> Result<()> {
    super::comm::comm_size(c)?;
    if name.len() > MAX_NAME {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "comm_set_name: a name may have up to {MAX_NAME} bytes, not {}",
                name.len()
            ),
        ));
    }
    names()
        .get_or_insert_with(HashMap::new)
        .insert(key(c), name.to_string());
    Ok(())
}

/// The name of `c` (`MPI_Comm_get_name`).
pub fn comm_get_name(c: CommHandle) -> Result<String> {
    super::comm::comm_size(c)?;
    if let Some(n) = names().as_ref().and_then(|m| m.get(&key(c))) {
        return Ok(n.clone());
    }
    Ok(match c {
        CommHandle::WORLD => "MPI_COMM_WORLD",
        CommHandle::SELF => "MPI_COMM_SELF",
        _ => "",
    }
    .to_string())
}

/// Forgets the name of a freed communicator.
pub fn forget(c: CommHandle) {
    if let Some(m) = names().as_mut() {
        m.remove(&key(c));
    }
}
