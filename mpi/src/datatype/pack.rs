//! Packing: `count` elements of a datatype in a program's buffer to and
//! from contiguous bytes in type-map order (what non-contiguous sends,
//! receives, collectives and `MPI_Pack`/`MPI_Unpack` move).
//!
//! The C boundary turns the buffer into one slice, the [`span`] that
//! `count` elements occupy (from the least true lower bound to the
//! greatest true upper bound), and says where the buffer's displacement 0
//! falls in it (`origin`, negative when every element's data lies above
//! the buffer pointer). Everything here is then safe indexing into that
//! slice: a layout that disagreed with its span would panic (caught at the
//! boundary as `MPI_ERR_INTERN`), never touch memory outside it. A block is
//! often one value (8 bytes of a strided double), so blocks are copied
//! with `copy_short`'s fixed-size moves rather than a `memcpy` call each.

use ferry::ferry_core::buffer::copy_short;

use crate::abi::class::*;
use crate::datatype::derived::Layout;
use crate::error::{Fail, Res};

/// The bytes `count` elements of `layout` occupy: `(start, length)` with
/// `start` relative to the buffer pointer; `None` when there is no data.
///
/// # Errors
/// `MPI_ERR_COUNT` when the span overflows.
pub fn span(layout: &Layout, count: usize) -> Res<Option<(isize, usize)>> {
    if count == 0 || layout.size == 0 {
        return Ok(None);
    }
    let overflow = || {
        Fail::msg(
            MPI_ERR_COUNT,
            format!("{count} elements of the datatype overflow the address space"),
        )
    };
    let last = isize::try_from(count - 1)
        .ok()
        .and_then(|k| k.checked_mul(layout.extent()))
        .ok_or_else(overflow)?;
    let lo = layout
        .true_lb
        .checked_add(last.min(0))
        .ok_or_else(overflow)?;
    let hi = layout
        .true_ub
        .checked_add(last.max(0))
        .ok_or_else(overflow)?;
    let len = hi.checked_sub(lo).ok_or_else(overflow)?;
    Ok(Some((lo, len as usize)))
}

/// The index in the span of element `i`'s displacement `disp`.
#[inline]
fn at(origin: isize, extent: isize, i: usize, disp: isize) -> usize {
    (origin + i as isize * extent + disp) as usize
}

/// Copies `count` elements' data from `mem` (their span, displacement 0
/// at `origin`) into `out`, which holds at least `count * size` bytes.
pub fn pack(mem: &[u8], origin: isize, layout: &Layout, count: usize, out: &mut [u8]) {
    let ext = layout.extent();
    if let [b] = layout.blocks[..] {
        // One block an element, elements upwards (a strided array): the
        // span from the first block on, in steps of the extent.
        if count > 0 && ext >= b.len as isize {
            let first = at(origin, ext, 0, b.disp);
            let steps = mem[first..].chunks(ext as usize);
            for (o, s) in out[..count * b.len].chunks_exact_mut(b.len).zip(steps) {
                copy_short(o, &s[..b.len]);
            }
            return;
        }
    }
    let mut o = 0;
    if let Some(r) = layout.regular() {
        // A vector's blocks, found without reading the block list.
        for i in 0..count {
            let first = at(origin, ext, i, r.disp) as isize;
            for k in 0..r.n as isize {
                let s = (first + k * r.stride) as usize;
                copy_short(&mut out[o..o + r.len], &mem[s..s + r.len]);
                o += r.len;
            }
        }
        return;
    }
    for i in 0..count {
        for b in &layout.blocks {
            let s = at(origin, ext, i, b.disp);
            copy_short(&mut out[o..o + b.len], &mem[s..s + b.len]);
            o += b.len;
        }
    }
}

/// Copies packed `data` into `count` elements in `mem` (their span,
/// displacement 0 at `origin`), in type-map order, stopping when `data`
/// runs out (a short message fills a prefix). The bytes used.
pub fn unpack(data: &[u8], mem: &mut [u8], origin: isize, layout: &Layout, count: usize) -> usize {
    let ext = layout.extent();
    let mut o = 0;
    for i in 0..count {
        for b in &layout.blocks {
            if o == data.len() {
                return o;
            }
            let n = b.len.min(data.len() - o);
            let d = at(origin, ext, i, b.disp);
            copy_short(&mut mem[d..d + n], &data[o..o + n]);
            o += n;
        }
    }
    o
}

