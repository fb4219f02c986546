//! Array datatypes: `MPI_Type_create_subarray` and
//! `MPI_Type_create_darray` (MPI 4.1 §5.1.3 and §5.1.4) as layouts.
//!
//! Both select, in every dimension of a global array of `old` elements,
//! runs of consecutive indices; the type map is every selected element in
//! the array's memory order (C: the last dimension varies fastest;
//! Fortran: the first), each at its offset in the whole array. The bounds
//! are those of the whole array: lower bound 0, extent the product of the
//! sizes times `old`'s extent, as the standard's definitions through
//! `MPI_LB`/`MPI_UB` markers give.
//!
//! `MPI_Type_create_darray` gives each dimension's process coordinate from
//! `rank` in row-major order of the process grid (whatever the array's
//! order), and selects per dimension: all of it (`MPI_DISTRIBUTE_NONE`),
//! one block of `darg` indices (`BLOCK`; default `ceil(gsize / psize)`),
//! or every `psize`-th block of `darg` indices (`CYCLIC`; default 1).

use std::ffi::c_int;

use crate::abi::class::*;
use crate::error::{Fail, Res};

use crate::datatype::derived::{resized, Builder, Layout};

/// `MPI_ORDER_C`.
pub const ORDER_C: c_int = 12;
/// `MPI_ORDER_FORTRAN`.
pub const ORDER_FORTRAN: c_int = 15;
/// `MPI_DISTRIBUTE_NONE`.
pub const DISTRIBUTE_NONE: c_int = 16;
/// `MPI_DISTRIBUTE_BLOCK`.
pub const DISTRIBUTE_BLOCK: c_int = 17;
/// `MPI_DISTRIBUTE_CYCLIC`.
pub const DISTRIBUTE_CYCLIC: c_int = 18;
/// `MPI_DISTRIBUTE_DFLT_DARG`.
pub const DISTRIBUTE_DFLT_DARG: c_int = 19;

/// Runs `(first index, length)` selected in one dimension.
type Runs = Vec<(usize, usize)>;

fn arg(what: String) -> Fail {
    Fail::msg(MPI_ERR_ARG, what)
}

fn overflow() -> Fail {
    Fail::new(MPI_ERR_COUNT, "the array datatype's size overflows")
}

/// True for Fortran order; `MPI_ERR_ARG` for anything but the two orders.
fn fortran(order: c_int) -> Res<bool> {
    match order {
        ORDER_C => Ok(false),
        ORDER_FORTRAN => Ok(true),
        o => Err(arg(format!(
            "invalid order {o} (MPI_ORDER_C or MPI_ORDER_FORTRAN)"
        ))),
    }
}

/// A non-negative argument (an `int`, or a `_c` constructor's `MPI_Count`).
fn nonneg(v: impl Into<i64>, what: &str) -> Res<usize> {
    let v = v.into();
    usize::try_from(v).map_err(|_| arg(format!("invalid {what} {v}")))
}

/// The layout of the selected elements of a `sizes` array of `old`, the
/// dimensions given slowest first when `!fortran`.
fn select(sizes: &[usize], runs: &[Runs], fortran: bool, old: &Layout) -> Res<Layout> {
    // Fastest dimension first from here on.
    let order = |i: usize| if fortran { i } else { sizes.len() - 1 - i };
    let ext = old.extent();
    let mut strides = Vec::with_capacity(sizes.len());
    let mut stride = ext;
    for i in 0..sizes.len() {
        strides.push(stride);
        stride = isize::try_from(sizes[order(i)])
            .ok()
            .and_then(|s| s.checked_mul(stride))
            .ok_or_else(overflow)?;
    }
    let total = stride;
    let mut b = Builder::new();
    let dims: Vec<(&Runs, isize)> = (0..sizes.len())
        .map(|i| (&runs[order(i)], strides[i]))
        .collect();
    push_dim(&mut b, old, &dims, dims.len() - 1, 0)?;
    resized(&b.finish(false), 0, total)
}

/// Appends the selection of dimensions `0..=d` (fastest first) at `base`.
fn push_dim(b: &mut Builder, old: &Layout, dims: &[(&Runs, isize)], d: usize, base: isize) -> Res {
    let (runs, stride) = dims[d];
    for &(first, len) in runs {
        if d == 0 {
            b.push(old, base + first as isize * stride, len)?;
            continue;
        }
        for i in first..first + len {
            push_dim(b, old, dims, d - 1, base + i as isize * stride)?;
        }
    }
    Ok(())
}

