//! Process topologies and neighbourhood collectives at any number of ranks: Cartesian grids
//! of 1 to 3 dimensions (periodic and not, including periodic dimensions of size 1 and 2
//! where a process is its own or the same neighbour twice, and grids smaller than the
//! communicator), graphs (with repeated edges and self loops at small sizes) and distributed
//! graphs (weighted and not, asymmetric, edges named by other processes). Every topology
//! query is checked against answers computed here, through the typed API and the handle
//! layer; every neighbourhood collective, blocking and nonblocking, against a serial
//! reference of which block of which process lands in each receive block; and bad inputs
//! give their error class. Exits non-zero on the first mismatch.

use oxmpi::handle::comm::{self as hcomm, CommHandle};
use oxmpi::handle::{env, topo as htopo};
use oxmpi::topology::dims_create;
use oxmpi::{scope, Communicator, ErrorClass, Persistent, Single, TopoKind, PROC_NULL};
use oxmpi_tests::{check, must};

fn expect<T: std::fmt::Debug>(what: &str, r: oxmpi::Result<T>, class: ErrorClass) {
    match r {
        Err(e) if e.class() == class => {}
        other => check!(false, "{what}: expected {class:?}, got {other:?}"),
    }
}

/// Element `i` of the block a process `j` sends as its block `b`.
fn val(j: usize, b: usize, i: usize) -> i32 {
    (j * 100_000 + b * 1000 + i % 1000) as i32
}

/// Never sent: receive blocks from `PROC_NULL` must keep it.
const UNTOUCHED: i32 = -7;

/// Length of the varying block process `j` sends as block `b`.
fn vlen(j: usize, b: usize) -> usize {
    (j + 2 * b) % 4
}

/// The neighbourhood of one process as the tests see it: sources, destinations, and for
/// each receive block the (process, its send block) that fills it (`None`: `PROC_NULL`).
struct Hood {
    sources: Vec<i32>,
    dests: Vec<i32>,
    feeds: Vec<Option<(usize, usize)>>,
}

/// The k-th edge from `j` to `r` fills the k-th receive block from `j` at `r`.
fn graph_feeds(all_dests: &[Vec<i32>], me: usize, sources: &[i32]) -> Vec<Option<(usize, usize)>> {
    sources
        .iter()
        .enumerate()
        .map(|(k, &j)| {
            if j == PROC_NULL {
                return None;
            }
            let nth = sources[..k].iter().filter(|&&x| x == j).count();
            let b = all_dests[j as usize]
                .iter()
                .enumerate()
                .filter(|(_, &x)| x == me as i32)
                .nth(nth)
                .map(|(b, _)| b);
            check!(
                b.is_some(),
                "rank {me}: in-edge {k} from {j} has no out-edge"
            );
            b.map(|b| (j as usize, b))
        })
        .collect()
}

fn offsets(counts: &[usize], gap: usize) -> (Vec<usize>, usize) {
    // Blocks laid out back to front with `gap` unused elements between them, so
    // displacements matter.
    let mut displs = vec![0; counts.len()];
    let mut at = gap;
    for i in (0..counts.len()).rev() {
        displs[i] = at;
        at += counts[i] + gap;
    }
    (displs, at)
}

