//! The Rust API's fixes, one mode per argument:
//! - `receive_vec`: under `Multiple`, four threads of rank 1 call `receive_vec` on the same
//!   source while rank 0 sends messages of many lengths; each message must arrive whole, to
//!   exactly one thread (a probe followed by a separate receive let another thread take the
//!   probed message).
//! - `message_drop`: a matched message dropped without being received is discarded, and its
//!   sender (rendezvous, synchronous) completes; the next message is received normally.
//! - `cancel_guard`: a guarded receive that never matches is cancelled when the guard drops.
//! - `panic_recv`: rank 1 panics with a receive pending that nobody will send to: the receive
//!   is cancelled and the panic ends the job (rank 0 waits forever otherwise).
//! - `panic_send`: rank 1 panics with a large send pending that nobody will receive: the job
//!   ends after the grace time instead of hanging.
//! - `future_wake`: a receive future polled before its message exists is woken by the
//!   progress thread once the message arrives (run with `OXMPI_ASYNC_SPIN=1`).
//! - `future_drop`: a receive future dropped before its message exists is cancelled; the
//!   message then goes to the next receive.
//!
//! Prints `api_fixes MODE OK` per rank; exits non-zero on a failure.

use oxmpi::{Communicator, Multiple, Tag};
use oxmpi_tests::{check, must};

const PER_THREAD: usize = 200;
const THREADS: usize = 4;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let universe = oxmpi::init_with::<Multiple>().expect("init");
    let world = universe.world();
    check!(world.size() >= 2, "needs two ranks");
    match mode.as_str() {
        "receive_vec" => receive_vec(&world),
        "message_drop" => message_drop(&world),
        "cancel_guard" => cancel_guard(&world),
        "panic_recv" => panic_with_pending(&world, false),
        "panic_send" => panic_with_pending(&world, true),
        "future_wake" => future_wake(&world),
        "future_drop" => future_drop(&world),
        m => {
            eprintln!("unknown mode {m:?}");
            std::process::exit(2);
        }
    }
    println!("rank {}: api_fixes {mode} OK", world.rank());
    universe.finalize().expect("finalize");
}

/// Message `i` holds `len(i)` copies of `len(i)`.
fn len(i: usize) -> usize {
    1 + (i * 37) % 300
}

