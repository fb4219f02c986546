//! Element types and reductions: [`Datatype`], [`ReduceOp`] (with
//! [`UserOp`]) and the kernels that apply an op to byte buffers,
//! `inout[i] = input[i] (op) inout[i]` ([`reduce_into`], [`fold_in_order`]).
//!
//! This is a bottom floor of the crate: the device contract's node
//! collectives ([`device::node`](crate::device::node)), the errors
//! ([`UsageError::OpNotDefined`]) and the collective schedules
//! ([`coll`](crate::coll)) all speak of these types, and it uses nothing
//! of theirs but the error type.
//!
//! A reduction collective folds each contribution it receives into its own
//! buffer with [`reduce_into`]. The buffers arrive from the wire or from the
//! user as bytes, with no alignment promise, so the kernels take `&[u8]` and
//! pick their path per call:
//!
//! - both slices aligned for the element type: they are viewed as typed slices
//!   through bytemuck's checked casts, and the loop is a plain zip that LLVM
//!   vectorises (it runs at memory speed for the element-wise ops);
//! - either slice misaligned: each element is read and written unaligned.
//!   It has no alignment requirement and cannot panic; on x86-64 LLVM
//!   vectorises it too, at about two thirds of the aligned speed (lines
//!   split by the loads).
//!
//! Each (op, type) pair is its own monomorphised loop: the op is a closure on
//! two elements passed to one generic loop, so no per-element dispatch is left
//! in the compiled kernel, and the loop is written once.
//!
//! ## Semantics
//! MPI's, with these choices where MPI leaves one open:
//! - **Integer `Sum` and `Prod` wrap** (two's complement), signed types too.
//! - **Float `Min` and `Max`** are `if a < b { a } else { b }` (and `>` for
//!   `Max`), with `a` the input and `b` the inout element: the form that maps
//!   onto `minps`/`maxpd` and vectorises. So on a tie (`-0.0` against `0.0`)
//!   and whenever either operand is NaN, the inout element is kept: a NaN
//!   already in `inout` stays, a NaN in `input` is ignored. MPI does not
//!   define NaN here; do not rely on NaN propagating.
//! - **`Land`, `Lor`, `Lxor`** treat any non-zero element as true and produce
//!   0 or 1.
//! - **`MinLoc` and `MaxLoc`** keep the (value, index) pair with the smaller
//!   (larger) value; on equal values, the smaller index (MPI's rule). Only the
//!   value and index bytes are read and written: padding in `input` is
//!   ignored, padding in `inout` is left as it was. A NaN value in `input`
//!   never wins, and one in `inout` is never replaced.
//! - **User ops** are called once per [`reduce_into`] with the whole input and
//!   inout slices, input first: MPI's `(invec, inoutvec)` order.
//!
//! All element bytes are native-endian; converting between hosts of different
//! endianness is not this module's concern.

mod loc;
#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::{BitAnd, BitOr, BitXor};
use std::sync::Arc;

use bytemuck::Pod;

use crate::error::{Error, Result, UsageError};

/// Built-in element types of a reduction (MPI's predefined datatypes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Datatype {
    /// `i8` (MPI_INT8_T, MPI_SIGNED_CHAR).
    I8,
    /// `i16` (MPI_INT16_T, MPI_SHORT).
    I16,
    /// `i32` (MPI_INT32_T, MPI_INT).
    I32,
    /// `i64` (MPI_INT64_T, MPI_LONG on LP64).
    I64,
    /// `u8` (MPI_UINT8_T, MPI_UNSIGNED_CHAR, MPI_BYTE).
    U8,
    /// `u16` (MPI_UINT16_T).
    U16,
    /// `u32` (MPI_UINT32_T, MPI_UNSIGNED).
    U32,
    /// `u64` (MPI_UINT64_T).
    U64,
    /// `f32` (MPI_FLOAT).
    F32,
    /// `f64` (MPI_DOUBLE).
    F64,
    /// MPI_FLOAT_INT, C's `{float; int}`: 8 bytes, value at 0, index at 4.
    F32I32,
    /// MPI_DOUBLE_INT, C's `{double; int}`: 16 bytes, value at 0, index at 8,
    /// then 4 bytes of trailing padding.
    F64I32,
    /// MPI_LONG_INT, C's `{long; int}` on LP64: 16 bytes, value at 0, index
    /// at 8, then 4 bytes of trailing padding.
    I64I32,
    /// MPI_2INT, C's `{int; int}`: 8 bytes, value at 0, index at 4.
    I32I32,
    /// MPI_SHORT_INT, C's `{short; int}`: 8 bytes, value at 0, 2 bytes of
    /// padding, index at 4.
    I16I32,
    /// Elements of a user type, only valid with [`ReduceOp::User`].
    Opaque {
        /// Bytes per element. Zero is allowed (MPI has empty datatypes); such
        /// a reduction only accepts empty buffers.
        size: u32,
    },
}