/// Every neighbourhood collective, blocking and nonblocking, on `c` whose neighbourhood is
/// `h`, against the references.
fn neighbor_collectives(ctx: &str, c: &Communicator, h: &Hood) {
    let me = c.rank() as usize;
    let (indeg, outdeg) = (h.sources.len(), h.dests.len());
    for n in [0usize, 1, 7, 40_000] {
        // alltoall
        let send: Vec<i32> = (0..outdeg)
            .flat_map(|b| (0..n).map(move |i| val(me, b, i)))
            .collect();
        let want: Vec<i32> = h
            .feeds
            .iter()
            .flat_map(|f| (0..n).map(move |i| f.map_or(UNTOUCHED, |(j, b)| val(j, b, i))))
            .collect();
        let mut recv = vec![UNTOUCHED; indeg * n];
        must(
            "neighbor_alltoall",
            c.neighbor_all_to_all_into(&send, &mut recv),
        );
        check!(recv == want, "[{ctx}] neighbor_alltoall n {n} rank {me}");
        let mut recv = vec![UNTOUCHED; indeg * n];
        scope(|s| {
            let r = must(
                "ineighbor_alltoall",
                c.immediate_neighbor_all_to_all_into(s, &send, &mut recv),
            );
            must("wait", r.wait());
        });
        check!(recv == want, "[{ctx}] ineighbor_alltoall n {n} rank {me}");
        if n > 7 {
            continue;
        }
        // allgather
        let send: Vec<i32> = (0..n).map(|i| val(me, 0, i)).collect();
        let want: Vec<i32> = h
            .feeds
            .iter()
            .flat_map(|f| (0..n).map(move |i| f.map_or(UNTOUCHED, |(j, _)| val(j, 0, i))))
            .collect();
        let mut recv = vec![UNTOUCHED; indeg * n];
        must(
            "neighbor_allgather",
            c.neighbor_all_gather_into(&send, &mut recv),
        );
        check!(
            recv == want,
            "[{ctx}] neighbor_allgather n {n} rank {me}: {recv:?} != {want:?}"
        );
        let mut recv = vec![UNTOUCHED; indeg * n];
        scope(|s| {
            let r = must(
                "ineighbor_allgather",
                c.immediate_neighbor_all_gather_into(s, &send, &mut recv),
            );
            must("wait", r.wait());
        });
        check!(recv == want, "[{ctx}] ineighbor_allgather n {n} rank {me}");
    }
    // allgatherv: process j sends j % 3 + 1 elements.
    let glen = |j: usize| j % 3 + 1;
    let send: Vec<i32> = (0..glen(me)).map(|i| val(me, 0, i)).collect();
    let counts: Vec<usize> = h
        .feeds
        .iter()
        .map(|f| f.map_or(2, |(j, _)| glen(j)))
        .collect();
    let (displs, len) = offsets(&counts, 1);
    let mut want = vec![UNTOUCHED; len];
    for (k, f) in h.feeds.iter().enumerate() {
        if let Some((j, _)) = f {
            for i in 0..counts[k] {
                want[displs[k] + i] = val(*j, 0, i);
            }
        }
    }
    let mut recv = vec![UNTOUCHED; len];
    must(
        "neighbor_allgatherv",
        c.neighbor_all_gather_varcount_into(&send, &mut recv, &counts, &displs),
    );
    check!(
        recv == want,
        "[{ctx}] neighbor_allgatherv rank {me}: {recv:?} != {want:?}"
    );
    let mut recv = vec![UNTOUCHED; len];
    scope(|s| {
        let r = must(
            "ineighbor_allgatherv",
            c.immediate_neighbor_all_gather_varcount_into(s, &send, &mut recv, &counts, &displs),
        );
        must("wait", r.wait());
    });
    check!(recv == want, "[{ctx}] ineighbor_allgatherv rank {me}");
    // alltoallv and alltoallw: block b of process j has vlen(j, b) elements.
    let scounts: Vec<usize> = (0..outdeg).map(|b| vlen(me, b)).collect();
    let (sdispls, slen) = offsets(&scounts, 2);
    let mut send = vec![UNTOUCHED; slen];
    for b in 0..outdeg {
        for i in 0..scounts[b] {
            send[sdispls[b] + i] = val(me, b, i);
        }
    }
    let rcounts: Vec<usize> = h
        .feeds
        .iter()
        .map(|f| f.map_or(3, |(j, b)| vlen(j, b)))
        .collect();
    let (rdispls, rlen) = offsets(&rcounts, 1);
    let mut want = vec![UNTOUCHED; rlen];
    for (k, f) in h.feeds.iter().enumerate() {
        if let Some((j, b)) = f {
            for i in 0..rcounts[k] {
                want[rdispls[k] + i] = val(*j, *b, i);
            }
        }
    }
    let mut recv = vec![UNTOUCHED; rlen];
    must(
        "neighbor_alltoallv",
        c.neighbor_all_to_all_varcount_into(
            &send, &scounts, &sdispls, &mut recv, &rcounts, &rdispls,
        ),
    );
    check!(
        recv == want,
        "[{ctx}] neighbor_alltoallv rank {me}: {recv:?} != {want:?}"
    );
    let mut recv = vec![UNTOUCHED; rlen];
    scope(|s| {
        let r = must(
            "ineighbor_alltoallv",
            c.immediate_neighbor_all_to_all_varcount_into(
                s, &send, &scounts, &sdispls, &mut recv, &rcounts, &rdispls,
            ),
        );
        must("wait", r.wait());
    });
    check!(recv == want, "[{ctx}] ineighbor_alltoallv rank {me}");
    // alltoallw over the same blocks as bytes.
    let sb: Vec<u8> = send.iter().flat_map(|x| x.to_le_bytes()).collect();
    let sblocks: Vec<(usize, usize)> = sdispls
        .iter()
        .zip(&scounts)
        .map(|(&d, &n)| (4 * d, 4 * n))
        .collect();
    let rblocks: Vec<(usize, usize)> = rdispls
        .iter()
        .zip(&rcounts)
        .map(|(&d, &n)| (4 * d, 4 * n))
        .collect();
    let wb: Vec<u8> = want.iter().flat_map(|x| x.to_le_bytes()).collect();
    let fresh = fresh_bytes(rlen);
    let mut rb = fresh.clone();
    must(
        "neighbor_alltoallw",
        c.neighbor_all_to_all_w_into(&sb, &sblocks, &mut rb, &rblocks),
    );
    check!(rb == wb, "[{ctx}] neighbor_alltoallw rank {me}");
    let mut rb = fresh;
    scope(|s| {
        let r = must(
            "ineighbor_alltoallw",
            c.immediate_neighbor_all_to_all_w_into(s, &sb, &sblocks, &mut rb, &rblocks),
        );
        must("wait", r.wait());
    });
    check!(rb == wb, "[{ctx}] ineighbor_alltoallw rank {me}");
    // Persistent forms: planned once, started several times (one by one, then all at once).
    let mut rb = fresh_bytes(rlen);
    let mut rv = vec![UNTOUCHED; rlen];
    scope(|s| {
        let mut reqs: Vec<Persistent<'_, '_>> = vec![
            must(
                "neighbor_alltoallv_init",
                c.neighbor_all_to_all_varcount_init(
                    s, &send, &scounts, &sdispls, &mut rv, &rcounts, &rdispls,
                ),
            ),
            must(
                "neighbor_alltoallw_init",
                c.neighbor_all_to_all_w_init(s, &sb, &sblocks, &mut rb, &rblocks),
            ),
        ];
        for _ in 0..3 {
            for r in reqs.iter_mut() {
                must("start", r.start());
                must("wait", r.wait());
            }
        }
        must("start_all", Persistent::start_all(&mut reqs));
        for r in reqs.iter_mut() {
            must("wait", r.wait());
        }
    });
    check!(rv == want, "[{ctx}] neighbor_alltoallv_init rank {me}");
    check!(rb == wb, "[{ctx}] neighbor_alltoallw_init rank {me}");
    persistent_regular(ctx, c, h);
    // Several outstanding at once complete in any order of waits.
    let send: Vec<i32> = (0..outdeg)
        .flat_map(|b| (0..3).map(move |i| val(me, b, i)))
        .collect();
    let want: Vec<i32> = h
        .feeds
        .iter()
        .flat_map(|f| (0..3).map(move |i| f.map_or(UNTOUCHED, |(j, b)| val(j, b, i))))
        .collect();
    let (mut r1, mut r2) = (vec![UNTOUCHED; indeg * 3], vec![UNTOUCHED; indeg * 3]);
    scope(|s| {
        let a = must(
            "ineighbor_alltoall",
            c.immediate_neighbor_all_to_all_into(s, &send, &mut r1),
        );
        let b = must(
            "ineighbor_alltoall",
            c.immediate_neighbor_all_to_all_into(s, &send, &mut r2),
        );
        must("wait", b.wait());
        must("wait", a.wait());
    });
    check!(
        r1 == want && r2 == want,
        "[{ctx}] two outstanding ineighbor_alltoall rank {me}"
    );
}

