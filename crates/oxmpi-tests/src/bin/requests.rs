//! The request layer: requests as plain ids (test, wait, get_status, cancel, free while active,
//! persistent requests of every send mode with start_all, completion of many with each
//! request's own error), and regressions of the typed API: a tested request passed to
//! wait_any, wait_all's per-request errors, probes counting elements, send_receive returning
//! with its receive still posted, a scope resuming a panic before its leaked request
//! completed (ranks 0 and 1), and a scope of thousands of requests, half of them leaked. Exits non-zero on the first failure.

use std::panic::{catch_unwind, AssertUnwindSafe};

use oxmpi::handle::request::{empty_status, AnyDone, RequestId, Requests, SendMode};
use oxmpi::request::{test_any, wait_all, wait_any, wait_some};
use oxmpi::{Communicator, ErrorClass, Source, Status, Tag};
use oxmpi_tests::check;

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let me = world.rank();
    typed_regressions(&world);
    scope_with_thousands_of_requests(&world);
    handle_layer(&universe, &world);
    if world.size() >= 2 && me < 2 {
        wait_all_in_order_whatever_finishes_first(&world);
        scope_waits_before_resuming_a_panic(&world);
    }
    println!("rank {me}: requests OK");
    universe.finalize().unwrap();
}

/// wait_all over receives that finish out of order (ranks 0 and 1): the second and third
/// have arrived while the first waits for a message rank 1 sends only after rank 0 signals
/// that it is waiting; each status and each byte lands at its own request.
fn wait_all_in_order_whatever_finishes_first(world: &Communicator) {
    let me = world.rank();
    if me == 1 {
        world.send(&[2u32; 3][..], 0, 31).unwrap();
        world.send(&[3u32; 5][..], 0, 32).unwrap();
        world.receive_into(&mut [0u8; 1][..], 0, 33).unwrap();
        world.send(&[1u32; 2][..], 0, 30).unwrap();
        return;
    }
    let (mut a, mut b, mut c) = ([0u32; 2], [0u32; 3], [0u32; 5]);
    let st = oxmpi::scope(|s| {
        let ra = world.immediate_receive_into(s, &mut a[..], 1, 30).unwrap();
        let rb = world.immediate_receive_into(s, &mut b[..], 1, 31).unwrap();
        let rc = world.immediate_receive_into(s, &mut c[..], 1, 32).unwrap();
        // Rank 1 sends the first request's message only after this one.
        world.send(&[0u8][..], 1, 33).unwrap();
        wait_all(vec![ra, rb, rc]).unwrap()
    });
    let counts: Vec<_> = st.iter().map(|s| (s.count(), s.tag())).collect();
    check!(
        counts == [(Some(2), 30), (Some(3), 31), (Some(5), 32)],
        "{counts:?}"
    );
    check!(
        a == [1; 2] && b == [2; 3] && c == [3; 5],
        "{a:?} {b:?} {c:?}"
    );
}

/// A scope whose list of requests grows past its first room and its pruning threshold: half
/// of the receives are waited for, the other half leaked and completed by the scope's end;
/// every byte of every message arrives.
fn scope_with_thousands_of_requests(world: &Communicator) {
    const N: usize = 2500;
    let me = world.rank();
    let mut got = vec![[0u8; 8]; N];
    let word = |i: usize| ((i as u64) << 8 | me as u64).to_le_bytes();
    oxmpi::scope(|s| {
        let mut reqs: Vec<_> = got
            .iter_mut()
            .enumerate()
            .map(|(i, b)| {
                world
                    .immediate_receive_into(s, &mut b[..], me, (i % 7) as i32)
                    .unwrap()
            })
            .collect();
        for i in 0..N {
            world.send(&word(i)[..], me, (i % 7) as i32).unwrap();
        }
        let leaked = reqs.split_off(N / 2);
        for r in reqs {
            check!(r.wait().unwrap().count() == Some(8), "waited receive");
        }
        std::mem::forget(leaked);
    });
    for (i, b) in got.iter().enumerate() {
        check!(*b == word(i), "message {i}: {b:?}");
    }
}

