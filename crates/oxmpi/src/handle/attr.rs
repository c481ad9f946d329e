//! Attribute caching (`MPI_Comm_create_keyval`, `MPI_Comm_set_attr` and friends): the store
//! each communicator keeps, the keyvals that give its values copy and delete callbacks, and
//! the predefined attributes of `MPI_COMM_WORLD`.
//!
//! Callbacks are user code: they run with no lock of the store held, so one may read or set
//! attributes of the same communicator (or free it) without deadlocking. A delete callback
//! that fails leaves the attribute in place (replace, delete); a copy callback that fails
//! makes the whole duplication fail after the copies already made are deleted again, so
//! nothing is left behind.
//!
//! # Standard sections
//! MPI-5.0 §7.7 (caching), §9.1.2 (attributes of `MPI_COMM_WORLD`).

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, ErrorClass, Result};

/// An attribute value as stored: shared, so callbacks can run on it outside the store's lock.
pub(crate) type Value = Arc<dyn Any + Send + Sync>;

/// Decides, at dup, what (if anything) the new communicator gets; given the old
/// communicator's id (see [`NO_COMM`]) and the value.
pub(crate) type CopyHook = Box<dyn Fn(u32, &Value) -> Result<Option<Value>> + Send + Sync>;
/// Runs when a value leaves a communicator (delete, replace, free); given the communicator's
/// id and the value.
pub(crate) type DeleteHook = Box<dyn Fn(u32, &Value) -> Result<()> + Send + Sync>;

/// The communicator id callbacks get when there is none: the typed API's communicators, and
/// a duplicate whose creation failed. The value of `MPI_COMM_NULL` in the MPI-5.0 ABI.
pub(crate) const NO_COMM: u32 = 0x100;

/// What a keyval does with its values: the callbacks of `MPI_Comm_create_keyval` with their
/// extra state already bound.
pub(crate) struct KeyDef {
    /// The key's number (distinct across the process, predefined keys included).
    pub(crate) id: u32,
    /// `None`: never copied (`MPI_COMM_NULL_COPY_FN`).
    pub(crate) copy: Option<CopyHook>,
    /// `None`: dropping the value is all there is to deleting it.
    pub(crate) delete: Option<DeleteHook>,
    /// Predefined keys cannot be set or deleted by users.
    pub(crate) predefined: bool,
}

impl std::fmt::Debug for KeyDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyDef")
            .field("id", &self.id)
            .field("copies", &self.copy.is_some())
            .field("deletes", &self.delete.is_some())
            .finish()
    }
}

/// First number handed to user keyvals: above the predefined ones (501–507).
const FIRST_USER_KEY: u32 = 1024;

/// A fresh key number.
pub(crate) fn next_key_id() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(FIRST_USER_KEY);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

struct Entry {
    def: Arc<KeyDef>,
    value: Value,
}

/// One communicator's attributes.
#[derive(Default)]
pub(crate) struct Attrs(Mutex<Vec<Entry>>);

impl std::fmt::Debug for Attrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<u32> = self.lock().iter().map(|e| e.def.id).collect();
        f.debug_tuple("Attrs").field(&keys).finish()
    }
}

fn predefined_error(call: &str, key: u32) -> Error {
    Error::new(
        ErrorClass::Keyval,
        format!("{call}: attribute key {key} is predefined and cannot be changed"),
    )
}

impl Attrs {
    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        // Entries are replaced whole, never left half-written, so a poisoned lock is usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value under `key`, if set.
    pub(crate) fn get(&self, key: u32) -> Option<Value> {
        self.lock()
            .iter()
            .find(|e| e.def.id == key)
            .map(|e| e.value.clone())
    }

    /// Sets the predefined attribute `def` (no callbacks, no checks).
    pub(crate) fn set_predefined(&self, def: &Arc<KeyDef>, value: Value) {
        let mut a = self.lock();
        a.retain(|e| e.def.id != def.id);
        a.push(Entry {
            def: def.clone(),
            value,
        });
    }

    /// Sets `key` to `value`, first running the delete callback on the value it replaces; if
    /// that fails, the old value stays and its error is returned. `comm` is the
    /// communicator's id for the callbacks.
    pub(crate) fn set(&self, comm: u32, def: &Arc<KeyDef>, value: Value) -> Result<()> {
        if def.predefined {
            return Err(predefined_error("set_attr", def.id));
        }
        loop {
            let old = self.get(def.id);
            if let Some(old) = &old {
                run_delete(comm, def, old)?;
            }
            let mut a = self.lock();
            let i = a.iter().position(|e| e.def.id == def.id);
            // Another thread may have replaced the value while the callback ran; then its
            // value has not been through a delete callback yet: go again.
            match (i, &old) {
                (Some(i), Some(old)) if Arc::ptr_eq(&a[i].value, old) => {
                    a[i] = Entry {
                        def: def.clone(),
                        value,
                    };
                    return Ok(());
                }
                (None, None) => {
                    a.push(Entry {
                        def: def.clone(),
                        value,
                    });
                    return Ok(());
                }
                _ => continue,
            }
        }
    }

