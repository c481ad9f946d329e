//! Point-to-point semantics beyond plain send/receive, checked between ranks 0 and 1 (other
//! ranks only take part in the ring steps): buffered, ready and synchronous sends, probes and
//! matched probes, sendrecv(-replace), wait/test any/some/all, persistent requests, cancel,
//! truncation and every bad argument's error class. Exits non-zero on the first failure.

use oxmpi::request::{test_all, wait_all, wait_any, wait_some};
use oxmpi::{ErrorClass, Source, Tag};
use oxmpi_tests::check;

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, np) = (world.rank(), world.size());
    assert!(np >= 2, "needs 2 ranks");
    let peer = 1 - me.min(1);
    let active = me < 2;

    // Bad arguments return the right class and send nothing.
    let e = world.send(&1u8, np, 0).unwrap_err();
    check!(e.class() == ErrorClass::Rank, "{e}");
    let e = world.send(&1u8, -7, 0).unwrap_err();
    check!(e.class() == ErrorClass::Rank, "{e}");
    let e = world.send(&1u8, 0, -1).unwrap_err();
    check!(e.class() == ErrorClass::Tag, "{e}");
    let mut x = 0u8;
    let e = world
        .receive_into(&mut x, Source::Rank(np), Tag::Any)
        .unwrap_err();
    check!(e.class() == ErrorClass::Rank, "{e}");
    let e = world
        .receive_into(&mut x, Source::Any, Tag::Is(-5))
        .unwrap_err();
    check!(e.class() == ErrorClass::Tag, "{e}");
    let e = world.buffered_send(&1u8, 0, 0).unwrap_err();
    check!(e.class() == ErrorClass::Buffer, "bsend without buffer: {e}");
    check!(oxmpi::TAG_UB == i32::MAX - 2, "tag bound");
    for bad in [oxmpi::TAG_UB + 1, i32::MAX] {
        let e = world.send(&1u8, 0, bad).unwrap_err();
        check!(e.class() == ErrorClass::Tag, "send tag {bad}: {e}");
        let e = world
            .receive_into(&mut x, Source::Any, Tag::Is(bad))
            .unwrap_err();
        check!(e.class() == ErrorClass::Tag, "receive tag {bad}: {e}");
    }

    // PROC_NULL: sends vanish, receives complete empty at once.
    world
        .send(&[1u8; 4][..], oxmpi::PROC_NULL, 3)
        .expect("send to PROC_NULL");
    let st = world
        .receive_into(&mut x, Source::Null, Tag::Any)
        .expect("recv from PROC_NULL");
    check!(
        st.source() == oxmpi::PROC_NULL && st.count() == Some(0),
        "{st:?}"
    );

    if active {
        // Truncation: an error, and the buffer holds the first bytes.
        if me == 0 {
            world
                .send(&(0..100u8).collect::<Vec<_>>()[..], 1, 9)
                .unwrap();
        } else {
            let mut small = [0u8; 50];
            let e = world.receive_into(&mut small[..], 0, 9).unwrap_err();
            check!(e.class() == ErrorClass::Truncate, "{e}");
            check!(
                small.iter().enumerate().all(|(i, &b)| b == i as u8),
                "kept prefix"
            );
        }

        // bool and char travel as their bytes and are checked on receipt.
        if me == 0 {
            world.send(&[true, false, true][..], 1, 11).unwrap();
            world.send(&['h', 'é', '😀'][..], 1, 12).unwrap();
            world.send(&[0u8, 7, 1][..], 1, 13).unwrap();
        } else {
            let mut flags = [false; 3];
            world.receive_into_checked(&mut flags[..], 0, 11).unwrap();
            check!(flags == [true, false, true], "bools {flags:?}");
            let mut text = ['\0'; 3];
            world.receive_into_checked(&mut text[..], 0, 12).unwrap();
            check!(text == ['h', 'é', '😀'], "chars {text:?}");
            let mut bad = [false; 3];
            let e = world.receive_into_checked(&mut bad[..], 0, 13).unwrap_err();
            check!(
                e.class() == ErrorClass::Type && bad == [false; 3],
                "invalid bool: {e}"
            );
        }

        // Buffered sends return at once and are all delivered; detach waits for them.
        if me == 0 {
            universe
                .buffer_attach(vec![0u8; 64 * 1024].into_boxed_slice())
                .unwrap();
            for i in 0..20u32 {
                world.buffered_send(&[i; 100][..], 1, 20).unwrap();
            }
            let extra = [99u32; 4];
            oxmpi::scope(|s| {
                let r = world.immediate_buffered_send(s, &extra[..], 1, 22).unwrap();
                check!(
                    r.wait().unwrap().count() == Some(4),
                    "ibsend completes at once"
                );
                world
                    .immediate_ready_send(s, &extra[..], 1, 23)
                    .unwrap()
                    .wait()
                    .unwrap();
            });
            let e = world
                .buffered_send(&vec![0u8; 128 * 1024][..], 1, 21)
                .unwrap_err();
            check!(e.class() == ErrorClass::Buffer, "oversized bsend: {e}");
            check!(
                universe.buffer_detach().unwrap().len() == 64 * 1024,
                "detach size"
            );
        } else {
            for i in 0..20u32 {
                let mut v = [0u32; 100];
                let st = world.receive_into(&mut v[..], 0, 20).unwrap();
                check!(
                    v.iter().all(|&k| k == i) && st.count() == Some(100),
                    "bsend {i}"
                );
            }
            for tag in [22, 23] {
                let mut v = [0u32; 4];
                world.receive_into(&mut v[..], 0, tag).unwrap();
                check!(v == [99; 4], "ibsend/irsend data");
            }
        }

        // Synchronous send cannot complete before its receive is posted.
        if me == 0 {
            let data = [7u64; 3];
            oxmpi::scope(|s| {
                let mut r = world
                    .immediate_synchronous_send(s, &data[..], 1, 30)
                    .unwrap();
                for _ in 0..100 {
                    check!(
                        r.test().is_none(),
                        "issend completed before the receive was posted"
                    );
                }
                world.send(&1u8, 1, 31).unwrap();
                r.wait().unwrap();
            });
        } else {
            let mut go = 0u8;
            world.receive_into(&mut go, 0, 31).unwrap();
            let mut v = [0u64; 3];
            world.receive_into(&mut v[..], 0, 30).unwrap();
            check!(v == [7; 3], "ssend data");
        }

        // Probe, then matched probes taken out of order.
        if me == 0 {
            world.send(&[5i32; 10][..], 1, 5).unwrap();
            world.send(&[6i32; 3][..], 1, 6).unwrap();
            world.ready_send(&[8i16; 2][..], 1, 8).unwrap_or(());
        } else {
            let st = world.probe::<i32>(0, 5).unwrap();
            check!(
                st.bytes() == 40 && st.count() == Some(10) && st.tag() == 5 && st.source() == 0,
                "probe {st:?}"
            );
            let (m6, st6) = world.matched_probe::<i32>(Source::Any, Tag::Is(6)).unwrap();
            check!(st6.bytes() == 12 && st6.count() == Some(3), "mprobe status");
            check!(
                world
                    .immediate_matched_probe::<i32>(0, 6)
                    .unwrap()
                    .is_none(),
                "message 6 was taken"
            );
            let (m5, _) = world.matched_probe::<i32>(0, Tag::Any).unwrap();
            let mut v6 = [0i32; 3];
            m6.matched_receive_into(&mut v6[..]).unwrap();
            let mut v5 = [0i32; 10];
            oxmpi::scope(|s| {
                m5.immediate_matched_receive_into(s, &mut v5[..])
                    .wait()
                    .unwrap()
            });
            check!(v5 == [5; 10] && v6 == [6; 3], "matched receives");
            let (v8, st8) = world.receive_vec::<i16>(0, 8).unwrap();
            check!(v8 == vec![8i16; 2] && st8.count() == Some(2), "receive_vec");
            let (_, st) = world.matched_probe::<u8>(Source::Null, Tag::Any).unwrap();
            check!(st.source() == oxmpi::PROC_NULL, "mprobe PROC_NULL");
        }

        // wait_any / wait_some / test_all over a mix of requests.
        if me == 0 {
            for t in 40..46 {
                world.send(&(t as u32), 1, t).unwrap();
            }
        } else {
            let mut bufs = [0u32; 6];
            oxmpi::scope(|s| {
                let mut reqs: Vec<_> = bufs
                    .iter_mut()
                    .enumerate()
                    .map(|(i, b)| {
                        world
                            .immediate_receive_into(s, b, 0, 40 + i as i32)
                            .unwrap()
                    })
                    .collect();
                let (_, first) = wait_any(&mut reqs).unwrap();
                check!(first.is_ok(), "wait_any");
                let some = wait_some(&mut reqs);
                check!(!some.is_empty(), "wait_some");
                loop {
                    if let Some(all) = test_all(&mut reqs) {
                        check!(all.is_ok(), "test_all");
                        break;
                    }
                }
                check!(reqs.is_empty(), "all collected");
            });
            check!(
                bufs.iter().enumerate().all(|(i, &b)| b == 40 + i as u32),
                "{bufs:?}"
            );
        }

        // Persistent requests, started many times.
        let out = [me as u64 + 1000; 4];
        let mut inp = [0u64; 4];
        oxmpi::scope(|s| {
            let mut rreq = world.receive_init(s, &mut inp[..], peer, 50).unwrap();
            let mut sreq = world.send_init(s, &out[..], peer, 50).unwrap();
            for _ in 0..50 {
                rreq.start().unwrap();
                sreq.start().unwrap();
                check!(sreq.start().is_err(), "double start");
                sreq.wait().unwrap();
                let st = rreq.wait().unwrap();
                check!(
                    !rreq.is_active() && st.count() == Some(4),
                    "inactive after wait"
                );
            }
            check!(rreq.wait().is_err(), "wait on an inactive request");
        });
        check!(inp == [peer as u64 + 1000; 4], "persistent data {inp:?}");

        // Cancel a receive that nothing matches.
        let mut b = 0u8;
        oxmpi::scope(|s| {
            let r = world.immediate_receive_into(s, &mut b, peer, 999).unwrap();
            check!(r.cancel(), "cancel pending receive");
            let st = r.wait().unwrap();
            check!(st.cancelled(), "status says cancelled");
        });

        // Messages to oneself, blocking and synchronous.
        let mut back = [0u16; 5];
        oxmpi::scope(|s| {
            let r = world
                .immediate_receive_into(s, &mut back[..], me, 60)
                .unwrap();
            world.synchronous_send(&[me as u16; 5][..], me, 60).unwrap();
            r.wait().unwrap();
        });
        check!(back == [me as u16; 5], "self ssend");
    }

    // sendrecv_replace around a ring of every rank.
    let mut v = [me as i64; 8];
    let next = (me + 1) % np;
    let prev = (me + np - 1) % np;
    world
        .send_receive_replace_into(&mut v[..], next, 70, prev, 70)
        .unwrap();
    check!(v == [prev as i64; 8], "sendrecv_replace {v:?}");
    let a = [1u8; 3];
    let reqs_ok = oxmpi::scope(|s| {
        let r = world.immediate_send(s, &a[..], me, 80).unwrap();
        let mut b = [0u8; 3];
        let st = world.receive_into(&mut b[..], me, 80).unwrap();
        wait_all(vec![r]).is_ok() && st.count() == Some(3) && b == a
    });
    check!(reqs_ok, "self isend + receive + wait_all");
    println!("rank {me}: semantics OK");
    universe.finalize().unwrap();
}
