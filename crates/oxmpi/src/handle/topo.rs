//! Process topologies (`MPI_Cart_*`, `MPI_Graph_*`, `MPI_Dist_graph_*`, `MPI_Topo_test`,
//! `MPI_Dims_create`): the topology data a communicator carries, the pure functions over it
//! (coordinates, shifts, sub-grids, neighbour lists, balanced factorizations), and the calls
//! through communicator ids.
//!
//! A topology is set once, when its communicator is created, and kept by duplication; the
//! typed API ([`CartesianCommunicator`](crate::topology::CartesianCommunicator) and
//! friends) and the neighbourhood collectives read the same data.
//!
//! Errors: a communicator without the topology a call needs is [`ErrorClass::Topology`];
//! bad dimensions [`ErrorClass::Dims`]; ranks outside the topology [`ErrorClass::Rank`];
//! arrays of the wrong length or inconsistent graphs [`ErrorClass::Arg`].
//!
//! # Standard sections
//! MPI-5.0 §8 (process topologies), §8.6 (neighbourhood collectives: the neighbour order).

use std::sync::Arc;

use super::comm::{get, put_opt, CommHandle};
use crate::comm::{Comm, Communicator, UNDEFINED};
use crate::error::{Error, ErrorClass, Result};
use crate::op::Op;
use crate::threading::Multiple;
use crate::PROC_NULL;

/// The kind of topology a communicator has (`MPI_Topo_test`); the discriminants are the
/// MPI-5.0 ABI values of `MPI_CART`, `MPI_GRAPH` and `MPI_DIST_GRAPH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum TopoKind {
    /// `MPI_CART`.
    Cart = 211,
    /// `MPI_GRAPH`.
    Graph = 212,
    /// `MPI_DIST_GRAPH`.
    DistGraph = 213,
}

/// A communicator's process topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// A Cartesian grid.
    Cart(Cart),
    /// A graph every process knows whole.
    Graph(Graph),
    /// A distributed graph: each process knows its own edges.
    DistGraph(DistGraph),
}

impl Topology {
    /// Which kind this is.
    pub fn kind(&self) -> TopoKind {
        match self {
            Topology::Cart(_) => TopoKind::Cart,
            Topology::Graph(_) => TopoKind::Graph,
            Topology::DistGraph(_) => TopoKind::DistGraph,
        }
    }

    /// The in- and out-neighbours of `rank`, in the order of the neighbourhood collectives'
    /// blocks ([`PROC_NULL`] at the edges of a non-periodic grid), and whether the receives
    /// of each pair of Cartesian blocks are matched crosswise (see [`Neighbors::crosswise`]).
    pub(crate) fn neighbors(&self, rank: i32) -> Neighbors {
        match self {
            Topology::Cart(c) => {
                let mut all = Vec::with_capacity(2 * c.dims.len());
                for d in 0..c.dims.len() {
                    let (src, dst) = c.shift_of(rank, d, 1);
                    all.push(src);
                    all.push(dst);
                }
                Neighbors {
                    sources: all.clone(),
                    dests: all,
                    crosswise: true,
                }
            }
            Topology::Graph(g) => {
                let n = g.neighbors(rank).unwrap_or(&[]).to_vec();
                Neighbors {
                    sources: n.clone(),
                    dests: n,
                    crosswise: false,
                }
            }
            Topology::DistGraph(g) => Neighbors {
                sources: g.sources.clone(),
                dests: g.dests.clone(),
                crosswise: false,
            },
        }
    }
}

/// One process's neighbourhood, as the neighbourhood collectives see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Neighbors {
    /// Where receive block `i` comes from.
    pub sources: Vec<i32>,
    /// Where send block `i` goes.
    pub dests: Vec<i32>,
    /// Cartesian: block `2d` is sent towards the negative direction of dimension `d` and
    /// lands in the receiver's block `2d + 1` (and the other way round). When both
    /// neighbours are one process (a periodic dimension of size 1 or 2) only the order of the
    /// receives tells the two apart, so they are posted crosswise.
    pub crosswise: bool,
}

fn err(class: ErrorClass, msg: String) -> Error {
    Error::new(class, msg)
}

/// A Cartesian grid: sizes and periodicity per dimension; ranks are laid out row-major
/// (the last dimension varies fastest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cart {
    dims: Vec<i32>,
    periods: Vec<bool>,
}

impl Cart {
    /// A grid of `dims` with `periods`. Errors: lengths differ ([`ErrorClass::Arg`]), a
    /// dimension that is not positive or a product beyond `i32` ([`ErrorClass::Dims`]).
    pub fn new(call: &str, dims: &[i32], periods: &[bool]) -> Result<Cart> {
        if dims.len() != periods.len() {
            return Err(err(
                ErrorClass::Arg,
                format!(
                    "{call}: {} dimensions but {} periods",
                    dims.len(),
                    periods.len()
                ),
            ));
        }
        let mut prod: i32 = 1;
        for (i, &d) in dims.iter().enumerate() {
            if d <= 0 {
                return Err(err(
                    ErrorClass::Dims,
                    format!("{call}: dimension {i} has size {d}; sizes must be positive"),
                ));
            }
            prod = prod.checked_mul(d).ok_or_else(|| {
                err(
                    ErrorClass::Dims,
                    format!("{call}: the grid {dims:?} has more points than an i32 counts"),
                )
            })?;
        }
        Ok(Cart {
            dims: dims.to_vec(),
            periods: periods.to_vec(),
        })
    }

    /// Size of each dimension.
    pub fn dims(&self) -> &[i32] {
        &self.dims
    }

    /// Whether each dimension wraps around.
    pub fn periods(&self) -> &[bool] {
        &self.periods
    }

    /// Number of grid points (the product of the dimensions; 1 for zero dimensions).
    pub fn size(&self) -> i32 {
        self.dims.iter().product()
    }

    fn check_rank(&self, call: &str, rank: i32) -> Result<()> {
        if rank < 0 || rank >= self.size() {
            return Err(err(
                ErrorClass::Rank,
                format!("{call}: rank {rank} is not in the {:?} grid", self.dims),
            ));
        }
        Ok(())
    }