fn receive_vec(world: &Communicator<Multiple>) {
    let total = PER_THREAD * THREADS;
    match world.rank() {
        0 => {
            for i in 0..total {
                let v = vec![len(i) as u32; len(i)];
                must("send", world.send(&v[..], 1, (i % 3) as i32));
            }
        }
        1 => {
            let got: Vec<Vec<usize>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..THREADS)
                    .map(|_| {
                        s.spawn(|| {
                            (0..PER_THREAD)
                                .map(|_| {
                                    let (v, st) =
                                        must("receive_vec", world.receive_vec::<u32>(0, Tag::Any));
                                    check!(
                                        !v.is_empty()
                                            && v.iter().all(|&x| x as usize == v.len())
                                            && st.count() == Some(v.len() as u64),
                                        "a message arrived torn: {} elements, first {:?}, {st:?}",
                                        v.len(),
                                        v.first()
                                    );
                                    v.len()
                                })
                                .collect()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut lens: Vec<usize> = got.into_iter().flatten().collect();
            let mut want: Vec<usize> = (0..total).map(len).collect();
            lens.sort_unstable();
            want.sort_unstable();
            check!(
                lens == want,
                "the threads did not receive each message once"
            );
        }
        _ => {}
    }
}

fn message_drop(world: &Communicator<Multiple>) {
    let big = vec![7u8; 4 << 20];
    match world.rank() {
        0 => {
            // Rendezvous and synchronous sends complete only once the receiver takes them.
            must("send big", world.send(&big[..], 1, 1));
            must("ssend", world.synchronous_send(&[5u8; 3][..], 1, 3));
            must("send small", world.send(&[9u32; 4][..], 1, 2));
        }
        1 => {
            let (m, st) = must("mprobe big", world.matched_probe::<u8>(0, 1));
            check!(st.count() == Some(4 << 20), "probed {st:?}");
            drop(m);
            let (m, _) = must("mprobe sync", world.matched_probe::<u8>(0, 3));
            drop(m);
            let (v, st) = must("receive_vec", world.receive_vec::<u32>(0, 2));
            check!(
                v == [9u32; 4] && st.tag() == 2,
                "after the drops: {v:?} {st:?}"
            );
            let left = must("iprobe", world.immediate_probe::<u8>(0, Tag::Any));
            check!(
                left.is_none(),
                "a dropped message is still queued: {left:?}"
            );
        }
        _ => {}
    }
    must("barrier", world.barrier());
}

fn cancel_guard(world: &Communicator<Multiple>) {
    let mut b = [0u8; 8];
    oxmpi::scope(|s| {
        let r = must(
            "irecv",
            world.immediate_receive_into(s, &mut b[..], 0, 4242),
        );
        let g = r.cancel_guard();
        drop(g);
    });
    // The scope ended: the guard's receive no longer holds it up. A message on that tag now
    // goes to the next receive, not to the cancelled one.
    if world.rank() == 0 {
        must("send", world.send(&[1u8; 8][..], 0, 4242));
        let st = must("recv", world.receive_into(&mut b[..], 0, 4242));
        check!(
            b == [1u8; 8] && st.count() == Some(8),
            "after cancel {st:?}"
        );
    }
    must("barrier", world.barrier());
}

fn panic_with_pending(world: &Communicator<Multiple>, send: bool) {
    if world.rank() == 1 {
        let big = vec![1u8; 16 << 20];
        let mut b = [0u8; 8];
        oxmpi::scope(|s| {
            let _r = if send {
                must("isend", world.immediate_send(s, &big[..], 0, 77))
            } else {
                must("irecv", world.immediate_receive_into(s, &mut b[..], 0, 77))
            };
            panic!("rank 1 gives up with an operation pending");
        });
    } else {
        // Waits for a message that never comes: only the end of the job stops this rank.
        let mut b = [0u8; 8];
        let _ = world.receive_into(&mut b[..], 1, 78);
    }
}

/// A waker that counts its wakes and unparks the polling thread.
struct Counting {
    wakes: std::sync::atomic::AtomicUsize,
    thread: std::thread::Thread,
}

impl std::task::Wake for Counting {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.wakes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.thread.unpark();
    }
}

fn counting() -> (std::sync::Arc<Counting>, std::task::Waker) {
    let c = std::sync::Arc::new(Counting {
        wakes: Default::default(),
        thread: std::thread::current(),
    });
    (c.clone(), std::task::Waker::from(c))
}

fn poll_once(
    r: &mut oxmpi::Request<'_, '_>,
    waker: &std::task::Waker,
) -> std::task::Poll<oxmpi::Result<oxmpi::Status>> {
    let mut cx = std::task::Context::from_waker(waker);
    std::future::Future::poll(std::pin::Pin::new(r), &mut cx)
}

fn future_wake(world: &Communicator<Multiple>) {
    match world.rank() {
        0 => {
            let (count, waker) = counting();
            let mut b = [0u64; 2];
            oxmpi::scope(|s| {
                let mut r = must("irecv", world.immediate_receive_into(s, &mut b[..], 1, 5));
                // Rank 1 sends only after "go": this poll cannot finish.
                check!(
                    poll_once(&mut r, &waker).is_pending(),
                    "ready before the send"
                );
                must("go", world.send(&1u8, 1, 6));
                let st = loop {
                    if count.wakes.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                        std::thread::park();
                        continue;
                    }
                    match poll_once(&mut r, &waker) {
                        std::task::Poll::Ready(st) => break must("await", st),
                        std::task::Poll::Pending => std::thread::park(),
                    }
                };
                check!(st.count() == Some(2), "status {st:?}");
            });
            check!(b == [3, 4], "received {b:?}");
        }
        1 => {
            let (_, _) = must("go", world.process_at_rank(0).receive_with_tag::<u8>(6));
            must("send", world.send(&[3u64, 4][..], 0, 5));
        }
        _ => {}
    }
}

fn future_drop(world: &Communicator<Multiple>) {
    match world.rank() {
        0 => {
            let (_, waker) = counting();
            let mut early = [0u32; 1];
            oxmpi::scope(|s| {
                let mut r = must(
                    "irecv",
                    world.immediate_receive_into(s, &mut early[..], 1, 7),
                );
                check!(
                    poll_once(&mut r, &waker).is_pending(),
                    "ready before the send"
                );
                // Dropped unfinished: cancelled, so the buffer is free once this returns.
                drop(r);
            });
            early[0] = 1;
            must("go", world.send(&1u8, 1, 8));
            let (v, _) = must("recv", world.process_at_rank(1).receive_with_tag::<u32>(7));
            check!(
                v == 9 && early == [1],
                "the later receive got {v}, early {early:?}"
            );
        }
        1 => {
            let (_, _) = must("go", world.process_at_rank(0).receive_with_tag::<u8>(8));
            must("send", world.send(&9u32, 0, 7));
        }
        _ => {}
    }
}
