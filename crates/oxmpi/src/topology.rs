//! Process topologies in the typed API: Cartesian grids ([`CartesianCommunicator`]), graphs
//! ([`GraphCommunicator`]) and distributed graphs ([`DistGraphCommunicator`]).
//!
//! Each dereferences to the [`Communicator`] it is, so point-to-point, collectives and the
//! neighbourhood collectives (`neighbor_*`, which follow the topology's neighbour lists) work
//! on it directly. A duplicate keeps the topology: [`Communicator::as_cartesian`] and
//! friends give the typed view back.
//!
//! ```no_run
//! use oxmpi::topology::dims_create;
//!
//! let universe = oxmpi::init()?;
//! let world = universe.world();
//! let mut dims = [0, 0];
//! dims_create(world.size(), &mut dims)?;
//! let grid = world
//!     .create_cartesian_communicator(&dims, &[true, false], true)?
//!     .expect("every rank is on the grid");
//! let up_down = grid.shift(0, 1)?;
//! println!("{:?}: from {:?} to {:?}", grid.coordinates(), up_down.source, up_down.dest);
//! # Ok::<(), oxmpi::Error>(())
//! ```
//!
//! # Standard sections
//! MPI-5.0 §8 (process topologies).

use std::ops::Deref;

use crate::comm::{Comm, Communicator};
use crate::error::{Error, ErrorClass, Result};
use crate::handle::attr::NO_COMM;
use crate::handle::topo::{self, Cart, DistGraph, Graph, Topology};
use crate::threading::ThreadLevel;
use crate::PROC_NULL;

pub use crate::handle::topo::TopoKind;

/// `MPI_Dims_create`: fills the zero entries of `dims` with a balanced factorization of
/// `nnodes` (non-increasing, as close to each other as possible), keeping nonzero entries.
/// Errors: a negative entry or `nnodes` not a multiple of the fixed entries' product
/// ([`ErrorClass::Dims`]), a negative `nnodes` ([`ErrorClass::Arg`]).
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    topo::dims_create(nnodes, dims)
}