    /// Coordinates of `rank` (`MPI_Cart_coords`).
    pub fn coords(&self, call: &str, rank: i32) -> Result<Vec<i32>> {
        self.check_rank(call, rank)?;
        Ok(self.coords_of(rank))
    }

    fn coords_of(&self, mut rank: i32) -> Vec<i32> {
        let mut c = vec![0; self.dims.len()];
        for (i, &d) in self.dims.iter().enumerate().rev() {
            c[i] = rank % d;
            rank /= d;
        }
        c
    }

    /// The rank at `coords` (`MPI_Cart_rank`): periodic dimensions wrap; a coordinate
    /// outside a non-periodic dimension is [`ErrorClass::Rank`].
    pub fn rank(&self, call: &str, coords: &[i32]) -> Result<i32> {
        if coords.len() != self.dims.len() {
            return Err(err(
                ErrorClass::Arg,
                format!(
                    "{call}: {} coordinates for a {}-dimensional grid",
                    coords.len(),
                    self.dims.len()
                ),
            ));
        }
        self.rank_of(coords).ok_or_else(|| {
            err(
                ErrorClass::Rank,
                format!(
                    "{call}: coordinates {coords:?} lie outside the non-periodic grid {:?}",
                    self.dims
                ),
            )
        })
    }

    /// The rank at `coords`, `None` outside a non-periodic dimension.
    fn rank_of(&self, coords: &[i32]) -> Option<i32> {
        let mut r: i64 = 0;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let c = if p {
                (c as i64).rem_euclid(d as i64)
            } else if (0..d).contains(&c) {
                c as i64
            } else {
                return None;
            };
            r = r * d as i64 + c;
        }
        Some(r as i32)
    }

    /// `MPI_Cart_shift` of `rank`: (source, destination) of a shift by `disp` along `dim`,
    /// [`PROC_NULL`] past the edge of a non-periodic dimension.
    pub fn shift(&self, call: &str, rank: i32, dim: i32, disp: i32) -> Result<(i32, i32)> {
        self.check_rank(call, rank)?;
        if dim < 0 || dim as usize >= self.dims.len() {
            return Err(err(
                ErrorClass::Dims,
                format!(
                    "{call}: dimension {dim} is not one of the grid's {}",
                    self.dims.len()
                ),
            ));
        }
        Ok(self.shift_of(rank, dim as usize, disp))
    }

    fn shift_of(&self, rank: i32, dim: usize, disp: i32) -> (i32, i32) {
        let mut c = self.coords_of(rank);
        let at = c[dim] as i64;
        let mut moved = |by: i64| {
            let x = at + by;
            let d = self.dims[dim] as i64;
            if !self.periods[dim] && !(0..d).contains(&x) {
                return PROC_NULL;
            }
            c[dim] = x.rem_euclid(d) as i32;
            self.rank_of(&c).unwrap_or(PROC_NULL)
        };
        let src = moved(-(disp as i64));
        let dst = moved(disp as i64);
        (src, dst)
    }

    /// `MPI_Cart_sub` for `rank`: the (color, key) that split the grid into the sub-grids
    /// keeping the dimensions where `remain` is true, and the sub-grid itself.
    pub fn sub(&self, call: &str, rank: i32, remain: &[bool]) -> Result<(i32, i32, Cart)> {
        self.check_rank(call, rank)?;
        if remain.len() != self.dims.len() {
            return Err(err(
                ErrorClass::Arg,
                format!(
                    "{call}: {} entries in remain_dims for a {}-dimensional grid",
                    remain.len(),
                    self.dims.len()
                ),
            ));
        }
        let c = self.coords_of(rank);
        let (mut color, mut key) = (0i32, 0i32);
        let (mut dims, mut periods) = (Vec::new(), Vec::new());
        for i in 0..self.dims.len() {
            if remain[i] {
                key = key * self.dims[i] + c[i];
                dims.push(self.dims[i]);
                periods.push(self.periods[i]);
            } else {
                color = color * self.dims[i] + c[i];
            }
        }
        Ok((color, key, Cart { dims, periods }))
    }
}

/// A graph topology (`MPI_Graph_create`): node `i`'s neighbours are
/// `edges[index[i - 1]..index[i]]` (from 0 for node 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    index: Vec<i32>,
    edges: Vec<i32>,
}

impl Graph {
    /// A graph of `index.len()` nodes. Errors ([`ErrorClass::Arg`]): a decreasing or
    /// negative index, `edges.len()` not the last index, an edge naming no node.
    pub fn new(call: &str, index: &[i32], edges: &[i32]) -> Result<Graph> {
        let mut last = 0;
        for (i, &x) in index.iter().enumerate() {
            if x < last {
                return Err(err(
                    ErrorClass::Arg,
                    format!("{call}: index[{i}] = {x} is below the one before ({last})"),
                ));
            }
            last = x;
        }
        if edges.len() != last as usize {
            return Err(err(
                ErrorClass::Arg,
                format!("{call}: {} edges but the index ends at {last}", edges.len()),
            ));
        }
        let n = index.len() as i32;
        if let Some((i, &e)) = edges.iter().enumerate().find(|(_, &e)| e < 0 || e >= n) {
            return Err(err(
                ErrorClass::Rank,
                format!("{call}: edge {i} names node {e}; the graph has {n} nodes"),
            ));
        }
        Ok(Graph {
            index: index.to_vec(),
            edges: edges.to_vec(),
        })
    }

    /// The index array.
    pub fn index(&self) -> &[i32] {
        &self.index
    }

    /// The edges array.
    pub fn edges(&self) -> &[i32] {
        &self.edges
    }

    /// Number of nodes.
    pub fn nnodes(&self) -> i32 {
        self.index.len() as i32
    }