impl Datatype {
    /// Bytes per element, padding included.
    pub const fn size(self) -> usize {
        match self {
            Datatype::I8 | Datatype::U8 => 1,
            Datatype::I16 | Datatype::U16 => 2,
            Datatype::I32 | Datatype::U32 | Datatype::F32 => 4,
            Datatype::I64 | Datatype::U64 | Datatype::F64 => 8,
            Datatype::F32I32 | Datatype::I32I32 | Datatype::I16I32 => 8,
            Datatype::F64I32 | Datatype::I64I32 => 16,
            Datatype::Opaque { size } => size as usize,
        }
    }

    /// A short lowercase name for messages: `"i32"`, `"f64i32"`, `"opaque"`.
    pub const fn name(self) -> &'static str {
        match self {
            Datatype::I8 => "i8",
            Datatype::I16 => "i16",
            Datatype::I32 => "i32",
            Datatype::I64 => "i64",
            Datatype::U8 => "u8",
            Datatype::U16 => "u16",
            Datatype::U32 => "u32",
            Datatype::U64 => "u64",
            Datatype::F32 => "f32",
            Datatype::F64 => "f64",
            Datatype::F32I32 => "f32i32",
            Datatype::F64I32 => "f64i32",
            Datatype::I64I32 => "i64i32",
            Datatype::I32I32 => "i32i32",
            Datatype::I16I32 => "i16i32",
            Datatype::Opaque { .. } => "opaque",
        }
    }

    const fn is_integer(self) -> bool {
        matches!(
            self,
            Datatype::I8
                | Datatype::I16
                | Datatype::I32
                | Datatype::I64
                | Datatype::U8
                | Datatype::U16
                | Datatype::U32
                | Datatype::U64
        )
    }

    const fn is_float(self) -> bool {
        matches!(self, Datatype::F32 | Datatype::F64)
    }

    const fn is_pair(self) -> bool {
        matches!(
            self,
            Datatype::F32I32
                | Datatype::F64I32
                | Datatype::I64I32
                | Datatype::I32I32
                | Datatype::I16I32
        )
    }
}

/// The function of a [`UserOp`].
type UserFn = dyn Fn(&[u8], &mut [u8]) + Send + Sync;

/// A user-defined reduction: `f(input, inout)` must set each element of
/// `inout` to `input[i] op inout[i]`; both slices hold whole elements.
///
/// The slices have the same length, a multiple of the datatype's size, and
/// no particular alignment. A panic in `f` propagates to the caller of
/// [`reduce_into`].
#[derive(Clone)]
pub struct UserOp {
    f: Arc<UserFn>,
    commutative: bool,
}

impl UserOp {
    /// Wraps `f`. `commutative` tells the collectives whether they may
    /// combine contributions in any order; if false, they combine them in
    /// rank order, which costs some algorithms a step.
    pub fn new(f: impl Fn(&[u8], &mut [u8]) + Send + Sync + 'static, commutative: bool) -> UserOp {
        UserOp {
            f: Arc::new(f),
            commutative,
        }
    }

    /// Whether the op was declared commutative.
    pub fn is_commutative(&self) -> bool {
        self.commutative
    }
}

impl fmt::Debug for UserOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserOp")
            .field("commutative", &self.commutative)
            .finish_non_exhaustive()
    }
}

/// A reduction operation: MPI's predefined ops, or a user's.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ReduceOp {
    /// Sum (MPI_SUM); integers wrap.
    Sum,
    /// Product (MPI_PROD); integers wrap.
    Prod,
    /// Minimum (MPI_MIN).
    Min,
    /// Maximum (MPI_MAX).
    Max,
    /// Logical and (MPI_LAND): non-zero is true, the result is 0 or 1.
    Land,
    /// Logical or (MPI_LOR).
    Lor,
    /// Logical exclusive or (MPI_LXOR).
    Lxor,
    /// Bitwise and (MPI_BAND).
    Band,
    /// Bitwise or (MPI_BOR).
    Bor,
    /// Bitwise exclusive or (MPI_BXOR).
    Bxor,
    /// Minimum value and its index (MPI_MINLOC), on the pair types.
    MinLoc,
    /// Maximum value and its index (MPI_MAXLOC), on the pair types.
    MaxLoc,
    /// A user-defined op (MPI_Op_create).
    User(UserOp),
}

impl ReduceOp {
    /// Whether the op is commutative: every built-in op is; a user op is
    /// what it was declared to be.
    pub fn is_commutative(&self) -> bool {
        match self {
            ReduceOp::User(user) => user.is_commutative(),
            _ => true,
        }
    }