fn core<L: ThreadLevel>(c: &Communicator<L>) -> Comm {
    Comm {
        rt: c.rt.clone(),
        state: c.state.clone(),
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// A Cartesian grid of `dims` (periodic where `periods` says) over the first
    /// `dims`-product ranks (`MPI_Cart_create`); ranks beyond the grid get `None`. With
    /// `reorder`, ranks are renumbered so that grid neighbours share a host where this
    /// communicator spans hosts (on one host the numbering is kept). Collective.
    pub fn create_cartesian_communicator(
        &self,
        dims: &[i32],
        periods: &[bool],
        reorder: bool,
    ) -> Result<Option<CartesianCommunicator<L>>> {
        let c = topo::make_cart(&core(self), dims, periods, reorder)?;
        Ok(c.and_then(|c| Communicator::from_comm(c).as_cartesian()))
    }

    /// A graph topology (`MPI_Graph_create`): node `i`'s neighbours are
    /// `edges[index[i - 1]..index[i]]`; ranks beyond the nodes get `None`. Collective.
    pub fn create_graph_communicator(
        &self,
        index: &[i32],
        edges: &[i32],
        reorder: bool,
    ) -> Result<Option<GraphCommunicator<L>>> {
        let c = topo::make_graph(&core(self), index, edges, reorder)?;
        Ok(c.and_then(|c| Communicator::from_comm(c).as_graph()))
    }

    /// A distributed graph from this process's own in- and out-edges
    /// (`MPI_Dist_graph_create_adjacent`). Weights: `None` is `MPI_UNWEIGHTED`, an empty
    /// slice `MPI_WEIGHTS_EMPTY`. Collective.
    pub fn create_dist_graph_communicator_adjacent(
        &self,
        sources: &[i32],
        source_weights: Option<&[i32]>,
        destinations: &[i32],
        destination_weights: Option<&[i32]>,
        reorder: bool,
    ) -> Result<DistGraphCommunicator<L>> {
        let c = topo::make_dist_graph_adjacent(
            &core(self),
            sources,
            source_weights,
            destinations,
            destination_weights,
            reorder,
        )?;
        dist(c)
    }

    /// A distributed graph from edges any process may name (`MPI_Dist_graph_create`):
    /// `sources[i]` has an edge to each of the next `degrees[i]` entries of `destinations`,
    /// with the matching entries of `weights` (`None`: `MPI_UNWEIGHTED`). Each process ends
    /// up with the edges that touch it. Collective.
    pub fn create_dist_graph_communicator(
        &self,
        sources: &[i32],
        degrees: &[i32],
        destinations: &[i32],
        weights: Option<&[i32]>,
        reorder: bool,
    ) -> Result<DistGraphCommunicator<L>> {
        let c = topo::make_dist_graph(
            &core(self),
            sources,
            degrees,
            destinations,
            weights,
            reorder,
        )?;
        dist(c)
    }

    /// The kind of topology this communicator has, `None` if none (`MPI_Topo_test`).
    pub fn topology(&self) -> Option<TopoKind> {
        topo::topology_of(&core(self)).map(|t| t.kind())
    }

    /// The Cartesian view of this communicator, if it has a Cartesian topology.
    pub fn as_cartesian(&self) -> Option<CartesianCommunicator<L>> {
        match &*topo::topology_of(&core(self))? {
            Topology::Cart(g) => Some(CartesianCommunicator {
                comm: Communicator::from_comm(core(self)),
                cart: g.clone(),
            }),
            _ => None,
        }
    }

    /// The graph view of this communicator, if it has a graph topology.
    pub fn as_graph(&self) -> Option<GraphCommunicator<L>> {
        match &*topo::topology_of(&core(self))? {
            Topology::Graph(g) => Some(GraphCommunicator {
                comm: Communicator::from_comm(core(self)),
                graph: g.clone(),
            }),
            _ => None,
        }
    }

    /// The distributed-graph view of this communicator, if it has one.
    pub fn as_dist_graph(&self) -> Option<DistGraphCommunicator<L>> {
        match &*topo::topology_of(&core(self))? {
            Topology::DistGraph(g) => Some(DistGraphCommunicator {
                comm: Communicator::from_comm(core(self)),
                graph: g.clone(),
            }),
            _ => None,
        }
    }

    /// This process's rank in a grid of `dims` over this communicator (`MPI_Cart_map`), `None`
    /// beyond the grid. Errors as [`create_cartesian_communicator`](Self::create_cartesian_communicator).
    pub fn cartesian_map(&self, dims: &[i32], periods: &[bool]) -> Result<Option<i32>> {
        const CALL: &str = "cart_map";
        let g = Cart::new(CALL, dims, periods)?;
        if g.size() > self.size() {
            return Err(Error::new(
                ErrorClass::Dims,
                format!(
                    "{CALL}: the grid has {} points for {} ranks",
                    g.size(),
                    self.size()
                ),
            ));
        }
        Ok((self.rank() < g.size()).then_some(self.rank()))
    }

    /// This process's rank in a graph over this communicator (`MPI_Graph_map`), `None`
    /// beyond its nodes.
    pub fn graph_map(&self, index: &[i32], edges: &[i32]) -> Result<Option<i32>> {
        const CALL: &str = "graph_map";
        let g = Graph::new(CALL, index, edges)?;
        if g.nnodes() > self.size() {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{CALL}: {} nodes for {} ranks", g.nnodes(), self.size()),
            ));
        }
        Ok((self.rank() < g.nnodes()).then_some(self.rank()))
    }
}

fn dist<L: ThreadLevel>(c: Comm) -> Result<DistGraphCommunicator<L>> {
    Communicator::from_comm(c).as_dist_graph().ok_or_else(|| {
        Error::new(
            ErrorClass::Intern,
            "dist_graph_create: the new communicator has no topology",
        )
    })
}

/// Where a shift along one dimension comes from and goes to (`MPI_Cart_shift`); `None`
/// past the edge of a non-periodic dimension (`MPI_PROC_NULL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    /// The rank this process receives from.
    pub source: Option<i32>,
    /// The rank this process sends to.
    pub dest: Option<i32>,
}

impl Shift {
    /// The pair as MPI returns it, with [`PROC_NULL`] for `None`.
    pub fn raw(self) -> (i32, i32) {
        (
            self.source.unwrap_or(PROC_NULL),
            self.dest.unwrap_or(PROC_NULL),
        )
    }
}

fn rank_opt(r: i32) -> Option<i32> {
    (r != PROC_NULL).then_some(r)
}

