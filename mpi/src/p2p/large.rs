//! The large-count (`_c`) forms of point-to-point, tested: every `_c`
//! function is its int form's row pointing at the same body in
//! `mpi/abi/functions.txt`. The point-to-point bodies take their counts as
//! `impl Into<i64>` (`count_arg` turns them into the `usize` the layer
//! works in), so a count above `INT_MAX` works as any other; the attached
//! buffers' sizes likewise (`p2p::commbuf`; the int detach forms give
//! `INT_MAX` for a larger buffer); the collectives' `_c` forms come from
//! the same parser (`coll/api.rs`'s `collective!`); the datatype
//! constructors and decoding are in `datatype/large.rs`, packing in
//! `datatype/pack_calls.rs`; `MPI_Type_size_c`, `MPI_Type_get_extent_c`,
//! `MPI_Type_get_true_extent_c` and `MPI_Get_elements_c` are the `_x`
//! forms' bodies.

mod tests {
    use crate::abi::class::MPI_ERR_COUNT;

    #[test]
    fn counts_above_int_max_pass_the_shared_bodies_conversions() {
        use crate::datatype::{count_arg, predefined, TypeRef};
        let big = 5_033_164_800i64;
        assert_eq!(count_arg(big).unwrap(), 5_033_164_800usize);
        assert_eq!(count_arg(-1i64).unwrap_err().class, MPI_ERR_COUNT);
        assert_eq!(count_arg(i64::MIN).unwrap_err().class, MPI_ERR_COUNT);
        // The send and receive bodies' byte count, and `Get_count_c`'s
        // count back from the status's bytes.
        let byte = TypeRef::Pre(predefined(0x247).unwrap()); // MPI_BYTE
        let int = TypeRef::Pre(predefined(0x209).unwrap()); // MPI_INT
        let n = (1i64 << 31) + 8;
        assert_eq!(byte.bytes(n).unwrap(), n as usize);
        assert_eq!(byte.count_of(n as u64), n);
        assert_eq!(int.bytes(n).unwrap(), 4 * n as usize);
        assert_eq!(int.count_of(4 * n as u64), n);
        assert_eq!(
            int.count_of(4 * n as u64 + 2),
            i64::from(crate::abi::MPI_UNDEFINED)
        );
        assert_eq!(int.bytes(i64::MAX / 2).unwrap_err().class, MPI_ERR_COUNT);
        // The int forms' MPI_UNDEFINED for what does not fit an int.
        assert_eq!(crate::datatype::int_count(n), crate::abi::MPI_UNDEFINED);
        // Pack_c/Unpack_c positions and sizes above INT_MAX.
        let (pos, size) = crate::datatype::pack_calls::position(n - 8, n).unwrap();
        assert_eq!((pos, size), ((n - 8) as usize, n as usize));
        assert_eq!(
            crate::datatype::pack_calls::position(n + 1, n)
                .unwrap_err()
                .class,
            crate::abi::class::MPI_ERR_ARG
        );
    }

    #[test]
    fn displacements_fit_an_aint_on_64_bit_targets() {
        use crate::datatype::aint;
        assert_eq!(aint(1 << 40).unwrap(), 1 << 40);
        assert_eq!(aint(-(1 << 40)).unwrap(), -(1 << 40));
        assert_eq!(aint(i64::MAX).unwrap() as i64, i64::MAX);
    }
}
