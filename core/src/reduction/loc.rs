//! `MinLoc` and `MaxLoc` on MPI's (value, index) pair types.
//!
//! The pairs are C structs with padding, so they are not `Pod` and cannot be
//! viewed as typed slices without deriving (which would bring `unsafe impl`
//! into this `forbid(unsafe_code)` crate). Each field is decoded from its
//! bytes instead: one path for aligned and misaligned buffers alike. These
//! ops are rare and compare-and-branch per element anyway, so they do not
//! vectorise whichever way the bytes are read.

use super::{Datatype, ReduceOp};
use crate::error::Result;

/// Which value wins.
#[derive(Debug, Clone, Copy)]
pub(super) enum Keep {
    /// `MinLoc`.
    Smaller,
    /// `MaxLoc`.
    Larger,
}

/// Bytes per index: C's `int` in every pair type.
const INDEX_LEN: usize = 4;

/// The caller has checked the lengths: equal, and a multiple of
/// `dtype.size()`.
pub(super) fn reduce(keep: Keep, dtype: Datatype, input: &[u8], inout: &mut [u8]) -> Result<()> {
    // Value length, element size and index offset: C's layout of each struct.
    match dtype {
        Datatype::F32I32 => by::<4, 8, 4, _>(keep, input, inout, f32::from_ne_bytes),
        Datatype::F64I32 => by::<8, 16, 8, _>(keep, input, inout, f64::from_ne_bytes),
        Datatype::I64I32 => by::<8, 16, 8, _>(keep, input, inout, i64::from_ne_bytes),
        Datatype::I32I32 => by::<4, 8, 4, _>(keep, input, inout, i32::from_ne_bytes),
        Datatype::I16I32 => by::<2, 8, 4, _>(keep, input, inout, i16::from_ne_bytes),
        _ => {
            let op = match keep {
                Keep::Smaller => ReduceOp::MinLoc,
                Keep::Larger => ReduceOp::MaxLoc,
            };
            return Err(op.not_defined(dtype));
        }
    }
    Ok(())
}

/// Monomorphises the loop once per direction, so the comparison is not a
/// per-element branch on `keep`.
fn by<const VALUE_LEN: usize, const SIZE: usize, const INDEX_AT: usize, V: PartialOrd>(
    keep: Keep,
    input: &[u8],
    inout: &mut [u8],
    decode: fn([u8; VALUE_LEN]) -> V,
) {
    match keep {
        Keep::Smaller => pairs::<VALUE_LEN, SIZE, INDEX_AT, V>(input, inout, decode, |a, b| a < b),
        Keep::Larger => pairs::<VALUE_LEN, SIZE, INDEX_AT, V>(input, inout, decode, |a, b| a > b),
    }
}

#[inline(always)]
fn pairs<const VALUE_LEN: usize, const SIZE: usize, const INDEX_AT: usize, V: PartialOrd>(
    input: &[u8],
    inout: &mut [u8],
    decode: fn([u8; VALUE_LEN]) -> V,
    better: impl Fn(&V, &V) -> bool,
) {
    for (a, b) in input.chunks_exact(SIZE).zip(inout.chunks_exact_mut(SIZE)) {
        let (va, vb) = (decode(field(a, 0)), decode(field(b, 0)));
        // Equal values: the smaller index wins, for MaxLoc too (MPI's rule).
        // A NaN compares false both ways, so it never wins from `input`.
        let wins = better(&va, &vb)
            || (va == vb
                && i32::from_ne_bytes(field(a, INDEX_AT)) < i32::from_ne_bytes(field(b, INDEX_AT)));
        if wins {
            // The fields only: padding in `inout` is the caller's, left as is.
            copy(a, b, 0, VALUE_LEN);
            copy(a, b, INDEX_AT, INDEX_LEN);
        }
    }
}

/// The `N` bytes at `at`. The layouts above keep every field inside its
/// element, so the zero fallback is never taken; it exists so that a wrong
/// layout would give a wrong answer (which the tests catch) and not a panic.
#[inline(always)]
fn field<const N: usize>(elem: &[u8], at: usize) -> [u8; N] {
    elem.get(at..at + N)
        .and_then(|bytes| bytes.try_into().ok())
        .unwrap_or([0; N])
}

#[inline(always)]
fn copy(from: &[u8], to: &mut [u8], at: usize, len: usize) {
    if let (Some(src), Some(dst)) = (from.get(at..at + len), to.get_mut(at..at + len)) {
        dst.copy_from_slice(src);
    }
}
