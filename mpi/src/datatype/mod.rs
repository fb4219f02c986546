//! Datatypes: the ABI's predefined ones ([`mod@predefined`]), derived ones
//! as flattened layouts ([`derived`]), and moving data between a
//! program's buffer and packed bytes ([`pack`]).
//!
//! A datatype handle resolves to a [`TypeRef`]: a predefined type without
//! touching any table (the send path's common case), or a derived type
//! shared with its table entry (`Arc`), so an operation in flight keeps its
//! layout even if the program frees the handle.

pub mod array;
#[allow(unsafe_code)]
pub(crate) mod buf;
pub mod derived;
pub mod external;
pub(crate) mod large;
pub mod pack;
pub(crate) mod pack_calls;
pub mod predefined;
pub mod recipe;
#[allow(unsafe_code)]
pub(crate) mod segments;
pub(crate) mod typearray;
pub(crate) mod typedecode;
pub(crate) mod types;

use std::borrow::Cow;
use std::ffi::c_int;
use std::sync::Arc;

pub use derived::{Block, Builder, Layout};
pub use predefined::{
    bytes, count_of, dense, int_count, lookup, predefined, Elem, Predefined, ALL,
};
pub use recipe::{combiner, Recipe, TypeArg};

use crate::abi::class::*;
use crate::error::{Fail, Res};
use crate::ffi::cell::LevelCell;
use crate::handle::{Kind, Table};
use crate::state::ChapterCell;
use crate::state::Runtime;

/// A derived datatype's table entry.
#[derive(Debug, Clone)]
pub struct TypeEntry {
    /// The layout (shared with operations that use it).
    pub layout: Arc<Layout>,
    /// `MPI_Type_commit` ran: communication may use it.
    pub committed: bool,
    /// `MPI_Type_set_name`.
    pub name: String,
    /// How it was made (`MPI_Type_get_contents`).
    pub recipe: Arc<Recipe>,
}

/// A datatype an operation uses; see the module docs.
#[derive(Debug, Clone)]
pub enum TypeRef {
    /// A predefined datatype.
    Pre(&'static Predefined),
    /// A derived datatype.
    Derived(Arc<Layout>),
}

impl TypeRef {
    /// Bytes of data per element.
    #[inline]
    pub fn size(&self) -> usize {
        match self {
            TypeRef::Pre(p) => p.size,
            TypeRef::Derived(l) => l.size,
        }
    }

    /// Lower bound and extent.
    pub fn extent(&self) -> (isize, isize) {
        match self {
            TypeRef::Pre(p) => (0, p.extent as isize),
            TypeRef::Derived(l) => (l.lb, l.extent()),
        }
    }

    /// True lower bound and true extent.
    pub fn true_extent(&self) -> (isize, isize) {
        let l = match self {
            TypeRef::Pre(p) if p.size == p.extent => return (0, p.size as isize),
            // A padded pair's data ends before its padding.
            TypeRef::Pre(p) => Cow::Owned(Layout::of(p)),
            TypeRef::Derived(l) => Cow::Borrowed(&**l),
        };
        (l.true_lb, l.true_ub - l.true_lb)
    }

    /// The layout (built on the spot for a predefined type).
    pub fn layout(&self) -> Cow<'_, Layout> {
        match self {
            TypeRef::Pre(p) => Cow::Owned(Layout::of(p)),
            TypeRef::Derived(l) => Cow::Borrowed(l),
        }
    }

    /// Where `count` elements' data starts relative to the buffer, if it is
    /// one contiguous run (sent and received without packing). Not for a
    /// padded pair type: its values' padding lies between their data.
    #[inline]
    pub fn contiguous_from(&self, count: usize) -> Option<isize> {
        match self {
            TypeRef::Pre(p) => (p.size == p.extent).then_some(0),
            TypeRef::Derived(l) => l.contiguous_from(count),
        }
    }

    /// `count` elements' data in bytes.
    ///
    /// # Errors
    /// `MPI_ERR_COUNT` for a negative count or an overflow.
    #[inline]
    pub fn bytes(&self, count: i64) -> Res<usize> {
        usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(self.size()))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Fail::msg(MPI_ERR_COUNT, format!("invalid count {count}")))
    }

    /// Whole elements in `bytes` of data, `MPI_UNDEFINED` if not whole.
    pub fn count_of(&self, bytes: u64) -> i64 {
        let size = self.size() as u64;
        if size == 0 {
            return 0;
        }
        if bytes % size == 0 {
            (bytes / size) as i64
        } else {
            i64::from(crate::abi::MPI_UNDEFINED)
        }
    }

    /// Basic elements in `bytes` of data, `MPI_UNDEFINED` if the bytes end
    /// inside one.
    pub fn elements_of(&self, bytes: u64) -> i64 {
        match self.layout().elements_in(bytes) {
            Some(n) => i64::try_from(n).unwrap_or(i64::MAX),
            None => i64::from(crate::abi::MPI_UNDEFINED),
        }
    }

    /// The one predefined type of every value, and values per element.
    pub fn uniform(&self) -> Option<(&'static Predefined, u64)> {
        match self {
            TypeRef::Pre(p) => Some((p, 1)),
            TypeRef::Derived(l) => l.uniform(),
        }
    }
}