    /// The neighbours of node `rank`, `None` if there is no such node.
    pub fn neighbors(&self, rank: i32) -> Option<&[i32]> {
        let r = usize::try_from(rank)
            .ok()
            .filter(|&r| r < self.index.len())?;
        let lo = if r == 0 {
            0
        } else {
            self.index[r - 1] as usize
        };
        Some(&self.edges[lo..self.index[r] as usize])
    }
}

/// A distributed graph, as one process sees it: its in-edges (sources) and out-edges
/// (destinations), with weights unless created `MPI_UNWEIGHTED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistGraph {
    sources: Vec<i32>,
    source_weights: Option<Vec<i32>>,
    dests: Vec<i32>,
    dest_weights: Option<Vec<i32>>,
}

impl DistGraph {
    /// Ranks with an edge to this process, in order.
    pub fn sources(&self) -> &[i32] {
        &self.sources
    }
    /// Ranks this process has an edge to, in order.
    pub fn dests(&self) -> &[i32] {
        &self.dests
    }
    /// The weights of the in-edges (`None`: unweighted).
    pub fn source_weights(&self) -> Option<&[i32]> {
        self.source_weights.as_deref()
    }
    /// The weights of the out-edges (`None`: unweighted).
    pub fn dest_weights(&self) -> Option<&[i32]> {
        self.dest_weights.as_deref()
    }
    /// Whether the graph was created with weights (`MPI_Dist_graph_neighbors_count`).
    pub fn weighted(&self) -> bool {
        self.source_weights.is_some()
    }
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the product of all entries
/// is `nnodes`, the filled ones as close to each other as possible and in non-increasing
/// order; nonzero entries are kept. Errors: a negative entry or `nnodes` below 0
/// ([`ErrorClass::Dims`], [`ErrorClass::Arg`]), `nnodes` not a multiple of the fixed
/// entries' product ([`ErrorClass::Dims`]).
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    if nnodes < 0 {
        return Err(err(
            ErrorClass::Arg,
            format!("dims_create: {nnodes} nodes is negative"),
        ));
    }
    if let Some(i) = dims.iter().position(|&d| d < 0) {
        return Err(err(
            ErrorClass::Dims,
            format!("dims_create: dims[{i}] = {} is negative", dims[i]),
        ));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    let bad = || {
        err(
            ErrorClass::Dims,
            format!("dims_create: {nnodes} nodes cannot fill {dims:?} (the fixed sizes' product {fixed} does not divide it)"),
        )
    };
    if nnodes as i64 % fixed != 0 {
        return Err(bad());
    }
    let rest = nnodes as i64 / fixed;
    if free == 0 {
        return if rest == 1 { Ok(()) } else { Err(bad()) };
    }
    let best = balanced(rest, free);
    let mut it = best.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap_or(1) as i32;
    }
    Ok(())
}

/// The factorization of `n` into `k` non-increasing factors that is lexicographically
/// smallest: the largest factor as small as it can be, then the next, and so on (the most
/// balanced grid). `n == 0` gives zeros.
fn balanced(n: i64, k: usize) -> Vec<i64> {
    if n == 0 {
        return vec![0; k];
    }
    let mut divisors = Vec::new();
    let mut i = 1;
    while i * i <= n {
        if n % i == 0 {
            divisors.push(i);
            if i * i != n {
                divisors.push(n / i);
            }
        }
        i += 1;
    }
    divisors.sort_unstable();
    let mut cur = Vec::with_capacity(k);
    if search(n, k, n, &divisors, &mut cur) {
        cur
    } else {
        vec![1; k]
    }
}

/// Depth-first over non-increasing factor lists, smallest factor first at each level, so
/// the first complete list is the lexicographically smallest; `cap` bounds the next factor.
fn search(rest: i64, k: usize, cap: i64, divisors: &[i64], cur: &mut Vec<i64>) -> bool {
    if cur.len() == k {
        return rest == 1;
    }
    let left = (k - cur.len()) as u32;
    for &d in divisors {
        if d > cap {
            break;
        }
        // The largest remaining factor is at least the left-th root of the rest.
        if rest % d != 0 || d.checked_pow(left).is_some_and(|p| p < rest) {
            continue;
        }
        cur.push(d);
        if search(rest / d, k, d, divisors, cur) {
            return true;
        }
        cur.pop();
    }
    false
}

// ---- communicators with topologies ------------------------------------------------------

fn typed(c: &Comm) -> Communicator<Multiple> {
    Communicator::from_comm(c.clone())
}

fn attach(c: Comm, t: Topology) -> Result<Comm> {
    c.state.topo.set(Arc::new(t)).map_err(|_| {
        err(
            ErrorClass::Intern,
            "a new communicator already had a topology".into(),
        )
    })?;
    Ok(c)
}

/// A new communicator of the same ranks in the same order, without the attributes or the
/// topology of `c` (what the distributed graph constructors start from). Collective.
fn fresh(call: &str, c: &Comm) -> Result<Comm> {
    c.split(0, c.rank())?
        .ok_or_else(|| err(ErrorClass::Intern, format!("{call}: no new communicator")))
}

fn intra(call: &str, c: &Comm) -> Result<()> {
    if c.is_inter() {
        return Err(err(
            ErrorClass::Comm,
            format!("{call}: topologies are defined on intracommunicators only"),
        ));
    }
    Ok(())
}

/// The topology of `c`, if it has one.
pub(crate) fn topology_of(c: &Comm) -> Option<Arc<Topology>> {
    c.state.topo.get().cloned()
}

fn need(call: &str, c: &Comm, kind: TopoKind) -> Result<Arc<Topology>> {
    match topology_of(c) {
        Some(t) if t.kind() == kind => Ok(t),
        Some(t) => Err(err(
            ErrorClass::Topology,
            format!(
                "{call}: the communicator has a {:?} topology, not {kind:?}",
                t.kind()
            ),
        )),
        None => Err(err(
            ErrorClass::Topology,
            format!("{call}: the communicator has no {kind:?} topology"),
        )),
    }
}

pub(crate) fn cart_of(call: &str, c: &Comm) -> Result<Cart> {
    match &*need(call, c, TopoKind::Cart)? {
        Topology::Cart(g) => Ok(g.clone()),
        _ => unreachable!("kind checked"),
    }
}

