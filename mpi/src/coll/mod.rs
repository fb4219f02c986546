//! Collectives in their three forms (blocking, nonblocking `MPI_I*`,
//! persistent `MPI_*_init`), on any committed datatype, with `MPI_IN_PLACE`.
//!
//! Every collective call is first parsed into a [`spec::Spec`]: the
//! buffers as [`CBuf`]s (address, count, datatype), the root, the
//! reduction. A blocking call runs the spec on ferry's blocking forms
//! (borrowed slices: the program's own memory where the data is
//! contiguous, a packed copy otherwise); a nonblocking call starts it on
//! ferry's owned forms and copies the result out when the request
//! completes (`Post::Coll`); a persistent request keeps the spec and
//! starts it again at every `MPI_Start`.
//!
//! Data crosses ferry as bytes ("wire" bytes): packed in type-map order,
//! or, for a user reduction op on a non-contiguous datatype, laid out as in
//! memory from the lower bound ([`Form::Extent`]), since the program's
//! function reads its own layout.

pub(crate) mod api;
pub(crate) mod large_ops;
pub(crate) mod reduction;
pub(crate) mod spec;

use std::borrow::Cow;

use crate::datatype::buf::{recv_data, send_data, RecvData, SendData};

use crate::abi::class::*;
use crate::abi::MPI_IN_PLACE;
use crate::datatype::pack::unpack_extent;
use crate::datatype::TypeRef;
use crate::error::{Fail, Res};

pub(crate) use spec::Deferred;

/// How a buffer's data crosses ferry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Packed in type-map order.
    Packed,
    /// As in memory from the lower bound: `extent` bytes per element.
    Extent {
        /// The datatype's lower bound.
        lb: isize,
        /// Its extent.
        ext: usize,
    },
}

/// A C buffer argument.
#[derive(Debug, Clone)]
pub(crate) struct CBuf {
    /// The buffer's address (`MPI_BOTTOM` is 0).
    pub(crate) addr: usize,
    /// Elements.
    pub(crate) count: usize,
    /// Their datatype.
    pub(crate) ty: TypeRef,
}

/// True if `p` is `MPI_IN_PLACE`.
pub(crate) fn in_place(p: *const std::ffi::c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

/// Where a collective writes wire bytes for a buffer.
#[derive(Debug)]
pub(crate) enum Out<'a> {
    /// The program's own memory.
    Direct(&'a mut [u8]),
    /// A staging vector, written to the buffer by [`Out::finish`].
    Staged(Vec<u8>),
}

impl Out<'_> {
    /// The bytes to write.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        match self {
            Out::Direct(b) => b,
            Out::Staged(v) => v,
        }
    }
}

impl CBuf {
    /// Element `k` on (by extent), `count` of them.
    pub(crate) fn at(&self, k: usize, count: usize) -> Res<CBuf> {
        let (_, ext) = self.ty.extent();
        let off = isize::try_from(k)
            .ok()
            .and_then(|k| k.checked_mul(ext))
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a displacement overflows"))?;
        Ok(CBuf {
            addr: self.addr.wrapping_add_signed(off),
            count,
            ty: self.ty.clone(),
        })
    }

    /// Wire bytes of the data.
    pub(crate) fn wire_len(&self, form: Form) -> Res<usize> {
        match form {
            Form::Packed => self.ty.bytes(self.count as i64),
            Form::Extent { ext, .. } => self
                .count
                .checked_mul(ext)
                .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the buffer's size overflows")),
        }
    }

    /// The extent-form bytes in memory, `[addr + lb, + count * extent)`.
    ///
    /// # Safety
    /// The program's buffer spans `count` extents (MPI's rule for a buffer
    /// of `count` elements) and is readable for `'a`.
    unsafe fn extent_slice<'a>(&self, lb: isize, ext: usize) -> Res<&'a [u8]> {
        let len = self.wire_len(Form::Extent { lb, ext })?;
        let start = self.addr.wrapping_add_signed(lb);
        // SAFETY: forwarded; a null start with data is reported.
        unsafe { crate::ffi::raw::bytes(start as *const u8, len) }
    }

    /// The data as wire bytes: the program's memory where it lies
    /// contiguous, a packed copy otherwise.
    ///
    /// # Safety
    /// The buffer is readable for `'a` (during a blocking call).
    pub(crate) unsafe fn input<'a>(&self, form: Form) -> Res<Cow<'a, [u8]>> {
        match form {
            // SAFETY: forwarded.
            Form::Extent { lb, ext } => Ok(Cow::Borrowed(unsafe { self.extent_slice(lb, ext)? })),
            // SAFETY: forwarded.
            Form::Packed => Ok(
                match unsafe { send_data(self.addr as *const _, self.count, &self.ty)? } {
                    SendData::Raw { ptr, len } => {
                        // SAFETY: forwarded: readable for 'a.
                        Cow::Borrowed(unsafe { crate::ffi::raw::bytes(ptr, len)? })
                    }
                    SendData::Streamed(b) => Cow::Owned(b.to_vec()),
                },
            ),
        }
    }

