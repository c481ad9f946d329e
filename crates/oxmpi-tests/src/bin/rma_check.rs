//! One-sided communication at any number of ranks: every window flavor (allocate,
//! allocate_shared, create, dynamic) × every synchronization mode (fence, post/start/
//! complete/wait, exclusive and shared locks, lock_all), each operation checked against the
//! memory it must leave: put, get, accumulate (8-byte integers on atomics, doubles and 2-byte
//! integers through the other paths), get_accumulate, fetch_and_op and compare_and_swap from
//! every rank to one location. Then contended counters (fetch_and_op and CAS loops),
//! accumulates of mixed sizes from every rank onto overlapping elements (exact sums), CAS
//! increments beside bulk sums on one element (exact totals), a flush ordering a put before
//! a later get (a store-buffering litmus test between ranks 0 and 1), shared windows through
//! direct pointers, dynamic attach/detach, and each erroneous use's class.
//!
//! `rma_check` runs everything; `rma_check multihost` is for windows spanning hosts (real
//! ones, or faked by `OXMPI_HOST_OVERRIDE`), where targets elsewhere are reached by active
//! messages: every flavor but the shared one (refused there) × every synchronization mode ×
//! operation, the counters, dynamic windows, and transfers of several message chunks.
//! Exits non-zero on the first mismatch.

use std::sync::atomic::{AtomicU64, Ordering};

use oxmpi::window::{mode, Flavor, LockType, Window};
use oxmpi::{Communicator, ErrorClass, Op, PROC_NULL};
use oxmpi_tests::{check, must};

/// Window length in u64 per rank.
const N: usize = 16;