/// `MPI_Type_create_subarray`.
///
/// # Errors
/// `MPI_ERR_ARG` for a size below 1, a subsize or start outside the
/// array, an unknown order, or no dimension; `MPI_ERR_COUNT` on overflow.
pub fn subarray(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    order: c_int,
    old: &Layout,
) -> Res<Layout> {
    let f = fortran(order)?;
    if sizes.is_empty() {
        return Err(arg("ndims must be at least 1".to_owned()));
    }
    let mut dims = Vec::with_capacity(sizes.len());
    let mut runs = Vec::with_capacity(sizes.len());
    for i in 0..sizes.len() {
        let (n, sub, start) = (
            nonneg(sizes[i], "size")?,
            nonneg(subsizes[i], "subsize")?,
            nonneg(starts[i], "start")?,
        );
        if n == 0 || sub > n || start > n - sub {
            return Err(arg(format!(
                "dimension {i}: size {n}, subsize {sub} and start {start} do not fit (1 <= size, subsize + start <= size)"
            )));
        }
        dims.push(n);
        runs.push(vec![(start, sub)]);
    }
    select(&dims, &runs, f, old)
}

/// The indices one process coordinate owns in one dimension of a darray.
fn darray_dim(i: usize, g: usize, dist: c_int, darg: c_int, p: usize, coord: usize) -> Res<Runs> {
    let block = |dflt: usize| -> Res<usize> {
        if darg == DISTRIBUTE_DFLT_DARG {
            return Ok(dflt);
        }
        match usize::try_from(darg) {
            Ok(b) if b > 0 => Ok(b),
            _ => Err(arg(format!(
                "dimension {i}: invalid distribution argument {darg}"
            ))),
        }
    };
    match dist {
        DISTRIBUTE_NONE => {
            if p != 1 {
                return Err(arg(format!(
                    "dimension {i}: MPI_DISTRIBUTE_NONE needs a process grid size of 1, not {p}"
                )));
            }
            Ok(vec![(0, g)])
        }
        DISTRIBUTE_BLOCK => {
            let b = block(g.div_ceil(p))?;
            if b.checked_mul(p).is_none_or(|n| n < g) {
                return Err(arg(format!(
                    "dimension {i}: blocks of {b} on {p} processes do not cover {g} elements"
                )));
            }
            let start = coord * b;
            Ok(if start < g {
                vec![(start, b.min(g - start))]
            } else {
                Vec::new()
            })
        }
        DISTRIBUTE_CYCLIC => {
            let b = block(1)?;
            let step = b.checked_mul(p).ok_or_else(overflow)?;
            let mut runs = Vec::new();
            let mut s = coord * b;
            while s < g {
                runs.push((s, b.min(g - s)));
                s = s.saturating_add(step);
            }
            Ok(runs)
        }
        d => Err(arg(format!("dimension {i}: invalid distribution {d}"))),
    }
}