    /// An owned copy of the wire bytes.
    ///
    /// # Safety
    /// The buffer is readable during the call.
    pub(crate) unsafe fn to_vec(&self, form: Form) -> Res<Vec<u8>> {
        // SAFETY: forwarded; the borrow ends in this call.
        Ok(unsafe { self.input(form)? }.into_owned())
    }

    /// Where wire bytes for the buffer go: its own memory where the data
    /// lies contiguous, else a staging vector (holding the buffer's current
    /// data if `prefill`: an in-place input).
    ///
    /// # Safety
    /// The buffer is writable, and touched by nothing else, for `'a`.
    pub(crate) unsafe fn output<'a>(&self, form: Form, prefill: bool) -> Res<Out<'a>> {
        let staged = |me: &CBuf| -> Res<Out<'a>> {
            let v = if prefill {
                // SAFETY: forwarded.
                unsafe { me.to_vec(form)? }
            } else {
                vec![0u8; me.wire_len(form)?]
            };
            Ok(Out::Staged(v))
        };
        match form {
            Form::Extent { .. } => staged(self),
            Form::Packed => {
                // SAFETY: forwarded: writable and exclusive for 'a; a
                // segmented buffer made here is dropped unused.
                match unsafe { recv_data(self.addr as *mut _, self.count, &self.ty)? } {
                    RecvData::Raw { ptr, len } => {
                        // SAFETY: forwarded: writable and exclusive for 'a.
                        let direct = unsafe { crate::ffi::raw::bytes_mut(ptr, len)? };
                        Ok(Out::Direct(direct))
                    }
                    RecvData::Staged { .. } | RecvData::Streamed(_) => staged(self),
                }
            }
        }
    }

    /// Writes wire bytes (at most the buffer's) into the buffer.
    ///
    /// # Safety
    /// The buffer is writable, and touched by nothing else, during the
    /// call.
    pub(crate) unsafe fn write(&self, form: Form, data: &[u8]) -> Res {
        match form {
            // SAFETY: forwarded.
            Form::Packed => unsafe {
                crate::datatype::buf::unpack_into(data, self.addr as *mut _, self.count, &self.ty)
            },
            Form::Extent { lb, ext } => {
                let layout = self.ty.layout();
                let Some((lo, len)) = crate::datatype::pack::span(&layout, self.count)? else {
                    return Ok(());
                };
                let start = self.addr.wrapping_add_signed(lo);
                // SAFETY: the span of the elements' data, writable by the
                // caller's promise; a null start is reported.
                let mem = unsafe { crate::ffi::raw::bytes_mut(start as *mut u8, len)? };
                let need = self.wire_len(Form::Extent { lb, ext })?;
                if data.len() < need {
                    return Err(Fail::new(
                        MPI_ERR_INTERN,
                        "a reduction result is shorter than its buffer",
                    ));
                }
                unpack_extent(data, mem, -lo, &layout, self.count);
                Ok(())
            }
        }
    }
}

impl Out<'_> {
    /// Writes a staged result into `buf` (direct output is there already).
    ///
    /// # Safety
    /// As for [`CBuf::write`].
    pub(crate) unsafe fn finish(self, buf: &CBuf, form: Form) -> Res {
        match self {
            Out::Direct(_) => Ok(()),
            // SAFETY: forwarded.
            Out::Staged(v) => unsafe { buf.write(form, &v) },
        }
    }
}

/// Where a nonblocking collective's result goes: wire bytes at `off` of
/// the completion's buffer into `buf`.
#[derive(Debug)]
pub(crate) struct Piece {
    pub(crate) off: usize,
    pub(crate) buf: CBuf,
    pub(crate) form: Form,
}

impl crate::request::post::CopyOut for Vec<Piece> {
    /// Copies a completed nonblocking collective's result out.
    fn copy_out(&self, data: &[u8]) -> Res {
        // SAFETY: the pieces' buffers are writable and untouched by
        // anything else (MPI's rule for a nonblocking collective's output
        // until it completes; `Post::run`'s contract).
        unsafe { copy_out(data, self) }
    }
}

/// Copies a completed nonblocking collective's result out.
///
/// # Safety
/// The pieces' buffers are writable and untouched by anything else (MPI's
/// rule for a nonblocking collective's output until it completes).
unsafe fn copy_out(data: &[u8], pieces: &[Piece]) -> Res {
    for p in pieces {
        let len = p.buf.wire_len(p.form)?;
        let part = data.get(p.off..p.off + len).ok_or_else(|| {
            Fail::new(
                MPI_ERR_INTERN,
                "a collective's result is shorter than expected",
            )
        })?;
        // SAFETY: forwarded.
        unsafe { p.buf.write(p.form, part)? };
    }
    Ok(())
}