/// A grid's shape and this process's place in it (`MPI_Cart_get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CartesianLayout {
    /// Size of each dimension.
    pub dims: Vec<i32>,
    /// Whether each dimension wraps around.
    pub periods: Vec<bool>,
    /// This process's coordinates.
    pub coords: Vec<i32>,
}

/// A communicator with a Cartesian topology. Ranks are laid out row-major (the last
/// dimension varies fastest).
#[derive(Debug, Clone)]
pub struct CartesianCommunicator<L: ThreadLevel = crate::Single> {
    comm: Communicator<L>,
    cart: Cart,
}

impl<L: ThreadLevel> Deref for CartesianCommunicator<L> {
    type Target = Communicator<L>;
    fn deref(&self) -> &Communicator<L> {
        &self.comm
    }
}

impl<L: ThreadLevel> CartesianCommunicator<L> {
    /// Number of dimensions (`MPI_Cartdim_get`).
    pub fn num_dimensions(&self) -> i32 {
        self.cart.dims().len() as i32
    }

    /// Size of each dimension.
    pub fn dims(&self) -> &[i32] {
        self.cart.dims()
    }

    /// Whether each dimension wraps around.
    pub fn periods(&self) -> &[bool] {
        self.cart.periods()
    }

    /// Shape and this process's coordinates (`MPI_Cart_get`).
    pub fn get_layout(&self) -> CartesianLayout {
        CartesianLayout {
            dims: self.cart.dims().to_vec(),
            periods: self.cart.periods().to_vec(),
            coords: self.coordinates(),
        }
    }

    /// This process's coordinates.
    pub fn coordinates(&self) -> Vec<i32> {
        // This rank is on the grid by construction.
        self.cart
            .coords("cart_coords", self.rank())
            .unwrap_or_default()
    }

    /// The coordinates of `rank` (`MPI_Cart_coords`); [`ErrorClass::Rank`] off the grid.
    pub fn rank_to_coordinates(&self, rank: i32) -> Result<Vec<i32>> {
        self.cart.coords("cart_coords", rank)
    }

    /// The coordinates of `rank` as an array of the grid's dimension count; `N` other than
    /// that count is [`ErrorClass::Dims`].
    pub fn rank_to_coordinates_array<const N: usize>(&self, rank: i32) -> Result<[i32; N]> {
        let v = self.rank_to_coordinates(rank)?;
        <[i32; N]>::try_from(v).map_err(|v| {
            Error::new(
                ErrorClass::Dims,
                format!(
                    "cart_coords: {N} coordinates asked of a {}-dimensional grid",
                    v.len()
                ),
            )
        })
    }

    /// The rank at `coords` (`MPI_Cart_rank`): periodic dimensions wrap; a coordinate
    /// outside a non-periodic dimension is [`ErrorClass::Rank`].
    pub fn coordinates_to_rank(&self, coords: &[i32]) -> Result<i32> {
        self.cart.rank("cart_rank", coords)
    }

    /// Source and destination of a shift by `displacement` along `dimension`
    /// (`MPI_Cart_shift`); `None` past a non-periodic edge.
    pub fn shift(&self, dimension: i32, displacement: i32) -> Result<Shift> {
        let (s, d) = self
            .cart
            .shift("cart_shift", self.rank(), dimension, displacement)?;
        Ok(Shift {
            source: rank_opt(s),
            dest: rank_opt(d),
        })
    }

    /// The sub-grid through this process that keeps the dimensions where `retain` is true
    /// (`MPI_Cart_sub`). Collective.
    pub fn subgroup(&self, retain: &[bool]) -> Result<CartesianCommunicator<L>> {
        let c = topo::make_cart_sub(&core(&self.comm), retain)?;
        Communicator::from_comm(c)
            .as_cartesian()
            .ok_or_else(|| Error::new(ErrorClass::Intern, "cart_sub: the sub-grid has no topology"))
    }

    /// A duplicate with the same grid and a new context (`MPI_Comm_dup`). Collective.
    pub fn duplicate(&self) -> Result<CartesianCommunicator<L>> {
        let c = core(&self.comm).dup(NO_COMM)?;
        Ok(CartesianCommunicator {
            comm: Communicator::from_comm(c),
            cart: self.cart.clone(),
        })
    }

    /// The plain communicator.
    pub fn into_communicator(self) -> Communicator<L> {
        self.comm
    }
}

