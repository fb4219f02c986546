//! The ABI's predefined datatypes: size, alignment, name, and what
//! reductions run on them.

use std::ffi::c_int;

use crate::abi::class::MPI_ERR_TYPE;
use crate::error::{Fail, Res};

/// How a reduction treats a datatype's elements (the Rust type it runs on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// C `bool` (`MPI_C_BOOL`, `MPI_CXX_BOOL`): logical ops only.
    Bool,
    /// `MPI_BYTE`: bitwise ops only.
    Byte,
    /// `{float; int}`.
    FloatInt,
    /// `{double; int}`.
    DoubleInt,
    /// `{long; int}`.
    LongInt,
    /// `{int; int}` (`MPI_2INT`, `MPI_2INTEGER`).
    TwoInt,
    /// `{short; int}`.
    ShortInt,
    /// A complex number of two `f32`s.
    Complex32,
    /// A complex number of two `f64`s.
    Complex64,
    /// A Fortran `LOGICAL` (an integer, non-zero true): logical ops only.
    Logical,
    /// `{float; float}` (`MPI_2REAL`).
    TwoF32,
    /// `{double; double}` (`MPI_2DOUBLE_PRECISION`).
    TwoF64,
    /// A 16-byte integer (`MPI_INTEGER16`).
    I128,
    /// Text and packed bytes: the standard defines no op on them.
    Text,
    /// C's `long double` (x87 80-bit on x86-64): reduced by the C helper
    /// (`ffi/longdouble.rs`).
    LongDouble,
    /// A complex number of two `long double`s.
    LongDoubleComplex,
    /// `{long double; int}`.
    LongDoubleInt,
    /// No arithmetic here: half and quad precision, and complex numbers
    /// of them.
    None,
}

/// A predefined datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predefined {
    /// Its handle value.
    pub handle: usize,
    /// Its name (`MPI_Type_get_name`).
    pub name: &'static str,
    /// Bytes of data in one value (`MPI_Type_size`; x86-64 / aarch64
    /// Linux, LP64): what a message carries per value.
    pub size: usize,
    /// Its extent: the C type's size, which places consecutive values in
    /// memory. Above `size` for the pair types whose C struct has padding
    /// (`MPI_DOUBLE_INT` is 12 bytes of data in a 16-byte struct; MPI 4.1
    /// §6.9.4 defines them as the struct `{value; int}`).
    pub extent: usize,
    /// What reductions see.
    pub elem: Elem,
}

macro_rules! table {
    ($($handle:literal $name:ident $size:literal $(/ $extent:literal)? $elem:ident;)*) => {
        /// Every predefined datatype of the ABI except `MPI_DATATYPE_NULL`.
        pub const ALL: &[Predefined] = &[$(Predefined {
            handle: $handle,
            name: stringify!($name),
            size: $size,
            extent: table!(@extent $size $($extent)?),
            elem: Elem::$elem,
        }),*];
    };
    (@extent $size:literal) => { $size };
    (@extent $size:literal $extent:literal) => { $extent };
}

// `SIZE / EXTENT` where the two differ: the padded pair types.

