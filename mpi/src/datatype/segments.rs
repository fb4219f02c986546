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
use std::sync::Arc;

use ferry::{Buf, Segments};

use crate::datatype::pack::span;

use crate::datatype::{Layout, TypeRef};

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
pub(crate) unsafe fn segmented(buf: usize, count: usize, ty: &TypeRef, writable: bool) -> Res<Buf> {
    let len = ty.bytes(count as i64)?;
    let layout = match ty {
        TypeRef::Pre(p) => Arc::new(Layout::of(p)),
        TypeRef::Derived(l) => Arc::clone(l),
    };
    let (start, span_len, origin) = match span(&layout, count)? {
        None => (0, 0, 0),
        Some((lo, span_len)) => {
            let start = buf.wrapping_add_signed(lo);
            if start == 0 {
                return Err(crate::datatype::buf::null_buffer());
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

    /// Copies the packed bytes `offset..offset + len` between the program's
    /// memory and `engine` (the engine's `len` bytes): into the program
    /// when `to_program`, out of it otherwise.
    ///
    /// # Safety
    /// `engine` is valid for `len` bytes (reads when `to_program`, writes
    /// otherwise) and does not overlap the program's memory; the
    /// program's memory is as the constructor's caller promised (written
    /// only when `to_program`, which needs `writable`).
    ///
    /// # Panics
    /// If a run fell outside the span (a layout that disagrees with its
    /// span: a bug, caught here before any memory is touched).
    unsafe fn copy(&self, offset: usize, engine: *mut u8, len: usize, to_program: bool) {
        let mut c = self.seek(offset);
        self.begin.set(c);
        let blocks = &self.layout.blocks;
        let extent = self.layout.extent();
        // The span index of the current block's start, checked to lie in
        // the span with `n` bytes from `within` on.
        let index = |elem: usize, disp: isize, within: usize, n: usize| {
            let idx = self.origin + elem as isize * extent + disp;
            let idx = usize::try_from(idx).expect("a block below its span") + within;
            assert!(idx + n <= self.span, "a block past its span");
            idx
        };
        let mut done = 0;
        if let [b] = blocks[..] {
            // One block an element (a strided array: a resized value, a
            // struct of one member): whole elements in a tight loop, their
            // first and last checked against the span (every one in
            // between lies between those two).
            let whole = if c.within == 0 { len / b.len } else { 0 };
            if whole > 0 {
                let first = index(c.elem, b.disp, 0, b.len);
                index(c.elem + whole - 1, b.disp, 0, b.len);
                let prog = (self.start + first) as *mut u8;
                let n = b.len as isize;
                // SAFETY: the program's runs are `whole` blocks from
                // `first`, `extent` apart, all in the span (checked at
                // both ends); the engine's are consecutive in `engine`'s
                // `len >= whole * n` bytes; forwarded otherwise.
                unsafe {
                    if to_program {
                        moves(engine, n, prog, extent, whole, b.len);
                    } else {
                        moves(prog, extent, engine, n, whole, b.len);
                    }
                }
                c.elem += whole;
                c.pos += whole * b.len;
                done = whole * b.len;
            }
        }
        if let Some(r) = self.layout.regular().filter(|r| r.n > 1) {
            // A vector's blocks: the rest of each element's blocks in one
            // strided loop, without reading the block list.
            while c.within == 0 {
                let whole = (r.n - c.block).min((len - done) / r.len);
                if whole == 0 {
                    break;
                }
                let disp = |k: usize| r.disp + k as isize * r.stride;
                let first = index(c.elem, disp(c.block), 0, r.len);
                index(c.elem, disp(c.block + whole - 1), 0, r.len);
                let prog = (self.start + first) as *mut u8;
                let n = r.len as isize;
                // SAFETY: as for whole elements above: `whole` blocks
                // `stride` apart, the first and last in the span, every one
                // between them too; `engine` holds `len - done >= whole * n`
                // more bytes.
                unsafe {
                    let eng = engine.add(done);
                    if to_program {
                        moves(eng, n, prog, r.stride, whole, r.len);
                    } else {
                        moves(prog, r.stride, eng, n, whole, r.len);
                    }
                }
                done += whole * r.len;
                c.pos += whole * r.len;
                c.block += whole;
                if c.block == r.n {
                    c.block = 0;
                    c.elem += 1;
                }
            }
        }
        while done < len {
            let b = blocks[c.block];
            let n = (b.len - c.within).min(len - done);
            let prog = (self.start + index(c.elem, b.disp, c.within, n)) as *mut u8;
            // SAFETY: one run of `n` bytes in the span (checked) and in
            // `engine` (`done + n <= len`); forwarded otherwise.
            unsafe {
                let eng = engine.add(done);
                if to_program {
                    moves(eng, 0, prog, 0, 1, n);
                } else {
                    moves(prog, 0, eng, 0, 1, n);
                }
            }
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

/// `count` moves of `n` bytes from `src` to `dst`, each pointer advancing
/// by its step after each move. A block is often one value (a strided
/// double's 8 bytes), so those sizes are single loads and stores with no
/// `memcpy` call.
///
/// # Safety
/// Every source run is valid for reads and every destination run for
/// writes, and no two overlap.
#[inline(always)]
unsafe fn moves(
    src: *const u8,
    src_step: isize,
    dst: *mut u8,
    dst_step: isize,
    count: usize,
    n: usize,
) {
    macro_rules! each {
        ($t:ty) => {
            for k in 0..count as isize {
                // SAFETY: the caller's promise, run `k`.
                unsafe {
                    let v =
                        std::ptr::read_unaligned(src.wrapping_offset(k * src_step).cast::<$t>());
                    std::ptr::write_unaligned(dst.wrapping_offset(k * dst_step).cast::<$t>(), v);
                }
            }
        };
    }
    match n {
        8 => each!(u64),
        4 => each!(u32),
        16 => each!(u128),
        2 => each!(u16),
        _ => {
            for k in 0..count as isize {
                // SAFETY: the caller's promise, run `k`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.wrapping_offset(k * src_step),
                        dst.wrapping_offset(k * dst_step),
                        n,
                    )
                };
            }
        }
    }
}

impl Segments for TypeSegments {
    fn len(&self) -> usize {
        self.len
    }

    fn gather(&self, offset: usize, out: &mut [u8]) {
        // SAFETY: `out` is the engine's own memory, writable for its
        // length; the program's is readable (the constructor's promise).
        unsafe { self.copy(offset, out.as_mut_ptr(), out.len(), false) };
    }

    fn scatter(&mut self, offset: usize, data: &[u8]) {
        assert!(self.writable, "a scatter into a send buffer");
        // SAFETY: `data` is the engine's packet, readable for its length
        // and only read; the program's memory is writable and accessed by
        // nothing else (the constructor's `writable` promise).
        unsafe { self.copy(offset, data.as_ptr().cast_mut(), data.len(), true) };
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
        let buf = unsafe { segmented(mem.as_ptr() as usize, count, &ty, false).unwrap() };
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
            let buf = unsafe { segmented(base as usize, count, &ty, false).unwrap() };
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
        let mut buf = unsafe { segmented(mem.as_mut_ptr() as usize, count, &ty, true).unwrap() };
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
        let buf = unsafe { segmented(0, 0, &ty, false).unwrap() };
        assert_eq!(buf.len(), 0);
    }
}
