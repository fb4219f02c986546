//! Derived datatypes as flattened layouts.
//!
//! A [`Layout`] is what the type constructors build and what packing,
//! `MPI_Get_elements` and reductions read:
//! - `blocks`: the bytes of one element as `(displacement, length)` runs in
//!   type-map order (the order data is packed in), adjacent runs merged;
//! - `runs`: the predefined elements of one element in type-map order,
//!   run-length encoded (`MPI_Get_elements`, and whether a predefined op
//!   applies);
//! - the bounds: `lb`/`ub` (the extent, which places consecutive elements)
//!   and the true bounds of the data itself.
//!
//! Each constructor appends `n` copies of its old type at a displacement
//! ([`Builder::push`]); a contiguous old type becomes one block whatever
//! `n` is, so `MPI_Type_contiguous(1 << 30, MPI_BYTE)` stays one block. The
//! bounds follow MPI 4.1 §5.1: `lb`/`ub` are the least and greatest bounds
//! of the copies; `MPI_Type_create_struct` rounds the extent up to the
//! alignment of its widest member (the standard's epsilon) unless a member
//! has explicit bounds from `MPI_Type_create_resized`.

use crate::abi::class::*;
use crate::error::{Fail, Res};

use crate::datatype::predefined::Predefined;

/// One contiguous run of bytes of an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Displacement from the element's start (may be negative).
    pub disp: isize,
    /// Length in bytes (never 0).
    pub len: usize,
}

/// `n` consecutive values of a predefined type in the type map.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// The type.
    pub ty: &'static Predefined,
    /// How many.
    pub n: u64,
}

/// More blocks or runs than this in one datatype is refused (a vector of
/// 2^26 separate blocks takes 1 GiB to describe).
const MAX_PIECES: usize = 1 << 26;

/// Blocks that are `n` runs of `len` bytes, `stride` apart from `disp` (a
/// vector's, or one block): what lets data move without reading the block
/// list, one entry of which is as large as a double it describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regular {
    /// The first block's displacement.
    pub disp: isize,
    /// Every block's length.
    pub len: usize,
    /// From one block's start to the next's.
    pub stride: isize,
    /// How many.
    pub n: usize,
}

impl Regular {
    fn of(blocks: &[Block]) -> Option<Regular> {
        let (first, second) = match blocks {
            [] => return None,
            [b] => (*b, None),
            [a, b, ..] => (*a, Some(*b)),
        };
        let stride = second.map_or(first.len as isize, |b| b.disp - first.disp);
        let r = Regular {
            disp: first.disp,
            len: first.len,
            stride,
            n: blocks.len(),
        };
        let fits = blocks.iter().enumerate().all(|(k, b)| {
            b.len == r.len
                && Some(b.disp)
                    == (k as isize)
                        .checked_mul(stride)
                        .and_then(|o| o.checked_add(r.disp))
        });
        fits.then_some(r)
    }
}

/// A datatype's flattened layout; see the module docs.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Bytes of data in one element.
    pub size: usize,
    /// Lower bound.
    pub lb: isize,
    /// Upper bound (`ub - lb` is the extent).
    pub ub: isize,
    /// Least displacement of data.
    pub true_lb: isize,
    /// Greatest displacement just past data.
    pub true_ub: isize,
    /// The data of one element, in type-map order.
    pub blocks: Vec<Block>,
    /// The predefined values of one element, in type-map order.
    pub runs: Vec<Run>,
    /// The widest member's alignment.
    pub align: usize,
    /// True if the bounds were set by `MPI_Type_create_resized` (here or in
    /// a member): no alignment rounding then.
    pub sticky: bool,
    /// The blocks as a [`Regular`] run, if they are one: found on first use.
    regular: std::sync::OnceLock<Option<Regular>>,
}

fn overflow() -> Fail {
    Fail::new(
        MPI_ERR_COUNT,
        "the datatype's size or displacements overflow",
    )
}

fn too_big() -> Fail {
    Fail::new(
        MPI_ERR_NO_MEM,
        "the datatype has more than 2^26 separate blocks",
    )
}

impl Layout {
    /// The layout of one predefined value: its parts as blocks (adjacent
    /// ones merged), so a padded pair type's padding is a hole, outside
    /// the data but inside the extent.
    pub fn of(p: &'static Predefined) -> Layout {
        let mut blocks: Vec<Block> = Vec::with_capacity(2);
        for &(disp, len) in p.parts() {
            let disp = disp as isize;
            match blocks.last_mut() {
                Some(last) if last.disp + last.len as isize == disp => last.len += len,
                _ => blocks.push(Block { disp, len }),
            }
        }
        let true_ub = blocks.last().map_or(0, |b| b.disp + b.len as isize);
        Layout {
            size: p.size,
            lb: 0,
            ub: p.extent as isize,
            true_lb: 0,
            true_ub,
            blocks,
            runs: vec![Run { ty: p, n: 1 }],
            align: p.align(),
            sticky: false,
            regular: std::sync::OnceLock::new(),
        }
    }