fn typed_regressions(world: &Communicator) {
    let me = world.rank();

    // A request completed by `test` is inactive: wait_any passes over it instead of spinning.
    let a = [1u8; 4];
    let (mut b, mut c) = ([0u8; 4], [0u8; 4]);
    oxmpi::scope(|s| {
        let mut r = world.immediate_receive_into(s, &mut b[..], me, 11).unwrap();
        world.send(&a[..], me, 11).unwrap();
        let st = loop {
            if let Some(res) = r.test() {
                break res.unwrap();
            }
        };
        check!(st.count() == Some(4) && r.is_inactive(), "test {st:?}");
        let e = r.test().unwrap().unwrap_err();
        check!(e.class() == ErrorClass::Request, "second test: {e}");
        let mut v = vec![r];
        check!(wait_any(&mut v).is_none(), "wait_any over a tested request");
        check!(
            wait_some(&mut v).is_empty(),
            "wait_some over a tested request"
        );
        check!(test_any(&mut v).is_none(), "test_any over a tested request");
        // Beside an active one, that one is found.
        v.push(world.immediate_receive_into(s, &mut c[..], me, 12).unwrap());
        world.send(&a[..], me, 12).unwrap();
        let (i, res) = wait_any(&mut v).unwrap();
        check!(i == 1 && res.is_ok() && v.len() == 1, "wait_any found {i}");
    });
    check!(b == a && c == a, "received");

    // wait_all reports each request's own error; the class is never flattened.
    let (mut ok, mut short) = ([0u16; 4], [0u16; 1]);
    let res = oxmpi::scope(|s| {
        let r1 = world
            .immediate_receive_into(s, &mut ok[..], me, 13)
            .unwrap();
        let r2 = world
            .immediate_receive_into(s, &mut short[..], me, 14)
            .unwrap();
        world.send(&[7u16; 4][..], me, 13).unwrap();
        world.send(&[8u16; 2][..], me, 14).unwrap();
        wait_all(vec![r1, r2])
    });
    let err = res.unwrap_err();
    check!(err.results.len() == 2, "{err}");
    check!(
        matches!(&err.results[0], Ok(st) if st.count() == Some(4)),
        "first request succeeded: {err}"
    );
    check!(
        matches!(&err.results[1], Err(e) if e.class() == ErrorClass::Truncate),
        "second request truncated: {err}"
    );
    let e: oxmpi::Error = err.into();
    check!(e.class() == ErrorClass::InStatus, "{e}");
    check!(ok == [7; 4] && short == [8], "data");

    // A probe's status counts elements of the type asked for.
    let three = [5i32; 3];
    oxmpi::scope(|s| {
        let r = world.immediate_send(s, &three[..], me, 15).unwrap();
        let st = world.probe::<i32>(me, 15).unwrap();
        check!(st.count() == Some(3) && st.bytes() == 12, "probe {st:?}");
        let st = world.immediate_probe::<u64>(me, 15).unwrap().unwrap();
        check!(st.count().is_none(), "12 bytes are no whole u64s: {st:?}");
        let (m, st) = world.matched_probe::<i32>(me, 15).unwrap();
        check!(st.count() == Some(3), "matched probe {st:?}");
        let mut got = [0i32; 3];
        let st = m.matched_receive_into(&mut got[..]).unwrap();
        check!(got == three && st.count() == Some(3), "matched receive");
        r.wait().unwrap();
    });

    // send_receive with a send that cannot start returns with no receive left posted: the
    // next receive of that tag gets the message (before the fix the call never returned).
    let mut y = [0u8; 2];
    let e = world
        .send_receive_into(&[1u8][..], world.size(), 0, &mut y[..], me, 16)
        .unwrap_err();
    check!(e.class() == ErrorClass::Rank, "{e}");
    let e = world
        .send_receive_into(&[1u8][..], me, -4, &mut y[..], me, 16)
        .unwrap_err();
    check!(e.class() == ErrorClass::Tag, "{e}");
    let mut z = [0u8; 2];
    oxmpi::scope(|s| {
        let r = world.immediate_send(s, &[3u8, 4][..], me, 16).unwrap();
        world.receive_into(&mut z[..], me, 16).unwrap();
        r.wait().unwrap();
    });
    check!(
        z == [3, 4] && y == [0, 0],
        "receive after a failed send_receive"
    );
    // And a working one, with the count in elements.
    let mut w = [0u32; 2];
    let st = world
        .send_receive_into(&[9u32, 10][..], me, 17, &mut w[..], me, 17)
        .unwrap();
    check!(w == [9, 10] && st.count() == Some(2), "send_receive {st:?}");
}