/// Row-major coordinates, computed independently of the library.
fn coords_of(dims: &[i32], rank: i32) -> Vec<i32> {
    let mut c = vec![0; dims.len()];
    let mut r = rank;
    for i in (0..dims.len()).rev() {
        c[i] = r % dims[i];
        r /= dims[i];
    }
    c
}

fn rank_of(dims: &[i32], c: &[i32]) -> i32 {
    c.iter().zip(dims).fold(0, |acc, (&x, &d)| acc * d + x)
}

/// Neighbour along `d` at distance `disp`, by hand.
fn moved(dims: &[i32], periods: &[bool], rank: i32, d: usize, disp: i32) -> i32 {
    let mut c = coords_of(dims, rank);
    let x = c[d] + disp;
    if !periods[d] && !(0..dims[d]).contains(&x) {
        return PROC_NULL;
    }
    c[d] = x.rem_euclid(dims[d]);
    rank_of(dims, &c)
}

fn cart_suite(world: &Communicator, wh: CommHandle, dims: &[i32], periods: &[bool]) {
    let p = world.size();
    let ctx = format!("cart {dims:?} {periods:?}");
    let points: i32 = dims.iter().product();
    let grid = must(
        "create_cartesian_communicator",
        world.create_cartesian_communicator(dims, periods, false),
    );
    let me_w = world.rank();
    check!(
        grid.is_some() == (me_w < points),
        "[{ctx}] rank {me_w} membership"
    );
    // The handle layer agrees (a second communicator, same shape).
    let mut h = must("cart_create", htopo::cart_create(wh, dims, periods, false));
    check!(
        (h != CommHandle::NULL) == (me_w < points),
        "[{ctx}] handle membership"
    );
    check!(
        must("cart_map", htopo::cart_map(wh, dims, periods))
            == if me_w < points {
                me_w
            } else {
                oxmpi::UNDEFINED
            },
        "[{ctx}] cart_map"
    );
    let Some(g) = grid else { return };
    let me = g.rank();
    check!(g.size() == points && me == me_w, "[{ctx}] size/rank");
    check!(g.topology() == Some(TopoKind::Cart), "[{ctx}] topology");
    check!(g.num_dimensions() == dims.len() as i32, "[{ctx}] ndims");
    let lay = g.get_layout();
    check!(lay.dims == dims && lay.periods == periods, "[{ctx}] layout");
    check!(
        lay.coords == coords_of(dims, me),
        "[{ctx}] coords {:?}",
        lay.coords
    );
    for r in 0..points {
        check!(
            must("coords", g.rank_to_coordinates(r)) == coords_of(dims, r),
            "[{ctx}] coords of {r}"
        );
        check!(
            must("rank", g.coordinates_to_rank(&coords_of(dims, r))) == r,
            "[{ctx}] rank of {r}"
        );
    }
    let (hd, hp, hc) = must("cart_get", htopo::cart_get(h));
    check!(
        hd == dims && hp == periods && hc == lay.coords,
        "[{ctx}] cart_get"
    );
    check!(
        must("cartdim_get", htopo::cartdim_get(h)) == dims.len() as i32,
        "[{ctx}] cartdim"
    );
    check!(
        must("topo_test", htopo::topo_test(h)) == Some(TopoKind::Cart),
        "[{ctx}] topo_test"
    );
    for d in 0..dims.len() {
        for disp in [-2, -1, 1, 3] {
            let s = must("shift", g.shift(d as i32, disp)).raw();
            let want = (
                moved(dims, periods, me, d, -disp),
                moved(dims, periods, me, d, disp),
            );
            check!(
                s == want,
                "[{ctx}] shift d {d} disp {disp}: {s:?} != {want:?}"
            );
            check!(
                must("cart_shift", htopo::cart_shift(h, d as i32, disp)) == want,
                "[{ctx}] cart_shift"
            );
        }
        // Coordinates outside a dimension: wrap if periodic, error otherwise.
        let mut c = coords_of(dims, me);
        c[d] += dims[d];
        if periods[d] {
            check!(
                must("rank", g.coordinates_to_rank(&c)) == me,
                "[{ctx}] periodic wrap"
            );
        } else {
            expect(
                "rank off a non-periodic grid",
                g.coordinates_to_rank(&c),
                ErrorClass::Rank,
            );
        }
    }
    expect(
        "shift along a missing dimension",
        g.shift(dims.len() as i32, 1),
        ErrorClass::Dims,
    );
    expect(
        "coords of a rank off the grid",
        g.rank_to_coordinates(points),
        ErrorClass::Rank,
    );
    // Neighbourhood: for each dimension the negative then the positive neighbour; block 2d
    // comes from the negative neighbour's block 2d + 1 and block 2d + 1 from the positive
    // neighbour's block 2d.
    let mut hood = Hood {
        sources: Vec::new(),
        dests: Vec::new(),
        feeds: Vec::new(),
    };
    for d in 0..dims.len() {
        let (lo, hi) = (
            moved(dims, periods, me, d, -1),
            moved(dims, periods, me, d, 1),
        );
        hood.sources.extend([lo, hi]);
        hood.dests.extend([lo, hi]);
        hood.feeds
            .push((lo != PROC_NULL).then(|| (lo as usize, 2 * d + 1)));
        hood.feeds
            .push((hi != PROC_NULL).then(|| (hi as usize, 2 * d)));
    }
    neighbor_collectives(&ctx, &g, &hood);
    // A duplicate keeps the grid, through both APIs.
    let dup = must("duplicate", g.duplicate());
    check!(dup.get_layout() == lay, "[{ctx}] dup layout");
    let plain = must("duplicate", Communicator::duplicate(&g));
    check!(
        plain.as_cartesian().map(|c| c.get_layout()) == Some(lay.clone()),
        "[{ctx}] plain dup"
    );
    let mut hdup = must("comm_dup", hcomm::comm_dup(h));
    check!(
        must("cart_get", htopo::cart_get(hdup)).0 == dims,
        "[{ctx}] handle dup"
    );
    neighbor_collectives(&format!("{ctx} dup"), &dup, &hood);
    // Sub-grids: keep every other dimension; ranks by the kept coordinates.
    let keep: Vec<bool> = (0..dims.len()).map(|i| i % 2 == 0).collect();
    let sub = must("subgroup", g.subgroup(&keep));
    let kept: Vec<i32> = (0..dims.len())
        .filter(|&i| keep[i])
        .map(|i| dims[i])
        .collect();
    let kept_c: Vec<i32> = (0..dims.len())
        .filter(|&i| keep[i])
        .map(|i| lay.coords[i])
        .collect();
    check!(
        sub.dims() == kept && sub.size() == kept.iter().product::<i32>(),
        "[{ctx}] sub dims"
    );
    check!(
        sub.coordinates() == kept_c && sub.rank() == rank_of(&kept, &kept_c),
        "[{ctx}] sub coords"
    );
    // Everyone in my sub-grid shares my dropped coordinates.
    let dropped: Vec<i32> = (0..dims.len())
        .filter(|&i| !keep[i])
        .map(|i| lay.coords[i])
        .collect();
    let mut all = vec![0i32; dropped.len() * sub.size() as usize];
    must("allgather", sub.all_gather_into(&dropped, &mut all));
    check!(
        all.chunks(dropped.len().max(1))
            .all(|c| dropped.is_empty() || c == dropped),
        "[{ctx}] sub membership"
    );
    let mut hsub = must("cart_sub", htopo::cart_sub(h, &keep));
    check!(
        must("cart_get", htopo::cart_get(hsub)).0 == kept,
        "[{ctx}] handle sub"
    );
    for x in [&mut hsub, &mut hdup, &mut h] {
        must("comm_free", hcomm::comm_free(x));
    }
    let _ = p;
}

