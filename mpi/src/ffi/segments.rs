//! A program's non-contiguous `(buffer, count, datatype)` as a segmented
//! [`Buf`]: the engine gathers each fragment of a send from the program's
//! memory as it goes out, and scatters each fragment of a receive where it
//! belongs as it lands, so a large non-contiguous message needs no staging
//! copy of the whole message on either side (the fragmented rendezvous in
//! `ferry_core::engine::rndv`; see *Segmented buffers* in `Buf`'s docs).
//!
//! Offsets are packed offsets (type-map order, as `MPI_Pack` lays the data
//! out). The engine asks for them in increasing order, fragment after
//! fragment, and asks again for the same fragment when the device pushed
//! back; the cursor remembers where the last access began and ended, so
//! both cost nothing to find. Any other offset is found from its element's
//! start (a walk over one element's blocks).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;

use ferry::ferry_core::buffer::copy_short;
use ferry::{Buf, Segments};

use crate::datatype::{pack::span, Layout, TypeRef};
use crate::error::Res;

/// Where a packed offset lies: in element `elem`, block `block`, `within`
/// bytes into the block.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    pos: usize,
    elem: usize,
    block: usize,
    within: usize,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct TypeSegments {
    /// The address of the span's first byte (`datatype::pack::span`).
    start: usize,
    /// The span's length: every access is checked to lie inside it.
    span: usize,
    /// The index in the span of the buffer's displacement 0.
    origin: isize,
    layout: Arc<Layout>,
    /// Packed bytes.
    len: usize,
    /// The memory may be written (a receive buffer).
    writable: bool,
    begin: Cell<Cursor>,
    end: Cell<Cursor>,
}

/// A segmented buffer over `count` elements of `ty` at `buf`.
///
/// # Safety
/// The elements' data at `buf` is valid for reads (and, with `writable`,
/// for writes, and accessed by nothing else) from this call until the
/// operation the buffer is given to completes: MPI's rule for the buffer of
/// a nonblocking operation. The engine reads and writes it only until then.
///
/// # Errors
/// `MPI_ERR_COUNT` when the elements' span overflows; `MPI_ERR_BUFFER` for
/// a null buffer with data.
pub(crate) unsafe fn segmented(
    buf: *const c_void,
    count: usize,
    ty: &TypeRef,
    writable: bool,
) -> Res<Buf> {
    let len = ty.bytes(count as i64)?;
    let layout = match ty {
        TypeRef::Pre(p) => Arc::new(Layout::of(p)),
        TypeRef::Derived(l) => Arc::clone(l),
    };
    let (start, span_len, origin) = match span(&layout, count)? {
        None => (0, 0, 0),
        Some((lo, span_len)) => {
            let start = (buf as usize).wrapping_add_signed(lo);
            if start == 0 {
                return Err(super::buf::null_buffer());
            }
            (start, span_len, -lo)
        }
    };
    let segments = TypeSegments {
        start,
        span: span_len,
        origin,
        layout,
        len,
        writable,
        begin: Cell::default(),
        end: Cell::default(),
    };
    Ok(Buf::segmented(Box::new(segments)))
}

impl TypeSegments {
    /// The cursor at packed offset `offset`.
    fn seek(&self, offset: usize) -> Cursor {
        for c in [self.end.get(), self.begin.get()] {
            if c.pos == offset {
                return c;
            }
        }
        let size = self.layout.size;
        let mut c = Cursor {
            pos: offset,
            elem: offset / size,
            block: 0,
            within: offset % size,
        };
        while c.within >= self.layout.blocks[c.block].len {
            c.within -= self.layout.blocks[c.block].len;
            c.block += 1;
        }
        c
    }

    /// Calls `each(address, at, n)` for the runs of program memory that
    /// hold the packed bytes `offset..offset + total`, `at` being each
    /// run's position in that range.
    ///
    /// # Panics
    /// If a run fell outside the span (a layout that disagrees with its
    /// span: a bug, caught here before any memory is touched).
    fn walk(&self, offset: usize, total: usize, mut each: impl FnMut(usize, usize, usize)) {
        let mut c = self.seek(offset);
        self.begin.set(c);
        let blocks = &self.layout.blocks;
        let extent = self.layout.extent();
        let mut done = 0;
        if let [b] = blocks[..] {
            // One block an element (a strided array: a resized value, a
            // struct of one member): whole elements in a tight loop, their
            // first and last checked against the span (the addresses in
            // between lie between those two).
            let whole = if c.within == 0 { total / b.len } else { 0 };
            if whole > 0 {
                let at = |elem: usize| {
                    let idx = self.origin + elem as isize * extent + b.disp;
                    let idx = usize::try_from(idx).expect("a block below its span");
                    assert!(idx + b.len <= self.span, "a block past its span");
                    idx
                };
                let (first, _) = (at(c.elem), at(c.elem + whole - 1));
                let mut idx = first as isize;
                for k in 0..whole {
                    each(self.start + idx as usize, k * b.len, b.len);
                    idx += extent;
                }
                c.elem += whole;
                c.pos += whole * b.len;
                done = whole * b.len;
            }
        }
        while done < total {
            let b = blocks[c.block];
            let n = (b.len - c.within).min(total - done);
            let idx = self.origin + c.elem as isize * extent + b.disp;
            let idx = usize::try_from(idx).expect("a block below its span") + c.within;
            assert!(idx + n <= self.span, "a block past its span");
            each(self.start + idx, done, n);
            done += n;
            c.pos += n;
            c.within += n;
            if c.within == b.len {
                c.within = 0;
                c.block += 1;
                if c.block == blocks.len() {
                    c.block = 0;
                    c.elem += 1;
                }
            }
        }
        self.end.set(c);
    }
}

