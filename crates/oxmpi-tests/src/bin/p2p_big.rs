//! A message longer than i32::MAX bytes from rank 0 to rank 1: counts above 2^31 must work.
//! The payload follows a pattern; rank 1 checks every byte. Exits non-zero on a mismatch.

fn main() {
    let len: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(i32::MAX as usize + 4097);
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let pattern = |i: usize| (i ^ (i >> 13) ^ (i >> 29)) as u8;
    match world.rank() {
        0 => {
            let v: Vec<u8> = (0..len).map(pattern).collect();
            world.send(&v[..], 1, 1).expect("send");
        }
        1 => {
            let mut v = vec![0u8; len];
            let st = world.receive_into(&mut v[..], 0, 1).expect("recv");
            if st.count() != Some(len as u64) {
                eprintln!("count {:?} != {len}", st.count());
                std::process::exit(1);
            }
            if let Some(i) = (0..len).find(|&i| v[i] != pattern(i)) {
                eprintln!("byte {i} wrong");
                std::process::exit(1);
            }
            println!("received {len} bytes intact");
        }
        _ => {}
    }
    universe.finalize().expect("finalize");
}