    /// Deletes `key`, running its delete callback; returns the value, or `None` if the key
    /// was not set. If the callback fails, the attribute stays and its error is returned.
    pub(crate) fn delete(&self, comm: u32, def: &KeyDef) -> Result<Option<Value>> {
        if def.predefined {
            return Err(predefined_error("delete_attr", def.id));
        }
        let Some((stored, value)) = self
            .lock()
            .iter()
            .find(|e| e.def.id == def.id)
            .map(|e| (e.def.clone(), e.value.clone()))
        else {
            return Ok(None);
        };
        run_delete(comm, &stored, &value)?;
        let mut a = self.lock();
        if let Some(i) = a.iter().position(|e| Arc::ptr_eq(&e.value, &value)) {
            a.remove(i);
        }
        Ok(Some(value))
    }

    /// The attributes a duplicate gets: each key's copy callback decides. If one fails, the
    /// copies made so far go through their delete callbacks (with [`NO_COMM`]) and the error
    /// is returned. `comm` is the old communicator's id.
    pub(crate) fn copy_for_dup(&self, comm: u32) -> Result<Attrs> {
        let snapshot: Vec<(Arc<KeyDef>, Value)> = self
            .lock()
            .iter()
            .map(|e| (e.def.clone(), e.value.clone()))
            .collect();
        let mut out = Vec::new();
        for (def, value) in snapshot {
            let Some(copy) = &def.copy else { continue };
            match copy(comm, &value) {
                Ok(Some(v)) => out.push(Entry {
                    def: def.clone(),
                    value: v,
                }),
                Ok(None) => {}
                Err(e) => {
                    for made in out {
                        // The copy failed as a whole; a failing delete here cannot be
                        // reported better than the copy's own error.
                        let _ = run_delete(NO_COMM, &made.def, &made.value);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Attrs(Mutex::new(out)))
    }

    /// Removes every attribute, running every delete callback (communicator free); returns
    /// the first callback error. Every value is removed either way.
    pub(crate) fn clear(&self, comm: u32) -> Result<()> {
        let all = std::mem::take(&mut *self.lock());
        let mut first = Ok(());
        for e in all {
            if let Err(err) = run_delete(comm, &e.def, &e.value) {
                first = first.and(Err(err));
            }
        }
        first
    }

    /// Keys set, in no particular order (tests and diagnostics).
    #[cfg(test)]
    fn keys(&self) -> Vec<u32> {
        self.lock().iter().map(|e| e.def.id).collect()
    }
}

fn run_delete(comm: u32, def: &KeyDef, value: &Value) -> Result<()> {
    match &def.delete {
        Some(d) => d(comm, value),
        None => Ok(()),
    }
}

/// The attributes MPI predefines on `MPI_COMM_WORLD` (keys with their MPI-5.0 ABI values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Predefined {
    /// `MPI_TAG_UB`: the largest tag ([`TAG_UB`](crate::TAG_UB)).
    TagUb = 501,
    /// `MPI_IO`: a rank that can do I/O; `MPI_ANY_SOURCE`, since every rank can.
    Io = 502,
    /// `MPI_HOST`: the host rank; `MPI_PROC_NULL`, as there is none.
    Host = 503,
    /// `MPI_WTIME_IS_GLOBAL`: 0, clocks are per process.
    WtimeIsGlobal = 504,
    /// `MPI_APPNUM`: the launcher's MPMD index of this rank's program; unset when started
    /// without a launcher that gives one.
    Appnum = 505,
    /// `MPI_LASTUSEDCODE`: the largest error code in use (`MPI_ERR_LASTCODE`, 16383).
    LastUsedCode = 506,
    /// `MPI_UNIVERSE_SIZE`: processes available to the job (the world size).
    UniverseSize = 507,
}

impl Predefined {
    /// Every predefined attribute.
    pub const ALL: [Predefined; 7] = [
        Predefined::TagUb,
        Predefined::Io,
        Predefined::Host,
        Predefined::WtimeIsGlobal,
        Predefined::Appnum,
        Predefined::LastUsedCode,
        Predefined::UniverseSize,
    ];

    /// The key with this number, if it is predefined.
    pub fn from_key(key: u32) -> Option<Predefined> {
        Predefined::ALL.into_iter().find(|p| *p as u32 == key)
    }

    pub(crate) fn def(self) -> &'static Arc<KeyDef> {
        static DEFS: std::sync::OnceLock<Vec<Arc<KeyDef>>> = std::sync::OnceLock::new();
        let defs = DEFS.get_or_init(|| {
            Predefined::ALL
                .iter()
                .map(|&p| {
                    Arc::new(KeyDef {
                        id: p as u32,
                        copy: None,
                        delete: None,
                        predefined: true,
                    })
                })
                .collect()
        });
        &defs[Predefined::ALL.iter().position(|&p| p == self).unwrap_or(0)]
    }
}

/// `MPI_ERR_LASTCODE` (ABI value).
pub const ERR_LASTCODE: i32 = 16383;

/// Sets the predefined attributes on a new world communicator's store.
pub(crate) fn set_world_attrs(attrs: &Attrs, rt: &crate::runtime::Runtime) {
    use crate::p2p::matching::{ANY_SOURCE, PROC_NULL};
    for p in Predefined::ALL {
        let v = match p {
            Predefined::TagUb => Some(crate::point_to_point::TAG_UB),
            Predefined::Io => Some(ANY_SOURCE),
            Predefined::Host => Some(PROC_NULL),
            Predefined::WtimeIsGlobal => Some(0),
            Predefined::Appnum => rt.appnum_attr,
            Predefined::LastUsedCode => Some(ERR_LASTCODE),
            Predefined::UniverseSize => Some(rt.size as i32),
        };
        if let Some(v) = v {
            attrs.set_predefined(p.def(), Arc::new(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A key over `u64` values counting its callbacks; copies add 1 and fail on `fail_on`.
    fn key(
        copies: bool,
        deletes: Arc<AtomicUsize>,
        fail_copy_on: u64,
        fail_delete_on: u64,
    ) -> Arc<KeyDef> {
        Arc::new(KeyDef {
            id: next_key_id(),
            copy: copies.then(|| -> CopyHook {
                Box::new(move |_: u32, v: &Value| {
                    let x = *v.downcast_ref::<u64>().unwrap();
                    if x == fail_copy_on {
                        return Err(Error::new(ErrorClass::Other, "copy refused"));
                    }
                    // Odd values decide not to be copied.
                    Ok((x % 2 == 0).then(|| Arc::new(x + 2) as Value))
                })
            }),
            delete: Some(Box::new(move |_: u32, v: &Value| {
                if *v.downcast_ref::<u64>().unwrap() == fail_delete_on {
                    return Err(Error::new(ErrorClass::Other, "delete refused"));
                }
                deletes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })),
            predefined: false,
        })
    }

    fn get(a: &Attrs, k: &KeyDef) -> Option<u64> {
        a.get(k.id).map(|v| *v.downcast_ref::<u64>().unwrap())
    }

    #[test]
    fn replace_and_delete_run_the_delete_callback() {
        let n = Arc::new(AtomicUsize::new(0));
        let k = key(true, n.clone(), 99, 7);
        let a = Attrs::default();
        a.set(7, &k, Arc::new(2u64)).unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 0);
        a.set(7, &k, Arc::new(4u64)).unwrap();
        assert_eq!(
            n.load(Ordering::Relaxed),
            1,
            "replace deletes the old value"
        );
        assert_eq!(get(&a, &k), Some(4));
        assert_eq!(
            *a.delete(7, &k)
                .unwrap()
                .unwrap()
                .downcast_ref::<u64>()
                .unwrap(),
            4
        );
        assert_eq!(n.load(Ordering::Relaxed), 2);
        assert!(a.delete(7, &k).unwrap().is_none(), "not set any more");
        assert_eq!(get(&a, &k), None);
    }

    #[test]
    fn a_failing_delete_callback_keeps_the_attribute() {
        let n = Arc::new(AtomicUsize::new(0));
        let k = key(false, n.clone(), 99, 7);
        let a = Attrs::default();
        a.set(7, &k, Arc::new(7u64)).unwrap();
        let e = a.set(7, &k, Arc::new(8u64)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Other);
        assert_eq!(get(&a, &k), Some(7), "replace failed: old value stays");
        assert_eq!(a.delete(7, &k).unwrap_err().class(), ErrorClass::Other);
        assert_eq!(get(&a, &k), Some(7), "delete failed: value stays");
        // Free removes it anyway and reports the error.
        assert_eq!(a.clear(7).unwrap_err().class(), ErrorClass::Other);
        assert!(a.keys().is_empty());
        assert_eq!(n.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn copy_callbacks_decide_per_value_and_failures_leave_nothing() {
        let n = Arc::new(AtomicUsize::new(0));
        let even = key(true, n.clone(), 99, 1000);
        let odd = key(true, n.clone(), 99, 1000);
        let never = key(false, n.clone(), 99, 1000);
        let a = Attrs::default();
        a.set(7, &even, Arc::new(2u64)).unwrap();
        a.set(7, &odd, Arc::new(3u64)).unwrap();
        a.set(7, &never, Arc::new(4u64)).unwrap();
        let b = a.copy_for_dup(7).unwrap();
        assert_eq!(get(&b, &even), Some(4), "copied through the callback");
        assert_eq!(get(&b, &odd), None, "callback chose not to copy");
        assert_eq!(get(&b, &never), None, "null copy function");
        assert_eq!(get(&a, &even), Some(2), "the original is untouched");
        // A failing copy: the copies made before it are deleted again.
        let failing = key(true, n.clone(), 99, 1000);
        a.set(7, &failing, Arc::new(99u64)).unwrap();
        let before = n.load(Ordering::Relaxed);
        let e = a.copy_for_dup(7).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Other);
        assert_eq!(
            n.load(Ordering::Relaxed),
            before + 1,
            "the one copy made (of `even`) was deleted"
        );
        assert_eq!(a.keys().len(), 4, "the original keeps every attribute");
    }

    #[test]
    fn free_runs_every_delete_callback() {
        let n = Arc::new(AtomicUsize::new(0));
        let a = Attrs::default();
        for _ in 0..3 {
            a.set(7, &key(false, n.clone(), 99, 99), Arc::new(0u64))
                .unwrap();
        }
        a.clear(7).unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 3);
        assert!(a.keys().is_empty());
    }

    #[test]
    fn callbacks_run_without_the_store_locked() {
        // A delete callback that reads the store it is deleting from must not deadlock.
        let a = Arc::new(Attrs::default());
        let peek = Arc::new(KeyDef {
            id: next_key_id(),
            copy: None,
            delete: None,
            predefined: false,
        });
        let (a2, peek2) = (Arc::downgrade(&a), peek.clone());
        let seen = Arc::new(AtomicUsize::new(0));
        let seen2 = seen.clone();
        let k = Arc::new(KeyDef {
            id: next_key_id(),
            copy: None,
            delete: Some(Box::new(move |_, _| {
                let a = a2.upgrade().unwrap();
                seen2.store(a.get(peek2.id).is_some() as usize + 1, Ordering::Relaxed);
                Ok(())
            })),
            predefined: false,
        });
        a.set(7, &peek, Arc::new(1u64)).unwrap();
        a.set(7, &k, Arc::new(1u64)).unwrap();
        a.delete(7, &k).unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn predefined_keys_cannot_be_changed() {
        let a = Attrs::default();
        let d = Predefined::TagUb.def();
        a.set_predefined(d, Arc::new(5i32));
        assert_eq!(
            a.set(7, d, Arc::new(1i32)).unwrap_err().class(),
            ErrorClass::Keyval
        );
        assert_eq!(a.delete(7, d).unwrap_err().class(), ErrorClass::Keyval);
        assert_eq!(*a.get(501).unwrap().downcast_ref::<i32>().unwrap(), 5);
        assert!(
            a.copy_for_dup(7).unwrap().keys().is_empty(),
            "not inherited"
        );
        assert_eq!(Predefined::from_key(507), Some(Predefined::UniverseSize));
        assert_eq!(Predefined::from_key(508), None);
        assert_eq!(Predefined::Appnum.def().id, 505);
    }

    #[test]
    fn callbacks_are_told_the_communicator() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s1, s2) = (seen.clone(), seen.clone());
        let k = Arc::new(KeyDef {
            id: next_key_id(),
            copy: Some(Box::new(move |c, v: &Value| {
                s1.lock().unwrap().push(("copy", c));
                Ok(Some(v.clone()))
            })),
            delete: Some(Box::new(move |c, _| {
                s2.lock().unwrap().push(("delete", c));
                Ok(())
            })),
            predefined: false,
        });
        let refuse = Arc::new(KeyDef {
            id: next_key_id(),
            copy: Some(Box::new(|_, _| Err(Error::new(ErrorClass::Other, "no")))),
            delete: None,
            predefined: false,
        });
        let a = Attrs::default();
        a.set(3, &k, Arc::new(1u64)).unwrap();
        a.set(3, &k, Arc::new(2u64)).unwrap();
        let b = a.copy_for_dup(3).unwrap();
        b.clear(4).unwrap();
        a.set(3, &refuse, Arc::new(0u64)).unwrap();
        a.copy_for_dup(3).unwrap_err();
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ("delete", 3),
                ("copy", 3),
                ("delete", 4),
                ("copy", 3),
                ("delete", NO_COMM)
            ]
        );
    }
}
