//! Message memory: rank 0 sends large messages from an `alloc_mem` buffer; rank 1 must copy
//! them straight out of rank 0's shared arena (counted by `protocol_stats().arena_pulls`) and
//! get every byte. Buffers are freed and allocated again between rounds. Prints
//! `arena_pulls=N` on rank 1; on a single rank, checks the heap fallback.

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let rounds = 6;
    let len = 4 << 20;
    let pattern = |round: usize, i: usize| {
        (i as u64)
            .wrapping_mul(2654435761)
            .wrapping_add(round as u64)
    };
    if world.size() == 1 {
        let mut b = universe.alloc_mem::<u64>(1000).expect("alloc_mem");
        assert!(!b.is_shared(), "no peers: heap fallback");
        b[999] = 5;
        assert_eq!(b.iter().sum::<u64>(), 5);
        println!("heap fallback OK");
        return;
    }
    for round in 0..rounds {
        match world.rank() {
            0 => {
                let mut b = universe.alloc_mem::<u64>(len / 8).expect("alloc_mem");
                assert!(b.is_shared());
                for (i, x) in b.iter_mut().enumerate() {
                    *x = pattern(round, i);
                }
                world.send(&b[..], 1, round as i32).unwrap();
            }
            1 => {
                let mut v = vec![0u64; len / 8];
                world.receive_into(&mut v[..], 0, round as i32).unwrap();
                if let Some(i) = (0..v.len()).find(|&i| v[i] != pattern(round, i)) {
                    eprintln!("round {round}: element {i} wrong");
                    std::process::exit(1);
                }
            }
            _ => {}
        }
    }
    let huge = universe.alloc_mem::<u8>(usize::MAX / 2);
    assert_eq!(huge.unwrap_err().class(), oxmpi::ErrorClass::NoMem);
    if world.rank() == 1 {
        println!("arena_pulls={}", universe.protocol_stats().arena_pulls);
    }
    universe.finalize().unwrap();
}
