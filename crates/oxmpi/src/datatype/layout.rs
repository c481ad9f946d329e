//! The compiled form of a datatype: where its bytes are, as runs of contiguous bytes with
//! loops kept as loops.
//!
//! A [`Layout`] describes one element of a type as a tree: a contiguous run, a loop of a body
//! at a fixed stride, a body repeated at a table of displacements (indexed_block), or a
//! sequence of different parts (indexed, struct). Constructors normalise as they build:
//! a loop whose body fills its stride becomes one run, loops whose strides nest collapse into
//! one, adjacent runs of a sequence merge, empty parts vanish. So a vector of 10^7 blocks is
//! one `Loop` node, and a contiguous type is one `Run`.
//!
//! [`Layout::walk`] visits the contiguous pieces of the packed stream from any byte offset,
//! which is what resumable (pipelined) pack/unpack and iovec generation are built on. It
//! skips whole loop iterations and sequence parts by arithmetic and binary search: resuming
//! at offset `k` costs O(depth · log parts), not O(k).

use std::sync::Arc;

/// What [`Layout::walk`] reports pieces to.
pub trait Visit {
    /// One contiguous piece at `off`, `len` bytes; `false` stops the walk.
    fn run(&mut self, off: i64, len: u64) -> bool;

    /// `n` pieces of `len` bytes, piece `i` at `off + i * stride` (the shape of a vector, so
    /// a visitor can copy it in one tight loop); `false` stops the walk.
    #[inline]
    fn strided(&mut self, off: i64, len: u64, stride: i64, n: u64) -> bool {
        (0..n).all(|i| self.run(off + i as i64 * stride, len))
    }

    /// The pieces `(off, len)` of `runs`, each moved by `base`, the first `skip` bytes in
    /// (the shape of an indexed type, so a visitor can keep its state in registers across
    /// them); `false` stops the walk.
    #[inline]
    fn runs(&mut self, base: i64, runs: &[(i64, u64)], skip: u64) -> bool {
        let mut skip = skip;
        for &(d, len) in runs {
            if !self.run(base + d + skip as i64, len - skip) {
                return false;
            }
            skip = 0;
        }
        true
    }
}

impl<F: FnMut(i64, u64) -> bool> Visit for F {
    #[inline]
    fn run(&mut self, off: i64, len: u64) -> bool {
        self(off, len)
    }
}

/// One element's bytes. Displacements are in bytes from the element's origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `len` contiguous bytes at `disp`.
    Run {
        /// Offset of the first byte.
        disp: i64,
        /// Length in bytes (> 0).
        len: u64,
    },
    /// `count` copies of `body`, copy `i` at `disp + i * stride`.
    Loop {
        /// Offset of copy 0.
        disp: i64,
        /// Number of copies (≥ 2).
        count: u64,
        /// Bytes between copies (may be negative or zero).
        stride: i64,
        /// What is repeated.
        body: Arc<Layout>,
        /// Packed bytes of one copy of `body` (> 0).
        body_size: u64,
    },
    /// Copies of `body` at `disp + disps[i]`.
    Table {
        /// Offset added to every entry of `disps`.
        disp: i64,
        /// One displacement per copy.
        disps: Arc<[i64]>,
        /// What is repeated.
        body: Arc<Layout>,
        /// Packed bytes of one copy of `body` (> 0).
        body_size: u64,
    },
    /// Contiguous runs `(offset, length)` in packed order, each shifted by `disp`: the
    /// blocks of an indexed type of a basic one, the fields of a struct. A `Seq` of runs
    /// only, kept in 24 bytes a run where a `Seq` needs 64 (for small blocks the layout was
    /// read from memory faster than the data).
    Runs {
        /// Offset added to every run.
        disp: i64,
        /// The runs (each non-empty, none adjacent to the next).
        runs: Arc<[(i64, u64)]>,
        /// Packed offset where each run starts (`starts[0] == 0`).
        starts: Arc<[u64]>,
        /// Packed bytes of all runs.
        size: u64,
    },
    /// Different parts in packed order, each shifted by `disp`.
    Seq {
        /// Offset added to every part.
        disp: i64,
        /// The parts (each non-empty; none is itself a `Seq`).
        items: Arc<[Layout]>,
        /// Packed offset where each part starts (`starts[0] == 0`).
        starts: Arc<[u64]>,
        /// Packed bytes of all parts.
        size: u64,
    },
}