    /// A short lowercase name for messages: `"sum"`, `"minloc"`, `"user"`.
    pub fn name(&self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Land => "land",
            ReduceOp::Lor => "lor",
            ReduceOp::Lxor => "lxor",
            ReduceOp::Band => "band",
            ReduceOp::Bor => "bor",
            ReduceOp::Bxor => "bxor",
            ReduceOp::MinLoc => "minloc",
            ReduceOp::MaxLoc => "maxloc",
            ReduceOp::User(_) => "user",
        }
    }

    /// Is the op defined on the type? MPI's rules: `Sum`, `Prod`, `Min` and
    /// `Max` on the integer and float types; the logical and bitwise ops on
    /// the integer types only; `MinLoc` and `MaxLoc` on the pair types only;
    /// a user op on every type, [`Datatype::Opaque`] included; no built-in op
    /// on `Opaque`.
    ///
    /// # Errors
    /// [`UsageError::OpNotDefined`] if it is not.
    pub fn check(&self, dtype: Datatype) -> Result<()> {
        let defined = match self {
            ReduceOp::User(_) => true,
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Min | ReduceOp::Max => {
                dtype.is_integer() || dtype.is_float()
            }
            ReduceOp::Land
            | ReduceOp::Lor
            | ReduceOp::Lxor
            | ReduceOp::Band
            | ReduceOp::Bor
            | ReduceOp::Bxor => dtype.is_integer(),
            ReduceOp::MinLoc | ReduceOp::MaxLoc => dtype.is_pair(),
        };
        if defined {
            Ok(())
        } else {
            Err(self.not_defined(dtype))
        }
    }

    fn not_defined(&self, dtype: Datatype) -> Error {
        UsageError::OpNotDefined {
            op: self.name(),
            datatype: dtype,
        }
        .into()
    }
}

/// `inout[i] = input[i] (op) inout[i]`, element-wise (MPI's order for user
/// functions: input is the left operand). See the [module docs](self) for
/// the semantics of each op. Never panics, whatever the alignment of the
/// slices (a user op's own panics aside).
///
/// # Errors
/// - [`UsageError::OpNotDefined`] if `op` is not defined on `dtype`
///   ([`ReduceOp::check`]); nothing is written.
/// - [`UsageError::LengthMismatch`] if the lengths differ or are not a
///   multiple of `dtype.size()`; nothing is written.
pub fn reduce_into(op: &ReduceOp, dtype: Datatype, input: &[u8], inout: &mut [u8]) -> Result<()> {
    op.check(dtype)?;
    if input.len() != inout.len() {
        return Err(UsageError::LengthMismatch("reduce: input and inout differ in length").into());
    }
    // A zero-size type divides only the empty buffer.
    let whole = match input.len().checked_rem(dtype.size()) {
        Some(rest) => rest == 0,
        None => input.is_empty(),
    };
    if !whole {
        return Err(
            UsageError::LengthMismatch("reduce: length is not a whole number of elements").into(),
        );
    }
    match op {
        ReduceOp::User(user) => {
            (user.f)(input, inout);
            Ok(())
        }
        ReduceOp::MinLoc => loc::reduce(loc::Keep::Smaller, dtype, input, inout),
        ReduceOp::MaxLoc => loc::reduce(loc::Keep::Larger, dtype, input, inout),
        _ => match dtype {
            Datatype::I8 => integer::<i8>(op, dtype, input, inout),
            Datatype::I16 => integer::<i16>(op, dtype, input, inout),
            Datatype::I32 => integer::<i32>(op, dtype, input, inout),
            Datatype::I64 => integer::<i64>(op, dtype, input, inout),
            Datatype::U8 => integer::<u8>(op, dtype, input, inout),
            Datatype::U16 => integer::<u16>(op, dtype, input, inout),
            Datatype::U32 => integer::<u32>(op, dtype, input, inout),
            Datatype::U64 => integer::<u64>(op, dtype, input, inout),
            Datatype::F32 => arith::<f32>(op, dtype, input, inout),
            Datatype::F64 => arith::<f64>(op, dtype, input, inout),
            // `check` has already refused these; this arm keeps the match
            // total without a panic.
            _ => Err(op.not_defined(dtype)),
        },
    }
}

/// The ops every numeric type has.
trait Arith: Pod + PartialOrd {
    fn sum(self, other: Self) -> Self;
    fn prod(self, other: Self) -> Self;
}