fn graph_suite(world: &Communicator, wh: CommHandle) {
    let p = world.size() as usize;
    let me = world.rank() as usize;
    // A symmetric graph: the ring both ways, plus the nodes half way round both ways (the
    // same node twice at even sizes) when there are 4 or more. At 1 and 2 nodes the ring
    // itself repeats edges and loops to itself.
    let nbrs = |i: usize| -> Vec<i32> {
        let mut v = vec![((i + 1) % p) as i32, ((i + p - 1) % p) as i32];
        if p >= 4 {
            v.push(((i + p / 2) % p) as i32);
            v.push(((i + p - p / 2) % p) as i32);
        }
        v
    };
    let mut index = Vec::new();
    let mut edges = Vec::new();
    for i in 0..p {
        edges.extend(nbrs(i));
        index.push(edges.len() as i32);
    }
    let g = must(
        "create_graph_communicator",
        world.create_graph_communicator(&index, &edges, false),
    );
    let Some(g) = g else {
        check!(false, "graph: rank {me} left out");
        return;
    };
    check!(g.topology() == Some(TopoKind::Graph), "graph topology");
    check!(
        g.graph_dims() == (p as i32, edges.len() as i32),
        "graph dims"
    );
    check!(g.index() == index && g.edges() == edges, "graph get");
    check!(g.neighbors() == nbrs(me), "graph neighbours");
    for i in 0..p {
        check!(
            must("neighbors_of", g.neighbors_of(i as i32)) == nbrs(i),
            "graph neighbours of {i}"
        );
    }
    expect(
        "graph neighbours of a non-node",
        g.neighbors_of(p as i32),
        ErrorClass::Rank,
    );
    let mut h = must(
        "graph_create",
        htopo::graph_create(wh, &index, &edges, true),
    );
    check!(
        must("graph_get", htopo::graph_get(h)) == (index.clone(), edges.clone()),
        "graph_get"
    );
    check!(
        must("graphdims_get", htopo::graphdims_get(h)) == (p as i32, edges.len() as i32),
        "graphdims"
    );
    check!(
        must(
            "graph_neighbors_count",
            htopo::graph_neighbors_count(h, me as i32)
        ) == nbrs(me).len() as i32,
        "count"
    );
    check!(
        must("graph_neighbors", htopo::graph_neighbors(h, me as i32)) == nbrs(me),
        "graph_neighbors"
    );
    check!(
        must("graph_map", htopo::graph_map(wh, &index, &edges)) == me as i32,
        "graph_map"
    );
    check!(
        must("topo_test", htopo::topo_test(h)) == Some(TopoKind::Graph),
        "topo_test graph"
    );
    expect(
        "cart_get on a graph",
        htopo::cart_get(h),
        ErrorClass::Topology,
    );
    let all: Vec<Vec<i32>> = (0..p).map(nbrs).collect();
    let hood = Hood {
        sources: nbrs(me),
        dests: nbrs(me),
        feeds: graph_feeds(&all, me, &nbrs(me)),
    };
    neighbor_collectives("graph", &g, &hood);
    let dup = must("duplicate", g.duplicate());
    neighbor_collectives("graph dup", &dup, &hood);
    must("comm_free", hcomm::comm_free(&mut h));
    // A graph of fewer nodes than ranks leaves the last rank out.
    if p > 1 {
        let n = p - 1;
        let index: Vec<i32> = (1..=n as i32).collect();
        let edges: Vec<i32> = (0..n).map(|i| ((i + 1) % n) as i32).collect();
        let small = must(
            "create_graph_communicator",
            world.create_graph_communicator(&index, &edges, false),
        );
        check!(small.is_some() == (me < n), "small graph membership");
        let map = must("graph_map", world.graph_map(&index, &edges));
        check!(map == (me < n).then_some(me as i32), "small graph map");
    }
}