    /// The blocks of one element as one [`Regular`] run, if they are one
    /// (found once, on first use).
    pub fn regular(&self) -> Option<Regular> {
        *self.regular.get_or_init(|| Regular::of(&self.blocks))
    }

    /// The extent (`ub - lb`).
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// Where the data of `count` consecutive elements starts, if it is one
    /// contiguous run of `count * size` bytes (no packing needed).
    pub fn contiguous_from(&self, count: usize) -> Option<isize> {
        match self.blocks.as_slice() {
            [] => Some(0),
            [b] if count <= 1 || self.extent() == self.size as isize => Some(b.disp),
            _ => None,
        }
    }

    /// Basic elements per element (pair types count two).
    pub fn elements(&self) -> u64 {
        self.runs
            .iter()
            .map(|r| r.n * r.ty.parts().len() as u64)
            .sum()
    }

    /// The basic elements in `bytes` of packed data: `None` when the bytes
    /// end inside a basic element (`MPI_UNDEFINED`).
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        if self.size == 0 {
            return Some(0);
        }
        let size = self.size as u64;
        let mut count = bytes / size * self.elements();
        let mut rem = bytes % size;
        for r in &self.runs {
            if rem == 0 {
                break;
            }
            let s = r.ty.size as u64;
            let parts = r.ty.parts();
            let whole = (rem / s).min(r.n);
            count += whole * parts.len() as u64;
            rem -= whole * s;
            if whole < r.n {
                // The parts lie back to back in packed data.
                let mut at = 0;
                for &(_, l) in parts {
                    if rem < at + l as u64 {
                        return (rem == at).then_some(count);
                    }
                    at += l as u64;
                    count += 1;
                }
                return Some(count);
            }
        }
        Some(count)
    }

    /// The packed bytes of the first `elements` basic elements of a run of
    /// this datatype (`MPI_Status_set_elements`).
    pub fn bytes_of_elements(&self, elements: u64) -> u64 {
        let per = self.elements();
        if per == 0 {
            return 0;
        }
        let mut bytes = elements / per * self.size as u64;
        let mut left = elements % per;
        for r in &self.runs {
            if left == 0 {
                break;
            }
            let parts = r.ty.parts();
            let pe = parts.len() as u64;
            let whole = (left / pe).min(r.n);
            bytes += whole * r.ty.size as u64;
            left -= whole * pe;
            if whole < r.n {
                // The parts lie back to back in packed data.
                let first = parts.iter().take(left as usize);
                bytes += first.map(|&(_, l)| l as u64).sum::<u64>();
                break;
            }
        }
        bytes
    }

    /// The one predefined type every value of the type map has, if so
    /// (what lets a predefined reduction op apply), and how many values of
    /// it one element holds.
    pub fn uniform(&self) -> Option<(&'static Predefined, u64)> {
        let first = self.runs.first()?.ty;
        let same = |t: &Predefined| t.elem == first.elem && t.size == first.size;
        self.runs
            .iter()
            .all(|r| same(r.ty))
            .then(|| (first, self.runs.iter().map(|r| r.n).sum()))
    }
}

/// Builds a layout from copies of old types; see the module docs.
#[derive(Debug, Default)]
pub struct Builder {
    blocks: Vec<Block>,
    runs: Vec<Run>,
    size: usize,
    bounds: Option<(isize, isize)>,
    data: Option<(isize, isize)>,
    align: usize,
    sticky: bool,
}

fn widen(b: &mut Option<(isize, isize)>, lo: isize, hi: isize) {
    *b = Some(match *b {
        None => (lo, hi),
        Some((l, h)) => (l.min(lo), h.max(hi)),
    });
}

impl Builder {
    /// An empty layout to add to.
    pub fn new() -> Builder {
        Builder {
            align: 1,
            ..Builder::default()
        }
    }

    fn add_block(&mut self, disp: isize, len: usize) -> Res {
        if len == 0 {
            return Ok(());
        }
        if let Some(last) = self.blocks.last_mut() {
            if last.disp.checked_add(last.len as isize) == Some(disp) {
                last.len += len;
                return Ok(());
            }
        }
        if self.blocks.len() >= MAX_PIECES {
            return Err(too_big());
        }
        self.blocks.push(Block { disp, len });
        Ok(())
    }