pub(crate) fn graph_of(call: &str, c: &Comm) -> Result<Graph> {
    match &*need(call, c, TopoKind::Graph)? {
        Topology::Graph(g) => Ok(g.clone()),
        _ => unreachable!("kind checked"),
    }
}

pub(crate) fn dist_graph_of(call: &str, c: &Comm) -> Result<DistGraph> {
    match &*need(call, c, TopoKind::DistGraph)? {
        Topology::DistGraph(g) => Ok(g.clone()),
        _ => unreachable!("kind checked"),
    }
}

/// The order in which `c`'s ranks take the new ranks of a reordered Cartesian grid: by
/// host, then by old rank, so that consecutive grid points (neighbours along the fastest
/// dimensions) share a host where they can. On one host it is the identity.
pub(crate) fn host_order(hosts: &[u32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..hosts.len()).collect();
    order.sort_by_key(|&r| (hosts[r], r));
    order
}

/// `MPI_Cart_create` on `c`: processes beyond the grid get `None`. Collective.
pub(crate) fn make_cart(
    c: &Comm,
    dims: &[i32],
    periods: &[bool],
    reorder: bool,
) -> Result<Option<Comm>> {
    const CALL: &str = "cart_create";
    intra(CALL, c)?;
    let cart = Cart::new(CALL, dims, periods)?;
    if cart.size() > c.size() {
        return Err(err(
            ErrorClass::Dims,
            format!(
                "{CALL}: the grid {dims:?} has {} points but the communicator only {} ranks",
                cart.size(),
                c.size()
            ),
        ));
    }
    let me = c.rank() as usize;
    let new_rank = if reorder {
        let hosts: Vec<u32> = c
            .state
            .members
            .iter()
            .map(|&w| c.rt.coll_locality.host_of(w))
            .collect();
        host_order(&hosts)
            .iter()
            .position(|&r| r == me)
            .unwrap_or(me)
    } else {
        me
    };
    let member = (new_rank as i32) < cart.size();
    let color = if member { 0 } else { UNDEFINED };
    match c.split(color, new_rank as i32)? {
        Some(n) => attach(n, Topology::Cart(cart)).map(Some),
        None => Ok(None),
    }
}

/// `MPI_Cart_sub`: the sub-grid of `c` through this process keeping the dimensions where
/// `remain` is true. Collective.
pub(crate) fn make_cart_sub(c: &Comm, remain: &[bool]) -> Result<Comm> {
    const CALL: &str = "cart_sub";
    let cart = cart_of(CALL, c)?;
    let (color, key, sub) = cart.sub(CALL, c.rank(), remain)?;
    let n = c
        .split(color, key)?
        .ok_or_else(|| err(ErrorClass::Intern, format!("{CALL}: no sub-grid")))?;
    attach(n, Topology::Cart(sub))
}

/// `MPI_Graph_create` on `c`: processes beyond the graph's nodes get `None`. The graph is
/// kept in rank order (`reorder` is allowed to renumber, and this implementation does
/// not). Collective.
pub(crate) fn make_graph(
    c: &Comm,
    index: &[i32],
    edges: &[i32],
    _reorder: bool,
) -> Result<Option<Comm>> {
    const CALL: &str = "graph_create";
    intra(CALL, c)?;
    let g = Graph::new(CALL, index, edges)?;
    if g.nnodes() > c.size() {
        return Err(err(
            ErrorClass::Arg,
            format!(
                "{CALL}: {} nodes but the communicator only has {} ranks",
                g.nnodes(),
                c.size()
            ),
        ));
    }
    let me = c.rank();
    let color = if me < g.nnodes() { 0 } else { UNDEFINED };
    match c.split(color, me)? {
        Some(n) => attach(n, Topology::Graph(g)).map(Some),
        None => Ok(None),
    }
}

fn check_ranks(call: &str, what: &str, ranks: &[i32], size: i32) -> Result<()> {
    match ranks.iter().find(|&&r| r < 0 || r >= size) {
        Some(r) => Err(err(
            ErrorClass::Rank,
            format!("{call}: {what} {r} is not a rank (size {size})"),
        )),
        None => Ok(()),
    }
}

/// Weights as given: `None` is `MPI_UNWEIGHTED`; `Some(&[])` with no edges is
/// `MPI_WEIGHTS_EMPTY`. Errors: a length other than `n` ([`ErrorClass::Arg`]).
fn weights(call: &str, what: &str, w: Option<&[i32]>, n: usize) -> Result<Option<Vec<i32>>> {
    match w {
        None => Ok(None),
        Some(w) if w.len() == n => Ok(Some(w.to_vec())),
        Some(w) => Err(err(
            ErrorClass::Arg,
            format!("{call}: {} {what} for {n} edges", w.len()),
        )),
    }
}

/// `MPI_Dist_graph_create_adjacent`: this process's in- and out-edges as given. Weighted
/// if either weight list is given (the other must then be given too, or its edge list be
/// empty). Collective.
pub(crate) fn make_dist_graph_adjacent(
    c: &Comm,
    sources: &[i32],
    source_weights: Option<&[i32]>,
    dests: &[i32],
    dest_weights: Option<&[i32]>,
    _reorder: bool,
) -> Result<Comm> {
    const CALL: &str = "dist_graph_create_adjacent";
    intra(CALL, c)?;
    check_ranks(CALL, "source", sources, c.size())?;
    check_ranks(CALL, "destination", dests, c.size())?;
    let mut sw = weights(CALL, "source weights", source_weights, sources.len())?;
    let mut dw = weights(CALL, "destination weights", dest_weights, dests.len())?;
    match (&sw, &dw) {
        (Some(_), None) if dests.is_empty() => dw = Some(Vec::new()),
        (None, Some(_)) if sources.is_empty() => sw = Some(Vec::new()),
        (Some(_), None) | (None, Some(_)) => {
            return Err(err(
                ErrorClass::Arg,
                format!("{CALL}: weights for one direction only (MPI_UNWEIGHTED must be given for both or neither)"),
            ))
        }
        _ => {}
    }
    let n = fresh(CALL, c)?;
    attach(
        n,
        Topology::DistGraph(DistGraph {
            sources: sources.to_vec(),
            source_weights: sw,
            dests: dests.to_vec(),
            dest_weights: dw,
        }),
    )
}