/// The distributed graph as every process can compute it: out-edges of `r`.
fn dist_dests(p: usize, r: usize) -> Vec<i32> {
    // Asymmetric: forward by one, and forward by r + 2 from even ranks; rank p - 1 at
    // p ≥ 3 has no out-edges.
    if p >= 3 && r == p - 1 {
        return Vec::new();
    }
    let mut v = vec![((r + 1) % p) as i32];
    if r.is_multiple_of(2) {
        v.push(((2 * r + 2) % p) as i32);
    }
    v
}

fn weight(from: usize, to: i32, k: usize) -> i32 {
    (from * 1000) as i32 + to * 10 + k as i32
}

fn dist_graph_suite(world: &Communicator) {
    let p = world.size() as usize;
    let me = world.rank() as usize;
    let all: Vec<Vec<i32>> = (0..p).map(|r| dist_dests(p, r)).collect();
    // In-edges of r, in order of source rank then edge order.
    let sources_of = |r: usize| -> Vec<(i32, i32)> {
        (0..p)
            .flat_map(|j| {
                all[j]
                    .iter()
                    .enumerate()
                    .filter(move |(_, &d)| d == r as i32)
                    .map(move |(k, &d)| (j as i32, weight(j, d, k)))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let srcs: Vec<i32> = sources_of(me).iter().map(|s| s.0).collect();
    let sw: Vec<i32> = sources_of(me).iter().map(|s| s.1).collect();
    let dw: Vec<i32> = all[me]
        .iter()
        .enumerate()
        .map(|(k, &d)| weight(me, d, k))
        .collect();
    for weighted in [false, true] {
        let ctx = format!("dist graph adjacent weighted {weighted}");
        let g = must(
            "create_dist_graph_communicator_adjacent",
            world.create_dist_graph_communicator_adjacent(
                &srcs,
                weighted.then_some(&sw[..]),
                &all[me],
                weighted.then_some(&dw[..]),
                false,
            ),
        );
        check!(
            g.topology() == Some(TopoKind::DistGraph),
            "[{ctx}] topology"
        );
        check!(
            g.neighbors_count() == (srcs.len() as i32, all[me].len() as i32, weighted),
            "[{ctx}] count"
        );
        check!(
            g.sources() == srcs && g.destinations() == all[me],
            "[{ctx}] neighbours"
        );
        check!(
            g.source_weights() == weighted.then_some(&sw[..]),
            "[{ctx}] source weights"
        );
        check!(
            g.destination_weights() == weighted.then_some(&dw[..]),
            "[{ctx}] dest weights"
        );
        let hood = Hood {
            sources: srcs.clone(),
            dests: all[me].clone(),
            feeds: graph_feeds(&all, me, &srcs),
        };
        neighbor_collectives(&ctx, &g, &hood);
    }
    // The general form: process r names the out-edges of process r + 1 (so every edge is
    // named away from both its ends), weighted. Each process gets its in-edges ordered by
    // the naming process, which here is source + p - 1, i.e. the order of `sources_of`
    // rotated so that the source p - 1... computed directly below.
    let owner = (me + 1) % p;
    let degrees = [all[owner].len() as i32];
    let named_w: Vec<i32> = all[owner]
        .iter()
        .enumerate()
        .map(|(k, &d)| weight(owner, d, k))
        .collect();
    let g = must(
        "create_dist_graph_communicator",
        world.create_dist_graph_communicator(
            &[owner as i32],
            &degrees,
            &all[owner],
            Some(&named_w),
            false,
        ),
    );
    // Out-edges come from one naming process, in their order.
    check!(
        g.destinations() == all[me],
        "dist graph destinations {:?}",
        g.destinations()
    );
    check!(
        g.destination_weights() == Some(&dw[..]),
        "dist graph destination weights"
    );
    // In-edges arrive ordered by naming process (source j is named by j - 1).
    let mut want: Vec<(i32, i32)> = sources_of(me);
    want.sort_by_key(|&(j, _)| (j as usize + p - 1) % p);
    let got: Vec<(i32, i32)> = g
        .sources()
        .iter()
        .copied()
        .zip(g.source_weights().unwrap_or(&[]).iter().copied())
        .collect();
    check!(
        got == want && g.neighbors_count().2,
        "dist graph sources {got:?} != {want:?}"
    );
    let hood = Hood {
        sources: g.sources().to_vec(),
        dests: all[me].clone(),
        feeds: graph_feeds(&all, me, g.sources()),
    };
    neighbor_collectives("dist graph", &g, &hood);
    // Unweighted general form, edges named by their own source, through the handle layer;
    // a process without edges passes MPI_WEIGHTS_EMPTY in a weighted call below.
    let wh = CommHandle::WORLD;
    let mut h = must(
        "dist_graph_create",
        htopo::dist_graph_create(
            wh,
            &[me as i32],
            &[all[me].len() as i32],
            &all[me],
            None,
            false,
        ),
    );
    let (s, swt, d, dwt) = must("dist_graph_neighbors", htopo::dist_graph_neighbors(h));
    check!(
        s == srcs && d == all[me] && swt.is_none() && dwt.is_none(),
        "handle dist graph"
    );
    check!(
        must(
            "dist_graph_neighbors_count",
            htopo::dist_graph_neighbors_count(h)
        ) == (srcs.len() as i32, all[me].len() as i32, false),
        "handle dist graph count"
    );
    check!(
        must("topo_test", htopo::topo_test(h)) == Some(TopoKind::DistGraph),
        "topo_test dist"
    );
    must("comm_free", hcomm::comm_free(&mut h));
    // Only rank 0 names edges (a star into 0), weighted; the others name none and pass
    // MPI_WEIGHTS_EMPTY.
    let (s, dg, d, w): (Vec<i32>, Vec<i32>, Vec<i32>, Vec<i32>) = if me == 0 {
        (
            (0..p as i32).collect(),
            vec![1; p],
            vec![0; p],
            (0..p as i32).map(|j| 7 * j).collect(),
        )
    } else {
        (Vec::new(), Vec::new(), Vec::new(), Vec::new())
    };
    let mut h = must(
        "dist_graph_create",
        htopo::dist_graph_create(wh, &s, &dg, &d, Some(&w), false),
    );
    let (s, swt, d, dwt) = must("dist_graph_neighbors", htopo::dist_graph_neighbors(h));
    if me == 0 {
        check!(
            s == (0..p as i32).collect::<Vec<_>>()
                && swt == Some((0..p as i32).map(|j| 7 * j).collect()),
            "star in"
        );
        check!(d == [0] && dwt == Some(vec![0]), "star out of 0");
    } else {
        check!(
            s.is_empty() && swt == Some(vec![]) && d == [0] && dwt == Some(vec![7 * me as i32]),
            "star out"
        );
    }
    must("comm_free", hcomm::comm_free(&mut h));
}

fn bad_inputs(world: &Communicator, wh: CommHandle) {
    let p = world.size();
    expect(
        "negative dims",
        world.create_cartesian_communicator(&[-1, p], &[false, false], false),
        ErrorClass::Dims,
    );
    expect(
        "zero dims",
        world.create_cartesian_communicator(&[0], &[false], false),
        ErrorClass::Dims,
    );
    expect(
        "grid larger than the communicator",
        world.create_cartesian_communicator(&[p + 1], &[true], false),
        ErrorClass::Dims,
    );
    expect(
        "dims and periods of different lengths",
        world.create_cartesian_communicator(&[p], &[true, true], false),
        ErrorClass::Arg,
    );
    expect(
        "handle cart_create negative",
        htopo::cart_create(wh, &[p, -2], &[false, false], true),
        ErrorClass::Dims,
    );
    expect(
        "cart_map too large",
        htopo::cart_map(wh, &[p, 2], &[false, false]),
        ErrorClass::Dims,
    );
    expect(
        "dims_create negative entry",
        dims_create(p, &mut [0, -1]),
        ErrorClass::Dims,
    );
    expect(
        "dims_create impossible",
        dims_create(2 * p + 1, &mut [2, 0]),
        ErrorClass::Dims,
    );
    expect(
        "graph with bad index",
        world.create_graph_communicator(&[2, 1], &[0, 0], false),
        ErrorClass::Arg,
    );
    expect(
        "graph larger than the communicator",
        world.create_graph_communicator(&vec![0; p as usize + 1], &[], false),
        ErrorClass::Arg,
    );
    expect(
        "graph edge to no node",
        world.create_graph_communicator(&[1], &[5], false),
        ErrorClass::Rank,
    );
    expect(
        "dist graph weights of the wrong length",
        world.create_dist_graph_communicator_adjacent(&[0], Some(&[1, 2]), &[0], Some(&[1]), false),
        ErrorClass::Arg,
    );
    expect(
        "dist graph source off the communicator",
        world.create_dist_graph_communicator_adjacent(&[p], None, &[], None, false),
        ErrorClass::Rank,
    );
    expect(
        "dist graph degrees not matching",
        world.create_dist_graph_communicator(&[0], &[2], &[0], None, false),
        ErrorClass::Arg,
    );
    // Neighbourhood collectives and topology queries without a topology.
    let mut r = [0i32; 4];
    expect(
        "neighbor_alltoall without topology",
        world.neighbor_all_to_all_into(&[1, 2, 3, 4], &mut r),
        ErrorClass::Topology,
    );
    expect(
        "neighbor_allgather without topology",
        world.neighbor_all_gather_into(&[1], &mut r),
        ErrorClass::Topology,
    );
    expect(
        "neighbor_allgatherv without topology",
        world.neighbor_all_gather_varcount_into(&[1], &mut r, &[1], &[0]),
        ErrorClass::Topology,
    );
    expect(
        "neighbor_alltoallv without topology",
        world.neighbor_all_to_all_varcount_into(&[1], &[1], &[0], &mut r, &[1], &[0]),
        ErrorClass::Topology,
    );
    let mut b = [0u8; 4];
    expect(
        "neighbor_alltoallw without topology",
        world.neighbor_all_to_all_w_into(&[1], &[(0, 1)], &mut b, &[(0, 1)]),
        ErrorClass::Topology,
    );
    scope(|s| {
        expect(
            "ineighbor_alltoall without topology",
            world
                .immediate_neighbor_all_to_all_into(s, &[1], &mut r[..1])
                .map(drop),
            ErrorClass::Topology,
        );
    });
    expect(
        "cart_coords without topology",
        htopo::cart_coords(wh, 0),
        ErrorClass::Topology,
    );
    expect(
        "graph_neighbors without topology",
        htopo::graph_neighbors(wh, 0),
        ErrorClass::Topology,
    );
    expect(
        "dist_graph_neighbors without topology",
        htopo::dist_graph_neighbors(wh),
        ErrorClass::Topology,
    );
    check!(
        must("topo_test", htopo::topo_test(wh)).is_none() && world.topology().is_none(),
        "world has no topology"
    );
    check!(world.as_cartesian().is_none(), "world is not Cartesian");
    // Wrong lengths on a topology (a periodic ring: 2 neighbours).
    let ring = must(
        "ring",
        world.create_cartesian_communicator(&[p], &[true], false),
    )
    .expect("on the ring");
    expect(
        "alltoall send not a multiple of the degree",
        ring.neighbor_all_to_all_into(&[1, 2, 3], &mut [0; 4]),
        ErrorClass::Count,
    );
    expect(
        "alltoall send and receive blocks differ",
        ring.neighbor_all_to_all_into(&[1, 2], &mut [0; 4]),
        ErrorClass::Count,
    );
    expect(
        "allgather receive of the wrong length",
        ring.neighbor_all_gather_into(&[1], &mut [0; 3]),
        ErrorClass::Count,
    );
    expect(
        "alltoallv counts of the wrong length",
        ring.neighbor_all_to_all_varcount_into(&[1, 2], &[1], &[0], &mut [0; 2], &[1, 1], &[0, 1]),
        ErrorClass::Arg,
    );
    expect(
        "allgatherv block outside the buffer",
        ring.neighbor_all_gather_varcount_into(&[1], &mut [0; 2], &[1, 1], &[0, 2]),
        ErrorClass::Buffer,
    );
    expect(
        "shift of a negative dimension",
        ring.shift(-1, 1),
        ErrorClass::Dims,
    );
    expect(
        "sub with the wrong length",
        ring.subgroup(&[true, false]),
        ErrorClass::Arg,
    );
    // Topologies built on a communicator that has one replace it.
    let ring_dist = must(
        "dist graph on a grid",
        ring.create_dist_graph_communicator_adjacent(&[], None, &[], None, false),
    );
    check!(
        ring_dist.topology() == Some(TopoKind::DistGraph)
            && ring_dist.neighbors_count() == (0, 0, false),
        "dist graph on a grid"
    );
    let regrid = must(
        "grid on a grid",
        ring.create_cartesian_communicator(&[1, p], &[false, true], false),
    )
    .expect("member");
    check!(regrid.dims() == [1, p], "grid on a grid");
    // Still works after the errors.
    let mut out = [0i32; 2];
    must(
        "neighbor_allgather",
        ring.neighbor_all_gather_into(&[ring.rank()], &mut out),
    );
    let (lo, hi) = ((ring.rank() + p - 1) % p, (ring.rank() + 1) % p);
    check!(out == [lo, hi], "ring allgather after errors: {out:?}");
}

fn main() {
    must("init_thread", env::init_thread(oxmpi::Threading::Single));
    let world: Communicator<Single> = must("comm_typed", hcomm::comm_typed(CommHandle::WORLD));
    let wh = CommHandle::WORLD;
    let p = world.size();
    let mut suites = 0;
    // 1-D, 2-D and 3-D grids, balanced by dims_create; periodic, not, and mixed; and a
    // grid one smaller than the communicator.
    let mut d2 = [0, 0];
    must("dims_create", dims_create(p, &mut d2));
    let mut d3 = [0, 0, 0];
    must("dims_create", dims_create(p, &mut d3));
    let mut grids: Vec<(Vec<i32>, Vec<bool>)> = vec![
        (vec![p], vec![true]),
        (vec![p], vec![false]),
        (d2.to_vec(), vec![true, true]),
        (d2.to_vec(), vec![false, true]),
        (d3.to_vec(), vec![true, true, true]),
        (d3.to_vec(), vec![true, false, true]),
        (vec![1, p], vec![true, false]),
        (vec![p, 1, 1], vec![false, true, true]),
    ];
    if p > 1 {
        grids.push((vec![p - 1], vec![true]));
    }
    if p % 2 == 0 {
        grids.push((vec![2, p / 2, 1], vec![true, true, false]));
    }
    for (dims, periods) in &grids {
        cart_suite(&world, wh, dims, periods);
        suites += 1;
    }
    graph_suite(&world, wh);
    dist_graph_suite(&world);
    bad_inputs(&world, wh);
    suites += 3;
    // Reordering across (faked) hosts keeps consecutive grid points on one host.
    let grid = must(
        "reordered",
        world.create_cartesian_communicator(&[p], &[false], true),
    )
    .expect("member");
    let host = std::env::var("OXMPI_HOST_OVERRIDE").ok();
    if let Some(hosts) = host {
        let hosts: Vec<u32> = hosts
            .split(',')
            .map(|h| h.trim().parse().expect("host"))
            .collect();
        let mut all = vec![0i32; p as usize];
        must("allgather", grid.all_gather_into(&[world.rank()], &mut all));
        // New rank k is old rank all[k]; hosts along the ring change at most once per host.
        let changes = all
            .windows(2)
            .filter(|w| hosts[w[0] as usize] != hosts[w[1] as usize])
            .count();
        let distinct = {
            let mut h = hosts.clone();
            h.sort_unstable();
            h.dedup();
            h.len()
        };
        check!(
            changes + 1 == distinct,
            "reordered ring crosses hosts {changes} times: {all:?}"
        );
    } else {
        check!(
            grid.rank() == world.rank(),
            "reorder on one host keeps ranks"
        );
    }
    suites += 1;
    println!("rank {} topo_check passed {suites} suites", world.rank());
    must("finalize", env::finalize());
}

/// `n` elements of `UNTOUCHED` as bytes.
fn fresh_bytes(n: usize) -> Vec<u8> {
    std::iter::repeat_n(UNTOUCHED.to_le_bytes(), n)
        .flatten()
        .collect()
}

/// The persistent neighbour allgather(v) and alltoall, each restarted several times.
fn persistent_regular(ctx: &str, c: &Communicator, h: &Hood) {
    let me = c.rank() as usize;
    let (indeg, outdeg) = (h.sources.len(), h.dests.len());
    let n = 5;
    let a2a_send: Vec<i32> = (0..outdeg)
        .flat_map(|b| (0..n).map(move |i| val(me, b, i)))
        .collect();
    let a2a_want: Vec<i32> = h
        .feeds
        .iter()
        .flat_map(|f| (0..n).map(move |i| f.map_or(UNTOUCHED, |(j, b)| val(j, b, i))))
        .collect();
    let ag_send: Vec<i32> = (0..n).map(|i| val(me, 0, i)).collect();
    let ag_want: Vec<i32> = h
        .feeds
        .iter()
        .flat_map(|f| (0..n).map(move |i| f.map_or(UNTOUCHED, |(j, _)| val(j, 0, i))))
        .collect();
    let counts = vec![n; indeg];
    let displs: Vec<usize> = (0..indeg).map(|k| k * (n + 1)).collect();
    let mut agv_want = vec![UNTOUCHED; indeg * (n + 1)];
    for k in 0..indeg {
        agv_want[displs[k]..][..n].copy_from_slice(&ag_want[k * n..][..n]);
    }
    let mut a2a = vec![UNTOUCHED; indeg * n];
    let mut ag = vec![UNTOUCHED; indeg * n];
    let mut agv = vec![UNTOUCHED; indeg * (n + 1)];
    scope(|s| {
        let mut reqs = vec![
            must(
                "neighbor_alltoall_init",
                c.neighbor_all_to_all_init(s, &a2a_send, &mut a2a),
            ),
            must(
                "neighbor_allgather_init",
                c.neighbor_all_gather_init(s, &ag_send, &mut ag),
            ),
            must(
                "neighbor_allgatherv_init",
                c.neighbor_all_gather_varcount_init(s, &ag_send, &mut agv, &counts, &displs),
            ),
        ];
        for _ in 0..4 {
            must("start_all", Persistent::start_all(&mut reqs));
            for r in reqs.iter_mut() {
                must("wait", r.wait());
            }
        }
        // Starting an active request is an error; the request stays usable.
        must("start", reqs[0].start());
        check!(
            reqs[0].start().is_err(),
            "[{ctx}] second start of an active request"
        );
        must("wait", reqs[0].wait());
    });
    check!(a2a == a2a_want, "[{ctx}] neighbor_alltoall_init rank {me}");
    check!(ag == ag_want, "[{ctx}] neighbor_allgather_init rank {me}");
    check!(
        agv == agv_want,
        "[{ctx}] neighbor_allgatherv_init rank {me}"
    );
}
