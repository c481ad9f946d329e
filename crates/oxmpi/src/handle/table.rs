//! Process-wide tables behind the handle ids: slots reused through a free list, each id
//! carrying its slot's generation so a freed id stays invalid after its slot is reused.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Ids below this are left for predefined handles (the MPI-5.0 ABI uses 1..=4095).
const FIRST_ID: u32 = 0x1000;
/// Low bits of an id: slot index + `FIRST_ID`; the bits above hold the generation.
const INDEX_BITS: u32 = 20;
const MAX_SLOTS: usize = (1 << INDEX_BITS) - FIRST_ID as usize;
/// Generations wrap within 11 bits, so every id is a positive `i32` (`MPI_Comm_toint`).
const GEN_MASK: u32 = (1 << 11) - 1;

struct Slot<T> {
    gen: u32,
    value: Option<T>,
}

struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

/// A table of `T`s addressed by ids.
pub(crate) struct Table<T> {
    inner: RwLock<Slots<T>>,
}

impl<T: Clone> Table<T> {
    pub(crate) const fn new() -> Table<T> {
        Table {
            inner: RwLock::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    // A panic while holding the lock leaves every slot whole (slots are written in one
    // assignment), so a poisoned lock is usable.
    fn read(&self) -> RwLockReadGuard<'_, Slots<T>> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Slots<T>> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn split(id: u32) -> Option<(usize, u32)> {
        let low = id & ((1 << INDEX_BITS) - 1);
        let index = low.checked_sub(FIRST_ID)? as usize;
        Some((index, id >> INDEX_BITS))
    }

    /// Stores `value` and returns its id; `None` when the table is full.
    pub(crate) fn insert(&self, value: T) -> Option<u32> {
        let mut t = self.write();
        let index = match t.free.pop() {
            Some(i) => i as usize,
            None if t.slots.len() < MAX_SLOTS => {
                t.slots.push(Slot {
                    gen: 1,
                    value: None,
                });
                t.slots.len() - 1
            }
            None => return None,
        };
        let slot = &mut t.slots[index];
        slot.value = Some(value);
        Some((slot.gen << INDEX_BITS) | (index as u32 + FIRST_ID))
    }

    /// A clone of the value under `id`, if it is live.
    pub(crate) fn get(&self, id: u32) -> Option<T> {
        let (index, gen) = Self::split(id)?;
        let t = self.read();
        let slot = t.slots.get(index)?;
        (slot.gen == gen).then(|| slot.value.clone()).flatten()
    }

    /// Takes the value under `id` out; the id is invalid from now on.
    pub(crate) fn remove(&self, id: u32) -> Option<T> {
        let (index, gen) = Self::split(id)?;
        let mut t = self.write();
        let slot = t.slots.get_mut(index)?;
        if slot.gen != gen {
            return None;
        }
        let v = slot.value.take()?;
        slot.gen = (slot.gen % GEN_MASK) + 1;
        t.free.push(index as u32);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_positive_above_the_predefined_range_and_die_with_their_value() {
        let t = Table::<&str>::new();
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert!(a >= FIRST_ID && b >= FIRST_ID && a != b);
        assert!(i32::try_from(a).is_ok());
        assert_eq!(t.get(a), Some("a"));
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.get(a), None, "freed");
        assert_eq!(t.remove(a), None, "freed twice");
        let c = t.insert("c").unwrap();
        assert_ne!(c, a, "the slot is reused under a new generation");
        assert_eq!(t.get(a), None, "the old id stays dead");
        assert_eq!(t.get(c), Some("c"));
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(1), None);
        assert_eq!(t.get(u32::MAX), None);
    }

    #[test]
    fn generations_wrap_without_leaving_the_positive_range() {
        let t = Table::<u8>::new();
        let mut last = 0;
        for _ in 0..3 * GEN_MASK {
            last = t.insert(1).unwrap();
            assert!(i32::try_from(last).is_ok());
            t.remove(last).unwrap();
        }
        assert_eq!(t.get(last), None);
    }
}
