//! How a derived datatype was made: the combiner and the arguments of its
//! constructor, as `MPI_Type_get_envelope` and `MPI_Type_get_contents`
//! return them (MPI 4.1 §5.1.13).
//!
//! A derived datatype argument is kept as its table entry was at the call
//! (layout, recipe, committed flag, name), so the recipe outlives the
//! program freeing that argument's handle: `MPI_Type_get_contents` then
//! stores a new handle for it, which the program frees; a predefined
//! argument is returned as its own handle.
//!
//! A large-count constructor (`MPI_Type_contiguous_c`, ...) records its
//! `MPI_Count` arguments as large counts (MPI 4.1 §5.1.13's table: its
//! counts, block lengths, displacements, strides and bounds, the array
//! types' sizes), whatever their values, and only the arguments that stay
//! `int` (`ndims`, `order`, the darray's distribution) as integers; only
//! `MPI_Type_get_envelope_c`/`MPI_Type_get_contents_c` decode such a type.

use std::borrow::Cow;
use std::ffi::c_int;

use crate::datatype::derived::Layout;
use crate::datatype::predefined::Predefined;
use crate::datatype::TypeEntry;

/// The ABI's combiner values (`MPI_COMBINER_*`).
pub mod combiner {
    use std::ffi::c_int;
    /// A predefined datatype.
    pub const NAMED: c_int = 101;
    /// `MPI_Type_dup`.
    pub const DUP: c_int = 102;
    /// `MPI_Type_contiguous`.
    pub const CONTIGUOUS: c_int = 103;
    /// `MPI_Type_vector`.
    pub const VECTOR: c_int = 104;
    /// `MPI_Type_create_hvector`.
    pub const HVECTOR: c_int = 105;
    /// `MPI_Type_indexed`.
    pub const INDEXED: c_int = 106;
    /// `MPI_Type_create_hindexed`.
    pub const HINDEXED: c_int = 107;
    /// `MPI_Type_create_indexed_block`.
    pub const INDEXED_BLOCK: c_int = 108;
    /// `MPI_Type_create_hindexed_block`.
    pub const HINDEXED_BLOCK: c_int = 109;
    /// `MPI_Type_create_struct`.
    pub const STRUCT: c_int = 110;
    /// `MPI_Type_create_subarray`.
    pub const SUBARRAY: c_int = 111;
    /// `MPI_Type_create_darray`.
    pub const DARRAY: c_int = 112;
    /// `MPI_Type_create_f90_integer`.
    pub const F90_INTEGER: c_int = 113;
    /// `MPI_Type_create_f90_real`.
    pub const F90_REAL: c_int = 114;
    /// `MPI_Type_create_f90_complex`.
    pub const F90_COMPLEX: c_int = 115;
    /// `MPI_Type_create_resized`.
    pub const RESIZED: c_int = 116;
}

/// A datatype argument of a constructor; see the module docs.
#[derive(Debug, Clone)]
pub enum TypeArg {
    /// A predefined datatype.
    Named(&'static Predefined),
    /// A derived datatype's entry as it was at the call.
    Derived(TypeEntry),
}

impl TypeArg {
    /// The argument's layout.
    pub fn layout(&self) -> Cow<'_, Layout> {
        match self {
            TypeArg::Named(p) => Cow::Owned(Layout::of(p)),
            TypeArg::Derived(e) => Cow::Borrowed(&e.layout),
        }
    }
}

/// A constructor and its arguments; see the module docs.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// `MPI_COMBINER_*`.
    pub combiner: c_int,
    /// The integer arguments, in the standard's order.
    pub ints: Vec<c_int>,
    /// The address arguments.
    pub aints: Vec<isize>,
    /// The large-count arguments (a `_c` constructor's; see the module
    /// docs).
    pub counts: Vec<i64>,
    /// The datatype arguments.
    pub types: Vec<TypeArg>,
}

impl Recipe {
    /// A recipe of `combiner` with these arguments.
    pub fn new(
        combiner: c_int,
        ints: Vec<c_int>,
        aints: Vec<isize>,
        types: Vec<TypeArg>,
    ) -> Recipe {
        Recipe {
            combiner,
            ints,
            aints,
            counts: Vec::new(),
            types,
        }
    }

    /// A large-count constructor's recipe: `ints` and `counts` (no address
    /// arguments: a `_c` constructor takes its displacements as counts).
    pub fn large(
        combiner: c_int,
        ints: Vec<c_int>,
        counts: Vec<i64>,
        types: Vec<TypeArg>,
    ) -> Recipe {
        Recipe {
            combiner,
            ints,
            aints: Vec::new(),
            counts,
            types,
        }
    }
}
