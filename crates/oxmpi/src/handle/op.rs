//! Reduction operations as ids (`MPI_Op`): the predefined ones at their MPI-5.0 ABI values
//! and user operations made from byte-level callbacks (`MPI_Op_create` with an
//! `MPI_User_function`). [`op_get`] gives the [`Op`] that every reduction collective takes,
//! so a byte-level operation reduces through the same kernel path as a typed one. Errors: an
//! id that is null, freed or never issued is [`ErrorClass::Op`].
//!
//! # Standard sections
//! MPI-5.0 §6.9.5 (user-defined reduction operations).

use super::env::runtime;
use super::table::Table;
use crate::error::{Error, ErrorClass, Result};
use crate::op::{ByteFn, Datatype, Op, UserOp};

/// An operation id (`MPI_Op`). `Copy`; user operations are valid until [`op_free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct OpHandle(u32);

impl OpHandle {
    /// `MPI_OP_NULL` (ABI value).
    pub const NULL: OpHandle = OpHandle(0x20);
    /// `MPI_SUM`.
    pub const SUM: OpHandle = OpHandle(0x21);
    /// `MPI_MIN`.
    pub const MIN: OpHandle = OpHandle(0x22);
    /// `MPI_MAX`.
    pub const MAX: OpHandle = OpHandle(0x23);
    /// `MPI_PROD`.
    pub const PROD: OpHandle = OpHandle(0x24);
    /// `MPI_BAND`.
    pub const BAND: OpHandle = OpHandle(0x28);
    /// `MPI_BOR`.
    pub const BOR: OpHandle = OpHandle(0x29);
    /// `MPI_BXOR`.
    pub const BXOR: OpHandle = OpHandle(0x2a);
    /// `MPI_LAND`.
    pub const LAND: OpHandle = OpHandle(0x30);
    /// `MPI_LOR`.
    pub const LOR: OpHandle = OpHandle(0x31);
    /// `MPI_LXOR`.
    pub const LXOR: OpHandle = OpHandle(0x32);
    /// `MPI_MINLOC`.
    pub const MINLOC: OpHandle = OpHandle(0x38);
    /// `MPI_MAXLOC`.
    pub const MAXLOC: OpHandle = OpHandle(0x39);
    /// `MPI_REPLACE`.
    pub const REPLACE: OpHandle = OpHandle(0x3c);
    /// `MPI_NO_OP`.
    pub const NO_OP: OpHandle = OpHandle(0x3d);

    /// The id as an integer (`MPI_Op_toint`).
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (`MPI_Op_fromint`).
    pub fn from_int(i: i32) -> OpHandle {
        OpHandle(i as u32)
    }

    #[inline(always)]
    fn predefined(self) -> Option<Op> {
        Some(match self {
            OpHandle::SUM => Op::Sum,
            OpHandle::MIN => Op::Min,
            OpHandle::MAX => Op::Max,
            OpHandle::PROD => Op::Prod,
            OpHandle::BAND => Op::BitwiseAnd,
            OpHandle::BOR => Op::BitwiseOr,
            OpHandle::BXOR => Op::BitwiseXor,
            OpHandle::LAND => Op::LogicalAnd,
            OpHandle::LOR => Op::LogicalOr,
            OpHandle::LXOR => Op::LogicalXor,
            OpHandle::MINLOC => Op::MinLoc,
            OpHandle::MAXLOC => Op::MaxLoc,
            OpHandle::REPLACE => Op::Replace,
            OpHandle::NO_OP => Op::NoOp,
            _ => return None,
        })
    }
}

static OPS: Table<UserOp> = Table::new();

#[cold]
#[inline(never)]
fn bad_op(call: &str, h: OpHandle) -> Error {
    Error::new(
        ErrorClass::Op,
        format!(
            "{call}: {:#x} is not a live operation (null, freed, or never created)",
            h.0
        ),
    )
}