/// `MPI_Type_create_darray`.
///
/// # Errors
/// `MPI_ERR_ARG` for a grid whose size is not `size`, a rank outside it,
/// an unknown distribution or order, a block distribution that does not
/// cover its dimension, or no dimension; `MPI_ERR_COUNT` on overflow.
#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: c_int,
    rank: c_int,
    gsizes: &[i64],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[c_int],
    order: c_int,
    old: &Layout,
) -> Res<Layout> {
    let f = fortran(order)?;
    if gsizes.is_empty() {
        return Err(arg("ndims must be at least 1".to_owned()));
    }
    let size = nonneg(size, "size")?;
    let rank = nonneg(rank, "rank")?;
    let mut grid = Vec::with_capacity(psizes.len());
    for &p in psizes {
        match nonneg(p, "process grid size")? {
            0 => return Err(arg("a process grid size of 0".to_owned())),
            p => grid.push(p),
        }
    }
    if grid.iter().try_fold(1usize, |a, &p| a.checked_mul(p)) != Some(size) {
        return Err(arg(format!(
            "the process grid {grid:?} does not have {size} processes"
        )));
    }
    if rank >= size {
        return Err(arg(format!("rank {rank} is not below size {size}")));
    }
    // Row-major coordinates of `rank` in the grid.
    let mut coords = vec![0; grid.len()];
    let mut r = rank;
    for i in (0..grid.len()).rev() {
        coords[i] = r % grid[i];
        r /= grid[i];
    }
    let mut dims = Vec::with_capacity(gsizes.len());
    let mut runs = Vec::with_capacity(gsizes.len());
    for i in 0..gsizes.len() {
        let g = nonneg(gsizes[i], "global size")?;
        if g == 0 {
            return Err(arg(format!("dimension {i}: a global size of 0")));
        }
        dims.push(g);
        runs.push(darray_dim(i, g, distribs[i], dargs[i], grid[i], coords[i])?);
    }
    select(&dims, &runs, f, old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::predefined::lookup;

    fn int() -> Layout {
        Layout::of(lookup(0x209).unwrap())
    }

    fn offsets(l: &Layout) -> Vec<isize> {
        l.blocks
            .iter()
            .flat_map(|b| (0..b.len as isize / 4).map(move |k| b.disp + 4 * k))
            .collect()
    }

    #[test]
    fn a_subarray_selects_in_memory_order_within_the_whole_array() {
        // 3x4 ints, the 2x2 block at (1, 1): C order offsets 5 6 9 10.
        let c = subarray(&[3, 4], &[2, 2], &[1, 1], ORDER_C, &int()).unwrap();
        assert_eq!(offsets(&c), [20, 24, 36, 40]);
        assert_eq!((c.lb, c.extent(), c.size), (0, 48, 16));
        // Fortran order: dimension 0 is fastest (3 rows of a 3x4 array).
        let f = subarray(&[3, 4], &[2, 2], &[1, 1], ORDER_FORTRAN, &int()).unwrap();
        assert_eq!(offsets(&f), [16, 20, 28, 32]);
        assert_eq!(f.extent(), 48);
        assert!(subarray(&[3], &[2], &[2], ORDER_C, &int()).is_err());
        assert!(subarray(&[3], &[2], &[0], 7, &int()).is_err());
    }

    #[test]
    fn array_sizes_above_int_max() {
        // The last byte pair of a 2^32 x 4 byte array's last row.
        let byte = Layout::of(lookup(0x247).unwrap());
        let l = subarray(&[1 << 32, 4], &[1, 2], &[(1 << 32) - 1, 1], ORDER_C, &byte).unwrap();
        assert_eq!((l.size, l.extent(), l.true_lb), (2, 1 << 34, (1 << 34) - 3));
        // 2^33 bytes in blocks over 4 processes: rank 3's 2^31.
        let d = darray(
            4,
            3,
            &[1 << 33],
            &[DISTRIBUTE_BLOCK],
            &[DISTRIBUTE_DFLT_DARG],
            &[4],
            ORDER_C,
            &byte,
        )
        .unwrap();
        assert_eq!((d.size, d.true_lb, d.extent()), (1 << 31, 3 << 31, 1 << 33));
        assert!(subarray(&[-1], &[1], &[0], ORDER_C, &byte).is_err());
    }

    #[test]
    fn darray_block_and_cyclic_follow_the_standard() {
        // 10 ints on 3 processes, BLOCK default: 4, 4, 2.
        let d =
            |r, dist, darg| darray(3, r, &[10], &[dist], &[darg], &[3], ORDER_C, &int()).unwrap();
        assert_eq!(
            offsets(&d(0, DISTRIBUTE_BLOCK, DISTRIBUTE_DFLT_DARG)),
            [0, 4, 8, 12]
        );
        assert_eq!(
            offsets(&d(2, DISTRIBUTE_BLOCK, DISTRIBUTE_DFLT_DARG)),
            [32, 36]
        );
        // CYCLIC(1): rank 1 has 1, 4, 7.
        assert_eq!(
            offsets(&d(1, DISTRIBUTE_CYCLIC, DISTRIBUTE_DFLT_DARG)),
            [4, 16, 28]
        );
        // CYCLIC(2): rank 2 has 4 5, and nothing of the second round (10).
        assert_eq!(offsets(&d(2, DISTRIBUTE_CYCLIC, 2)), [16, 20]);
        assert_eq!(d(2, DISTRIBUTE_CYCLIC, 2).extent(), 40);
        // A 4x4 array on a 2x2 grid, rank 1 = coordinates (0, 1).
        let b = darray(
            4,
            1,
            &[4, 4],
            &[DISTRIBUTE_BLOCK; 2],
            &[DISTRIBUTE_DFLT_DARG; 2],
            &[2, 2],
            ORDER_C,
            &int(),
        )
        .unwrap();
        assert_eq!(offsets(&b), [8, 12, 24, 28]);
        let bf = darray(
            4,
            1,
            &[4, 4],
            &[DISTRIBUTE_BLOCK; 2],
            &[DISTRIBUTE_DFLT_DARG; 2],
            &[2, 2],
            ORDER_FORTRAN,
            &int(),
        )
        .unwrap();
        assert_eq!(offsets(&bf), [32, 36, 48, 52]);
        // Errors: grid size, NONE on several processes, short blocks.
        assert!(darray(
            4,
            0,
            &[4],
            &[DISTRIBUTE_BLOCK],
            &[19],
            &[3],
            ORDER_C,
            &int()
        )
        .is_err());
        assert!(darray(2, 0, &[4], &[DISTRIBUTE_NONE], &[19], &[2], ORDER_C, &int()).is_err());
        assert!(darray(2, 0, &[9], &[DISTRIBUTE_BLOCK], &[4], &[2], ORDER_C, &int()).is_err());
    }
}