/// `MPI_Dist_graph_create`: each process names any edges (`sources[i]` → each of its
/// `degrees[i]` destinations, taken in order from `dests`); every edge reaches both its
/// ends, in order of the process that named it, then of naming. Weighted if any process
/// gives weights. Collective.
pub(crate) fn make_dist_graph(
    c: &Comm,
    sources: &[i32],
    degrees: &[i32],
    dests: &[i32],
    edge_weights: Option<&[i32]>,
    _reorder: bool,
) -> Result<Comm> {
    const CALL: &str = "dist_graph_create";
    intra(CALL, c)?;
    let p = c.size();
    if sources.len() != degrees.len() {
        return Err(err(
            ErrorClass::Arg,
            format!(
                "{CALL}: {} sources but {} degrees",
                sources.len(),
                degrees.len()
            ),
        ));
    }
    if let Some(d) = degrees.iter().find(|&&d| d < 0) {
        return Err(err(
            ErrorClass::Arg,
            format!("{CALL}: degree {d} is negative"),
        ));
    }
    let total: usize = degrees.iter().map(|&d| d as usize).sum();
    if total != dests.len() {
        return Err(err(
            ErrorClass::Arg,
            format!(
                "{CALL}: the degrees add up to {total} but {} destinations are given",
                dests.len()
            ),
        ));
    }
    check_ranks(CALL, "source", sources, p)?;
    check_ranks(CALL, "destination", dests, p)?;
    let w = weights(CALL, "weights", edge_weights, total)?;
    // Every edge becomes two records [out?, other end, weight]: one to its source (an
    // out-edge) and one to its destination (an in-edge).
    let mut to: Vec<Vec<i32>> = vec![Vec::new(); p as usize];
    let mut k = 0;
    for (&s, &deg) in sources.iter().zip(degrees) {
        for _ in 0..deg {
            let (d, wt) = (dests[k], w.as_ref().map_or(1, |w| w[k]));
            to[s as usize].extend([1, d, wt]);
            to[d as usize].extend([0, s, wt]);
            k += 1;
        }
    }
    let v = typed(c);
    let mut flag = [0i32];
    v.all_reduce_into(&[w.is_some() as i32][..], &mut flag[..], Op::Max)?;
    let weighted = flag[0] != 0;
    let scounts: Vec<usize> = to.iter().map(Vec::len).collect();
    let mut rcounts = vec![0usize; p as usize];
    v.all_to_all_into(&scounts[..], &mut rcounts[..])?;
    let displs = |counts: &[usize]| -> Vec<usize> {
        counts
            .iter()
            .scan(0, |at, &n| {
                let d = *at;
                *at += n;
                Some(d)
            })
            .collect()
    };
    let (sd, rd) = (displs(&scounts), displs(&rcounts));
    let send: Vec<i32> = to.concat();
    let mut recv = vec![0i32; rcounts.iter().sum()];
    v.all_to_all_varcount_into(&send, &scounts, &sd, &mut recv, &rcounts, &rd)?;
    let mut g = DistGraph {
        sources: Vec::new(),
        source_weights: weighted.then(Vec::new),
        dests: Vec::new(),
        dest_weights: weighted.then(Vec::new),
    };
    for rec in recv.chunks_exact(3) {
        let (list, wts) = if rec[0] == 1 {
            (&mut g.dests, &mut g.dest_weights)
        } else {
            (&mut g.sources, &mut g.source_weights)
        };
        list.push(rec[1]);
        if let Some(ws) = wts {
            ws.push(rec[2]);
        }
    }
    let n = fresh(CALL, c)?;
    attach(n, Topology::DistGraph(g))
}

// ---- the calls through ids --------------------------------------------------------------

/// `MPI_Cart_create`: a communicator of the first `dims` product ranks (renumbered with
/// `reorder` so that grid neighbours share a host where the communicator spans hosts), the
/// others get [`CommHandle::NULL`]. Collective.
pub fn cart_create(
    c: CommHandle,
    dims: &[i32],
    periods: &[bool],
    reorder: bool,
) -> Result<CommHandle> {
    const CALL: &str = "cart_create";
    let comm = get(CALL, c)?;
    put_opt(CALL, make_cart(&comm, dims, periods, reorder)?)
}

/// `MPI_Cartdim_get`: the number of dimensions.
pub fn cartdim_get(c: CommHandle) -> Result<i32> {
    const CALL: &str = "cartdim_get";
    Ok(cart_of(CALL, &get(CALL, c)?)?.dims.len() as i32)
}

/// `MPI_Cart_get`: dimensions, periods and this process's coordinates.
pub fn cart_get(c: CommHandle) -> Result<(Vec<i32>, Vec<bool>, Vec<i32>)> {
    const CALL: &str = "cart_get";
    let comm = get(CALL, c)?;
    let g = cart_of(CALL, &comm)?;
    let coords = g.coords(CALL, comm.rank())?;
    Ok((g.dims, g.periods, coords))
}

/// `MPI_Cart_rank`: the rank at `coords`.
pub fn cart_rank(c: CommHandle, coords: &[i32]) -> Result<i32> {
    const CALL: &str = "cart_rank";
    cart_of(CALL, &get(CALL, c)?)?.rank(CALL, coords)
}

/// `MPI_Cart_coords`: the coordinates of `rank`.
pub fn cart_coords(c: CommHandle, rank: i32) -> Result<Vec<i32>> {
    const CALL: &str = "cart_coords";
    cart_of(CALL, &get(CALL, c)?)?.coords(CALL, rank)
}

