//! Process topologies: Cartesian grids (`MPI_Cart_*`, `MPI_Dims_create`), graphs
//! (`MPI_Graph_*`), distributed graphs (`MPI_Dist_graph_*`) and `MPI_Topo_test`, through the
//! handle layer's topology calls. The neighbourhood collectives are in [`crate::icoll`].

use std::ffi::c_int;

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::topo::{self, TopoKind};
use oxmpi::{ErrorClass, Result};

use crate::boundary::{comm, comm_handle, count, err, mpi_fn, put, slice, slice_mut, Handle};
use crate::comm::UNDEFINED;

/// `MPI_UNWEIGHTED`, `MPI_WEIGHTS_EMPTY`.
const UNWEIGHTED: usize = 10;
const WEIGHTS_EMPTY: usize = 11;

/// `n` ints at `p` (`n` checked non-negative).
///
/// # Safety
/// `p` valid for `n` reads.
unsafe fn ints<'a>(name: &str, p: *const c_int, n: c_int) -> Result<&'a [c_int]> {
    // SAFETY: forwarded.
    unsafe { slice(name, p, count(name, n)?) }
}

/// C booleans as `bool`s.
///
/// # Safety
/// As [`ints`].
unsafe fn bools(name: &str, p: *const c_int, n: c_int) -> Result<Vec<bool>> {
    // SAFETY: forwarded.
    Ok(unsafe { ints(name, p, n)? }
        .iter()
        .map(|&b| b != 0)
        .collect())
}

/// Copies `v` into the caller's array of `max` entries: at most `max` are written, as MPI
/// says for arrays shorter than the result.
///
/// # Safety
/// `p` valid for `max` writes.
unsafe fn out_ints(name: &str, p: *mut c_int, max: c_int, v: &[i32]) -> Result<()> {
    let max = count(name, max)?;
    // SAFETY: forwarded.
    let dst = unsafe { slice_mut(name, p, max.min(v.len()))? };
    dst.copy_from_slice(&v[..dst.len()]);
    Ok(())
}

/// Weights of a distributed graph: `MPI_UNWEIGHTED` is `None`, `MPI_WEIGHTS_EMPTY` (or any
/// array with no entries) an empty slice.
///
/// # Safety
/// `p` valid for `n` reads unless it is one of the two constants.
unsafe fn weights<'a>(name: &str, p: *const c_int, n: c_int) -> Result<Option<&'a [c_int]>> {
    match p as usize {
        UNWEIGHTED => Ok(None),
        WEIGHTS_EMPTY => Ok(Some(&[])),
        // SAFETY: forwarded.
        _ => Ok(Some(unsafe { ints(name, p, n)? })),
    }
}

/// Writes the weights of a distributed graph's neighbours (nothing when unweighted or the
/// caller passed `MPI_UNWEIGHTED`).
///
/// # Safety
/// `p` valid for `max` writes unless it is one of the two constants.
unsafe fn out_weights(name: &str, p: *mut c_int, max: c_int, w: Option<&[i32]>) -> Result<()> {
    match (p as usize, w) {
        (UNWEIGHTED | WEIGHTS_EMPTY, _) | (_, None) => Ok(()),
        // SAFETY: forwarded.
        (_, Some(w)) => unsafe { out_ints(name, p, max, w) },
    }
}

fn new_comm(name: &str, out: *mut Handle, c: CommHandle) -> Result<()> {
    // SAFETY: `out` checked for null by `put`, valid by contract.
    unsafe { put(name, out, comm_handle(c)) }
}

