//! Thread levels, checked by the compiler.
//!
//! MPI lets a program promise how it will use threads. oxmpi turns that promise into types:
//! every handle derived from a [`Universe`](crate::Universe) carries the level's marker, so
//! - [`Single`] and [`Funneled`]: handles are neither `Send` nor `Sync` (they stay on the thread
//!   that initialized MPI, which is what both levels require);
//! - [`Serialized`]: handles are `Send` but not `Sync` (any thread, one at a time);
//! - [`Multiple`]: handles are `Send + Sync`.
//!
//! The progress engine takes its lock only at the levels where two threads can reach it.

use std::cell::Cell;
use std::marker::PhantomData;

/// The run-time thread level, with the MPI-5.0 ABI's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum Threading {
    /// `MPI_THREAD_SINGLE`: one thread only.
    Single = 0,
    /// `MPI_THREAD_FUNNELED`: only the thread that initialized MPI calls it.
    Funneled = 1024,
    /// `MPI_THREAD_SERIALIZED`: any thread, never two at once.
    Serialized = 2048,
    /// `MPI_THREAD_MULTIPLE`: any thread, concurrently.
    Multiple = 4096,
}

impl Threading {
    /// Whether the engine must lock: two threads may be inside it (or race for it) at once.
    pub fn needs_lock(self) -> bool {
        self >= Threading::Serialized
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A thread level known at compile time; see the module docs.
pub trait ThreadLevel: sealed::Sealed + 'static {
    /// The level this type stands for.
    const LEVEL: Threading;
    /// Zero-sized marker whose auto traits give handles their `Send`/`Sync`.
    type Marker: Copy + Default + std::fmt::Debug;
}

/// Marker for [`Threading::Single`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Single;
/// Marker for [`Threading::Funneled`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Funneled;
/// Marker for [`Threading::Serialized`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Serialized;
/// Marker for [`Threading::Multiple`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Multiple;

/// Neither `Send` nor `Sync`.
pub type PinnedToThread = PhantomData<*const ()>;
/// `Send` but not `Sync`.
pub type OneThreadAtATime = PhantomData<Cell<()>>;
/// `Send + Sync`.
pub type AnyThread = PhantomData<()>;

impl sealed::Sealed for Single {}
impl sealed::Sealed for Funneled {}
impl sealed::Sealed for Serialized {}
impl sealed::Sealed for Multiple {}

impl ThreadLevel for Single {
    const LEVEL: Threading = Threading::Single;
    type Marker = PinnedToThread;
}
impl ThreadLevel for Funneled {
    const LEVEL: Threading = Threading::Funneled;
    type Marker = PinnedToThread;
}
impl ThreadLevel for Serialized {
    const LEVEL: Threading = Threading::Serialized;
    type Marker = OneThreadAtATime;
}
impl ThreadLevel for Multiple {
    const LEVEL: Threading = Threading::Multiple;
    type Marker = AnyThread;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_send<T: Send>() {}
    fn is_sync<T: Sync>() {}

    #[test]
    fn markers_carry_the_promised_auto_traits() {
        is_send::<<Serialized as ThreadLevel>::Marker>();
        is_send::<<Multiple as ThreadLevel>::Marker>();
        is_sync::<<Multiple as ThreadLevel>::Marker>();
        assert!(Threading::Multiple.needs_lock());
        assert!(Threading::Serialized.needs_lock());
        assert!(!Threading::Funneled.needs_lock());
        assert_eq!(Threading::Multiple as i32, 4096);
    }
}