fn bad_type(what: &'static str) -> Fail {
    Fail::new(MPI_ERR_TYPE, what)
}

/// Derived datatypes.
static TYPES: ChapterCell<Table<TypeEntry>> = ChapterCell::new(|| Table::new(Kind::Datatype));

impl Runtime {
    /// The derived datatypes.
    pub(crate) fn types(&self) -> &'static LevelCell<Table<TypeEntry>> {
        TYPES.of(self)
    }

    /// The datatype `handle` names, committed or not (queries and
    /// constructors).
    ///
    /// # Errors
    /// `MPI_ERR_TYPE` for `MPI_DATATYPE_NULL`, a freed or a foreign handle.
    pub fn any_type(&self, handle: usize) -> Res<TypeRef> {
        if let Some(p) = predefined(handle) {
            return Ok(TypeRef::Pre(p));
        }
        self.types()
            .with(|t| {
                t.get(handle)
                    .map(|e| TypeRef::Derived(Arc::clone(&e.layout)))
            })?
            .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))
    }

    /// The datatype `handle` names, for communication: a derived one must
    /// be committed.
    ///
    /// # Errors
    /// As for [`Runtime::any_type`]; `MPI_ERR_TYPE` for an uncommitted
    /// type.
    #[inline]
    pub fn comm_type(&self, handle: usize) -> Res<TypeRef> {
        match predefined(handle) {
            Some(p) => Ok(TypeRef::Pre(p)),
            None => self.derived_comm_type(handle),
        }
    }

    /// [`Runtime::comm_type`] of a derived datatype, out of line so that
    /// the predefined case inlines into every call.
    #[inline(never)]
    fn derived_comm_type(&self, handle: usize) -> Res<TypeRef> {
        self.types()
            .with(|t| match t.get(handle) {
                Ok(e) if e.committed => Ok(TypeRef::Derived(Arc::clone(&e.layout))),
                Ok(_) => Err(bad_type(
                    "the datatype is not committed (call MPI_Type_commit before using it to communicate)",
                )),
                Err(b) => Err(Fail::handle(MPI_ERR_TYPE, b, "datatype")),
            })?
    }

    /// A datatype argument of a constructor, kept as it is now (see
    /// [`recipe`]).
    ///
    /// # Errors
    /// As for [`Runtime::any_type`].
    pub fn type_arg(&self, handle: usize) -> Res<TypeArg> {
        if let Some(p) = predefined(handle) {
            return Ok(TypeArg::Named(p));
        }
        self.types()
            .with(|t| t.get(handle).map(|e| TypeArg::Derived(e.clone())))?
            .map_err(|b| Fail::handle(MPI_ERR_TYPE, b, "datatype"))
    }

    /// Stores a new (uncommitted) derived datatype made by `recipe`; its
    /// handle.
    ///
    /// # Errors
    /// `MPI_ERR_INTERN` if the table is full.
    pub fn add_type(&self, layout: Layout, recipe: Recipe) -> Res<usize> {
        self.insert_type(TypeEntry {
            layout: Arc::new(layout),
            committed: false,
            name: String::new(),
            recipe: Arc::new(recipe),
        })
    }

    /// Stores a datatype entry; its handle.
    ///
    /// # Errors
    /// `MPI_ERR_INTERN` if the table is full.
    pub fn insert_type(&self, entry: TypeEntry) -> Res<usize> {
        self.types()
            .with(|t| t.insert(entry))?
            .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many datatypes"))
    }
}

/// An `MPI_Count` displacement or extent as an `MPI_Aint`.
///
/// # Errors
/// `MPI_ERR_COUNT` when it does not fit (never on 64-bit targets).
pub fn aint(n: i64) -> Res<isize> {
    isize::try_from(n)
        .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("{n} does not fit an MPI_Aint")))
}

/// A count argument as a `usize`.
///
/// # Errors
/// `MPI_ERR_COUNT` if negative.
pub fn count_arg(count: impl Into<i64>) -> Res<usize> {
    let c = count.into();
    usize::try_from(c).map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("invalid count {c}")))
}

/// An `int` result, or `MPI_UNDEFINED` when it does not fit.
pub fn int_or_undefined(v: i64) -> c_int {
    int_count(v)
}
