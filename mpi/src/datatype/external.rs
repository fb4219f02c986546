//! The `external32` data representation (MPI 4.1 §13.5.2), for
//! `MPI_Pack_external` and `MPI_Unpack_external`: every basic value
//! big-endian, at the standard's sizes.
//!
//! Conversion works on ferry's native packed form (the data of each value
//! in type-map order, `pack.rs`), walking the layout's runs: each
//! predefined value is a list of components, converted one by one. Three
//! kinds differ from plain byte order:
//! - `long` and `unsigned long` are 8 bytes here and 4 in external32, and
//!   `wchar_t` 4 and 2: a value that does not fit is `MPI_ERR_CONVERSION`;
//! - C's `long double` is x87's 80-bit format on x86-64 and IEEE binary128
//!   in external32 (the exponent is the same; the significand loses its
//!   explicit integer bit one way and the 49 bits x87 cannot hold the
//!   other way, truncated).

use crate::abi::class::{MPI_ERR_CONVERSION, MPI_ERR_UNSUPPORTED_DATAREP};

use crate::error::{Fail, Res};

use crate::datatype::derived::Layout;
use crate::datatype::predefined::Predefined;

/// One basic value inside a predefined type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The same size both ways: only the byte order changes.
    Swap(usize),
    /// A signed integer of 8 native bytes and 4 external ones.
    Narrow,
    /// An unsigned integer of `native` bytes and `external` ones.
    NarrowUnsigned { native: usize, external: usize },
    /// C's `long double`.
    LongDouble,
}

impl Part {
    fn native(self) -> usize {
        match self {
            Part::Swap(n) => n,
            Part::Narrow => 8,
            Part::NarrowUnsigned { native, .. } => native,
            Part::LongDouble => 16,
        }
    }

    fn external(self) -> usize {
        match self {
            Part::Swap(n) => n,
            Part::Narrow => 4,
            Part::NarrowUnsigned { external, .. } => external,
            Part::LongDouble => 16,
        }
    }
}

/// The components of one value of `p`, in order.
fn parts(p: &Predefined) -> Vec<Part> {
    let one = |part| vec![part];
    match p.name {
        "MPI_LONG" => one(Part::Narrow),
        "MPI_UNSIGNED_LONG" => one(Part::NarrowUnsigned {
            native: 8,
            external: 4,
        }),
        "MPI_WCHAR" => one(Part::NarrowUnsigned {
            native: 4,
            external: 2,
        }),
        "MPI_LONG_INT" => vec![Part::Narrow, Part::Swap(4)],
        "MPI_LONG_DOUBLE" => one(Part::LongDouble),
        "MPI_C_LONG_DOUBLE_COMPLEX" | "MPI_CXX_LONG_DOUBLE_COMPLEX" => {
            vec![Part::LongDouble, Part::LongDouble]
        }
        "MPI_LONG_DOUBLE_INT" => vec![Part::LongDouble, Part::Swap(4)],
        // Complex numbers: two reals, each in its own byte order.
        "MPI_C_FLOAT_COMPLEX"
        | "MPI_CXX_FLOAT_COMPLEX"
        | "MPI_COMPLEX"
        | "MPI_COMPLEX8"
        | "MPI_C_DOUBLE_COMPLEX"
        | "MPI_CXX_DOUBLE_COMPLEX"
        | "MPI_DOUBLE_COMPLEX"
        | "MPI_COMPLEX16"
        | "MPI_COMPLEX4"
        | "MPI_COMPLEX32" => {
            vec![Part::Swap(p.size / 2); 2]
        }
        _ => p.parts().iter().map(|&(_, len)| Part::Swap(len)).collect(),
    }
}

/// `datarep` is the one representation MPI defines.
///
/// # Errors
/// `MPI_ERR_UNSUPPORTED_DATAREP` for any other.
pub fn check_datarep(datarep: &str) -> Res {
    if datarep == "external32" {
        return Ok(());
    }
    Err(Fail::msg(
        MPI_ERR_UNSUPPORTED_DATAREP,
        format!("data representation \"{datarep}\" (only \"external32\" is defined)"),
    ))
}