    fn add_run(&mut self, ty: &'static Predefined, n: u64) -> Res {
        if n == 0 {
            return Ok(());
        }
        if let Some(last) = self.runs.last_mut() {
            if std::ptr::eq(last.ty, ty) {
                last.n += n;
                return Ok(());
            }
        }
        if self.runs.len() >= MAX_PIECES {
            return Err(too_big());
        }
        self.runs.push(Run { ty, n });
        Ok(())
    }

    /// Appends `n` copies of `old`, the first at `disp`, each one extent
    /// of `old` after the previous.
    ///
    /// # Errors
    /// `MPI_ERR_COUNT` when a size or displacement overflows;
    /// `MPI_ERR_NO_MEM` past 2^26 blocks.
    pub fn push(&mut self, old: &Layout, disp: isize, n: usize) -> Res {
        if n == 0 {
            return Ok(());
        }
        let ext = old.extent();
        let last = isize::try_from(n - 1)
            .ok()
            .and_then(|k| k.checked_mul(ext))
            .ok_or_else(overflow)?;
        let at = |x: isize, extra: isize| {
            disp.checked_add(x)
                .and_then(|v| v.checked_add(extra))
                .ok_or_else(overflow)
        };
        widen(
            &mut self.bounds,
            at(old.lb, last.min(0))?,
            at(old.ub, last.max(0))?,
        );
        if old.size > 0 {
            widen(
                &mut self.data,
                at(old.true_lb, last.min(0))?,
                at(old.true_ub, last.max(0))?,
            );
        }
        self.sticky |= old.sticky;
        self.align = self.align.max(old.align);
        self.size = old
            .size
            .checked_mul(n)
            .and_then(|s| s.checked_add(self.size))
            .filter(|&s| s <= isize::MAX as usize)
            .ok_or_else(overflow)?;
        // Blocks: a contiguous old type is one block however many copies.
        match old.blocks.as_slice() {
            [] => {}
            [b] if ext == b.len as isize => {
                self.add_block(at(b.disp, 0)?, b.len * n)?;
            }
            blocks => {
                if blocks.len().saturating_mul(n) > MAX_PIECES {
                    return Err(too_big());
                }
                for i in 0..n {
                    let base = at(ext * i as isize, 0)?;
                    for b in blocks {
                        self.add_block(base + b.disp, b.len)?;
                    }
                }
            }
        }
        match old.runs.as_slice() {
            [] => {}
            [r] => self.add_run(r.ty, r.n * n as u64)?,
            runs => {
                if runs.len().saturating_mul(n) > MAX_PIECES {
                    return Err(too_big());
                }
                for _ in 0..n {
                    for r in runs {
                        self.add_run(r.ty, r.n)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The layout; `pad` rounds the extent up to the widest alignment (for
    /// `MPI_Type_create_struct`) unless bounds are sticky.
    pub fn finish(self, pad: bool) -> Layout {
        let (lb, mut ub) = self.bounds.unwrap_or((0, 0));
        if pad && !self.sticky && self.align > 1 {
            let a = self.align as isize;
            let ext = ub - lb;
            let rounded = (ext + a - 1) / a * a;
            ub = lb + rounded;
        }
        let (true_lb, true_ub) = self.data.unwrap_or((0, 0));
        Layout {
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub,
            blocks: self.blocks,
            runs: self.runs,
            align: self.align,
            sticky: self.sticky,
            regular: std::sync::OnceLock::new(),
        }
    }
}

/// `MPI_Type_create_resized`: the same data with new bounds.
pub fn resized(old: &Layout, lb: isize, extent: isize) -> Res<Layout> {
    let ub = lb.checked_add(extent).ok_or_else(overflow)?;
    Ok(Layout {
        lb,
        ub,
        sticky: true,
        ..old.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::predefined::lookup;

    fn ty(h: usize) -> Layout {
        Layout::of(lookup(h).unwrap())
    }
    const INT: usize = 0x209;
    const DOUBLE: usize = 0x214;
    const CHAR: usize = 0x243;

    #[test]
    fn vectors_are_regular_and_other_block_lists_are_not() {
        let mut b = Builder::new();
        for j in 0..4 {
            b.push(&ty(INT), j * -12, 1).unwrap(); // downwards
        }
        let r = b.finish(false).regular();
        assert_eq!(
            r,
            Some(Regular {
                disp: 0,
                len: 4,
                stride: -12,
                n: 4
            })
        );
        let mut b = Builder::new();
        for d in [0, 8, 20] {
            b.push(&ty(INT), d, 1).unwrap();
        }
        assert_eq!(b.finish(false).regular(), None, "uneven gaps");
        let mut b = Builder::new();
        b.push(&ty(INT), 0, 1).unwrap();
        b.push(&ty(DOUBLE), 8, 1).unwrap();
        assert_eq!(b.finish(false).regular(), None, "uneven lengths");
        assert_eq!(ty(INT).regular().map(|r| r.n), Some(1));
    }

    #[test]
    fn contiguous_of_contiguous_is_one_block() {
        let mut b = Builder::new();
        b.push(&ty(INT), 0, 1 << 20).unwrap();
        let l = b.finish(false);
        assert_eq!(
            l.blocks,
            [Block {
                disp: 0,
                len: 4 << 20
            }]
        );
        assert_eq!((l.size, l.lb, l.ub), (4 << 20, 0, 4 << 20));
        assert_eq!(l.contiguous_from(7), Some(0));
        assert_eq!(l.elements(), 1 << 20);
    }

    #[test]
    fn a_vector_has_a_block_per_stride_and_the_standard_extent() {
        // MPI_Type_vector(3, 2, 5, MPI_INT): blocks at 0, 20, 40 of 8 bytes;
        // extent = (2 * 5 + 2) * 4 = 48.
        let int = ty(INT);
        let mut b = Builder::new();
        for j in 0..3 {
            b.push(&int, j * 20, 2).unwrap();
        }
        let l = b.finish(false);
        assert_eq!(l.blocks.len(), 3);
        assert_eq!(l.blocks[2], Block { disp: 40, len: 8 });
        assert_eq!((l.size, l.extent(), l.true_lb, l.true_ub), (24, 48, 0, 48));
        assert_eq!(l.contiguous_from(1), None);
        assert_eq!(l.uniform().map(|(p, n)| (p.name, n)), Some(("MPI_INT", 6)));
    }

    #[test]
    fn struct_extents_round_to_the_widest_alignment_unless_resized() {
        // struct { double d; char c; }: size 9, extent 16.
        let mut b = Builder::new();
        b.push(&ty(DOUBLE), 0, 1).unwrap();
        b.push(&ty(CHAR), 8, 1).unwrap();
        let s = b.finish(true);
        assert_eq!((s.size, s.lb, s.ub), (9, 0, 16));
        assert!(s.uniform().is_none());
        assert_eq!(s.elements(), 2);
        let r = resized(&s, 0, 9).unwrap();
        let mut b = Builder::new();
        b.push(&r, 0, 1).unwrap();
        b.push(&ty(CHAR), 9, 1).unwrap();
        let t = b.finish(true);
        assert_eq!(t.extent(), 10, "a sticky member stops the rounding");
    }

    #[test]
    fn negative_displacements_and_resizing_move_the_bounds() {
        let mut b = Builder::new();
        b.push(&ty(INT), -8, 1).unwrap();
        b.push(&ty(INT), 4, 1).unwrap();
        let l = b.finish(false);
        assert_eq!((l.lb, l.ub, l.true_lb, l.true_ub), (-8, 8, -8, 8));
        let r = resized(&l, -16, 64).unwrap();
        assert_eq!((r.lb, r.extent(), r.true_lb), (-16, 64, -8));
        let mut b = Builder::new();
        b.push(&r, 0, 3).unwrap();
        let c = b.finish(false);
        assert_eq!((c.lb, c.ub), (-16, 176));
        assert_eq!((c.true_lb, c.true_ub), (-8, 136));
        assert_eq!(c.blocks.len(), 6);
    }

    #[test]
    fn elements_count_whole_basic_values() {
        // { int, double, 2 x char } packed: 4 + 8 + 2 = 14 bytes, 4 elements.
        let mut b = Builder::new();
        b.push(&ty(INT), 0, 1).unwrap();
        b.push(&ty(DOUBLE), 8, 1).unwrap();
        b.push(&ty(CHAR), 16, 2).unwrap();
        let l = b.finish(true);
        assert_eq!(l.size, 14);
        assert_eq!(l.elements_in(0), Some(0));
        assert_eq!(l.elements_in(4), Some(1));
        assert_eq!(l.elements_in(6), None, "inside the double");
        assert_eq!(l.elements_in(13), Some(3));
        assert_eq!(l.elements_in(14 + 12), Some(4 + 2));
        for e in 0..12 {
            let bytes = l.bytes_of_elements(e);
            assert_eq!(
                l.elements_in(bytes),
                Some(e),
                "{e} elements = {bytes} bytes"
            );
        }
        let pair = ty(0x229); // MPI_DOUBLE_INT: 2 elements of 12 bytes each
        assert_eq!(pair.elements_in(12 * 3), Some(6));
        assert_eq!(pair.elements_in(12 + 8), Some(3));
        assert_eq!(pair.elements_in(12 + 4), None, "inside the double");
        assert_eq!(pair.bytes_of_elements(3), 12 + 8);
        let short = ty(0x22c); // MPI_SHORT_INT: packed as short, int
        assert_eq!(short.elements_in(2), Some(1));
        assert_eq!(short.elements_in(4), None, "inside the int");
        assert_eq!(short.elements_in(6 + 2), Some(3));
        assert_eq!(short.bytes_of_elements(3), 6 + 2);
    }

    #[test]
    fn padded_pairs_have_a_hole_where_c_pads() {
        // MPI_DOUBLE_INT: 12 bytes of data, extent 16, true extent 12.
        let d = ty(0x229);
        assert_eq!(d.blocks, [Block { disp: 0, len: 12 }]);
        assert_eq!(
            (d.size, d.lb, d.ub, d.true_lb, d.true_ub),
            (12, 0, 16, 0, 12)
        );
        assert_eq!(d.contiguous_from(1), Some(0));
        assert_eq!(d.contiguous_from(2), None);
        // MPI_SHORT_INT: short, 2 bytes of padding, int.
        let s = ty(0x22c);
        let want = [Block { disp: 0, len: 2 }, Block { disp: 4, len: 4 }];
        assert_eq!(s.blocks, want);
        assert_eq!((s.size, s.extent(), s.true_ub), (6, 8, 8));
        assert_eq!(s.contiguous_from(1), None);
        // MPI_LONG_DOUBLE_INT: 16 + 4 bytes of data in 32.
        let l = ty(0x22d);
        assert_eq!((l.size, l.extent(), l.true_ub), (20, 32, 20));
        // Derived from them: 3 contiguous DOUBLE_INTs are 3 blocks.
        let mut b = Builder::new();
        b.push(&d, 0, 3).unwrap();
        let c = b.finish(false);
        assert_eq!((c.size, c.extent(), c.true_ub), (36, 48, 44));
        assert_eq!(c.blocks.len(), 3);
        assert_eq!(c.elements(), 6);
        assert_eq!(
            c.uniform().map(|(p, n)| (p.name, n)),
            Some(("MPI_DOUBLE_INT", 3))
        );
    }

    #[test]
    fn counts_and_displacements_above_int_max_build_directly() {
        // MPI_Type_contiguous_c(5033164800, MPI_BYTE): one block.
        let mut b = Builder::new();
        b.push(&ty(0x247), 0, 5_033_164_800).unwrap();
        let l = b.finish(false);
        assert_eq!(
            l.blocks,
            [Block {
                disp: 0,
                len: 5_033_164_800
            }]
        );
        assert_eq!(
            (l.size, l.extent(), l.true_ub),
            (5_033_164_800, 5_033_164_800, 5_033_164_800)
        );
        assert_eq!(l.contiguous_from(1), Some(0));
        assert_eq!(l.elements(), 5_033_164_800);
        // Two blocks of 2^31 + 1 ints 2^34 bytes apart.
        let mut b = Builder::new();
        for j in 0..2 {
            b.push(&ty(INT), j << 34, (1 << 31) + 1).unwrap();
        }
        let v = b.finish(false);
        assert_eq!(v.blocks.len(), 2);
        assert_eq!(v.size, 2 * 4 * ((1 << 31) + 1));
        assert_eq!(v.extent(), (1 << 34) + 4 * ((1 << 31) + 1));
    }

    #[test]
    fn overflowing_sizes_are_count_errors() {
        let mut b = Builder::new();
        let big = {
            let mut b = Builder::new();
            b.push(&ty(DOUBLE), 0, 1 << 40).unwrap();
            b.finish(false)
        };
        assert_eq!(b.push(&big, 0, 1 << 30).unwrap_err().class, MPI_ERR_COUNT);
        let mut v = Builder::new();
        let strided = {
            let mut b = Builder::new();
            b.push(&ty(INT), 0, 1).unwrap();
            b.push(&ty(INT), 8, 1).unwrap();
            b.finish(false)
        };
        assert_eq!(
            v.push(&strided, 0, 1 << 27).unwrap_err().class,
            MPI_ERR_NO_MEM
        );
    }
}