/// `MPI_Cart_shift`: (source, destination) of this process for a shift by `disp` along
/// `dim`, [`PROC_NULL`] past a non-periodic edge.
pub fn cart_shift(c: CommHandle, dim: i32, disp: i32) -> Result<(i32, i32)> {
    const CALL: &str = "cart_shift";
    let comm = get(CALL, c)?;
    cart_of(CALL, &comm)?.shift(CALL, comm.rank(), dim, disp)
}

/// `MPI_Cart_sub`: the sub-grid through this process keeping the dimensions where
/// `remain` is true. Collective.
pub fn cart_sub(c: CommHandle, remain: &[bool]) -> Result<CommHandle> {
    const CALL: &str = "cart_sub";
    put_opt(CALL, Some(make_cart_sub(&get(CALL, c)?, remain)?))
}

/// `MPI_Cart_map`: this process's rank in a grid of `dims` over `c` (no renumbering), or
/// [`UNDEFINED`] beyond the grid.
pub fn cart_map(c: CommHandle, dims: &[i32], periods: &[bool]) -> Result<i32> {
    const CALL: &str = "cart_map";
    let comm = get(CALL, c)?;
    let g = Cart::new(CALL, dims, periods)?;
    if g.size() > comm.size() {
        return Err(err(
            ErrorClass::Dims,
            format!(
                "{CALL}: the grid has {} points for {} ranks",
                g.size(),
                comm.size()
            ),
        ));
    }
    Ok(if comm.rank() < g.size() {
        comm.rank()
    } else {
        UNDEFINED
    })
}

/// `MPI_Graph_create`: ranks beyond the graph's nodes get [`CommHandle::NULL`]. Collective.
pub fn graph_create(
    c: CommHandle,
    index: &[i32],
    edges: &[i32],
    reorder: bool,
) -> Result<CommHandle> {
    const CALL: &str = "graph_create";
    put_opt(CALL, make_graph(&get(CALL, c)?, index, edges, reorder)?)
}

/// `MPI_Graphdims_get`: (number of nodes, number of edges).
pub fn graphdims_get(c: CommHandle) -> Result<(i32, i32)> {
    const CALL: &str = "graphdims_get";
    let g = graph_of(CALL, &get(CALL, c)?)?;
    Ok((g.nnodes(), g.edges.len() as i32))
}

/// `MPI_Graph_get`: (index, edges).
pub fn graph_get(c: CommHandle) -> Result<(Vec<i32>, Vec<i32>)> {
    const CALL: &str = "graph_get";
    let g = graph_of(CALL, &get(CALL, c)?)?;
    Ok((g.index, g.edges))
}

fn graph_node<'g>(call: &str, g: &'g Graph, rank: i32) -> Result<&'g [i32]> {
    g.neighbors(rank).ok_or_else(|| {
        err(
            ErrorClass::Rank,
            format!(
                "{call}: rank {rank} is not a node (the graph has {})",
                g.nnodes()
            ),
        )
    })
}

/// `MPI_Graph_neighbors_count`: the number of neighbours of `rank`.
pub fn graph_neighbors_count(c: CommHandle, rank: i32) -> Result<i32> {
    const CALL: &str = "graph_neighbors_count";
    let g = graph_of(CALL, &get(CALL, c)?)?;
    Ok(graph_node(CALL, &g, rank)?.len() as i32)
}

/// `MPI_Graph_neighbors`: the neighbours of `rank`.
pub fn graph_neighbors(c: CommHandle, rank: i32) -> Result<Vec<i32>> {
    const CALL: &str = "graph_neighbors";
    let g = graph_of(CALL, &get(CALL, c)?)?;
    Ok(graph_node(CALL, &g, rank)?.to_vec())
}

/// `MPI_Graph_map`: this process's rank in the graph over `c` (no renumbering), or
/// [`UNDEFINED`] beyond its nodes.
pub fn graph_map(c: CommHandle, index: &[i32], edges: &[i32]) -> Result<i32> {
    const CALL: &str = "graph_map";
    let comm = get(CALL, c)?;
    let g = Graph::new(CALL, index, edges)?;
    if g.nnodes() > comm.size() {
        return Err(err(
            ErrorClass::Arg,
            format!("{CALL}: {} nodes for {} ranks", g.nnodes(), comm.size()),
        ));
    }
    Ok(if comm.rank() < g.nnodes() {
        comm.rank()
    } else {
        UNDEFINED
    })
}

/// `MPI_Dist_graph_create_adjacent`. Weights: `None` is `MPI_UNWEIGHTED`, an empty slice
/// `MPI_WEIGHTS_EMPTY`. Collective.
pub fn dist_graph_create_adjacent(
    c: CommHandle,
    sources: &[i32],
    source_weights: Option<&[i32]>,
    dests: &[i32],
    dest_weights: Option<&[i32]>,
    reorder: bool,
) -> Result<CommHandle> {
    const CALL: &str = "dist_graph_create_adjacent";
    let comm = get(CALL, c)?;
    put_opt(
        CALL,
        Some(make_dist_graph_adjacent(
            &comm,
            sources,
            source_weights,
            dests,
            dest_weights,
            reorder,
        )?),
    )
}

/// `MPI_Dist_graph_create`: edges `sources[i]` → the next `degrees[i]` entries of
/// `dests`, from any process. Weights: `None` is `MPI_UNWEIGHTED`, an empty slice
/// `MPI_WEIGHTS_EMPTY`. Collective.
pub fn dist_graph_create(
    c: CommHandle,
    sources: &[i32],
    degrees: &[i32],
    dests: &[i32],
    weights: Option<&[i32]>,
    reorder: bool,
) -> Result<CommHandle> {
    const CALL: &str = "dist_graph_create";
    let comm = get(CALL, c)?;
    put_opt(
        CALL,
        Some(make_dist_graph(
            &comm, sources, degrees, dests, weights, reorder,
        )?),
    )
}

/// `MPI_Dist_graph_neighbors_count`: (in-degree, out-degree, weighted).
pub fn dist_graph_neighbors_count(c: CommHandle) -> Result<(i32, i32, bool)> {
    const CALL: &str = "dist_graph_neighbors_count";
    let g = dist_graph_of(CALL, &get(CALL, c)?)?;
    Ok((g.sources.len() as i32, g.dests.len() as i32, g.weighted()))
}

