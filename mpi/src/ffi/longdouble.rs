//! The boundary to `csrc/longdouble.c`: reductions on C's `long double`,
//! for which Rust has no type (`MPI_LONG_DOUBLE`, its complex numbers and
//! `MPI_LONG_DOUBLE_INT`). `crate::reduce` runs them as ferry user ops.

use std::ffi::{c_int, c_void};

extern "C" {
    fn ferry_mpi_longdouble(op: c_int, input: *const c_void, inout: *mut c_void, n: usize)
        -> c_int;
    fn ferry_mpi_longdouble_complex(
        op: c_int,
        input: *const c_void,
        inout: *mut c_void,
        n: usize,
    ) -> c_int;
    fn ferry_mpi_longdouble_int(
        op: c_int,
        input: *const c_void,
        inout: *mut c_void,
        n: usize,
    ) -> c_int;
    fn ferry_mpi_longdouble_size() -> usize;
    fn ferry_mpi_longdouble_int_size() -> usize;
}

/// Which `long double` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `long double`.
    Real,
    /// Two of them, real and imaginary.
    Complex,
    /// `{long double; int}` packed: the value then the index, without
    /// C's padding (what crosses ferry).
    WithInt,
}

/// The ops the helper knows (its `enum` in `longdouble.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Sum = 0,
    Prod = 1,
    Min = 2,
    Max = 3,
    MinLoc = 4,
    MaxLoc = 5,
}

/// The size of one element of `kind` as this machine's C compiler lays it
/// out (packed for `WithInt`).
pub(crate) fn elem_size(kind: Kind) -> usize {
    // SAFETY: functions of no arguments that return a constant.
    let (real, with_int) =
        unsafe { (ferry_mpi_longdouble_size(), ferry_mpi_longdouble_int_size()) };
    match kind {
        Kind::Real => real,
        Kind::Complex => 2 * real,
        Kind::WithInt => with_int,
    }
}

/// True if `kind` takes `op`.
pub(crate) fn takes(kind: Kind, op: Op) -> bool {
    match kind {
        Kind::Real => matches!(op, Op::Sum | Op::Prod | Op::Min | Op::Max),
        Kind::Complex => matches!(op, Op::Sum | Op::Prod),
        Kind::WithInt => matches!(op, Op::MinLoc | Op::MaxLoc),
    }
}

/// `inout[i] = input[i] (op) inout[i]` over the whole elements both
/// slices hold (a trailing partial element is left alone). False if the
/// helper refused the op (`takes` says which it takes).
pub(crate) fn apply(kind: Kind, op: Op, input: &[u8], inout: &mut [u8]) -> bool {
    let size = elem_size(kind);
    let n = input.len().min(inout.len()) / size.max(1);
    let f = match kind {
        Kind::Real => ferry_mpi_longdouble,
        Kind::Complex => ferry_mpi_longdouble_complex,
        Kind::WithInt => ferry_mpi_longdouble_int,
    };
    // SAFETY: both slices hold at least `n` whole elements of `size`
    // bytes; the helper reads `n` elements of `input` and reads and writes
    // `n` of `inout`, through memcpy (no alignment assumed), and keeps no
    // pointer after it returns.
    unsafe {
        f(
            op as c_int,
            input.as_ptr().cast(),
            inout.as_mut_ptr().cast(),
            n,
        ) == 0
    }
}
