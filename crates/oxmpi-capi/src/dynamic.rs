//! Process creation (`MPI_Comm_spawn`, `MPI_Comm_spawn_multiple`) over the handle layer's
//! `comm_spawn` (see `oxmpi::spawn`). Both are collective over `comm`: the root's commands,
//! arguments, counts and info objects are read at the root only, and its process count is
//! broadcast first, so that every process fills its `array_of_errcodes` (with `MPI_SUCCESS`,
//! or the error's class when nothing started) and sets `*intercomm` (`MPI_COMM_NULL` on
//! error) whatever happens. Info keys go to the launcher as given (oxrun honours `wdir` and
//! `host`).

use std::ffi::{c_char, c_int};

use oxmpi::spawn::SpawnCommand;
use oxmpi::ErrorClass;

use crate::boundary::{
    comm, comm_handle, count, err, mpi_fn, put, slice, slice_mut, str_arg, Handle,
};
use crate::coll::typed;
use crate::comm::info_pairs;
use oxmpi::handle::comm::{self as hc, CommHandle};

/// Most arguments read from one `argv` (a bound on an array missing its terminating NULL).
const MAX_ARGS: usize = 1 << 16;

/// Spawns over `c` the commands `at_root` reads (run at the root only, where they are
/// significant): broadcasts the root's process count, spawns, fills `errcodes` (unless it is
/// `MPI_ERRCODES_IGNORE`) and sets `*intercomm`. An invalid argument at the root is its own
/// error there; the others get the spawn's.
///
/// # Safety
/// `intercomm` valid for a write; `errcodes` null or valid for as many writes as the root's
/// process count.
unsafe fn spawn(
    name: &str,
    c: Handle,
    root: c_int,
    intercomm: *mut Handle,
    errcodes: *mut c_int,
    at_root: impl FnOnce() -> oxmpi::Result<Vec<SpawnCommand>>,
) -> oxmpi::Result<()> {
    let world = typed(c)?;
    if intercomm.is_null() {
        return Err(err(ErrorClass::Arg, name, "intercomm is NULL"));
    }
    if root < 0 || root >= world.size() {
        return Err(err(
            ErrorClass::Root,
            name,
            format!("root {root} is not a rank (size {})", world.size()),
        ));
    }
    let mut local = Ok(Vec::new());
    let mut n = [0i64];
    if world.rank() == root {
        local = at_root();
        n[0] = local
            .as_ref()
            .map_or(0, |cmds| cmds.iter().map(|c| i64::from(c.nprocs)).sum());
    }
    world.broadcast_into(root, &mut n[..])?;
    let procs = count(name, n[0])?;
    let commands = local.as_deref().unwrap_or(&[]);
    let spawned = hc::comm_spawn(comm(c), root, commands);
    if !errcodes.is_null() {
        let code = match &spawned {
            Ok(_) => 0,
            Err(e) => e.class() as c_int,
        };
        // SAFETY: `errcodes` holds one code per process to spawn (the standard's contract).
        unsafe { slice_mut(name, errcodes, procs)? }.fill(code);
    }
    let h = spawned.as_ref().map_or(CommHandle::NULL, |&h| h);
    // SAFETY: non-null, valid for a write by the caller's contract.
    unsafe { put(name, intercomm, comm_handle(h))? };
    local?;
    spawned.map(drop)
}

/// A root's `maxprocs`: positive.
fn maxprocs(name: &str, n: c_int) -> oxmpi::Result<u32> {
    if n <= 0 {
        return Err(err(
            ErrorClass::Arg,
            name,
            format!("maxprocs {n} is not positive"),
        ));
    }
    Ok(n as u32)
}

/// One command: `argv` is `MPI_ARGV_NULL` or a NULL-terminated array of strings.
///
/// # Safety
/// `command` a NUL-terminated string or null; `argv` null or a NULL-terminated array of
/// NUL-terminated strings.
unsafe fn command(
    name: &str,
    command: *const c_char,
    argv: *const *mut c_char,
    n: c_int,
    info: Handle,
) -> oxmpi::Result<SpawnCommand> {
    // SAFETY: forwarded from our caller.
    let execname = unsafe { str_arg(name, command) }?.to_owned();
    let mut args = Vec::new();
    if !argv.is_null() {
        for i in 0..MAX_ARGS {
            // SAFETY: the array is NULL-terminated (the standard's contract), so every
            // element up to the terminator is readable.
            let a = unsafe { *argv.add(i) };
            if a.is_null() {
                break;
            }
            // SAFETY: a NUL-terminated string by the caller's contract.
            args.push(unsafe { str_arg(name, a) }?.to_owned());
        }
    }
    Ok(SpawnCommand {
        execname,
        nprocs: maxprocs(name, n)?,
        args,
        info: info_pairs(info)?,
    })
}

mpi_fn! {
    /// `MPI_Comm_spawn`: starts `maxprocs` copies of `command` as a new job and returns the
    /// intercommunicator to it (see the module documentation).
    fn Comm_spawn = MPI_Comm_spawn / PMPI_Comm_spawn(
        cmd: *const c_char,
        argv: *mut *mut c_char,
        n: c_int,
        info: Handle,
        root: c_int,
        c: Handle,
        intercomm: *mut Handle,
        errcodes: *mut c_int,
    ) on comm(c) => {
        spawn("Comm_spawn", c, root, intercomm, errcodes, || {
            // SAFETY: the root's arguments, as the standard has them.
            Ok(vec![unsafe { command("Comm_spawn", cmd, argv, n, info)? }])
        })
    }

    /// `MPI_Comm_spawn_multiple`: starts every command's processes as one new job, ranks in
    /// command order (see the module documentation).
    fn Comm_spawn_multiple = MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(
        k: c_int,
        commands: *mut *mut c_char,
        argvs: *mut *mut *mut c_char,
        counts: *const c_int,
        infos: *const Handle,
        root: c_int,
        c: Handle,
        intercomm: *mut Handle,
        errcodes: *mut c_int,
    ) on comm(c) => {
        spawn("Comm_spawn_multiple", c, root, intercomm, errcodes, || {
            let name = "Comm_spawn_multiple";
            if k <= 0 {
                return Err(err(ErrorClass::Arg, name, format!("count {k} is not positive")));
            }
            let k = count(name, k)?;
            // SAFETY: `k` commands, counts and infos at the root (the standard's contract).
            let (cmds, counts, infos) = unsafe {
                (slice(name, commands, k)?, slice(name, counts, k)?, slice(name, infos, k)?)
            };
            let argvs: &[*mut *mut c_char] = if argvs.is_null() {
                &[]
            } else {
                // SAFETY: `k` argument arrays when not MPI_ARGVS_NULL.
                unsafe { slice(name, argvs.cast_const(), k)? }
            };
            (0..k)
                .map(|i| {
                    let argv = argvs.get(i).copied().unwrap_or(std::ptr::null_mut());
                    // SAFETY: the root's arguments, as the standard has them.
                    unsafe { command(name, cmds[i], argv, counts[i], infos[i]) }
                })
                .collect()
        })
    }
}