/// In- and out-neighbours with their weights (`None`: unweighted), as
/// `MPI_Dist_graph_neighbors` returns them.
pub type DistNeighbors = (Vec<i32>, Option<Vec<i32>>, Vec<i32>, Option<Vec<i32>>);

/// `MPI_Dist_graph_neighbors`: (sources, source weights, destinations, destination
/// weights).
pub fn dist_graph_neighbors(c: CommHandle) -> Result<DistNeighbors> {
    const CALL: &str = "dist_graph_neighbors";
    let g = dist_graph_of(CALL, &get(CALL, c)?)?;
    Ok((g.sources, g.source_weights, g.dests, g.dest_weights))
}

/// (in-degree, out-degree) of this process in `c`'s topology of any kind: the block counts
/// of the neighbourhood collectives. No topology is [`ErrorClass::Topology`].
pub fn neighbor_degrees(c: CommHandle) -> Result<(usize, usize)> {
    const CALL: &str = "neighbor_degrees";
    let comm = get(CALL, c)?;
    match topology_of(&comm) {
        Some(t) => {
            let nb = t.neighbors(comm.rank());
            Ok((nb.sources.len(), nb.dests.len()))
        }
        None => Err(err(
            ErrorClass::Topology,
            format!("{CALL}: the communicator has no process topology"),
        )),
    }
}