macro_rules! arith {
    (wrapping: $($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn sum(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn prod(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    )*};
    (float: $($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn sum(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn prod(self, other: Self) -> Self {
                self * other
            }
        }
    )*};
}
arith!(wrapping: i8, i16, i32, i64, u8, u16, u32, u64);
arith!(float: f32, f64);

/// The integer types: the arithmetic ops plus the logical and bitwise ones.
trait Int:
    Arith + Eq + From<bool> + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self>
{
}
impl<T> Int for T where
    T: Arith + Eq + From<bool> + BitAnd<Output = T> + BitOr<Output = T> + BitXor<Output = T>
{
}

fn integer<T: Int>(op: &ReduceOp, dtype: Datatype, input: &[u8], inout: &mut [u8]) -> Result<()> {
    // Zero is made inside the closures, not captured: `apply` is not
    // inlined, and a captured zero reached it as a load from memory, which
    // kept the 64-bit logical ops scalar.
    // Non-short-circuit `&`/`|` on the truth values: a branch per element
    // would stop the loop from vectorising.
    let truth = |x: T| x != T::zeroed();
    match op {
        ReduceOp::Land => apply(input, inout, |a: T, b| T::from(truth(a) & truth(b))),
        ReduceOp::Lor => apply(input, inout, |a: T, b| T::from(truth(a) | truth(b))),
        ReduceOp::Lxor => apply(input, inout, |a: T, b| T::from(truth(a) ^ truth(b))),
        ReduceOp::Band => apply(input, inout, |a: T, b| a & b),
        ReduceOp::Bor => apply(input, inout, |a: T, b| a | b),
        ReduceOp::Bxor => apply(input, inout, |a: T, b| a ^ b),
        _ => return arith::<T>(op, dtype, input, inout),
    }
    Ok(())
}

fn arith<T: Arith>(op: &ReduceOp, dtype: Datatype, input: &[u8], inout: &mut [u8]) -> Result<()> {
    match op {
        ReduceOp::Sum => apply(input, inout, T::sum),
        ReduceOp::Prod => apply(input, inout, T::prod),
        // `a` is the input: keeping `b` on ties and NaN is the documented
        // behaviour, and this exact form is what becomes `minps`/`maxpd`.
        ReduceOp::Min => apply(input, inout, |a: T, b| if a < b { a } else { b }),
        ReduceOp::Max => apply(input, inout, |a: T, b| if a > b { a } else { b }),
        _ => return Err(op.not_defined(dtype)),
    }
    Ok(())
}

/// The one element-wise loop: `inout[i] = f(input[i], inout[i])`. The
/// caller has checked that both lengths are the same multiple of
/// `size_of::<T>()`, so a failed cast can only mean misalignment.
///
/// Not inlined: each (op, type) closure makes its own small function, one
/// symbol to find in a profile. Inlined, the twelve kernels of one integer
/// type made a function so large that LLVM stopped inlining the iterator
/// constructors, lost the chunk size and kept a length check (and its panic
/// path) in the unaligned loops.
#[inline(never)]
fn apply<T: Pod>(input: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    if let (Ok(a), Ok(b)) = (
        bytemuck::try_cast_slice::<u8, T>(input),
        bytemuck::try_cast_slice_mut::<u8, T>(inout),
    ) {
        for (x, y) in a.iter().zip(b) {
            *y = f(*x, *y);
        }
        return;
    }
    let size = size_of::<T>();
    for (x, y) in input.chunks_exact(size).zip(inout.chunks_exact_mut(size)) {
        // chunks_exact hands out exactly `size_of::<T>()` bytes, the one
        // length these two calls accept.
        let r = f(
            bytemuck::pod_read_unaligned(x),
            bytemuck::pod_read_unaligned(y),
        );
        y.copy_from_slice(bytemuck::bytes_of(&r));
    }
}

/// `out = x0 ⊕ (x1 ⊕ (… ⊕ x(m−1)))` over the operands `operand(0)` to
/// `operand(m − 1)`, in that order (member order, so a non-commutative op
/// sees its operands as MPI requires). Used by the node collectives, which
/// read every member's contribution.
///
/// # Errors
/// As for [`reduce_into`]; `LengthMismatch` if an operand's length differs
/// from `out`'s.
pub fn fold_in_order<'a>(
    op: &ReduceOp,
    dtype: Datatype,
    m: usize,
    operand: impl Fn(usize) -> &'a [u8],
    out: &mut [u8],
) -> Result<(), Error> {
    let Some(last) = m.checked_sub(1) else {
        return Ok(());
    };
    let x = operand(last);
    if x.len() != out.len() {
        return Err(UsageError::LengthMismatch("fold_in_order: operand and output differ").into());
    }
    out.copy_from_slice(x);
    for i in (0..last).rev() {
        reduce_into(op, dtype, operand(i), out)?;
    }
    Ok(())
}