impl Segments for TypeSegments {
    fn len(&self) -> usize {
        self.len
    }

    fn gather(&self, offset: usize, out: &mut [u8]) {
        self.walk(offset, out.len(), |addr, at, n| {
            // SAFETY: `addr..addr + n` lies in the elements' span (checked
            // by `walk`), which the constructor's caller keeps readable
            // while the engine may call this; `out` is the engine's own
            // memory, so the two do not overlap.
            let block = unsafe { std::slice::from_raw_parts(addr as *const u8, n) };
            // A block is often one value: fixed-size moves, no memcpy call.
            copy_short(&mut out[at..at + n], block);
        });
    }

    fn scatter(&mut self, offset: usize, data: &[u8]) {
        assert!(self.writable, "a scatter into a send buffer");
        self.walk(offset, data.len(), |addr, at, n| {
            // SAFETY: as in `gather`, and the memory is writable and
            // accessed by nothing else while the slice lives (the
            // constructor's `writable` promise); `data` is the engine's
            // packet.
            let block = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, n) };
            copy_short(block, &data[at..at + n]);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::derived::{resized, Builder};
    use crate::datatype::pack::pack;
    use crate::datatype::predefined::lookup;

    fn int() -> Layout {
        Layout::of(lookup(0x209).unwrap())
    }

    /// `count` blocks of `blocklen` ints every `stride` ints.
    fn vector(count: usize, blocklen: usize, stride: isize) -> TypeRef {
        let mut b = Builder::new();
        for j in 0..count {
            b.push(&int(), j as isize * stride * 4, blocklen).unwrap();
        }
        TypeRef::Derived(Arc::new(b.finish(false)))
    }

    #[test]
    fn gathers_what_pack_packs_from_any_offset_in_any_piece_size() {
        let ty = vector(3, 2, 5);
        let mem: Vec<u8> = (0..=255).cycle().take(4 * 40).collect();
        let count = 3;
        let layout = ty.layout();
        let (lo, span_len) = span(&layout, count).unwrap().unwrap();
        let mut want = vec![0u8; count * layout.size];
        pack(&mem[..span_len], -lo, &layout, count, &mut want);
        // SAFETY: `mem` outlives `buf` and is only read.
        let buf = unsafe { segmented(mem.as_ptr().cast(), count, &ty, false).unwrap() };
        for piece in [1, 3, 4, 7, 24, want.len()] {
            let mut got = vec![0u8; want.len()];
            for at in (0..want.len()).step_by(piece) {
                let n = piece.min(want.len() - at);
                buf.read_at(at, &mut got[at..at + n]);
            }
            assert_eq!(got, want, "pieces of {piece}");
        }
        // Backwards, and a retry of the same piece.
        let mut got = vec![0u8; 5];
        buf.read_at(13, &mut got);
        buf.read_at(13, &mut got);
        assert_eq!(got, want[13..18]);
        buf.read_at(2, &mut got);
        assert_eq!(got, want[2..7]);
    }

    #[test]
    fn one_block_elements_take_the_tight_loop_and_agree_with_pack() {
        // An int every 3 ints; with a lower bound below the data; with a
        // negative extent (the elements run downwards from the pointer).
        for (lb, extent) in [(0, 12), (-8, 12), (0, -12)] {
            let ty = TypeRef::Derived(Arc::new(resized(&int(), lb, extent).unwrap()));
            let mem: Vec<u8> = (0..=255).cycle().take(4 * 64).collect();
            let count = 10;
            let layout = ty.layout();
            let (lo, span_len) = span(&layout, count).unwrap().unwrap();
            let mut want = vec![0u8; count * 4];
            pack(&mem[..span_len], -lo, &layout, count, &mut want);
            let base = mem.as_ptr().wrapping_offset(-lo);
            // SAFETY: the span starts at `mem`, which outlives `buf` and
            // is only read.
            let buf = unsafe { segmented(base.cast(), count, &ty, false).unwrap() };
            for piece in [1, 3, 4, 5, 8, 11, 40] {
                let mut got = vec![0u8; want.len()];
                for at in (0..want.len()).step_by(piece) {
                    let n = piece.min(want.len() - at);
                    buf.read_at(at, &mut got[at..at + n]);
                }
                assert_eq!(got, want, "lb {lb}, pieces of {piece}");
            }
        }
    }

    #[test]
    fn scatters_into_the_blocks_only() {
        let ty = vector(2, 1, 3);
        let mut mem = vec![0xEEu8; 4 * 8];
        let count = 2;
        // SAFETY: `mem` outlives `buf`, which alone writes it meanwhile.
        let mut buf = unsafe { segmented(mem.as_mut_ptr().cast(), count, &ty, true).unwrap() };
        let data: Vec<u8> = (1..=16).collect();
        buf.write_at(0, &data[..6]);
        buf.write_at(6, &data[6..]);
        drop(buf);
        let ints: Vec<[u8; 4]> = mem.chunks(4).map(|c| c.try_into().unwrap()).collect();
        // Element extent 4 ints: blocks at ints 0 and 3, then 4 and 7.
        assert_eq!(ints[0], [1, 2, 3, 4]);
        assert_eq!(ints[3], [5, 6, 7, 8]);
        assert_eq!(ints[4], [9, 10, 11, 12]);
        assert_eq!(ints[7], [13, 14, 15, 16]);
        for i in [1, 2, 5, 6] {
            assert_eq!(ints[i], [0xEE; 4], "hole {i}");
        }
    }

    #[test]
    fn no_data_needs_no_memory() {
        let ty = vector(2, 1, 3);
        // SAFETY: nothing is read.
        let buf = unsafe { segmented(std::ptr::null(), 0, &ty, false).unwrap() };
        assert_eq!(buf.len(), 0);
    }
}