/// Copies the data of `count` elements from `wire`, which holds them as
/// they lie in memory from the lower bound on (element `i` at
/// `i * extent`, a block at its displacement minus `lb`: what a user
/// reduction op works on), into `mem` (their span, displacement 0 at
/// `origin`), leaving the holes between blocks untouched.
pub fn unpack_extent(wire: &[u8], mem: &mut [u8], origin: isize, layout: &Layout, count: usize) {
    let ext = layout.extent();
    for i in 0..count {
        for b in &layout.blocks {
            let d = at(origin, ext, i, b.disp);
            let s = at(-layout.lb, ext, i, b.disp);
            copy_short(&mut mem[d..d + b.len], &wire[s..s + b.len]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::derived::{resized, Builder};
    use crate::datatype::predefined::lookup;

    fn int() -> Layout {
        Layout::of(lookup(0x209).unwrap())
    }

    fn vector(count: usize, blocklen: usize, stride: isize) -> Layout {
        let mut b = Builder::new();
        for j in 0..count {
            b.push(&int(), j as isize * stride * 4, blocklen).unwrap();
        }
        b.finish(false)
    }

    #[test]
    fn a_vector_packs_its_blocks_in_order_and_unpacks_back() {
        let v = vector(3, 2, 4); // ints 0,1, 4,5, 8,9; extent 10 ints
        let mem: Vec<u8> = (0..200u8).collect();
        let (lo, len) = span(&v, 2).unwrap().unwrap();
        assert_eq!((lo, len), (0, (10 + 10) * 4));
        let mut out = vec![0u8; 2 * v.size];
        pack(&mem[..len], -lo, &v, 2, &mut out);
        let ints: Vec<usize> = out.chunks(4).map(|c| c[0] as usize / 4).collect();
        assert_eq!(ints, [0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19]);
        let mut back = vec![0xffu8; len];
        assert_eq!(unpack(&out, &mut back, -lo, &v, 2), out.len());
        for i in [0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19] {
            assert_eq!(&back[i * 4..i * 4 + 4], &mem[i * 4..i * 4 + 4]);
        }
        assert_eq!(back[2 * 4], 0xff, "gaps stay untouched");
    }

    #[test]
    fn one_block_elements_pack_in_steps_of_the_extent() {
        let l = resized(&int(), 0, 12).unwrap(); // an int every 3 ints
        let (lo, len) = span(&l, 5).unwrap().unwrap();
        assert_eq!((lo, len), (0, 4 * 12 + 4));
        let mem: Vec<u8> = (0..len as u8).collect();
        let mut out = vec![0u8; 20];
        pack(&mem, -lo, &l, 5, &mut out);
        let firsts: Vec<u8> = out.chunks(4).map(|c| c[0]).collect();
        assert_eq!(firsts, [0, 12, 24, 36, 48]);
        assert_eq!(&out[4..8], &mem[12..16]);
    }

    #[test]
    fn a_short_message_fills_a_prefix() {
        let v = vector(2, 1, 3);
        let (lo, len) = span(&v, 3).unwrap().unwrap();
        let mut mem = vec![0u8; len];
        let data = [7u8; 10]; // two ints and half of the third
        assert_eq!(unpack(&data, &mut mem, -lo, &v, 3), 10);
        assert_eq!(&mem[0..4], &[7; 4]);
        assert_eq!(&mem[12..16], &[7; 4]);
        assert_eq!(&mem[16..20], &[7, 7, 0, 0]);
    }

    #[test]
    fn negative_bounds_put_the_origin_inside_the_span() {
        let mut b = Builder::new();
        b.push(&int(), -8, 1).unwrap();
        b.push(&int(), 0, 1).unwrap();
        let l = resized(&b.finish(false), -8, 12).unwrap();
        let (lo, len) = span(&l, 2).unwrap().unwrap();
        assert_eq!((lo, len), (-8, 24));
        let mem: Vec<u8> = (0..len as u8).collect();
        let mut out = vec![0u8; 16];
        pack(&mem, -lo, &l, 2, &mut out);
        assert_eq!(
            out,
            [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23]
        );
    }

    #[test]
    fn extent_form_keeps_the_holes() {
        let v = vector(2, 1, 2); // ints 0 and 2; extent 3 ints
        let (lo, len) = span(&v, 2).unwrap().unwrap();
        assert_eq!((lo, len), (0, 6 * 4));
        let wire: Vec<u8> = (0..24).collect();
        let mut mem = vec![0xee; len];
        unpack_extent(&wire, &mut mem, -lo, &v, 2);
        for i in [0usize, 2, 3, 5] {
            assert_eq!(&mem[i * 4..i * 4 + 4], &wire[i * 4..i * 4 + 4], "int {i}");
        }
        assert_eq!(&mem[4..8], &[0xee; 4], "a hole");
        assert_eq!(&mem[16..20], &[0xee; 4], "a hole");
    }

    #[test]
    fn nothing_to_move_has_no_span() {
        assert_eq!(span(&int(), 0).unwrap(), None);
        let empty = Builder::new().finish(false);
        assert_eq!(span(&empty, 5).unwrap(), None);
    }
}