mpi_fn! {
    /// `MPI_Cart_create`.
    fn Cart_create = MPI_Cart_create / PMPI_Cart_create(
        c: Handle, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int,
        out: *mut Handle,
    ) on comm(c) => {
        let name = "Cart_create";
        if out.is_null() {
            return Err(err(ErrorClass::Arg, name, "newcomm is NULL"));
        }
        let d = ints(name, dims, ndims)?;
        let p = bools(name, periods, ndims)?;
        new_comm(name, out, topo::cart_create(comm(c), d, &p, reorder != 0)?)
    }

    /// `MPI_Cartdim_get`.
    fn Cartdim_get = MPI_Cartdim_get / PMPI_Cartdim_get(c: Handle, ndims: *mut c_int) on comm(c) => {
        put("Cartdim_get", ndims, topo::cartdim_get(comm(c))?)
    }

    /// `MPI_Cart_get`.
    fn Cart_get = MPI_Cart_get / PMPI_Cart_get(
        c: Handle, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int,
    ) on comm(c) => {
        let name = "Cart_get";
        let (d, p, k) = topo::cart_get(comm(c))?;
        let p: Vec<i32> = p.iter().map(|&b| b as i32).collect();
        out_ints(name, dims, maxdims, &d)?;
        out_ints(name, periods, maxdims, &p)?;
        out_ints(name, coords, maxdims, &k)
    }

    /// `MPI_Cart_rank`.
    fn Cart_rank = MPI_Cart_rank / PMPI_Cart_rank(c: Handle, coords: *const c_int, rank: *mut c_int) on comm(c) => {
        let name = "Cart_rank";
        let n = topo::cartdim_get(comm(c))?;
        let k = ints(name, coords, n)?;
        put(name, rank, topo::cart_rank(comm(c), k)?)
    }

    /// `MPI_Cart_coords`.
    fn Cart_coords = MPI_Cart_coords / PMPI_Cart_coords(c: Handle, rank: c_int, maxdims: c_int, coords: *mut c_int) on comm(c) => {
        out_ints("Cart_coords", coords, maxdims, &topo::cart_coords(comm(c), rank)?)
    }

    /// `MPI_Cart_shift`.
    fn Cart_shift = MPI_Cart_shift / PMPI_Cart_shift(c: Handle, dir: c_int, disp: c_int, src: *mut c_int, dst: *mut c_int) on comm(c) => {
        let name = "Cart_shift";
        if src.is_null() || dst.is_null() {
            return Err(err(ErrorClass::Arg, name, "rank_source or rank_dest is NULL"));
        }
        let (s, d) = topo::cart_shift(comm(c), dir, disp)?;
        put(name, src, s)?;
        put(name, dst, d)
    }

    /// `MPI_Cart_sub`.
    fn Cart_sub = MPI_Cart_sub / PMPI_Cart_sub(c: Handle, remain: *const c_int, out: *mut Handle) on comm(c) => {
        let name = "Cart_sub";
        if out.is_null() {
            return Err(err(ErrorClass::Arg, name, "newcomm is NULL"));
        }
        let n = topo::cartdim_get(comm(c))?;
        let r = bools(name, remain, n)?;
        new_comm(name, out, topo::cart_sub(comm(c), &r)?)
    }

    /// `MPI_Cart_map`.
    fn Cart_map = MPI_Cart_map / PMPI_Cart_map(
        c: Handle, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int,
    ) on comm(c) => {
        let name = "Cart_map";
        let d = ints(name, dims, ndims)?;
        let p = bools(name, periods, ndims)?;
        put(name, newrank, topo::cart_map(comm(c), d, &p)?)
    }

    /// `MPI_Dims_create`.
    fn Dims_create = MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) on CommHandle::WORLD => {
        let name = "Dims_create";
        let d = slice_mut(name, dims, count(name, ndims)?)?;
        topo::dims_create(nnodes, d)
    }

    /// `MPI_Graph_create`.
    fn Graph_create = MPI_Graph_create / PMPI_Graph_create(
        c: Handle, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int,
        out: *mut Handle,
    ) on comm(c) => {
        let name = "Graph_create";
        if out.is_null() {
            return Err(err(ErrorClass::Arg, name, "newcomm is NULL"));
        }
        let ix = ints(name, index, nnodes)?;
        let ne = ix.last().copied().unwrap_or(0);
        let e = ints(name, edges, ne)?;
        new_comm(name, out, topo::graph_create(comm(c), ix, e, reorder != 0)?)
    }

    /// `MPI_Graphdims_get`.
    fn Graphdims_get = MPI_Graphdims_get / PMPI_Graphdims_get(c: Handle, nnodes: *mut c_int, nedges: *mut c_int) on comm(c) => {
        let name = "Graphdims_get";
        let (n, e) = topo::graphdims_get(comm(c))?;
        put(name, nnodes, n)?;
        put(name, nedges, e)
    }

    /// `MPI_Graph_get`.
    fn Graph_get = MPI_Graph_get / PMPI_Graph_get(
        c: Handle, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int,
    ) on comm(c) => {
        let name = "Graph_get";
        let (ix, e) = topo::graph_get(comm(c))?;
        out_ints(name, index, maxindex, &ix)?;
        out_ints(name, edges, maxedges, &e)
    }

    /// `MPI_Graph_neighbors_count`.
    fn Graph_neighbors_count = MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(c: Handle, rank: c_int, n: *mut c_int) on comm(c) => {
        put("Graph_neighbors_count", n, topo::graph_neighbors_count(comm(c), rank)?)
    }

    /// `MPI_Graph_neighbors`.
    fn Graph_neighbors = MPI_Graph_neighbors / PMPI_Graph_neighbors(c: Handle, rank: c_int, max: c_int, nb: *mut c_int) on comm(c) => {
        out_ints("Graph_neighbors", nb, max, &topo::graph_neighbors(comm(c), rank)?)
    }

    /// `MPI_Graph_map`.
    fn Graph_map = MPI_Graph_map / PMPI_Graph_map(
        c: Handle, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int,
    ) on comm(c) => {
        let name = "Graph_map";
        let ix = ints(name, index, nnodes)?;
        let e = ints(name, edges, ix.last().copied().unwrap_or(0))?;
        put(name, newrank, topo::graph_map(comm(c), ix, e)?)
    }

    /// `MPI_Dist_graph_create_adjacent`.
    fn Dist_graph_create_adjacent = MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        c: Handle, indegree: c_int, sources: *const c_int, sweights: *const c_int,
        outdegree: c_int, dests: *const c_int, dweights: *const c_int, _info: Handle,
        reorder: c_int, out: *mut Handle,
    ) on comm(c) => {
        let name = "Dist_graph_create_adjacent";
        if out.is_null() {
            return Err(err(ErrorClass::Arg, name, "newcomm is NULL"));
        }
        let s = ints(name, sources, indegree)?;
        let sw = weights(name, sweights, indegree)?;
        let d = ints(name, dests, outdegree)?;
        let dw = weights(name, dweights, outdegree)?;
        new_comm(name, out, topo::dist_graph_create_adjacent(comm(c), s, sw, d, dw, reorder != 0)?)
    }

    /// `MPI_Dist_graph_create`.
    fn Dist_graph_create = MPI_Dist_graph_create / PMPI_Dist_graph_create(
        c: Handle, n: c_int, sources: *const c_int, degrees: *const c_int, dests: *const c_int,
        w: *const c_int, _info: Handle, reorder: c_int, out: *mut Handle,
    ) on comm(c) => {
        let name = "Dist_graph_create";
        if out.is_null() {
            return Err(err(ErrorClass::Arg, name, "newcomm is NULL"));
        }
        let s = ints(name, sources, n)?;
        let deg = ints(name, degrees, n)?;
        let mut total: c_int = 0;
        for &x in deg {
            count(name, x)?;
            total = total
                .checked_add(x)
                .ok_or_else(|| err(ErrorClass::Arg, name, "the degrees overflow"))?;
        }
        let d = ints(name, dests, total)?;
        let wt = weights(name, w, total)?;
        new_comm(name, out, topo::dist_graph_create(comm(c), s, deg, d, wt, reorder != 0)?)
    }

    /// `MPI_Dist_graph_neighbors_count`.
    fn Dist_graph_neighbors_count = MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(
        c: Handle, indeg: *mut c_int, outdeg: *mut c_int, weighted: *mut c_int,
    ) on comm(c) => {
        let name = "Dist_graph_neighbors_count";
        let (i, o, w) = topo::dist_graph_neighbors_count(comm(c))?;
        put(name, indeg, i)?;
        put(name, outdeg, o)?;
        put(name, weighted, w as c_int)
    }

    /// `MPI_Dist_graph_neighbors`.
    fn Dist_graph_neighbors = MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        c: Handle, maxin: c_int, sources: *mut c_int, sweights: *mut c_int,
        maxout: c_int, dests: *mut c_int, dweights: *mut c_int,
    ) on comm(c) => {
        let name = "Dist_graph_neighbors";
        let (s, sw, d, dw) = topo::dist_graph_neighbors(comm(c))?;
        out_ints(name, sources, maxin, &s)?;
        out_weights(name, sweights, maxin, sw.as_deref())?;
        out_ints(name, dests, maxout, &d)?;
        out_weights(name, dweights, maxout, dw.as_deref())
    }

    /// `MPI_Topo_test`.
    fn Topo_test = MPI_Topo_test / PMPI_Topo_test(c: Handle, status: *mut c_int) on comm(c) => {
        let k = match topo::topo_test(comm(c))? {
            Some(TopoKind::Cart) => 211,
            Some(TopoKind::Graph) => 212,
            Some(TopoKind::DistGraph) => 213,
            None => UNDEFINED,
        };
        put("Topo_test", status, k)
    }
}