impl Layout {
    /// The layout with no bytes.
    pub fn empty() -> Layout {
        Layout::Seq {
            disp: 0,
            items: Arc::new([]),
            starts: Arc::new([]),
            size: 0,
        }
    }

    /// `len` contiguous bytes at `disp` (empty if `len == 0`).
    pub fn run(disp: i64, len: u64) -> Layout {
        if len == 0 {
            Layout::empty()
        } else {
            Layout::Run { disp, len }
        }
    }

    /// Packed size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Layout::Run { len, .. } => *len,
            Layout::Loop {
                count, body_size, ..
            } => count * body_size,
            Layout::Table {
                disps, body_size, ..
            } => disps.len() as u64 * body_size,
            Layout::Runs { size, .. } | Layout::Seq { size, .. } => *size,
        }
    }

    fn disp(&self) -> i64 {
        match self {
            Layout::Run { disp, .. }
            | Layout::Loop { disp, .. }
            | Layout::Table { disp, .. }
            | Layout::Runs { disp, .. }
            | Layout::Seq { disp, .. } => *disp,
        }
    }

    /// The same layout moved by `by` bytes.
    pub fn shift(&self, by: i64) -> Layout {
        let mut l = self.clone();
        match &mut l {
            Layout::Run { disp, .. }
            | Layout::Loop { disp, .. }
            | Layout::Table { disp, .. }
            | Layout::Runs { disp, .. }
            | Layout::Seq { disp, .. } => *disp += by,
        }
        l
    }

    /// `(disp, len)` when the layout is one contiguous run.
    pub fn as_run(&self) -> Option<(i64, u64)> {
        match self {
            Layout::Run { disp, len } => Some((*disp, *len)),
            _ => None,
        }
    }

    /// Number of contiguous pieces (an upper bound after merging; saturating).
    pub fn pieces(&self) -> u64 {
        match self {
            Layout::Run { .. } => 1,
            Layout::Loop { count, body, .. } => count.saturating_mul(body.pieces()),
            Layout::Table { disps, body, .. } => (disps.len() as u64).saturating_mul(body.pieces()),
            Layout::Runs { runs, .. } => runs.len() as u64,
            Layout::Seq { items, .. } => {
                items.iter().fold(0u64, |a, i| a.saturating_add(i.pieces()))
            }
        }
    }

    /// `count` copies of `body`, copy `i` at `i * stride`.
    pub fn repeat(body: Layout, count: u64, stride: i64) -> Layout {
        let body_size = body.size();
        if count == 0 || body_size == 0 {
            return Layout::empty();
        }
        if count == 1 {
            return body;
        }
        match &body {
            Layout::Run { disp, len } if *len as i64 == stride => {
                return Layout::Run {
                    disp: *disp,
                    len: len * count,
                }
            }
            // A loop that fills its parent's stride exactly: one longer loop.
            Layout::Loop {
                disp,
                count: c2,
                stride: s2,
                body: b2,
                body_size: bs2,
            } if (*c2 as i64).checked_mul(*s2) == Some(stride) => {
                return Layout::Loop {
                    disp: *disp,
                    count: count * c2,
                    stride: *s2,
                    body: b2.clone(),
                    body_size: *bs2,
                }
            }
            _ => {}
        }
        let disp = body.disp();
        Layout::Loop {
            disp,
            count,
            stride,
            body: Arc::new(body.shift(-disp)),
            body_size,
        }
    }

    /// Copies of `body` at each displacement of `disps`, in that order.
    pub fn table(body: Layout, disps: &[i64]) -> Layout {
        let body_size = body.size();
        if disps.is_empty() || body_size == 0 {
            return Layout::empty();
        }
        if disps.len() == 1 {
            return body.shift(disps[0]);
        }
        let stride = disps[1].wrapping_sub(disps[0]);
        if disps.windows(2).all(|w| w[1].wrapping_sub(w[0]) == stride) {
            return Layout::repeat(body, disps.len() as u64, stride).shift(disps[0]);
        }
        if body.as_run().is_some() {
            // Runs may merge with their neighbours.
            return Layout::seq(disps.iter().map(|&d| body.shift(d)).collect());
        }
        let disp = body.disp();
        Layout::Table {
            disp: 0,
            disps: disps.iter().map(|d| d + disp).collect(),
            body: Arc::new(body.shift(-disp)),
            body_size,
        }
    }

    /// The parts in packed order: nested sequences are flattened, empty parts dropped and
    /// adjacent runs merged.
    pub fn seq(parts: Vec<Layout>) -> Layout {
        let mut items: Vec<Layout> = Vec::with_capacity(parts.len());
        let push = |l: Layout, items: &mut Vec<Layout>| {
            if let (Some(Layout::Run { disp, len }), Layout::Run { disp: d2, len: l2 }) =
                (items.last_mut(), &l)
            {
                if *disp + *len as i64 == *d2 {
                    *len += l2;
                    return;
                }
            }
            items.push(l);
        };
        for p in parts {
            match p {
                Layout::Seq {
                    disp, items: sub, ..
                } => {
                    for s in sub.iter() {
                        push(s.shift(disp), &mut items);
                    }
                }
                Layout::Runs { disp, runs, .. } => {
                    for &(d, len) in runs.iter() {
                        push(
                            Layout::Run {
                                disp: disp + d,
                                len,
                            },
                            &mut items,
                        );
                    }
                }
                l if l.size() == 0 => {}
                l => push(l, &mut items),
            }
        }
        match items.len() {
            0 => Layout::empty(),
            1 => items.pop().unwrap_or_else(Layout::empty),
            _ => {
                let mut starts = Vec::with_capacity(items.len());
                let mut size = 0;
                for i in &items {
                    starts.push(size);
                    size += i.size();
                }
                let runs: Option<Arc<[(i64, u64)]>> = items.iter().map(Layout::as_run).collect();
                if let Some(runs) = runs {
                    return Layout::Runs {
                        disp: 0,
                        runs,
                        starts: starts.into(),
                        size,
                    };
                }
                Layout::Seq {
                    disp: 0,
                    items: items.into(),
                    starts: starts.into(),
                    size,
                }
            }
        }
    }

    /// Reports to `f` each contiguous piece of this layout's packed bytes from packed offset
    /// `start` (< `size()`) on, in packed order, offsets relative to `base`. The first piece
    /// may be the tail of a run. Stops, returning `false`, when `f` does.
    #[inline]
    pub fn walk<F: Visit + ?Sized>(&self, base: i64, start: u64, f: &mut F) -> bool {
        match self {
            Layout::Run { disp, len } => f.run(base + disp + start as i64, len - start),
            Layout::Loop {
                disp,
                count,
                stride,
                body,
                body_size,
            } => {
                let b = base + disp;
                let first = start / body_size;
                let mut skip = start % body_size;
                if let Layout::Run { disp: d, len } = **body {
                    // The common shape (vector of runs): one strided report.
                    let mut first = first;
                    let off = b + d + first as i64 * stride;
                    if skip > 0 {
                        if !f.run(off + skip as i64, len - skip) {
                            return false;
                        }
                        first += 1;
                    }
                    return first == *count
                        || f.strided(b + d + first as i64 * stride, len, *stride, count - first);
                }
                for i in first..*count {
                    if !body.walk(b + i as i64 * stride, skip, f) {
                        return false;
                    }
                    skip = 0;
                }
                true
            }
            Layout::Table {
                disp,
                disps,
                body,
                body_size,
            } => {
                let first = (start / body_size) as usize;
                let mut skip = start % body_size;
                for d in &disps[first..] {
                    if !body.walk(base + disp + d, skip, f) {
                        return false;
                    }
                    skip = 0;
                }
                true
            }
            Layout::Runs {
                disp, runs, starts, ..
            } => {
                let i = match start {
                    0 => 0,
                    _ => starts.partition_point(|&s| s <= start).saturating_sub(1),
                };
                f.runs(base + disp, &runs[i..], start - starts[i])
            }
            Layout::Seq {
                disp,
                items,
                starts,
                ..
            } => {
                let i = match start {
                    0 => 0,
                    _ => starts.partition_point(|&s| s <= start).saturating_sub(1),
                };
                let mut skip = start - starts[i];
                for it in &items[i..] {
                    // Runs (most parts of a struct) without a recursive call.
                    let go = match *it {
                        Layout::Run { disp: d, len } => {
                            f.run(base + disp + d + skip as i64, len - skip)
                        }
                        ref other => other.walk(base + disp, skip, f),
                    };
                    if !go {
                        return false;
                    }
                    skip = 0;
                }
                true
            }
        }
    }

    /// [`walk`](Self::walk) over `count` elements `extent` bytes apart.
    #[inline]
    pub fn walk_count<F: Visit + ?Sized>(
        &self,
        count: u64,
        extent: i64,
        start: u64,
        f: &mut F,
    ) -> bool {
        let size = self.size();
        if size == 0 || start >= size * count {
            return true;
        }
        let first = start / size;
        let mut skip = start % size;
        if let Layout::Run { disp, len } = *self {
            // Elements of one run each (a resized basic type): one strided report.
            let mut first = first;
            if skip > 0 {
                if !f.run(disp + first as i64 * extent + skip as i64, len - skip) {
                    return false;
                }
                first += 1;
            }
            return first == count
                || f.strided(disp + first as i64 * extent, len, extent, count - first);
        }
        for i in first..count {
            if !self.walk(i as i64 * extent, skip, f) {
                return false;
            }
            skip = 0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(l: &Layout, start: u64) -> Vec<(i64, u64)> {
        let mut v = Vec::new();
        l.walk(0, start, &mut |o: i64, n: u64| {
            v.push((o, n));
            true
        });
        v
    }

    #[test]
    fn loops_stay_loops_and_fill_their_stride_into_runs() {
        let v = Layout::repeat(Layout::run(0, 8), 10_000_000, 16);
        assert!(matches!(
            v,
            Layout::Loop {
                count: 10_000_000,
                ..
            }
        ));
        assert_eq!(v.size(), 80_000_000);
        assert_eq!(Layout::repeat(Layout::run(4, 8), 5, 8), Layout::run(4, 40));
        // vector(3 blocks of 2 x 4 bytes, stride 8) repeated at 24 bytes: one loop of 6.
        let inner = Layout::repeat(Layout::run(0, 4), 3, 8);
        let outer = Layout::repeat(inner, 2, 24);
        assert!(matches!(
            outer,
            Layout::Loop {
                count: 6,
                stride: 8,
                ..
            }
        ));
        assert_eq!(Layout::repeat(Layout::run(0, 4), 0, 8), Layout::empty());
    }

    #[test]
    fn sequences_merge_adjacent_runs_and_tables_become_loops() {
        let s = Layout::seq(vec![
            Layout::run(0, 4),
            Layout::run(4, 4),
            Layout::run(12, 4),
        ]);
        assert!(
            matches!(s, Layout::Runs { .. }),
            "runs only: the compact form"
        );
        assert_eq!(pieces(&s, 0), vec![(0, 8), (12, 4)]);
        assert_eq!(pieces(&s, 6), vec![(6, 2), (12, 4)]);
        assert_eq!(pieces(&s, 9), vec![(13, 3)]);
        // Runs inside a longer sequence are flattened and merge with their neighbours.
        let loop_ = Layout::repeat(Layout::run(0, 1), 2, 3);
        let m = Layout::seq(vec![s.shift(100), Layout::run(116, 2), loop_.shift(200)]);
        assert!(matches!(m, Layout::Seq { .. }));
        assert_eq!(pieces(&m, 0), vec![(100, 8), (112, 6), (200, 1), (203, 1)]);
        assert_eq!(m.pieces(), 4);
        assert_eq!(pieces(&m, 10), vec![(114, 4), (200, 1), (203, 1)]);
        let t = Layout::table(Layout::run(0, 2), &[10, 20, 30]);
        assert!(matches!(
            t,
            Layout::Loop {
                count: 3,
                stride: 10,
                disp: 10,
                ..
            }
        ));
        let t = Layout::table(Layout::repeat(Layout::run(0, 1), 2, 3), &[0, 100, 7]);
        assert_eq!(pieces(&t, 3), vec![(103, 1), (7, 1), (10, 1)]);
    }

    #[test]
    fn walking_resumes_inside_nested_loops_and_negative_strides() {
        let l = Layout::repeat(Layout::repeat(Layout::run(0, 2), 3, -5), 2, 100);
        let all = pieces(&l, 0);
        assert_eq!(
            all,
            vec![(0, 2), (-5, 2), (-10, 2), (100, 2), (95, 2), (90, 2)]
        );
        assert_eq!(pieces(&l, 7), vec![(101, 1), (95, 2), (90, 2)]);
        let mut v = Vec::new();
        l.walk_count(2, 1000, 11, &mut |o: i64, n: u64| {
            v.push((o, n));
            v.len() < 2
        });
        assert_eq!(v, vec![(91, 1), (1000, 2)]);
    }
}