table! {
    0x201 MPI_AINT 8 I64;
    0x202 MPI_COUNT 8 I64;
    0x203 MPI_OFFSET 8 I64;
    0x207 MPI_PACKED 1 Text;
    0x208 MPI_SHORT 2 I16;
    0x209 MPI_INT 4 I32;
    0x20a MPI_LONG 8 I64;
    0x20b MPI_LONG_LONG 8 I64;
    0x20c MPI_UNSIGNED_SHORT 2 U16;
    0x20d MPI_UNSIGNED 4 U32;
    0x20e MPI_UNSIGNED_LONG 8 U64;
    0x20f MPI_UNSIGNED_LONG_LONG 8 U64;
    0x210 MPI_FLOAT 4 F32;
    0x212 MPI_C_FLOAT_COMPLEX 8 Complex32;
    0x213 MPI_CXX_FLOAT_COMPLEX 8 Complex32;
    0x214 MPI_DOUBLE 8 F64;
    0x216 MPI_C_DOUBLE_COMPLEX 16 Complex64;
    0x217 MPI_CXX_DOUBLE_COMPLEX 16 Complex64;
    0x218 MPI_LOGICAL 4 Logical;
    0x219 MPI_INTEGER 4 I32;
    0x21a MPI_REAL 4 F32;
    0x21b MPI_COMPLEX 8 Complex32;
    0x21c MPI_DOUBLE_PRECISION 8 F64;
    0x21d MPI_DOUBLE_COMPLEX 16 Complex64;
    0x220 MPI_LONG_DOUBLE 16 LongDouble;
    0x224 MPI_C_LONG_DOUBLE_COMPLEX 32 LongDoubleComplex;
    0x225 MPI_CXX_LONG_DOUBLE_COMPLEX 32 LongDoubleComplex;
    0x228 MPI_FLOAT_INT 8 FloatInt;
    0x229 MPI_DOUBLE_INT 12 / 16 DoubleInt;
    0x22a MPI_LONG_INT 12 / 16 LongInt;
    0x22b MPI_2INT 8 TwoInt;
    0x22c MPI_SHORT_INT 6 / 8 ShortInt;
    0x22d MPI_LONG_DOUBLE_INT 20 / 32 LongDoubleInt;
    0x230 MPI_2REAL 8 TwoF32;
    0x231 MPI_2DOUBLE_PRECISION 16 TwoF64;
    0x232 MPI_2INTEGER 8 TwoInt;
    0x238 MPI_C_BOOL 1 Bool;
    0x239 MPI_CXX_BOOL 1 Bool;
    0x23c MPI_WCHAR 4 Text;
    0x240 MPI_INT8_T 1 I8;
    0x241 MPI_UINT8_T 1 U8;
    0x243 MPI_CHAR 1 Text;
    0x244 MPI_SIGNED_CHAR 1 I8;
    0x245 MPI_UNSIGNED_CHAR 1 U8;
    0x247 MPI_BYTE 1 Byte;
    0x248 MPI_INT16_T 2 I16;
    0x249 MPI_UINT16_T 2 U16;
    0x250 MPI_INT32_T 4 I32;
    0x251 MPI_UINT32_T 4 U32;
    0x258 MPI_INT64_T 8 I64;
    0x259 MPI_UINT64_T 8 U64;
    0x2c0 MPI_LOGICAL1 1 Logical;
    0x2c1 MPI_INTEGER1 1 I8;
    0x2c3 MPI_CHARACTER 1 Text;
    0x2c8 MPI_LOGICAL2 2 Logical;
    0x2c9 MPI_INTEGER2 2 I16;
    0x2ca MPI_REAL2 2 None;
    0x2d0 MPI_LOGICAL4 4 Logical;
    0x2d1 MPI_INTEGER4 4 I32;
    0x2d2 MPI_REAL4 4 F32;
    0x2d3 MPI_COMPLEX4 4 None;
    0x2d8 MPI_LOGICAL8 8 Logical;
    0x2d9 MPI_INTEGER8 8 I64;
    0x2da MPI_REAL8 8 F64;
    0x2db MPI_COMPLEX8 8 Complex32;
    0x2e0 MPI_LOGICAL16 16 Logical;
    0x2e1 MPI_INTEGER16 16 I128;
    0x2e2 MPI_REAL16 16 None;
    0x2e3 MPI_COMPLEX16 16 Complex64;
    0x2eb MPI_COMPLEX32 32 None;
}

/// Predefined handles lie in `0x200..0x300`; a 256-entry index by the low
/// byte makes the lookup one load and one compare (the send path does it).
const INDEX: [u8; 256] = {
    let mut index = [u8::MAX; 256];
    let mut i = 0;
    while i < ALL.len() {
        index[ALL[i].handle & 0xff] = i as u8;
        i += 1;
    }
    index
};

