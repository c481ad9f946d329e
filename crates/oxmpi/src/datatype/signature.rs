//! Type signatures: the sequence of basic types a datatype holds, in a compressed form
//! (runs of one basic type, repeats of sub-sequences), for matching a send against a receive
//! (MPI-5.0 §3.3.1) and counting basic elements (`MPI_Get_elements`).
//!
//! Adjacent runs of one basic type merge and a repeat of one run is one longer run, so a
//! vector of 4 doubles and 4 contiguous doubles have the same signature, `(DOUBLE, 4)`, and
//! any homogeneous type compares in O(1).

use std::sync::Arc;

use super::predefined::Repr;

/// One part of a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigItem {
    /// `n` elements of one basic type.
    Basic(Repr, u64),
    /// A sub-sequence repeated `n` times.
    Repeat(u64, Signature),
}

impl SigItem {
    fn bytes(&self) -> u64 {
        match self {
            SigItem::Basic(r, n) => r.size() as u64 * n,
            SigItem::Repeat(n, s) => n * s.bytes,
        }
    }

    fn elements(&self) -> u64 {
        match self {
            SigItem::Basic(_, n) => *n,
            SigItem::Repeat(n, s) => n * s.elements,
        }
    }
}

/// A type signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    items: Arc<[SigItem]>,
    bytes: u64,
    elements: u64,
}

impl Signature {
    /// The empty signature.
    pub fn empty() -> Signature {
        Signature::from_items(Vec::new())
    }

    /// `n` elements of `r`.
    pub fn basic(r: Repr, n: u64) -> Signature {
        Signature::from_items(if n == 0 {
            vec![]
        } else {
            vec![SigItem::Basic(r, n)]
        })
    }

    fn from_items(items: Vec<SigItem>) -> Signature {
        let bytes = items.iter().map(SigItem::bytes).sum();
        let elements = items.iter().map(SigItem::elements).sum();
        Signature {
            items: items.into(),
            bytes,
            elements,
        }
    }

    /// Packed bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of basic elements.
    pub fn elements(&self) -> u64 {
        self.elements
    }

    /// The parts.
    pub fn items(&self) -> &[SigItem] {
        &self.items
    }

    /// `Some(r)` when every element has basic type `r`.
    pub fn homogeneous(&self) -> Option<Repr> {
        match &*self.items {
            [SigItem::Basic(r, _)] => Some(*r),
            _ => None,
        }
    }

    /// The signatures one after the other.
    pub fn concat(parts: impl IntoIterator<Item = Signature>) -> Signature {
        let mut items: Vec<SigItem> = Vec::new();
        for p in parts {
            for it in p.items.iter() {
                match (items.last_mut(), it) {
                    (Some(SigItem::Basic(r, n)), SigItem::Basic(r2, n2)) if r == r2 => *n += n2,
                    _ => items.push(it.clone()),
                }
            }
        }
        Signature::from_items(items)
    }

    /// This signature `n` times.
    pub fn repeat(&self, n: u64) -> Signature {
        match (n, &*self.items) {
            (0, _) | (_, []) => Signature::empty(),
            (1, _) => self.clone(),
            (_, [SigItem::Basic(r, m)]) => Signature::basic(*r, m * n),
            (_, [SigItem::Repeat(k, s)]) => {
                Signature::from_items(vec![SigItem::Repeat(k * n, s.clone())])
            }
            _ => Signature::from_items(vec![SigItem::Repeat(n, self.clone())]),
        }
    }

    /// Basic elements in the first `bytes` bytes of the packed stream of one or more copies
    /// of this signature; `None` when `bytes` ends inside an element.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        if self.bytes == 0 {
            return (bytes == 0).then_some(0);
        }
        let full = bytes / self.bytes;
        Some(full * self.elements + prefix_elements(&self.items, bytes % self.bytes)?)
    }

    /// Whether data of signature `count × self` may be received as `rcount × recv` (MPI's
    /// rule: the sent sequence of basic types is a prefix of the received one, `MPI_BYTE` and
    /// `MPI_PACKED` match anything). A receive shorter than the send is a truncation, not a
    /// mismatch, and compares only the received part.
    pub fn matches(&self, count: u64, recv: &Signature, rcount: u64) -> bool {
        if self.is_untyped() || recv.is_untyped() {
            return true;
        }
        if let (Some(a), Some(b)) = (self.homogeneous(), recv.homogeneous()) {
            return a == b || count == 0 || rcount == 0;
        }
        let mut a = Runs::new(self, count);
        let mut b = Runs::new(recv, rcount);
        let (mut ra, mut na) = (Repr::Byte, 0u64);
        let (mut rb, mut nb) = (Repr::Byte, 0u64);
        loop {
            if na == 0 {
                match a.next() {
                    Some((r, n)) => (ra, na) = (r, n),
                    None => return true,
                }
            }
            if nb == 0 {
                match b.next() {
                    Some((r, n)) => (rb, nb) = (r, n),
                    None => return true,
                }
            }
            if ra != rb {
                return false;
            }
            let m = na.min(nb);
            na -= m;
            nb -= m;
        }
    }

    /// The runs `(basic type, n)` of `count` copies, in order.
    pub(crate) fn runs(&self, count: u64) -> impl Iterator<Item = (Repr, u64)> + '_ {
        Runs::new(self, count)
    }

    fn is_untyped(&self) -> bool {
        self.items
            .iter()
            .all(|i| matches!(i, SigItem::Basic(r, _) if r.is_untyped()))
            && !self.items.is_empty()
    }
}