/// A user operation from a byte-level callback (`MPI_Op_create`); see [`ByteFn`].
pub fn op_create(f: ByteFn, commutative: bool) -> Result<OpHandle> {
    runtime("op_create")?;
    OPS.insert(UserOp::from_bytes(commutative, f))
        .map(OpHandle)
        .ok_or_else(|| Error::new(ErrorClass::Other, "op_create: too many operations are live"))
}

/// The operation behind `h`, for any reduction collective.
// Always inlined up to a predefined op (the C reductions' short path): its answer came back
// through memory and was reloaded wider than it was stored (a failed store forward).
#[inline(always)]
pub fn op_get(h: OpHandle) -> Result<Op> {
    runtime("op_get")?;
    op_named(h)
}

/// [`op_get`] without its check that MPI is running, for calls that make that check
/// themselves (a one-sided accumulate's window lookup does).
#[inline(always)]
pub fn op_named(h: OpHandle) -> Result<Op> {
    if let Some(op) = h.predefined() {
        return Ok(op);
    }
    user_op(h)
}

#[inline(never)]
fn user_op(h: OpHandle) -> Result<Op> {
    OPS.get(h.0)
        .map(Op::User)
        .ok_or_else(|| bad_op("op_get", h))
}

/// Whether `h` is commutative (`MPI_Op_commutative`).
pub fn op_commutative(h: OpHandle) -> Result<bool> {
    Ok(op_get(h)?.is_commutative())
}

/// Frees user operation `*h` and sets it to [`OpHandle::NULL`] (`MPI_Op_free`); reductions
/// in flight keep it until they complete. Predefined operations cannot be freed.
pub fn op_free(h: &mut OpHandle) -> Result<()> {
    runtime("op_free")?;
    if h.predefined().is_some() {
        return Err(Error::new(
            ErrorClass::Op,
            "op_free: predefined operations cannot be freed",
        ));
    }
    OPS.remove(h.0).ok_or_else(|| bad_op("op_free", *h))?;
    *h = OpHandle::NULL;
    Ok(())
}

/// `MPI_Reduce_local` on raw bytes with a user operation; see
/// [`reduce_local_bytes`](crate::op::reduce_local_bytes).
pub fn reduce_local(
    input: &[u8],
    inout: &mut [u8],
    count: usize,
    datatype: Datatype,
    h: OpHandle,
) -> Result<()> {
    crate::op::reduce_local_bytes(input, inout, count, datatype, &op_get(h)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_ids_name_their_ops_and_nothing_else_does() {
        let named = [
            (OpHandle::SUM, Op::Sum),
            (OpHandle::MIN, Op::Min),
            (OpHandle::MAX, Op::Max),
            (OpHandle::PROD, Op::Prod),
            (OpHandle::BAND, Op::BitwiseAnd),
            (OpHandle::BOR, Op::BitwiseOr),
            (OpHandle::BXOR, Op::BitwiseXor),
            (OpHandle::LAND, Op::LogicalAnd),
            (OpHandle::LOR, Op::LogicalOr),
            (OpHandle::LXOR, Op::LogicalXor),
            (OpHandle::MINLOC, Op::MinLoc),
            (OpHandle::MAXLOC, Op::MaxLoc),
            (OpHandle::REPLACE, Op::Replace),
            (OpHandle::NO_OP, Op::NoOp),
        ];
        for (h, op) in &named {
            let got = h
                .predefined()
                .unwrap_or_else(|| panic!("{h:?} is predefined"));
            assert_eq!(
                std::mem::discriminant(&got),
                std::mem::discriminant(op),
                "{h:?}"
            );
        }
        // Every other value, the null op and user ids included, is not predefined.
        for v in (0..0x100).chain([0x1000, 0x1021, u32::MAX]) {
            if !named.iter().any(|(h, _)| h.0 == v) {
                assert!(OpHandle(v).predefined().is_none(), "{v:#x}");
            }
        }
    }
}