/// [`INDEX`] without the types whose data has holes (the padded pair
/// types), for [`dense`].
const DENSE: [u8; 256] = {
    let mut index = INDEX;
    let mut i = 0;
    while i < ALL.len() {
        if ALL[i].size != ALL[i].extent {
            index[ALL[i].handle & 0xff] = u8::MAX;
        }
        i += 1;
    }
    index
};

/// The predefined datatype `handle` names, if it is one.
#[inline]
pub fn predefined(handle: usize) -> Option<&'static Predefined> {
    if handle & !0xff == 0x200 {
        let i = INDEX[handle & 0xff];
        return ALL.get(usize::from(i));
    }
    None
}

/// The predefined datatype `handle` names if its values are one run of
/// bytes each, without holes (all but the padded pair types): `count` of
/// them are `count * size` bytes from the buffer's start. The blocking
/// fast path's lookup, at the cost of [`predefined`]'s (a second table
/// rather than a test of the type).
#[inline]
pub fn dense(handle: usize) -> Option<&'static Predefined> {
    if handle & !0xff == 0x200 {
        let i = DENSE[handle & 0xff];
        return ALL.get(usize::from(i));
    }
    None
}

/// The predefined datatype `handle` names.
///
/// # Errors
/// `MPI_ERR_TYPE` for `MPI_DATATYPE_NULL` or anything that is not a
/// predefined datatype.
#[inline]
pub fn lookup(handle: usize) -> Res<&'static Predefined> {
    predefined(handle).ok_or_else(|| {
        Fail::new(
            MPI_ERR_TYPE,
            "invalid datatype (MPI_DATATYPE_NULL, or not a predefined datatype)",
        )
    })
}

impl Predefined {
    /// The C alignment of the type (what `MPI_Type_create_struct` rounds
    /// an extent up to): a complex number aligns as its parts, a pair as
    /// its wider member, anything else as its size (16 at most).
    pub fn align(&self) -> usize {
        match self.name {
            "MPI_C_FLOAT_COMPLEX" | "MPI_CXX_FLOAT_COMPLEX" | "MPI_COMPLEX" | "MPI_COMPLEX8" => 4,
            "MPI_C_DOUBLE_COMPLEX"
            | "MPI_CXX_DOUBLE_COMPLEX"
            | "MPI_DOUBLE_COMPLEX"
            | "MPI_COMPLEX16" => 8,
            "MPI_C_LONG_DOUBLE_COMPLEX" | "MPI_CXX_LONG_DOUBLE_COMPLEX" | "MPI_COMPLEX32" => 16,
            "MPI_COMPLEX4" => 2,
            "MPI_FLOAT_INT" | "MPI_2INT" | "MPI_SHORT_INT" | "MPI_2REAL" | "MPI_2INTEGER" => 4,
            "MPI_DOUBLE_INT" | "MPI_LONG_INT" | "MPI_2DOUBLE_PRECISION" => 8,
            "MPI_LONG_DOUBLE_INT" => 16,
            _ => self.size.min(16),
        }
    }

    /// The basic elements of one value, as `(displacement, length)` in
    /// memory: one for most types, the value and the index for the pair
    /// types (what `MPI_Get_elements` counts, and the data a padded pair
    /// type moves: its packed form is the parts back to back).
    pub fn parts(&self) -> &'static [(usize, usize)] {
        match self.name {
            "MPI_FLOAT_INT" | "MPI_2INT" | "MPI_2REAL" | "MPI_2INTEGER" => &[(0, 4), (4, 4)],
            "MPI_SHORT_INT" => &[(0, 2), (4, 4)],
            "MPI_DOUBLE_INT" | "MPI_LONG_INT" => &[(0, 8), (8, 4)],
            "MPI_2DOUBLE_PRECISION" => &[(0, 8), (8, 8)],
            "MPI_LONG_DOUBLE_INT" => &[(0, 16), (16, 4)],
            _ => WHOLE[self.size.trailing_zeros() as usize % WHOLE.len()],
        }
    }
}