/// `MPI_Topo_test`: the kind of topology of `c`; `None` is `MPI_UNDEFINED`.
pub fn topo_test(c: CommHandle) -> Result<Option<TopoKind>> {
    Ok(topology_of(&get("topo_test", c)?).map(|t| t.kind()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cart(dims: &[i32], periods: &[bool]) -> Cart {
        Cart::new("t", dims, periods).unwrap()
    }

    #[test]
    fn coordinates_are_row_major_and_round_trip() {
        let g = cart(&[2, 3, 4], &[false, true, false]);
        assert_eq!(g.size(), 24);
        assert_eq!(g.coords("t", 0).unwrap(), vec![0, 0, 0]);
        assert_eq!(g.coords("t", 1).unwrap(), vec![0, 0, 1]);
        assert_eq!(g.coords("t", 4).unwrap(), vec![0, 1, 0]);
        assert_eq!(g.coords("t", 13).unwrap(), vec![1, 0, 1]);
        assert_eq!(g.coords("t", 23).unwrap(), vec![1, 2, 3]);
        for r in 0..24 {
            assert_eq!(g.rank("t", &g.coords("t", r).unwrap()).unwrap(), r);
        }
        // Periodic dimension 1 wraps either way; the others do not.
        assert_eq!(g.rank("t", &[1, -1, 3]).unwrap(), 23);
        assert_eq!(g.rank("t", &[0, 5, 0]).unwrap(), 8);
        assert_eq!(
            g.rank("t", &[2, 0, 0]).unwrap_err().class(),
            ErrorClass::Rank
        );
        assert_eq!(
            g.rank("t", &[0, 0, -1]).unwrap_err().class(),
            ErrorClass::Rank
        );
        assert_eq!(g.rank("t", &[0, 0]).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(g.coords("t", 24).unwrap_err().class(), ErrorClass::Rank);
        assert_eq!(g.coords("t", -1).unwrap_err().class(), ErrorClass::Rank);
    }

    #[test]
    fn shifts_wrap_on_periodic_dimensions_and_stop_at_edges() {
        // 4 × 3, periodic in dimension 0 only. Rank = 3·row + col.
        let g = cart(&[4, 3], &[true, false]);
        assert_eq!(g.shift("t", 0, 0, 1).unwrap(), (9, 3));
        assert_eq!(g.shift("t", 0, 0, -1).unwrap(), (3, 9));
        assert_eq!(g.shift("t", 10, 0, 2).unwrap(), (4, 4));
        assert_eq!(g.shift("t", 0, 1, 1).unwrap(), (PROC_NULL, 1));
        assert_eq!(g.shift("t", 2, 1, 1).unwrap(), (1, PROC_NULL));
        assert_eq!(g.shift("t", 1, 1, 1).unwrap(), (0, 2));
        assert_eq!(g.shift("t", 1, 1, 3).unwrap(), (PROC_NULL, PROC_NULL));
        assert_eq!(g.shift("t", 4, 1, 0).unwrap(), (4, 4));
        assert_eq!(g.shift("t", 0, 2, 1).unwrap_err().class(), ErrorClass::Dims);
        assert_eq!(
            g.shift("t", 0, -1, 1).unwrap_err().class(),
            ErrorClass::Dims
        );
        // A periodic dimension of size 1: a process is its own neighbour both ways.
        let one = cart(&[1, 2], &[true, true]);
        assert_eq!(one.shift("t", 1, 0, 1).unwrap(), (1, 1));
        assert_eq!(one.shift("t", 1, 1, 1).unwrap(), (0, 0));
    }

    #[test]
    fn cartesian_neighbors_come_in_negative_positive_pairs() {
        let g = Topology::Cart(cart(&[3, 2], &[false, true]));
        let n = g.neighbors(0);
        assert_eq!(n.sources, vec![PROC_NULL, 2, 1, 1]);
        assert_eq!(n.dests, n.sources);
        assert!(n.crosswise);
        let n = g.neighbors(3);
        assert_eq!(n.sources, vec![1, 5, 2, 2]);
    }

    #[test]
    fn sub_grids_split_by_dropped_coordinates() {
        let g = cart(&[2, 3, 4], &[true, false, true]);
        // Rank 13 = (1, 0, 1). Keep dimensions 0 and 2: color from coordinate 0 of dim 1,
        // key = 1·4 + 1.
        let (color, key, sub) = g.sub("t", 13, &[true, false, true]).unwrap();
        assert_eq!((color, key), (0, 5));
        assert_eq!(sub.dims(), &[2, 4]);
        assert_eq!(sub.periods(), &[true, true]);
        // Rank 23 = (1, 2, 3), keep dimension 1: color = 1·4 + 3, key = 2.
        let (color, key, sub) = g.sub("t", 23, &[false, true, false]).unwrap();
        assert_eq!((color, key), (7, 2));
        assert_eq!(sub.dims(), &[3]);
        // Keep nothing: every process alone, a zero-dimensional grid.
        let (color, key, sub) = g.sub("t", 23, &[false, false, false]).unwrap();
        assert_eq!((color, key, sub.size()), (23, 0, 1));
        assert_eq!(g.sub("t", 0, &[true]).unwrap_err().class(), ErrorClass::Arg);
    }

    #[test]
    fn bad_grids_are_errors() {
        assert_eq!(
            Cart::new("t", &[2, -1], &[false, false])
                .unwrap_err()
                .class(),
            ErrorClass::Dims
        );
        assert_eq!(
            Cart::new("t", &[2, 0], &[false, false])
                .unwrap_err()
                .class(),
            ErrorClass::Dims
        );
        assert_eq!(
            Cart::new("t", &[2, 2], &[false]).unwrap_err().class(),
            ErrorClass::Arg
        );
        assert_eq!(
            Cart::new("t", &[65536, 65536], &[false, false])
                .unwrap_err()
                .class(),
            ErrorClass::Dims
        );
        assert_eq!(Cart::new("t", &[], &[]).unwrap().size(), 1);
    }

    fn dims(n: i32, d: &[i32]) -> Vec<i32> {
        let mut d = d.to_vec();
        dims_create(n, &mut d).unwrap();
        d
    }

    #[test]
    fn dims_create_balances_and_keeps_fixed_entries() {
        assert_eq!(dims(6, &[0, 0]), vec![3, 2]);
        assert_eq!(dims(7, &[0, 0]), vec![7, 1]);
        assert_eq!(dims(6, &[0, 3, 0]), vec![2, 3, 1]);
        assert_eq!(dims(12, &[0, 0, 0]), vec![3, 2, 2]);
        assert_eq!(dims(16, &[0, 0, 0]), vec![4, 2, 2]);
        assert_eq!(dims(36, &[0, 0]), vec![6, 6]);
        assert_eq!(dims(24, &[0, 0, 0]), vec![4, 3, 2]);
        assert_eq!(dims(64, &[0, 0, 0]), vec![4, 4, 4]);
        assert_eq!(dims(60, &[0, 0, 0]), vec![5, 4, 3]);
        assert_eq!(dims(1, &[0, 0, 0]), vec![1, 1, 1]);
        assert_eq!(dims(8, &[2, 0, 0]), vec![2, 2, 2]);
        assert_eq!(dims(4, &[2, 2]), vec![2, 2]);
        assert_eq!(dims(1, &[]), Vec::<i32>::new());
    }

    #[test]
    fn dims_create_rejects_impossible_inputs() {
        let class = |n: i32, d: &[i32]| dims_create(n, &mut d.to_vec()).unwrap_err().class();
        assert_eq!(class(6, &[-1, 0]), ErrorClass::Dims);
        assert_eq!(class(7, &[2, 0]), ErrorClass::Dims);
        assert_eq!(class(6, &[2, 2]), ErrorClass::Dims);
        assert_eq!(class(-4, &[0]), ErrorClass::Arg);
        assert_eq!(class(5, &[]), ErrorClass::Dims);
    }

    #[test]
    fn dims_create_matches_exhaustive_search() {
        // The balanced factorization against brute force over all ordered factor lists.
        fn brute(n: i64, k: usize) -> Vec<i64> {
            fn all(n: i64, k: usize, cur: &mut Vec<i64>, out: &mut Vec<Vec<i64>>) {
                if k == 0 {
                    if n == 1 {
                        out.push(cur.clone());
                    }
                    return;
                }
                for d in 1..=n {
                    if n % d == 0 && cur.last().is_none_or(|&l| d <= l) {
                        cur.push(d);
                        all(n / d, k - 1, cur, out);
                        cur.pop();
                    }
                }
            }
            let mut out = Vec::new();
            all(n, k, &mut Vec::new(), &mut out);
            out.into_iter().min().unwrap()
        }
        for n in 1..=96 {
            for k in 1..=4 {
                assert_eq!(balanced(n, k), brute(n, k), "n {n} k {k}");
            }
        }
    }

    #[test]
    fn graphs_list_neighbors_by_index() {
        // The standard's example: 4 nodes, 0–1, 0–3, 1–3... as index/edges.
        let g = Graph::new("t", &[2, 3, 4, 6], &[1, 3, 0, 3, 0, 2]).unwrap();
        assert_eq!(g.neighbors(0), Some(&[1, 3][..]));
        assert_eq!(g.neighbors(1), Some(&[0][..]));
        assert_eq!(g.neighbors(3), Some(&[0, 2][..]));
        assert_eq!(g.neighbors(4), None);
        assert_eq!(
            Graph::new("t", &[2, 1], &[0, 1]).unwrap_err().class(),
            ErrorClass::Arg
        );
        assert_eq!(
            Graph::new("t", &[2, 3], &[0, 1]).unwrap_err().class(),
            ErrorClass::Arg
        );
        assert_eq!(
            Graph::new("t", &[1, 2], &[0, 2]).unwrap_err().class(),
            ErrorClass::Rank
        );
        let n = Topology::Graph(g).neighbors(3);
        assert_eq!(
            (n.sources, n.dests, n.crosswise),
            (vec![0, 2], vec![0, 2], false)
        );
    }

    #[test]
    fn host_order_groups_ranks_by_host() {
        assert_eq!(host_order(&[0, 0, 0, 0]), vec![0, 1, 2, 3]);
        assert_eq!(host_order(&[0, 1, 0, 1]), vec![0, 2, 1, 3]);
        assert_eq!(host_order(&[1, 0, 1, 0, 2]), vec![1, 3, 0, 2, 4]);
    }
}