fn handle_layer<L: oxmpi::ThreadLevel>(universe: &oxmpi::Universe<L>, world: &Communicator<L>) {
    let me = world.rank();
    let mut reqs = Requests::new(world);
    let data = [1u8, 2, 3, 4];
    let mut got = [0u8; 4];

    // Test until done; get_status leaves the request to collect; completion makes the id NULL.
    // SAFETY: `got` and `data` outlive both requests, which are completed below.
    let (mut r, mut s) = unsafe {
        (
            reqs.irecv(world, got.as_mut_ptr(), 4, Source::Rank(me), Tag::Is(30))
                .unwrap(),
            reqs.isend(world, SendMode::Standard, data.as_ptr(), 4, me, 30)
                .unwrap(),
        )
    };
    let peeked = loop {
        if let Some(st) = reqs.get_status(r).unwrap() {
            break st;
        }
    };
    check!(!r.is_null() && peeked.count() == Some(4), "{peeked:?}");
    let again = reqs.get_status(r).unwrap();
    check!(again == Some(peeked), "get_status does not free");
    let st = loop {
        if let Some(st) = reqs.test(&mut r).unwrap() {
            break st;
        }
    };
    check!(st == peeked && r.is_null() && got == data, "test {st:?}");
    let st = reqs.wait(&mut s).unwrap();
    check!(st.error().is_none() && s.is_null(), "send {st:?}");
    let st = reqs.wait(&mut r).unwrap();
    check!(
        st == empty_status() && st.count() == Some(0),
        "a null request gives the empty status: {st:?}"
    );

    // A stale id is an error of class Request, not a hang.
    let mut stale = RequestId::from_raw(peeked_id_raw(&mut reqs, world));
    let e = reqs.wait(&mut stale).unwrap_err();
    check!(e.class() == ErrorClass::Request, "{e}");
    let e = reqs.get_status(stale).unwrap_err();
    check!(e.class() == ErrorClass::Request, "{e}");
    let e = reqs.cancel(stale).unwrap_err();
    check!(e.class() == ErrorClass::Request, "{e}");
    let e = reqs.start(stale).unwrap_err();
    check!(
        e.class() == ErrorClass::Request,
        "start of a nonpersistent id: {e}"
    );

    // A send that finished as it started (to oneself, small) has the shared id SENT: each
    // call treats it as a complete send, and it never goes stale.
    let x = [1u8, 2];
    // SAFETY: `x` outlives the send, which completed as it started.
    let mut a = unsafe {
        reqs.isend(world, SendMode::Standard, x.as_ptr(), 2, me, 34)
            .unwrap()
    };
    check!(
        a == RequestId::SENT,
        "a small send finishes as it starts: {a:?}"
    );
    let mut b = a;
    check!(
        reqs.get_status(a)
            .unwrap()
            .is_some_and(|st| st.error().is_none()),
        "get_status of a finished send"
    );
    reqs.cancel(a).unwrap();
    let st = reqs.wait(&mut a).unwrap();
    check!(
        a.is_null() && !st.cancelled() && st.error().is_none(),
        "wait of a finished send: {st:?}"
    );
    reqs.free(&mut b).unwrap();
    check!(b.is_null(), "free of a finished send");
    let mut y = [0u8; 2];
    world.receive_into(&mut y[..], me, 34).unwrap();
    check!(y == x, "the finished send delivered {y:?}");

    // Free of an active receive: the engine completes and frees it by itself.
    let mut late = [0u8; 3];
    // Every access goes through this one pointer while the engine may write.
    let lp: *mut [u8; 3] = &mut late;
    // SAFETY: `late` lives to the end of this function, past the receive's completion, which
    // is awaited below by watching the buffer.
    let mut f = unsafe {
        reqs.irecv(world, lp.cast(), 3, Source::Rank(me), Tag::Is(31))
            .unwrap()
    };
    reqs.free(&mut f).unwrap();
    check!(f.is_null(), "freed id is NULL");
    let e = reqs.free(&mut f).unwrap_err();
    check!(e.class() == ErrorClass::Request, "free of NULL: {e}");
    world.send(&[5u8, 6, 7][..], me, 31).unwrap();
    let mut idle = [RequestId::NULL];
    // SAFETY: `lp` is valid; the engine writes through it only inside our own calls on
    // this thread, so reading between them races with nothing.
    while unsafe { lp.read_volatile() } != [5, 6, 7] {
        check!(
            reqs.test_any(&mut idle) == AnyDone::Inactive,
            "test_any over NULL ids"
        );
    }

    // Cancel a receive nobody sends to.
    let mut never = [0u8; 1];
    // SAFETY: `never` outlives the request, which is completed below.
    let mut c = unsafe {
        reqs.irecv(world, never.as_mut_ptr(), 1, Source::Rank(me), Tag::Is(32))
            .unwrap()
    };
    reqs.cancel(c).unwrap();
    let st = reqs.wait(&mut c).unwrap();
    check!(st.cancelled() && c.is_null(), "cancelled {st:?}");

    // Persistent requests of every send mode, with their receives, started together.
    universe
        .buffer_attach(vec![0u8; 4096].into_boxed_slice())
        .unwrap();
    let out: [[u32; 2]; 4] = [[1, 2], [3, 4], [5, 6], [7, 8]];
    let mut inb = [[0u32; 2]; 4];
    // Every access goes through this one pointer while the requests exist.
    let ip: *mut [[u32; 2]; 4] = &mut inb;
    let modes = [
        SendMode::Standard,
        SendMode::Synchronous,
        SendMode::Ready,
        SendMode::Buffered,
    ];
    let mut ids = Vec::new();
    // SAFETY: `inb` and `out` outlive every start of these requests; each round is completed
    // before the next and all are freed below.
    unsafe {
        for k in 0..4 {
            let p = ip.cast::<[u32; 2]>().add(k).cast::<u8>();
            ids.push(
                reqs.recv_init(world, p, 8, Source::Rank(me), Tag::Is(40 + k as i32))
                    .unwrap(),
            );
        }
        for (k, (o, m)) in out.iter().zip(modes).enumerate() {
            ids.push(
                reqs.send_init(world, m, o.as_ptr().cast(), 8, me, 40 + k as i32)
                    .unwrap(),
            );
        }
    }
    for round in 0..3 {
        // SAFETY: no request is active between rounds, so nothing else touches `inb`.
        unsafe { ip.write([[0; 2]; 4]) };
        // Receives first: the ready-mode send needs its receive posted.
        reqs.start_all(&ids).unwrap();
        let e = reqs.start(ids[0]).unwrap_err();
        check!(
            e.class() == ErrorClass::Request,
            "start of an active request: {e}"
        );
        let mut st = vec![Status::default(); ids.len()];
        reqs.wait_all(&mut ids, &mut st).unwrap();
        check!(
            ids.iter()
                .all(|id| !id.is_null() && reqs.is_persistent(*id)),
            "persistent ids stay"
        );
        // SAFETY: as above: the round is complete.
        let got = unsafe { ip.read() };
        check!(got == out, "round {round}: {got:?}");
        check!(st[..4].iter().all(|s| s.count() == Some(8)), "{st:?}");
        // Inactive now: test_any finds nothing active, test gives the empty status.
        check!(reqs.test_any(&mut ids) == AnyDone::Inactive, "inactive");
        let mut done = Vec::new();
        check!(!reqs.test_some(&mut ids, &mut done).unwrap(), "inactive");
    }
    for id in ids.iter_mut() {
        reqs.free(id).unwrap();
    }
    // Detach waits until the buffered sends have drained, and gives the region back.
    check!(
        universe.buffer_detach().map(|b| b.len()) == Ok(4096),
        "buffer detached"
    );

    // Several at once, each with its own error.
    let (mut fine, mut small) = ([0u8; 4], [0u8; 2]);
    // SAFETY: the buffers outlive the requests, which wait_some/wait_all complete.
    let mut ids = unsafe {
        [
            reqs.irecv(world, fine.as_mut_ptr(), 4, Source::Rank(me), Tag::Is(50))
                .unwrap(),
            RequestId::NULL,
            reqs.irecv(world, small.as_mut_ptr(), 2, Source::Rank(me), Tag::Is(51))
                .unwrap(),
        ]
    };
    world.send(&[1u8; 4][..], me, 50).unwrap();
    world.send(&[2u8; 4][..], me, 51).unwrap();
    let mut st = [Status::default(); 3];
    let e = reqs.wait_all(&mut ids, &mut st).unwrap_err();
    check!(e.class() == ErrorClass::InStatus, "{e}");
    check!(st[0].error().is_none() && st[1].error().is_none(), "{st:?}");
    check!(st[2].error() == Some(ErrorClass::Truncate), "{st:?}");
    check!(fine == [1; 4] && small == [2; 2], "data");
    check!(ids.iter().all(|id| id.is_null()), "all completed");
    let mut done = Vec::new();
    check!(!reqs.wait_some(&mut ids, &mut done).unwrap(), "all NULL");
    check!(reqs.wait_any(&mut ids).is_none(), "all NULL");

    // wait_some and wait_any over live ids.
    let (mut p, mut q) = ([0u8; 1], [0u8; 1]);
    // SAFETY: as above.
    let mut ids = unsafe {
        [
            reqs.irecv(world, p.as_mut_ptr(), 1, Source::Rank(me), Tag::Is(52))
                .unwrap(),
            reqs.irecv(world, q.as_mut_ptr(), 1, Source::Rank(me), Tag::Is(53))
                .unwrap(),
        ]
    };
    world.send(&[4u8][..], me, 53).unwrap();
    let mut done = Vec::new();
    check!(reqs.wait_some(&mut ids, &mut done).unwrap(), "one active");
    check!(
        done.len() == 1 && done[0].0 == 1 && ids[1].is_null() && !ids[0].is_null(),
        "{done:?}"
    );
    world.send(&[3u8][..], me, 52).unwrap();
    let (i, st) = reqs.wait_any(&mut ids).unwrap();
    check!(
        i == 0 && st.count() == Some(1) && p == [3] && q == [4],
        "{st:?}"
    );
}