/// `parts()` of the one-element types, by the log2 of their size (every
/// predefined size is a power of two).
const WHOLE: [&[(usize, usize)]; 6] = [
    &[(0, 1)],
    &[(0, 2)],
    &[(0, 4)],
    &[(0, 8)],
    &[(0, 16)],
    &[(0, 32)],
];

/// `count` elements of `dt` in bytes.
///
/// # Errors
/// `MPI_ERR_COUNT` for a negative count or a size that overflows.
#[inline]
pub fn bytes(count: i64, dt: &Predefined) -> Res<usize> {
    usize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(dt.size))
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Fail::msg(
                crate::abi::class::MPI_ERR_COUNT,
                format!("invalid count {count}"),
            )
        })
}

/// The element count `bytes` received makes, `MPI_UNDEFINED` if not whole.
pub fn count_of(bytes: u64, dt: &Predefined) -> i64 {
    if dt.size == 0 {
        return 0;
    }
    let size = dt.size as u64;
    if bytes % size == 0 {
        (bytes / size) as i64
    } else {
        i64::from(crate::abi::MPI_UNDEFINED)
    }
}

/// An `int` count for the non-`_c` functions, or `MPI_UNDEFINED` when it
/// does not fit (as the standard asks).
pub fn int_count(count: i64) -> c_int {
    c_int::try_from(count).unwrap_or(crate::abi::MPI_UNDEFINED)
}

/// `MPI_Type_match_size`'s classes (mpi.h).
pub(crate) const MPIX_TYPECLASS_LOGICAL: std::ffi::c_int = 191;
/// See [`MPIX_TYPECLASS_LOGICAL`].
pub(crate) const MPI_TYPECLASS_INTEGER: std::ffi::c_int = 192;
/// See [`MPIX_TYPECLASS_LOGICAL`].
pub(crate) const MPI_TYPECLASS_REAL: std::ffi::c_int = 193;
/// See [`MPIX_TYPECLASS_LOGICAL`].
pub(crate) const MPI_TYPECLASS_COMPLEX: std::ffi::c_int = 194;

/// The Fortran sized type of `class` and `size` bytes
/// (`MPI_Type_match_size`): `MPI_INTEGERn`, `MPI_REALn`, `MPI_COMPLEXn`,
/// `MPI_LOGICALn`; `None` for a size the class has no type of.
pub(crate) fn match_size(class: std::ffi::c_int, size: usize) -> Option<usize> {
    let table: &[(usize, usize)] = match class {
        MPI_TYPECLASS_INTEGER => &[(1, 0x2c1), (2, 0x2c9), (4, 0x2d1), (8, 0x2d9), (16, 0x2e1)],
        MPI_TYPECLASS_REAL => &[(2, 0x2ca), (4, 0x2d2), (8, 0x2da), (16, 0x2e2)],
        MPI_TYPECLASS_COMPLEX => &[(4, 0x2d3), (8, 0x2db), (16, 0x2e3), (32, 0x2eb)],
        MPIX_TYPECLASS_LOGICAL => &[(1, 0x2c0), (2, 0x2c8), (4, 0x2d0), (8, 0x2d8), (16, 0x2e0)],
        _ => return None,
    };
    table.iter().find(|e| e.0 == size).map(|e| e.1)
}