/// Bytes of `count` elements of `layout` in external32.
///
/// # Errors
/// `MPI_ERR_CONVERSION` if the size overflows.
pub fn size(layout: &Layout, count: usize) -> Res<usize> {
    let one = layout.runs.iter().try_fold(0usize, |acc, run| {
        let per: usize = parts(run.ty).iter().map(|p| p.external()).sum();
        usize::try_from(run.n)
            .ok()
            .and_then(|n| n.checked_mul(per))
            .and_then(|b| acc.checked_add(b))
    });
    one.and_then(|b| b.checked_mul(count))
        .ok_or_else(|| Fail::new(MPI_ERR_CONVERSION, "the external32 size overflows"))
}

/// Every component of `count` elements of `layout`, in order.
fn each_part(layout: &Layout, count: usize, mut f: impl FnMut(Part) -> Res) -> Res {
    let per_type: Vec<(Vec<Part>, u64)> = layout.runs.iter().map(|r| (parts(r.ty), r.n)).collect();
    for _ in 0..count {
        for (parts, n) in &per_type {
            for _ in 0..*n {
                for &p in parts {
                    f(p)?;
                }
            }
        }
    }
    Ok(())
}

/// Converts native packed data (`native`, as `pack.rs` makes it) of
/// `count` elements of `layout` into external32 `out` (of [`size`] bytes).
///
/// # Errors
/// `MPI_ERR_CONVERSION` for a value external32 cannot hold.
pub fn to_external(native: &[u8], layout: &Layout, count: usize, out: &mut [u8]) -> Res {
    let (mut i, mut o) = (0usize, 0usize);
    each_part(layout, count, |p| {
        let (n, e) = (p.native(), p.external());
        let (src, dst) = (&native[i..i + n], &mut out[o..o + e]);
        match p {
            Part::Swap(_) => dst
                .iter_mut()
                .zip(src.iter().rev())
                .for_each(|(d, s)| *d = *s),
            Part::Narrow => {
                let v = i64::from_ne_bytes(src.try_into().unwrap_or([0; 8]));
                let v = i32::try_from(v).map_err(|_| too_wide(v))?;
                dst.copy_from_slice(&v.to_be_bytes());
            }
            Part::NarrowUnsigned { .. } => {
                // Native is little-endian on every target ferry builds for.
                let mut wide = [0u8; 8];
                wide[..n].copy_from_slice(src);
                let v = u64::from_le_bytes(wide);
                if e < 8 && v >> (8 * e) != 0 {
                    return Err(too_wide(v));
                }
                dst.copy_from_slice(&v.to_be_bytes()[8 - e..]);
            }
            Part::LongDouble => dst.copy_from_slice(&quad_of_native(src).to_be_bytes()),
        }
        (i, o) = (i + n, o + e);
        Ok(())
    })
}

/// Converts external32 data into native packed data, the reverse of
/// [`to_external`].
///
/// # Errors
/// None today (every external32 value has a native form); kept fallible
/// for the representations' symmetry.
pub fn from_external(ext: &[u8], layout: &Layout, count: usize, native: &mut [u8]) -> Res {
    let (mut i, mut o) = (0usize, 0usize);
    each_part(layout, count, |p| {
        let (n, e) = (p.native(), p.external());
        let (src, dst) = (&ext[i..i + e], &mut native[o..o + n]);
        match p {
            Part::Swap(_) => dst
                .iter_mut()
                .zip(src.iter().rev())
                .for_each(|(d, s)| *d = *s),
            Part::Narrow => {
                let v = i32::from_be_bytes(src.try_into().unwrap_or([0; 4]));
                dst.copy_from_slice(&i64::from(v).to_ne_bytes());
            }
            Part::NarrowUnsigned { .. } => {
                let mut wide = [0u8; 8];
                wide[8 - e..].copy_from_slice(src);
                let v = u64::from_be_bytes(wide);
                dst.copy_from_slice(&v.to_le_bytes()[..n]);
            }
            Part::LongDouble => {
                native_of_quad(u128::from_be_bytes(src.try_into().unwrap_or([0; 16])), dst);
            }
        }
        (i, o) = (i + e, o + n);
        Ok(())
    })
}

