//! Large messages received straight into the user's buffer (TCP rendezvous chunks read to
//! their place): two ranks exchange batches of 1–4 rendezvous-sized messages at once, each
//! received at a random offset inside a buffer whose bytes around the receive are guards.
//! Some receives name their source, some take any source; about one in eight is shorter than
//! its message (a truncation error, nothing written past its end). Every byte is checked.
//! Prints `tcp_land: rank R verified N messages, B bytes, placed P bytes`.
//!
//! `tcp_land SEED MESSAGES MAX_SIZE`

use oxmpi::{ErrorClass, Source, Tag};

const GUARD: u8 = 0xEE;
const PAD: usize = 64;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One message of a batch, the same on both ranks.
struct Msg {
    len: usize,
    /// Where the receive starts in its buffer.
    off: usize,
    /// The receive's capacity (below `len`: truncated).
    cap: usize,
    any_source: bool,
}

fn byte(seed: u64, from: i32, i: usize, k: usize) -> u8 {
    (seed as usize ^ (from as usize * 131) ^ (i * 7919) ^ k ^ (k >> 9)) as u8
}

fn fail(msg: String) -> ! {
    eprintln!("tcp_land: {msg}");
    std::process::exit(1);
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .unwrap_or_else(|_| fail(format!("bad argument {a:?}")))
        })
        .collect();
    let [seed, n, max] = args[..] else {
        fail("usage: tcp_land SEED MESSAGES MAX_SIZE".into());
    };
    let min = 65537u64;
    if max < min {
        fail(format!("MAX_SIZE must be at least {min}"));
    }
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    if world.size() != 2 {
        fail("run with 2 ranks".into());
    }
    let me = world.rank();
    let peer = 1 - me;
    let mut rng = Rng(seed);
    let (mut done, mut bytes) = (0u64, 0u64);
    while done < n {
        let batch: Vec<Msg> = (0..(1 + rng.below(4)).min(n - done))
            .map(|_| {
                let len = (min + rng.below(max - min + 1)) as usize;
                let cap = if rng.below(8) == 0 {
                    len - 1 - rng.below(len as u64 / 2) as usize
                } else {
                    len + rng.below(100) as usize
                };
                Msg {
                    len,
                    off: rng.below(PAD as u64) as usize,
                    cap,
                    any_source: rng.below(2) == 0,
                }
            })
            .collect();
        let base = done as usize;
        let out: Vec<Vec<u8>> = (batch.iter().enumerate())
            .map(|(i, m)| (0..m.len).map(|k| byte(seed, me, base + i, k)).collect())
            .collect();
        let mut bufs: Vec<Vec<u8>> = (batch.iter())
            .map(|m| vec![GUARD; m.off + m.cap + PAD])
            .collect();
        let results = oxmpi::scope(|s| {
            let mut recvs = Vec::new();
            for ((i, m), b) in batch.iter().enumerate().zip(bufs.iter_mut()) {
                let src = if m.any_source {
                    Source::Any
                } else {
                    Source::Rank(peer)
                };
                let at = &mut b[m.off..m.off + m.cap];
                let r = world.immediate_receive_into(s, at, src, Tag::Is(i as i32));
                recvs.push(r.expect("receive starts"));
            }
            let sends: Vec<_> = (out.iter().enumerate())
                .map(|(i, v)| world.immediate_send(s, &v[..], peer, i as i32).unwrap())
                .collect();
            for r in sends {
                r.wait().expect("send");
            }
            recvs.into_iter().map(|r| r.wait()).collect::<Vec<_>>()
        });
        for (i, ((m, b), res)) in batch.iter().zip(&bufs).zip(results).enumerate() {
            let seq = base + i;
            let kept = m.len.min(m.cap);
            match res {
                Ok(st) if m.cap >= m.len => {
                    if (st.source(), st.count()) != (peer, Some(m.len as u64)) {
                        fail(format!("message {seq}: status {st:?}"));
                    }
                }
                Err(e) if m.cap < m.len && e.class() == ErrorClass::Truncate => {}
                other => fail(format!(
                    "message {seq} ({} B into {} B): {other:?}",
                    m.len, m.cap
                )),
            }
            if let Some(k) = (0..m.off).find(|&k| b[k] != GUARD) {
                fail(format!(
                    "message {seq}: guard byte {k} before the receive written"
                ));
            }
            let body = &b[m.off..m.off + kept];
            if let Some(k) = (0..kept).find(|&k| body[k] != byte(seed, peer, seq, k)) {
                fail(format!("message {seq}: byte {k} of {} wrong", m.len));
            }
            if let Some(k) = (m.off + kept..b.len()).find(|&k| b[k] != GUARD) {
                fail(format!(
                    "message {seq}: byte {} past the {kept} received written",
                    k - m.off
                ));
            }
            bytes += kept as u64;
        }
        done += batch.len() as u64;
    }
    println!(
        "tcp_land: rank {me} verified {done} messages, {bytes} bytes, placed {} bytes",
        universe.protocol_stats().placed_bytes
    );
    universe.finalize().unwrap();
}