fn prefix_elements(items: &[SigItem], mut bytes: u64) -> Option<u64> {
    let mut e = 0;
    for it in items {
        if bytes == 0 {
            return Some(e);
        }
        let b = it.bytes();
        if bytes >= b {
            bytes -= b;
            e += it.elements();
            continue;
        }
        return match it {
            SigItem::Basic(r, _) => {
                let s = r.size() as u64;
                bytes.is_multiple_of(s).then(|| e + bytes / s)
            }
            SigItem::Repeat(_, s) => {
                let full = bytes / s.bytes;
                Some(e + full * s.elements + prefix_elements(&s.items, bytes % s.bytes)?)
            }
        };
    }
    Some(e)
}

/// The runs `(basic type, n)` of `count` copies of a signature, in order.
struct Runs<'a> {
    stack: Vec<(&'a [SigItem], usize, u64)>,
}

impl<'a> Runs<'a> {
    fn new(s: &'a Signature, count: u64) -> Runs<'a> {
        let mut stack = Vec::new();
        if count > 0 && !s.items.is_empty() {
            stack.push((&s.items[..], 0, count));
        }
        Runs { stack }
    }
}

impl Iterator for Runs<'_> {
    type Item = (Repr, u64);
    fn next(&mut self) -> Option<(Repr, u64)> {
        loop {
            let top = self.stack.last_mut()?;
            if top.1 == top.0.len() {
                top.2 -= 1;
                if top.2 == 0 {
                    self.stack.pop();
                } else {
                    top.1 = 0;
                }
                continue;
            }
            let it = &top.0[top.1];
            top.1 += 1;
            match it {
                SigItem::Basic(r, n) => return Some((*r, *n)),
                SigItem::Repeat(n, s) => {
                    if *n > 0 && !s.items.is_empty() {
                        self.stack.push((&s.items[..], 0, *n));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Repr::*;

    #[test]
    fn homogeneous_signatures_compress_and_match_whatever_their_shape() {
        let vec4 = Signature::basic(F64, 1).repeat(2).repeat(2);
        assert_eq!(vec4, Signature::basic(F64, 4));
        assert!(vec4.matches(1, &Signature::basic(F64, 1), 4));
        assert!(!vec4.matches(1, &Signature::basic(F32, 1), 8));
        assert!(vec4.matches(1, &Signature::basic(Byte, 1), 32));
    }

    #[test]
    fn mixed_signatures_compare_as_streams() {
        let pair = Signature::concat([Signature::basic(I32, 1), Signature::basic(F64, 1)]);
        let two = pair.repeat(2);
        assert!(two.matches(1, &pair, 2));
        assert!(pair.matches(2, &two, 1));
        assert!(
            pair.matches(3, &two, 1),
            "a longer send is a truncation, not a mismatch"
        );
        let swapped = Signature::concat([Signature::basic(F64, 1), Signature::basic(I32, 1)]);
        assert!(!pair.matches(1, &swapped, 1));
        assert_eq!(two.elements(), 4);
        assert_eq!(two.bytes(), 24);
    }

    #[test]
    fn partial_elements_count_and_split_elements_are_undefined() {
        let pair = Signature::concat([Signature::basic(I32, 1), Signature::basic(F64, 1)]);
        let t = pair.repeat(3);
        assert_eq!(t.elements_in(0), Some(0));
        assert_eq!(t.elements_in(4), Some(1));
        assert_eq!(t.elements_in(12), Some(2));
        assert_eq!(t.elements_in(16), Some(3));
        assert_eq!(t.elements_in(36 + 4), Some(7));
        assert_eq!(t.elements_in(6), None);
        assert_eq!(Signature::empty().elements_in(0), Some(0));
        assert_eq!(Signature::empty().elements_in(3), None);
    }
}