/// The sized Fortran type `MPI_Type_create_f90_integer(r)`,
/// `_real(p, r)` or `_complex(p, r)` names: the smallest whose decimal
/// precision is at least `p` and whose decimal exponent range is at least
/// `r` (`MPI_UNDEFINED` asks nothing of one); `None` if none is.
pub(crate) fn f90_type(
    class: std::ffi::c_int,
    p: std::ffi::c_int,
    r: std::ffi::c_int,
) -> Option<usize> {
    const UNDEFINED: std::ffi::c_int = crate::abi::MPI_UNDEFINED;
    // (precision, range, type): the IEEE formats' digits.
    let table: &[(std::ffi::c_int, std::ffi::c_int, usize)] = match class {
        MPI_TYPECLASS_INTEGER => &[
            (0, 2, 0x2c1),
            (0, 4, 0x2c9),
            (0, 9, 0x2d1),
            (0, 18, 0x2d9),
            (0, 38, 0x2e1),
        ],
        MPI_TYPECLASS_REAL => &[(6, 37, 0x2d2), (15, 307, 0x2da), (33, 4931, 0x2e2)],
        MPI_TYPECLASS_COMPLEX => &[(6, 37, 0x2db), (15, 307, 0x2e3), (33, 4931, 0x2eb)],
        _ => return None,
    };
    let fits = |want: std::ffi::c_int, have: std::ffi::c_int| {
        want == UNDEFINED || (0..=have).contains(&want)
    };
    table
        .iter()
        .find(|e| fits(p, e.0) && fits(r, e.1))
        .map(|e| e.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_predefined_type_is_found_by_its_handle() {
        assert_eq!(ALL.len(), 70);
        for p in ALL {
            assert_eq!(lookup(p.handle).unwrap(), p);
            assert!(p.size > 0, "{}", p.name);
            // The world fast path (p2p/messages.rs `plain_world`) multiplies a
            // c_int count by the size without an overflow check.
            assert!(p.size <= 64, "{}", p.name);
        }
        assert_eq!(lookup(0x209).unwrap().name, "MPI_INT");
        assert_eq!(lookup(0x209).unwrap().size, 4);
        assert_eq!(lookup(0x229).unwrap().size, 12);
    }

    #[test]
    fn padded_pairs_have_the_standard_size_and_the_structs_extent() {
        // MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT.
        let want = [
            (0x229, 12, 16),
            (0x22a, 12, 16),
            (0x22c, 6, 8),
            (0x22d, 20, 32),
        ];
        for (h, size, extent) in want {
            let p = lookup(h).unwrap();
            assert_eq!((p.size, p.extent), (size, extent), "{}", p.name);
            let data: usize = p.parts().iter().map(|&(_, l)| l).sum();
            assert_eq!(data, p.size, "{}: the parts are the data", p.name);
            assert!(predefined(h).is_some() && dense(h).is_none(), "{}", p.name);
        }
        for p in ALL {
            let padded = want.iter().any(|w| w.0 == p.handle);
            assert_eq!(p.size != p.extent, padded, "{}", p.name);
            if !padded {
                assert_eq!(dense(p.handle), Some(p), "{}", p.name);
            }
        }
        assert_eq!(dense(0x200), None);
    }

    #[test]
    fn parts_and_alignment_fit_in_the_type() {
        for p in ALL {
            let parts = p.parts();
            assert!(!parts.is_empty(), "{}", p.name);
            for &(off, len) in parts {
                assert!(off + len <= p.extent, "{}", p.name);
            }
            assert!(p.extent % p.align() == 0, "{}", p.name);
        }
        assert_eq!(lookup(0x229).unwrap().parts(), &[(0, 8), (8, 4)]);
        assert_eq!(lookup(0x214).unwrap().parts(), &[(0, 8)]);
        assert_eq!(lookup(0x216).unwrap().align(), 8);
    }

    #[test]
    fn null_gaps_and_other_handles_are_type_errors() {
        for bad in [0x200, 0x204, 0x211, 0x2ff, 0x300, 0x101, 0, 1 << 48 | 0x209] {
            assert_eq!(lookup(bad).unwrap_err().class, MPI_ERR_TYPE, "{bad:#x}");
        }
    }

    #[test]
    fn counts() {
        let int = lookup(0x209).unwrap();
        assert_eq!(bytes(3, int).unwrap(), 12);
        assert!(bytes(-1, int).is_err());
        assert!(bytes(i64::MAX, int).is_err());
        assert_eq!(count_of(12, int), 3);
        assert_eq!(count_of(13, int), i64::from(crate::abi::MPI_UNDEFINED));
        assert_eq!(int_count(1 << 40), crate::abi::MPI_UNDEFINED);
    }
}
