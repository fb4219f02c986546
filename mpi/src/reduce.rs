//! Which of ferry's reductions serves a predefined MPI op on a predefined
//! datatype: the core `ReduceOp` and `Datatype` pair that
//! `ferry::Op::on_bytes` runs on the program's bytes.
//!
//! MPI's groups decide what is defined (MPI 4.1 §6.9.2): `SUM`, `PROD`,
//! `MIN`, `MAX` on integers and floating point; the logical ops on
//! integers and C's `bool`; the bitwise ops on integers and `MPI_BYTE`;
//! `MINLOC`/`MAXLOC` on the pair types. Anything else is `MPI_ERR_OP`.
//! Types ferry has no arithmetic for (complex, long double, half and quad
//! precision, Fortran logicals, characters) are
//! `MPI_ERR_UNSUPPORTED_OPERATION`.

use ferry::ferry_core::coll::{Datatype, ReduceOp};

use crate::abi::class::*;
use crate::abi::*;
use crate::datatype::{Elem, Predefined};
use crate::error::{Fail, Res};

/// The name of a predefined op (`""` for anything else).
pub fn op_name(op: usize) -> &'static str {
    match op {
        MPI_SUM => "MPI_SUM",
        MPI_MIN => "MPI_MIN",
        MPI_MAX => "MPI_MAX",
        MPI_PROD => "MPI_PROD",
        MPI_BAND => "MPI_BAND",
        MPI_BOR => "MPI_BOR",
        MPI_BXOR => "MPI_BXOR",
        MPI_LAND => "MPI_LAND",
        MPI_LOR => "MPI_LOR",
        MPI_LXOR => "MPI_LXOR",
        MPI_MINLOC => "MPI_MINLOC",
        MPI_MAXLOC => "MPI_MAXLOC",
        MPI_REPLACE => "MPI_REPLACE",
        MPI_NO_OP => "MPI_NO_OP",
        _ => "",
    }
}

/// True for a predefined op handle.
pub fn is_predefined(op: usize) -> bool {
    !op_name(op).is_empty()
}

/// Which group of ops a type takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Integer,
    Float,
    Bool,
    Byte,
    Pair,
}

/// The core datatype and op group of a predefined type; `None` for the
/// types ferry cannot reduce.
fn core_type(e: Elem) -> Option<(Datatype, Class)> {
    Some(match e {
        Elem::I8 => (Datatype::I8, Class::Integer),
        Elem::I16 => (Datatype::I16, Class::Integer),
        Elem::I32 => (Datatype::I32, Class::Integer),
        Elem::I64 => (Datatype::I64, Class::Integer),
        Elem::U8 => (Datatype::U8, Class::Integer),
        Elem::U16 => (Datatype::U16, Class::Integer),
        Elem::U32 => (Datatype::U32, Class::Integer),
        Elem::U64 => (Datatype::U64, Class::Integer),
        Elem::F32 => (Datatype::F32, Class::Float),
        Elem::F64 => (Datatype::F64, Class::Float),
        // C's bool is one byte holding 0 or 1; ferry's logical ops on u8
        // give 0 or 1.
        Elem::Bool => (Datatype::U8, Class::Bool),
        Elem::Byte => (Datatype::U8, Class::Byte),
        Elem::FloatInt => (Datatype::F32I32, Class::Pair),
        Elem::DoubleInt => (Datatype::F64I32, Class::Pair),
        Elem::LongInt => (Datatype::I64I32, Class::Pair),
        Elem::TwoInt => (Datatype::I32I32, Class::Pair),
        Elem::ShortInt => (Datatype::I16I32, Class::Pair),
        Elem::None => return None,
    })
}

/// The core op of a predefined op, if `class` takes it.
fn core_op(op: usize, class: Class) -> Option<ReduceOp> {
    let arith = matches!(class, Class::Integer | Class::Float);
    let logical = matches!(class, Class::Integer | Class::Bool);
    let bitwise = matches!(class, Class::Integer | Class::Byte);
    Some(match op {
        MPI_SUM if arith => ReduceOp::Sum,
        MPI_PROD if arith => ReduceOp::Prod,
        MPI_MIN if arith => ReduceOp::Min,
        MPI_MAX if arith => ReduceOp::Max,
        MPI_LAND if logical => ReduceOp::Land,
        MPI_LOR if logical => ReduceOp::Lor,
        MPI_LXOR if logical => ReduceOp::Lxor,
        MPI_BAND if bitwise => ReduceOp::Band,
        MPI_BOR if bitwise => ReduceOp::Bor,
        MPI_BXOR if bitwise => ReduceOp::Bxor,
        MPI_MINLOC if class == Class::Pair => ReduceOp::MinLoc,
        MPI_MAXLOC if class == Class::Pair => ReduceOp::MaxLoc,
        _ => return None,
    })
}

/// The core op and datatype of predefined `op` on predefined type `p`.
///
/// # Errors
/// `MPI_ERR_OP` for a handle that is no predefined op, or an op the
/// standard does not define on the type (`MPI_BAND` on floats, `MPI_SUM`
/// on `MPI_2INT`, `MPI_REPLACE`/`MPI_NO_OP` outside RMA);
/// `MPI_ERR_UNSUPPORTED_OPERATION` for a type ferry cannot reduce.
pub fn predefined_op(op: usize, p: &Predefined) -> Res<(ReduceOp, Datatype)> {
    let name = op_name(op);
    if name.is_empty() {
        return Err(Fail::new(MPI_ERR_OP, "invalid reduction operation"));
    }
    let Some((dtype, class)) = core_type(p.elem) else {
        return Err(Fail::msg(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("reductions on {} are not supported", p.name),
        ));
    };
    let op = core_op(op, class)
        .ok_or_else(|| Fail::msg(MPI_ERR_OP, format!("{name} is not defined on {}", p.name)))?;
    Ok((op, dtype))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::lookup;
    use std::ffi::c_int;

    fn class_of(op: usize, ty: usize) -> c_int {
        match predefined_op(op, lookup(ty).unwrap()) {
            Ok(_) => MPI_SUCCESS,
            Err(f) => f.class,
        }
    }

    #[test]
    fn ops_are_defined_on_the_standard_groups_only() {
        const INT: usize = 0x209;
        const DOUBLE: usize = 0x214;
        const BYTE: usize = 0x247;
        const C_BOOL: usize = 0x238;
        const TWO_INT: usize = 0x22b;
        const COMPLEX: usize = 0x216;
        assert_eq!(class_of(MPI_SUM, DOUBLE), MPI_SUCCESS);
        assert_eq!(class_of(MPI_BAND, DOUBLE), MPI_ERR_OP);
        assert_eq!(class_of(MPI_BXOR, INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_LAND, INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_MINLOC, INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_LOR, C_BOOL), MPI_SUCCESS);
        assert_eq!(class_of(MPI_BAND, C_BOOL), MPI_ERR_OP);
        assert_eq!(class_of(MPI_BOR, BYTE), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, BYTE), MPI_ERR_OP);
        assert_eq!(class_of(MPI_MAXLOC, TWO_INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, TWO_INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_REPLACE, INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_OP_NULL, INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_SUM, COMPLEX), MPI_ERR_UNSUPPORTED_OPERATION);
    }

    #[test]
    fn pair_types_have_the_core_layout_sizes() {
        for p in crate::datatype::ALL {
            if let Some((d, _)) = core_type(p.elem) {
                assert_eq!(d.size(), p.size, "{}", p.name);
            }
        }
    }
}