/// A communicator with a graph topology: every process knows the whole graph.
#[derive(Debug, Clone)]
pub struct GraphCommunicator<L: ThreadLevel = crate::Single> {
    comm: Communicator<L>,
    graph: Graph,
}

impl<L: ThreadLevel> Deref for GraphCommunicator<L> {
    type Target = Communicator<L>;
    fn deref(&self) -> &Communicator<L> {
        &self.comm
    }
}

impl<L: ThreadLevel> GraphCommunicator<L> {
    /// (number of nodes, number of edges) (`MPI_Graphdims_get`).
    pub fn graph_dims(&self) -> (i32, i32) {
        (self.graph.nnodes(), self.graph.edges().len() as i32)
    }

    /// The index array (`MPI_Graph_get`).
    pub fn index(&self) -> &[i32] {
        self.graph.index()
    }

    /// The edges array (`MPI_Graph_get`).
    pub fn edges(&self) -> &[i32] {
        self.graph.edges()
    }

    /// The neighbours of `rank` (`MPI_Graph_neighbors`); [`ErrorClass::Rank`] for a rank
    /// that is not a node.
    pub fn neighbors_of(&self, rank: i32) -> Result<&[i32]> {
        self.graph.neighbors(rank).ok_or_else(|| {
            Error::new(
                ErrorClass::Rank,
                format!(
                    "graph_neighbors: rank {rank} is not a node (the graph has {})",
                    self.graph.nnodes()
                ),
            )
        })
    }

    /// The number of neighbours of `rank` (`MPI_Graph_neighbors_count`).
    pub fn neighbors_count(&self, rank: i32) -> Result<i32> {
        Ok(self.neighbors_of(rank)?.len() as i32)
    }

    /// This process's neighbours.
    pub fn neighbors(&self) -> &[i32] {
        self.graph.neighbors(self.rank()).unwrap_or(&[])
    }

    /// A duplicate with the same graph and a new context (`MPI_Comm_dup`). Collective.
    pub fn duplicate(&self) -> Result<GraphCommunicator<L>> {
        let c = core(&self.comm).dup(NO_COMM)?;
        Ok(GraphCommunicator {
            comm: Communicator::from_comm(c),
            graph: self.graph.clone(),
        })
    }

    /// The plain communicator.
    pub fn into_communicator(self) -> Communicator<L> {
        self.comm
    }
}

/// A communicator with a distributed graph topology: each process knows its own in- and
/// out-edges.
#[derive(Debug, Clone)]
pub struct DistGraphCommunicator<L: ThreadLevel = crate::Single> {
    comm: Communicator<L>,
    graph: DistGraph,
}

impl<L: ThreadLevel> Deref for DistGraphCommunicator<L> {
    type Target = Communicator<L>;
    fn deref(&self) -> &Communicator<L> {
        &self.comm
    }
}

impl<L: ThreadLevel> DistGraphCommunicator<L> {
    /// Ranks with an edge to this process, in order (`MPI_Dist_graph_neighbors`).
    pub fn sources(&self) -> &[i32] {
        self.graph.sources()
    }

    /// Ranks this process has an edge to, in order.
    pub fn destinations(&self) -> &[i32] {
        self.graph.dests()
    }

    /// Weights of the in-edges; `None` if the graph is unweighted.
    pub fn source_weights(&self) -> Option<&[i32]> {
        self.graph.source_weights()
    }

    /// Weights of the out-edges; `None` if the graph is unweighted.
    pub fn destination_weights(&self) -> Option<&[i32]> {
        self.graph.dest_weights()
    }

    /// (in-degree, out-degree, weighted) (`MPI_Dist_graph_neighbors_count`).
    pub fn neighbors_count(&self) -> (i32, i32, bool) {
        (
            self.graph.sources().len() as i32,
            self.graph.dests().len() as i32,
            self.graph.weighted(),
        )
    }

    /// A duplicate with the same graph and a new context (`MPI_Comm_dup`). Collective.
    pub fn duplicate(&self) -> Result<DistGraphCommunicator<L>> {
        let c = core(&self.comm).dup(NO_COMM)?;
        Ok(DistGraphCommunicator {
            comm: Communicator::from_comm(c),
            graph: self.graph.clone(),
        })
    }

    /// The plain communicator.
    pub fn into_communicator(self) -> Communicator<L> {
        self.comm
    }
}