fn expect<T: std::fmt::Debug>(what: &str, r: oxmpi::Result<T>, class: ErrorClass) {
    match r {
        Err(e) if e.class() == class => {}
        other => check!(false, "{what}: expected {class:?}, got {other:?}"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Sync {
    Fence,
    Pscw,
    LockExclusive,
    LockShared,
    LockAll,
}

const SYNCS: [Sync; 5] = [
    Sync::Fence,
    Sync::Pscw,
    Sync::LockExclusive,
    Sync::LockShared,
    Sync::LockAll,
];

/// Runs `f` inside an access epoch to every rank under `sync`; when it returns, every
/// rank's operations are done and visible in every target's memory.
fn epoch(world: &Communicator, win: &Window, sync: Sync, f: impl FnOnce()) {
    let all: Vec<i32> = (0..win.size()).collect();
    match sync {
        Sync::Fence => {
            must("fence", win.fence(0));
            f();
            must("fence", win.fence(0));
        }
        Sync::Pscw => {
            must("post", win.post(&all, 0));
            must("start", win.start(&all, 0));
            f();
            must("complete", win.complete());
            must("wait", win.wait());
        }
        Sync::LockExclusive | Sync::LockShared => {
            let kind = if sync == Sync::LockExclusive {
                LockType::Exclusive
            } else {
                LockType::Shared
            };
            // In rank order on every process, so exclusive locks cannot deadlock.
            for &t in &all {
                must("lock", win.lock(kind, t, 0));
            }
            f();
            for &t in &all {
                must("flush", win.flush(t));
                must("unlock", win.unlock(t));
            }
            must("barrier", world.barrier());
        }
        Sync::LockAll => {
            must("lock_all", win.lock_all(mode::NOCHECK));
            f();
            must("flush_all", win.flush_all());
            must("unlock_all", win.unlock_all());
            must("barrier", world.barrier());
        }
    }
}

/// A window of `N` zeroed u64 per rank of the given flavor, with the displacement base of
/// every rank's memory (0, or its address for dynamic windows).
fn make<'a>(world: &Communicator, flavor: Flavor, user: &'a mut [u64]) -> (Window<'a>, Vec<i64>) {
    let n = world.size() as usize;
    match flavor {
        Flavor::Allocate => (
            must("allocate", world.window_allocate::<u64>(N)),
            vec![0; n],
        ),
        Flavor::Shared => (
            must("allocate_shared", world.window_allocate_shared::<u64>(N)),
            vec![0; n],
        ),
        Flavor::Create => (must("create", world.window_create(user)), vec![0; n]),
        Flavor::Dynamic => {
            let mut w = must("create_dynamic", world.window_create_dynamic());
            let addr = must("attach", w.attach(user));
            let mut addrs = vec![0i64; n];
            must(
                "allgather",
                world.all_gather_into(&[addr][..], &mut addrs[..]),
            );
            (w, addrs)
        }
    }
}

/// Local window memory after an epoch: through the window, or the attached buffer.
fn local(win: &Window, flavor: Flavor, addr: i64) -> Vec<u64> {
    if flavor == Flavor::Dynamic {
        // SAFETY: `addr` is this rank's attached buffer of N u64, alive (borrowed by `win`)
        // and not written by anyone between epochs.
        unsafe { std::slice::from_raw_parts(addr as *const u64, N).to_vec() }
    } else {
        must("local", win.local::<u64>()).to_vec()
    }
}

/// Target displacement of element `i` in rank `t`'s window.
fn at(flavor: Flavor, addrs: &[i64], t: i32, i: usize) -> i64 {
    if flavor == Flavor::Dynamic {
        addrs[t as usize] + 8 * i as i64
    } else {
        i as i64
    }
}

fn ops(world: &Communicator, flavor: Flavor, sync: Sync) {
    let me = world.rank();
    let n = world.size();
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let mut user = vec![0u64; N];
    let (win, addrs) = make(world, flavor, &mut user);
    let what = format!("{flavor:?}/{sync:?}");
    let d = |t: i32, i: usize| at(flavor, &addrs, t, i);

    // put: four values to the right neighbour, elements 0..4.
    let mine: Vec<u64> = (0..4).map(|i| me as u64 * 100 + i).collect();
    epoch(world, &win, sync, || {
        must("put", win.put(&mine, right, d(right, 0)))
    });
    let l = local(&win, flavor, addrs[me as usize]);
    for (i, &v) in l[..4].iter().enumerate() {
        check!(
            v == left as u64 * 100 + i as u64,
            "{what} put: element {i} = {}",
            v
        );
    }

    // get: the left neighbour's elements 0..4, which its left neighbour put.
    let mut got = vec![0u64; 4];
    epoch(world, &win, sync, || {
        must("get", win.get(&mut got, left, d(left, 0)))
    });
    let ll = (left + n - 1) % n;
    for (i, &g) in got.iter().enumerate() {
        check!(
            g == ll as u64 * 100 + i as u64,
            "{what} get: element {i} = {g}"
        );
    }

    // accumulate from every rank to every rank: u64 sum (atomics where mapped), f64 sum and
    // i16 sum (a lock or CAS loop), replace-free so the result is known.
    let vals = [me as u64 + 1; 4];
    let f = [me as f64 + 0.5];
    let s = [(me + 1) as i16, -((me + 1) as i16), 2, 0];
    epoch(world, &win, sync, || {
        for t in 0..n {
            must("acc", win.accumulate(&vals, t, d(t, 4), &Op::Sum));
            must("acc f64", win.accumulate(&f, t, d(t, 10), &Op::Sum));
            must("acc i16", win.accumulate(&s, t, d(t, 11), &Op::Sum));
            must(
                "acc max",
                win.accumulate(&[me as u64 * 7], t, d(t, 12), &Op::Max),
            );
        }
    });
    let l = local(&win, flavor, addrs[me as usize]);
    let sum = (n * (n + 1) / 2) as u64;
    for (i, &v) in l.iter().enumerate().take(8).skip(4) {
        check!(v == sum, "{what} accumulate: element {i} = {v} not {sum}");
    }
    let fsum: f64 = (0..n).map(|r| r as f64 + 0.5).sum();
    check!(
        f64::from_bits(l[10]) == fsum,
        "{what} f64 accumulate {}",
        f64::from_bits(l[10])
    );
    let sh: [i16; 4] = bytemuck_i16(l[11]);
    check!(
        sh == [sum as i16, -(sum as i16), 2 * n as i16, 0],
        "{what} i16 accumulate {sh:?}"
    );
    check!(
        l[12] == (n as u64 - 1) * 7,
        "{what} max accumulate {}",
        l[12]
    );

    // fetch_and_op: 10 increments each of rank 0's element 8; every old value is distinct.
    let mut olds = [0u64; 10];
    epoch(world, &win, sync, || {
        for o in olds.iter_mut() {
            *o = must(
                "fetch_and_op",
                win.fetch_and_op(&1u64, 0, d(0, 8), &Op::Sum),
            );
        }
    });
    let mut every = vec![0u64; 10 * n as usize];
    must(
        "allgather",
        world.all_gather_into(&olds[..], &mut every[..]),
    );
    every.sort_unstable();
    check!(
        every == (0..10 * n as u64).collect::<Vec<_>>(),
        "{what} fetch_and_op old values {every:?}"
    );
    // get_accumulate with NO_OP reads the counter atomically.
    let mut now = [0u64];
    epoch(world, &win, sync, || {
        must(
            "get_acc",
            win.get_accumulate(&[0u64], &mut now, 0, d(0, 8), &Op::NoOp),
        )
    });
    check!(
        now[0] == 10 * n as u64,
        "{what} get_accumulate NO_OP read {}",
        now[0]
    );

    // compare_and_swap: every rank tries 0 -> me+1 on rank 0's element 9; one wins.
    let mut old = 0u64;
    epoch(world, &win, sync, || {
        old = must(
            "cas",
            win.compare_and_swap(&(me as u64 + 1), &0u64, 0, d(0, 9)),
        );
    });
    let mut olds = vec![0u64; n as usize];
    must(
        "allgather",
        world.all_gather_into(&[old][..], &mut olds[..]),
    );
    let winners: Vec<usize> = (0..n as usize).filter(|&r| olds[r] == 0).collect();
    check!(winners.len() == 1, "{what} CAS winners {winners:?}");
    let mut fin = [0u64];
    epoch(world, &win, sync, || {
        must("get", win.get(&mut fin, 0, d(0, 9)))
    });
    check!(
        fin[0] == winners[0] as u64 + 1,
        "{what} CAS final {}",
        fin[0]
    );
    check!(
        olds.iter().all(|&o| o == 0 || o == fin[0]),
        "{what} CAS losers saw {olds:?}"
    );
    must("free", win.free());
}

fn bytemuck_i16(x: u64) -> [i16; 4] {
    let b = x.to_ne_bytes();
    [0, 2, 4, 6].map(|i| i16::from_ne_bytes([b[i], b[i + 1]]))
}

/// Every rank increments one counter on rank 0, `k` times by fetch_and_op and `k` times by
/// a CAS loop, inside one lock_all epoch.
fn counters(world: &Communicator, flavor: Flavor, k: u64) {
    let n = world.size() as u64;
    let mut user = vec![0u64; N];
    let (win, addrs) = make(world, flavor, &mut user);
    let d = |i| at(flavor, &addrs, 0, i);
    must("barrier", world.barrier());
    must("lock_all", win.lock_all(0));
    let mut last = None;
    for _ in 0..k {
        let old = must("fetch_and_op", win.fetch_and_op(&1u64, 0, d(0), &Op::Sum));
        check!(
            last.is_none_or(|l| old > l),
            "{flavor:?} counter went back: {old} after {last:?}"
        );
        last = Some(old);
        let mut cur = must("fetch", win.fetch_and_op(&0u64, 0, d(1), &Op::NoOp));
        loop {
            let seen = must("cas", win.compare_and_swap(&(cur + 1), &cur, 0, d(1)));
            if seen == cur {
                break;
            }
            cur = seen;
        }
    }
    must("unlock_all", win.unlock_all());
    must("barrier", world.barrier());
    if world.rank() == 0 {
        let l = local(&win, flavor, addrs[0]);
        check!(
            l[0] == n * k,
            "{flavor:?} fetch_and_op counter {} not {}",
            l[0],
            n * k
        );
        check!(
            l[1] == n * k,
            "{flavor:?} CAS counter {} not {}",
            l[1],
            n * k
        );
    }
    must("free", win.free());
}

/// What rank `r` adds in round `k` of [`mixed`]: (target, first element, element count,
/// through get_accumulate). Count 1 takes the element-wise atomics on allocated and shared
/// windows, larger ones the bulk path, and every range overlaps others' at element 0..4 of
/// some target.
fn mixed_step(r: i32, k: usize, n: i32) -> (i32, usize, usize, bool) {
    let h = (r as usize * 31 + k * 17) % 97;
    let count = [1, 2, 3, 4, 5, 8, 33, 64][h % 8];
    let first = (h / 8) % (MIXED - count + 1).min(5);
    ((r + k as i32) % n, first, count, h.is_multiple_of(3))
}

/// Elements per rank in [`mixed`]'s windows.
const MIXED: usize = 64;

/// Accumulates of mixed sizes (element-wise atomics beside bulk combines) and get_accumulates
/// from every rank at once onto overlapping elements, 8- and 4-byte sums, in one lock_all
/// epoch: the totals are exact, so no update was lost to a concurrent one of the other kind.
fn mixed(world: &Communicator, flavor: Flavor) {
    const ROUNDS: usize = 300;
    let me = world.rank();
    let n = world.size();
    let alloc8 = |len| match flavor {
        Flavor::Shared => world.window_allocate_shared::<u64>(len),
        _ => world.window_allocate::<u64>(len),
    };
    let alloc4 = |len| match flavor {
        Flavor::Shared => world.window_allocate_shared::<u32>(len),
        _ => world.window_allocate::<u32>(len),
    };
    let w8 = must("allocate", alloc8(MIXED));
    let w4 = must("allocate", alloc4(MIXED));
    let add = |r: i32, k: usize, i: usize| (r as u64 + 1) * 1_000_003 + (k * 7 + i) as u64;
    must("barrier", world.barrier());
    must("lock_all", w8.lock_all(0));
    must("lock_all", w4.lock_all(0));
    for k in 0..ROUNDS {
        let (t, first, count, fetch) = mixed_step(me, k, n);
        let v8: Vec<u64> = (0..count).map(|i| add(me, k, first + i)).collect();
        let v4: Vec<u32> = v8.iter().map(|&x| x as u32).collect();
        if fetch {
            let mut o8 = vec![0u64; count];
            let mut o4 = vec![0u32; count];
            must(
                "get_accumulate",
                w8.get_accumulate(&v8[..], &mut o8[..], t, first as i64, &Op::Sum),
            );
            must(
                "get_accumulate",
                w4.get_accumulate(&v4[..], &mut o4[..], t, first as i64, &Op::Sum),
            );
        } else {
            must(
                "accumulate",
                w8.accumulate(&v8[..], t, first as i64, &Op::Sum),
            );
            must(
                "accumulate",
                w4.accumulate(&v4[..], t, first as i64, &Op::Sum),
            );
        }
    }
    must("unlock_all", w8.unlock_all());
    must("unlock_all", w4.unlock_all());
    must("barrier", world.barrier());
    let mut want = vec![0u64; MIXED];
    for r in 0..n {
        for k in 0..ROUNDS {
            let (t, first, count, _) = mixed_step(r, k, n);
            if t == me {
                for (i, w) in want.iter_mut().enumerate().skip(first).take(count) {
                    *w = w.wrapping_add(add(r, k, i));
                }
            }
        }
    }
    let got8 = must("local", w8.local::<u64>()).to_vec();
    let got4 = must("local", w4.local::<u32>()).to_vec();
    let bad8 = (0..MIXED).find(|&i| got8[i] != want[i]);
    check!(
        bad8.is_none(),
        "{flavor:?} mixed 8-byte sums: element {bad8:?} differs"
    );
    let bad4 = (0..MIXED).find(|&i| got4[i] != want[i] as u32);
    check!(
        bad4.is_none(),
        "{flavor:?} mixed 4-byte sums: element {bad4:?} differs"
    );
    must("free", w8.free());
    must("free", w4.free());
}

/// Compare-and-swap increments beside bulk accumulates on the same elements, from every rank
/// at once in one lock_all epoch, on 8- and 4-byte elements: CAS on one element of an
/// allocated or shared window is a compare-exchange under the element-wise entry, the bulk
/// accumulates (4 elements) combine under the exclusive word, and the totals are exact only
/// if neither ever overwrote the other's update.
fn cas_mixed(world: &Communicator, flavor: Flavor) {
    const ROUNDS: u64 = 400;
    let n = world.size() as u64;
    let w8 = must(
        "allocate",
        match flavor {
            Flavor::Shared => world.window_allocate_shared::<u64>(4),
            _ => world.window_allocate::<u64>(4),
        },
    );
    let w4 = must(
        "allocate",
        match flavor {
            Flavor::Shared => world.window_allocate_shared::<u32>(4),
            _ => world.window_allocate::<u32>(4),
        },
    );
    must("barrier", world.barrier());
    must("lock_all", w8.lock_all(0));
    must("lock_all", w4.lock_all(0));
    for _ in 0..ROUNDS {
        // Element 0 of rank 0's windows: one increment by a CAS loop, one by a bulk sum.
        let mut cur = 0u64;
        loop {
            let seen = must("cas", w8.compare_and_swap(&(cur + 1), &cur, 0, 0));
            if seen == cur {
                break;
            }
            cur = seen;
        }
        must("accumulate", w8.accumulate(&[1u64; 4][..], 0, 0, &Op::Sum));
        let mut cur = 0u32;
        loop {
            let seen = must("cas", w4.compare_and_swap(&(cur + 1), &cur, 0, 0));
            if seen == cur {
                break;
            }
            cur = seen;
        }
        must("accumulate", w4.accumulate(&[1u32; 4][..], 0, 0, &Op::Sum));
    }
    must("unlock_all", w8.unlock_all());
    must("unlock_all", w4.unlock_all());
    must("barrier", world.barrier());
    if world.rank() == 0 {
        let got8 = must("local", w8.local::<u64>()).to_vec();
        let got4 = must("local", w4.local::<u32>()).to_vec();
        let want = |i: usize| if i == 0 { 2 * n * ROUNDS } else { n * ROUNDS };
        for i in 0..4 {
            check!(
                got8[i] == want(i),
                "{flavor:?} CAS beside bulk sums, 8-byte element {i}: {} not {}",
                got8[i],
                want(i)
            );
            check!(
                u64::from(got4[i]) == want(i),
                "{flavor:?} CAS beside bulk sums, 4-byte element {i}: {} not {}",
                got4[i],
                want(i)
            );
        }
    }
    must("free", w8.free());
    must("free", w4.free());
}

/// A flush orders this rank's puts before its later gets (the store-buffering litmus test):
/// ranks 0 and 1 each put the round number into the other's window, flush, and get what the
/// other put into theirs; in no round may both still see the previous value. Without a full
/// barrier between the put's stores and the get's loads, x86 lets both loads pass the
/// stores. Round k starts at the same instant on both ranks (a slot of the host's clock
/// agreed beforehand), so the two run side by side wherever the scheduler lets them.
fn flush_orders_puts(world: &Communicator, flavor: Flavor) {
    const ROUNDS: u64 = 20_000;
    const SLOT_NS: u128 = 4_000;
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    };
    let me = world.rank();
    let win = must(
        "allocate",
        match flavor {
            Flavor::Shared => world.window_allocate_shared::<u64>(1),
            _ => world.window_allocate::<u64>(1),
        },
    );
    // The first round starts a millisecond after rank 0 read its clock.
    let mut base = [(now() + 1_000_000) as u64];
    must("bcast", world.broadcast_into(0, &mut base[..]));
    if me < 2 && world.size() >= 2 {
        let other = 1 - me;
        // old[k - 1]: whether round k's get still saw round k - 1's value.
        let mut old = vec![0u8; ROUNDS as usize];
        must("lock_all", win.lock_all(0));
        for k in 1..=ROUNDS {
            let start = u128::from(base[0]) + u128::from(k) * SLOT_NS;
            while now() < start {
                std::hint::spin_loop();
            }
            must("put", win.put(&[k][..], other, 0));
            must("flush", win.flush(other));
            let mut seen = [0u64];
            must("get", win.get(&mut seen[..], me, 0));
            must("flush", win.flush(me));
            old[k as usize - 1] = u8::from(seen[0] < k);
        }
        must("unlock_all", win.unlock_all());
        if me == 1 {
            must("send", world.send(&old[..], 0, 77));
        } else {
            let mut theirs = vec![0u8; ROUNDS as usize];
            must(
                "receive",
                world.receive_into(&mut theirs[..], 1, 77).map(drop),
            );
            let both = (0..old.len())
                .filter(|&i| old[i] == 1 && theirs[i] == 1)
                .count();
            check!(
                both == 0,
                "{flavor:?}: in {both} of {ROUNDS} rounds both ranks' gets after a flush missed the other's put"
            );
        }
    }
    must("barrier", world.barrier());
    must("free", win.free());
}

/// Shared windows: contiguous memory, neighbours' memory stored to and loaded through the
/// pointers `shared_query` gives.
fn shared(world: &Communicator) {
    let me = world.rank();
    let n = world.size();
    let mut win = must("allocate_shared", world.window_allocate_shared::<u64>(N));
    check!(win.flavor() == Flavor::Shared, "flavor {:?}", win.flavor());
    check!(
        win.size_bytes() == N * 8 && win.disp_unit() == 8,
        "size/disp_unit"
    );
    for r in 0..n - 1 {
        let a = must("query", win.shared_query(r));
        let b = must("query", win.shared_query(r + 1));
        check!(
            a.ptr.wrapping_add(a.size) == b.ptr,
            "rank {r}'s memory is not followed by rank {}'s",
            r + 1
        );
    }
    let first = must("query", win.shared_query(PROC_NULL));
    check!(
        first.ptr == must("query", win.shared_query(0)).ptr,
        "PROC_NULL query"
    );
    let right = must("query", win.shared_query((me + 1) % n));
    must("fence", win.fence(0));
    // SAFETY: `right.ptr` maps N u64 of the right neighbour's window, alive while `win` is;
    // element 3 is written only by this rank in this epoch, atomically.
    unsafe { (*right.ptr.cast::<AtomicU64>().add(3)).store(me as u64 + 42, Ordering::Release) };
    must("fence", win.fence(0));
    let left = (me + n - 1) % n;
    check!(
        must("local", win.local::<u64>())[3] == left as u64 + 42,
        "direct store from the left neighbour"
    );
    must("local_mut", win.local_mut::<u64>())[5] = me as u64;
    must("fence", win.fence(0));
    let lq = must("query", win.shared_query(left));
    // SAFETY: as above, reading the left neighbour's element 5, stored before the fence.
    let v = unsafe { (*lq.ptr.cast::<AtomicU64>().add(5)).load(Ordering::Acquire) };
    check!(
        v == left as u64,
        "direct load of the left neighbour's store: {v}"
    );
    must("fence", win.fence(mode::NOSUCCEED));
    must("free", win.free());
}

/// Dynamic windows: several regions, detach, and access to detached memory.
fn dynamic(world: &Communicator) {
    let me = world.rank();
    let n = world.size();
    let right = (me + 1) % n;
    let mut a = vec![0u32; 8];
    let mut b = vec![0u8; 3];
    let mut win = must("create_dynamic", world.window_create_dynamic());
    check!(
        win.flavor() == Flavor::Dynamic && win.base().is_null(),
        "dynamic attributes"
    );
    let pa = must("attach a", win.attach(&mut a));
    let pb = must("attach b", win.attach(&mut b));
    check!(win.is_attached(pa) && win.is_attached(pb), "attached");
    let mut addrs = vec![0i64; 2 * n as usize];
    must(
        "allgather",
        world.all_gather_into(&[pa, pb][..], &mut addrs[..]),
    );
    let (ra, rb) = (addrs[2 * right as usize], addrs[2 * right as usize + 1]);
    must("fence", win.fence(0));
    must("put a", win.put(&[me as u32; 2], right, ra + 4));
    must("put b", win.put(&[me as u8 + 1], right, rb + 2));
    expect(
        "put across regions",
        win.put(&[0u32; 9], right, ra),
        ErrorClass::RmaRange,
    );
    expect(
        "put outside b",
        win.put(&[0u8; 2], right, rb + 2),
        ErrorClass::RmaRange,
    );
    must("fence", win.fence(0));
    must("detach b", win.detach(pb));
    check!(!win.is_attached(pb), "detached");
    expect("detach twice", win.detach(pb), ErrorClass::RmaAttach);
    must("fence", win.fence(0));
    expect(
        "put to detached",
        win.put(&[1u8], right, rb),
        ErrorClass::RmaRange,
    );
    must("fence", win.fence(mode::NOSUCCEED));
    must("free", win.free());
    let left = (me + n - 1) % n;
    check!(
        a == [0, left as u32, left as u32, 0, 0, 0, 0, 0],
        "dynamic a {a:?}"
    );
    check!(b == [0, 0, left as u8 + 1], "dynamic b {b:?}");
}

/// Erroneous uses and their classes; the window keeps working after each.
fn errors(world: &Communicator) {
    let me = world.rank();
    let n = world.size();
    let win = must("allocate", world.window_allocate::<u64>(N));
    let user = Op::User(oxmpi::UserOp::new::<u64>(
        true,
        |a: &[u64], b: &mut [u64]| b.copy_from_slice(a),
    ));
    expect(
        "put with no epoch",
        win.put(&[1u64], 0, 0),
        ErrorClass::RmaSync,
    );
    expect(
        "get with no epoch",
        win.get(&mut [0u64], 0, 0),
        ErrorClass::RmaSync,
    );
    expect("unlock without lock", win.unlock(0), ErrorClass::RmaSync);
    expect(
        "unlock_all without lock_all",
        win.unlock_all(),
        ErrorClass::RmaSync,
    );
    expect(
        "complete without start",
        win.complete(),
        ErrorClass::RmaSync,
    );
    expect("wait without post", win.wait(), ErrorClass::RmaSync);
    expect("test without post", win.test(), ErrorClass::RmaSync);
    expect("flush without lock", win.flush(0), ErrorClass::RmaSync);
    expect(
        "flush_all without lock",
        win.flush_all(),
        ErrorClass::RmaSync,
    );
    expect(
        "lock bad rank",
        win.lock(LockType::Shared, n, 0),
        ErrorClass::Rank,
    );
    expect("fence bad assert", win.fence(1), ErrorClass::Assert);
    {
        // MPI-4.1: memory MPI did not allocate is not reachable by loads and stores here.
        let mut m = [0u64; 2];
        let w = must("create", world.window_create(&mut m));
        let r = must("shared_query on create", w.shared_query(0));
        check!(
            r.ptr.is_null() && r.size == 0 && r.disp_unit == 8,
            "shared_query on create: {r:?}"
        );
        must("free", w.free());
    }
    expect(
        "attach to an allocated window",
        {
            let mut w2 = must("allocate", world.window_allocate::<u8>(1));
            let mut m = [0u8; 4];
            let r = w2.attach(&mut m).map(drop);
            must("free", w2.free());
            r
        },
        ErrorClass::RmaFlavor,
    );

    must("lock", win.lock(LockType::Shared, me, 0));
    expect(
        "lock twice",
        win.lock(LockType::Shared, me, 0),
        ErrorClass::RmaSync,
    );
    expect(
        "put out of range",
        win.put(&[1u64], me, N as i64),
        ErrorClass::RmaRange,
    );
    expect(
        "put straddling the end",
        win.put(&[1u64; 2], me, N as i64 - 1),
        ErrorClass::RmaRange,
    );
    expect(
        "get at a negative displacement",
        win.get(&mut [0u64], me, -1),
        ErrorClass::RmaRange,
    );
    if n > 1 {
        expect(
            "put to an unlocked rank",
            win.put(&[1u64], (me + 1) % n, 0),
            ErrorClass::RmaSync,
        );
    }
    expect(
        "user op in accumulate",
        win.accumulate(&[1u64], me, 0, &user),
        ErrorClass::Op,
    );
    expect(
        "bitwise op on f64",
        win.accumulate(&[1.0f64], me, 0, &Op::BitwiseAnd),
        ErrorClass::Op,
    );
    expect(
        "CAS on f64",
        win.compare_and_swap(&1.0f64, &0.0, me, 0),
        ErrorClass::Type,
    );
    must("put to PROC_NULL", win.put(&[1u64], PROC_NULL, 1 << 40));
    expect(
        "fence inside a lock epoch",
        win.fence(0),
        ErrorClass::RmaSync,
    );
    must("unlock", win.unlock(me));
    // Every way an epoch ends closes access again (the per-operation checks read mirrors of
    // the epoch without its lock).
    expect(
        "put after unlock",
        win.put(&[1u64], me, 0),
        ErrorClass::RmaSync,
    );
    expect("flush after unlock", win.flush(me), ErrorClass::RmaSync);
    must("post", win.post(&[me], 0));
    expect("post twice", win.post(&[me], 0), ErrorClass::RmaSync);
    must("start", win.start(&[me], 0));
    expect("start twice", win.start(&[me], 0), ErrorClass::RmaSync);
    must("put in PSCW", win.put(&[5u64], me, 2));
    must("complete", win.complete());
    check!(must("test", win.test()), "test after own complete");
    check!(
        must("local", win.local::<u64>())[2] == 5,
        "PSCW put to self"
    );
    must("barrier", world.barrier());
    must("lock_all", win.lock_all(0));
    expect(
        "lock inside lock_all",
        win.lock(LockType::Exclusive, 0, 0),
        ErrorClass::RmaSync,
    );
    expect("lock_all twice", win.lock_all(0), ErrorClass::RmaSync);
    must("flush_all in lock_all", win.flush_all());
    must("unlock_all", win.unlock_all());
    expect(
        "put after unlock_all",
        win.put(&[1u64], 0, 0),
        ErrorClass::RmaSync,
    );
    expect(
        "flush_all after unlock_all",
        win.flush_all(),
        ErrorClass::RmaSync,
    );
    must("fence", win.fence(0));
    must("put in a fence epoch", win.put(&[1u64], me, 3));
    expect("flush in a fence epoch", win.flush(me), ErrorClass::RmaSync);
    must("fence", win.fence(mode::NOSUCCEED));
    expect(
        "put after the last fence",
        win.put(&[1u64], me, 3),
        ErrorClass::RmaSync,
    );
    must("barrier", world.barrier());
    let w3 = must("allocate", world.window_allocate::<u64>(1));
    must("lock", w3.lock(LockType::Exclusive, me, 0));
    expect("fence while locked", w3.fence(0), ErrorClass::RmaSync);
    must("unlock", w3.unlock(me));
    must("free", w3.free());
    must("free", win.free());
}

fn attributes(world: &Communicator) {
    let w = must(
        "allocate",
        world.window_allocate::<u32>(world.rank() as usize + 1),
    );
    check!(w.flavor() == Flavor::Allocate, "flavor");
    check!(
        w.size_bytes() == 4 * (world.rank() as usize + 1),
        "size {}",
        w.size_bytes()
    );
    check!(w.disp_unit() == 4, "disp_unit");
    check!(
        !w.base().is_null() && (w.base() as usize).is_multiple_of(64),
        "base aligned"
    );
    check!(w.group().size() == world.size(), "group");
    check!(
        w.rank() == world.rank() && w.size() == world.size(),
        "rank/size"
    );
    must("free", w.free());
    let mut m = [7u16; 3];
    let w = must("create", world.window_create(&mut m));
    check!(
        w.flavor() == Flavor::Create && w.size_bytes() == 6 && w.disp_unit() == 2,
        "create attributes"
    );
    must("free", w.free());
}

/// Windows spanning hosts: everything `ops`, `counters` and `dynamic` check, on the flavors
/// that do not need one host, then [`large`].
fn multihost(world: &Communicator) {
    expect(
        "allocate_shared across hosts",
        world.window_allocate_shared::<u64>(4),
        ErrorClass::UnsupportedOperation,
    );
    for flavor in [Flavor::Allocate, Flavor::Create, Flavor::Dynamic] {
        for sync in SYNCS {
            ops(world, flavor, sync);
        }
        // Fewer rounds: each is a message round trip to the other hosts.
        counters(world, flavor, 100);
    }
    dynamic(world);
    large(world);
}

/// Byte `i` of rank `r`'s pattern in [`large`].
fn pattern(r: i32, i: usize) -> u8 {
    ((i * 7 + r as usize * 13) % 251) as u8
}

/// Put and get of more bytes than one active message carries, every byte checked; an
/// accumulate and a get_accumulate of more elements than one carries; a put outside a
/// window on another host.
fn large(world: &Communicator) {
    let me = world.rank();
    let n = world.size();
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    const L: usize = 600_003;
    let win = must("allocate", world.window_allocate::<u8>(L));
    let data: Vec<u8> = (0..L).map(|i| pattern(me, i)).collect();
    must("fence", win.fence(0));
    must("put", win.put(&data[..], right, 0));
    must("fence", win.fence(0));
    let l = must("local", win.local::<u8>());
    let bad = (0..L).find(|&i| l[i] != pattern(left, i));
    check!(bad.is_none(), "large put: byte {bad:?} differs");
    let mut got = vec![0u8; L];
    must("get", win.get(&mut got[..], left, 0));
    must("fence", win.fence(0));
    let ll = (left + n - 1) % n;
    let bad = (0..L).find(|&i| got[i] != pattern(ll, i));
    check!(bad.is_none(), "large get: byte {bad:?} differs");
    must("fence", win.fence(mode::NOSUCCEED));
    must("free", win.free());

    const M: usize = 70_000;
    let win = must("allocate", world.window_allocate::<u64>(M));
    let vals: Vec<u64> = (0..M).map(|i| i as u64 + me as u64).collect();
    must("fence", win.fence(0));
    must("accumulate", win.accumulate(&vals[..], 0, 0, &Op::Sum));
    must("fence", win.fence(0));
    let n64 = n as u64;
    let want = |i: usize| n64 * i as u64 + n64 * (n64 - 1) / 2;
    let mut now = vec![0u64; M];
    must(
        "get_accumulate",
        win.get_accumulate(&vec![0u64; M][..], &mut now[..], 0, 0, &Op::NoOp),
    );
    must("fence", win.fence(mode::NOSUCCEED));
    let bad = (0..M).find(|&i| now[i] != want(i));
    check!(bad.is_none(), "large accumulate: element {bad:?} differs");
    must("lock", win.lock(LockType::Exclusive, right, 0));
    expect(
        "put outside the window",
        win.put(&[1u64, 2][..], right, M as i64 - 1),
        ErrorClass::RmaRange,
    );
    must("unlock", win.unlock(right));
    must("barrier", world.barrier());
    must("free", win.free());
}

fn main() {
    let universe = must("init", oxmpi::init());
    let world = universe.world();
    if std::env::args().nth(1).as_deref() == Some("multihost") {
        multihost(&world);
        println!("rank {} passed", world.rank());
        return;
    }
    attributes(&world);
    for flavor in [
        Flavor::Allocate,
        Flavor::Shared,
        Flavor::Create,
        Flavor::Dynamic,
    ] {
        for sync in SYNCS {
            ops(&world, flavor, sync);
        }
        counters(&world, flavor, 500);
    }
    mixed(&world, Flavor::Allocate);
    mixed(&world, Flavor::Shared);
    cas_mixed(&world, Flavor::Allocate);
    cas_mixed(&world, Flavor::Shared);
    flush_orders_puts(&world, Flavor::Allocate);
    flush_orders_puts(&world, Flavor::Shared);
    shared(&world);
    dynamic(&world);
    errors(&world);
    println!("rank {} passed", world.rank());
}