/// Returns the raw id of a request that has been completed and freed.
fn peeked_id_raw<L: oxmpi::ThreadLevel>(reqs: &mut Requests<L>, world: &Communicator<L>) -> u64 {
    let me = world.rank();
    // A receive posted before its message has an engine slot of its own (a send that
    // completes as it starts shares `RequestId::SENT`, which never goes stale).
    let mut y = [0u8; 1];
    // SAFETY: `y` outlives the receive, which is completed here.
    let mut id = unsafe {
        reqs.irecv(world, y.as_mut_ptr(), 1, Source::Rank(me), Tag::Is(33))
            .unwrap()
    };
    let raw = id.to_raw();
    world.send(&[7u8][..], me, 33).unwrap();
    reqs.wait(&mut id).unwrap();
    assert_eq!(y, [7], "the receive completed");
    raw
}

/// A leaked receive in a scope that panics: the scope must complete it before the panic
/// leaves, so the buffer holds the data as soon as catch_unwind returns. (Before the fix the
/// receive stayed posted into memory the caller could reuse or free.)
fn scope_waits_before_resuming_a_panic(world: &Communicator) {
    let me = world.rank();
    if me == 0 {
        std::panic::set_hook(Box::new(|_| {}));
        let mut buf = [0u8; 16];
        let r = catch_unwind(AssertUnwindSafe(|| {
            oxmpi::scope(|s| {
                let req = world
                    .immediate_receive_into(s, &mut buf[..], 1, 20)
                    .unwrap();
                std::mem::forget(req);
                // Only now may rank 1 send; nothing progresses our engine after the panic
                // unless the scope does.
                world.send(&[1u8][..], 1, 21).unwrap();
                panic!("boom");
            })
        }));
        let _ = std::panic::take_hook();
        check!(r.is_err(), "the panic is resumed");
        check!(
            buf == [7u8; 16],
            "the scope resumed the panic before its receive completed: {buf:?}"
        );
        world.send(&[2u8][..], 1, 22).unwrap();
    } else {
        let mut go = [0u8; 1];
        world.receive_into(&mut go[..], 0, 21).unwrap();
        world.send(&[7u8; 16][..], 0, 20).unwrap();
        world.receive_into(&mut go[..], 0, 22).unwrap();
        check!(go == [2], "ack");
    }
}