fn too_wide(v: impl std::fmt::Display) -> Fail {
    Fail::msg(
        MPI_ERR_CONVERSION,
        format!("{v} does not fit its external32 size"),
    )
}

/// A native `long double` (16 bytes) as IEEE binary128 bits.
fn quad_of_native(src: &[u8]) -> u128 {
    let bits = u128::from_le_bytes(src.try_into().unwrap_or([0; 16]));
    if cfg!(target_arch = "x86_64") {
        // x87: 64-bit significand with its integer bit (63), then 15
        // exponent bits and the sign, in the low 80 bits.
        let significand = bits as u64;
        let sign_exp = (bits >> 64) & 0xffff;
        let fraction = u128::from(significand & !(1 << 63)) << 49;
        (sign_exp << 112) | fraction
    } else {
        bits
    }
}

/// IEEE binary128 bits as a native `long double` into `dst` (16 bytes).
fn native_of_quad(q: u128, dst: &mut [u8]) {
    let bits = if cfg!(target_arch = "x86_64") {
        let sign_exp = (q >> 112) & 0xffff;
        let exponent = sign_exp & 0x7fff;
        let integer = u128::from(exponent != 0) << 63;
        let fraction = (q >> 49) & ((1 << 63) - 1);
        (sign_exp << 64) | integer | fraction
    } else {
        q
    };
    dst.copy_from_slice(&bits.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::lookup;

    fn round_trip(handle: usize, native: &[u8]) -> Vec<u8> {
        let layout = Layout::of(lookup(handle).unwrap());
        let mut ext = vec![0u8; size(&layout, 1).unwrap()];
        to_external(native, &layout, 1, &mut ext).unwrap();
        let mut back = vec![0u8; native.len()];
        from_external(&ext, &layout, 1, &mut back).unwrap();
        assert_eq!(back, native, "{handle:#x} round trip");
        ext
    }

    #[test]
    fn integers_are_big_endian_and_long_is_four_bytes() {
        assert_eq!(
            round_trip(0x209, &0x0102_0304i32.to_ne_bytes()),
            [1, 2, 3, 4]
        );
        assert_eq!(
            round_trip(0x20a, &(-2i64).to_ne_bytes()),
            (-2i32).to_be_bytes()
        );
        let layout = Layout::of(lookup(0x20a).unwrap());
        let mut ext = [0u8; 4];
        let big = (1i64 << 40).to_ne_bytes();
        let e = to_external(&big, &layout, 1, &mut ext).unwrap_err();
        assert_eq!(e.class, MPI_ERR_CONVERSION);
    }

    #[test]
    fn doubles_complex_and_pairs_swap_each_component() {
        let ext = round_trip(0x214, &1.5f64.to_ne_bytes());
        assert_eq!(ext, 1.5f64.to_be_bytes());
        let mut c = 1.0f32.to_ne_bytes().to_vec();
        c.extend_from_slice(&2.0f32.to_ne_bytes());
        let ext = round_trip(0x212, &c);
        assert_eq!(&ext[..4], 1.0f32.to_be_bytes());
        assert_eq!(&ext[4..], 2.0f32.to_be_bytes());
        let mut pair = 3.0f64.to_ne_bytes().to_vec();
        pair.extend_from_slice(&7i32.to_ne_bytes());
        let ext = round_trip(0x229, &pair); // MPI_DOUBLE_INT: 12 bytes
        assert_eq!(&ext[..8], 3.0f64.to_be_bytes());
        assert_eq!(&ext[8..], 7i32.to_be_bytes());
    }

    #[test]
    fn long_double_is_binary128() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        // 1.0 in x87: significand 1 << 63, exponent 16383.
        let mut one = [0u8; 16];
        one[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        one[8..10].copy_from_slice(&16383u16.to_le_bytes());
        let ext = round_trip(0x220, &one);
        // binary128 1.0: exponent 16383, fraction 0.
        assert_eq!(ext, (16383u128 << 112).to_be_bytes());
    }

    #[test]
    fn only_external32() {
        assert!(check_datarep("external32").is_ok());
        let e = check_datarep("native").unwrap_err();
        assert_eq!(e.class, MPI_ERR_UNSUPPORTED_DATAREP);
    }
}
