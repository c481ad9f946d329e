//! Process creation (`MPI_Comm_spawn`, `MPI_Comm_spawn_multiple`): declared because programs
//! and bindings (rsmpi) call them unconditionally, and refused, because the engine cannot reach
//! processes of another job (oxrun could start them: it serves PMI `spawn`). Both are collective over `comm` as the standard has them:
//! the root's process counts are broadcast, every process fills its `array_of_errcodes`
//! with `MPI_ERR_SPAWN`, gets `MPI_COMM_NULL` and raises `MPI_ERR_SPAWN` through `comm`'s
//! error handler.

use std::ffi::{c_char, c_int};

use oxmpi::ErrorClass;

use crate::boundary::{comm, comm_handle, count, err, mpi_fn, put, slice, slice_mut, Handle};
use crate::coll::typed;
use oxmpi::handle::comm::CommHandle;

/// Refuses a spawn of the processes `at_root` counts (run at the root only, where the
/// commands and counts are significant): broadcasts the count, fills `errcodes` (unless it is
/// `MPI_ERRCODES_IGNORE`) and sets `*intercomm` to `MPI_COMM_NULL`. An invalid argument at
/// the root is its own error there; the others still get `MPI_ERR_SPAWN`.
///
/// # Safety
/// `intercomm` valid for a write; `errcodes` null or valid for as many writes as the root's
/// process count.
unsafe fn refuse(
    name: &str,
    c: Handle,
    root: c_int,
    intercomm: *mut Handle,
    errcodes: *mut c_int,
    at_root: impl FnOnce() -> oxmpi::Result<usize>,
) -> oxmpi::Result<()> {
    let world = typed(c)?;
    if intercomm.is_null() {
        return Err(err(ErrorClass::Arg, name, "intercomm is NULL"));
    }
    let mut local = Ok(0);
    let mut n = [0i64];
    if world.rank() == root {
        local = at_root();
        n[0] = local.as_ref().map_or(0, |&k| k as i64);
    }
    world.broadcast_into(root, &mut n[..])?;
    let procs = count(name, n[0])?;
    if !errcodes.is_null() {
        // SAFETY: `errcodes` holds one code per process to spawn (the standard's contract).
        unsafe { slice_mut(name, errcodes, procs)? }.fill(ErrorClass::Spawn as c_int);
    }
    // SAFETY: non-null, valid for a write by the caller's contract.
    unsafe { put(name, intercomm, comm_handle(CommHandle::NULL))? };
    local?;
    Err(err(
        ErrorClass::Spawn,
        name,
        format!(
            "cannot start {procs} process(es): oxmpi cannot yet connect to processes of \
             another job, so it does not spawn any"
        ),
    ))
}

/// A root's `maxprocs`: positive.
fn maxprocs(name: &str, n: c_int) -> oxmpi::Result<usize> {
    if n <= 0 {
        return Err(err(
            ErrorClass::Arg,
            name,
            format!("maxprocs {n} is not positive"),
        ));
    }
    count(name, n)
}

mpi_fn! {
    /// `MPI_Comm_spawn`: refused with `MPI_ERR_SPAWN` (see the module documentation).
    fn Comm_spawn = MPI_Comm_spawn / PMPI_Comm_spawn(
        command: *const c_char,
        _argv: *mut *mut c_char,
        n: c_int,
        _info: Handle,
        root: c_int,
        c: Handle,
        intercomm: *mut Handle,
        errcodes: *mut c_int,
    ) on comm(c) => {
        refuse("Comm_spawn", c, root, intercomm, errcodes, || {
            if command.is_null() {
                return Err(err(ErrorClass::Arg, "Comm_spawn", "command is NULL"));
            }
            maxprocs("Comm_spawn", n)
        })
    }

    /// `MPI_Comm_spawn_multiple`: refused with `MPI_ERR_SPAWN` (see the module documentation).
    fn Comm_spawn_multiple = MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(
        k: c_int,
        commands: *mut *mut c_char,
        _argvs: *mut *mut *mut c_char,
        counts: *const c_int,
        _infos: *const Handle,
        root: c_int,
        c: Handle,
        intercomm: *mut Handle,
        errcodes: *mut c_int,
    ) on comm(c) => {
        refuse("Comm_spawn_multiple", c, root, intercomm, errcodes, || {
            let name = "Comm_spawn_multiple";
            if k <= 0 {
                return Err(err(ErrorClass::Arg, name, format!("count {k} is not positive")));
            }
            let k = count(name, k)?;
            // SAFETY: `k` commands and counts at the root (the standard's contract).
            if unsafe { slice(name, commands, k)? }.iter().any(|p| p.is_null()) {
                return Err(err(ErrorClass::Arg, name, "a command is NULL"));
            }
            // SAFETY: as above.
            let counts = unsafe { slice(name, counts, k)? };
            counts.iter().try_fold(0usize, |sum, &n| Ok(sum + maxprocs(name, n)?))
        })
    }
}
