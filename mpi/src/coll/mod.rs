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

use crate::datatype::buf::{bytes, bytes_mut, unpack_into};

use crate::abi::class::*;
use crate::datatype::pack::unpack_extent;
use crate::datatype::TypeRef;
use crate::error::{Fail, Res};
use crate::ffi::args::{RecvBuf, SendBuf};

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

/// The program's memory behind a [`CBuf`]: an input (`sendbuf`) or an
/// output (`recvbuf`, which an `MPI_IN_PLACE` call reads too).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mem {
    /// Read only.
    In(SendBuf),
    /// Written (and read where the call reads it too).
    Out(RecvBuf),
}

impl From<SendBuf> for Mem {
    fn from(b: SendBuf) -> Mem {
        Mem::In(b)
    }
}

impl From<RecvBuf> for Mem {
    fn from(b: RecvBuf) -> Mem {
        Mem::Out(b)
    }
}

impl Mem {
    /// The memory `off` bytes on.
    pub(crate) fn offset(self, off: isize) -> Mem {
        match self {
            Mem::In(b) => Mem::In(b.offset(off)),
            Mem::Out(b) => Mem::Out(b.offset(off)),
        }
    }
}

/// A C buffer argument: the program's buffer, count and datatype.
#[derive(Debug, Clone)]
pub(crate) struct CBuf {
    mem: Mem,
    /// Elements.
    pub(crate) count: usize,
    /// Their datatype.
    pub(crate) ty: TypeRef,
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
    /// `count` elements of `ty` in the program's buffer `buf`.
    pub(crate) fn new(buf: impl Into<Mem>, count: usize, ty: TypeRef) -> CBuf {
        CBuf {
            mem: buf.into(),
            count,
            ty,
        }
    }

    /// The memory, read.
    fn readable(&self) -> SendBuf {
        match self.mem {
            Mem::In(b) => b,
            Mem::Out(b) => b.input(),
        }
    }

    /// The memory, written.
    fn writable(&self) -> Res<RecvBuf> {
        match self.mem {
            Mem::Out(b) => Ok(b),
            Mem::In(_) => Err(Fail::new(
                MPI_ERR_INTERN,
                "internal error (please report): a collective writes a send buffer",
            )),
        }
    }

    /// Element `k` on (by extent), `count` of them.
    pub(crate) fn at(&self, k: usize, count: usize) -> Res<CBuf> {
        let (_, ext) = self.ty.extent();
        let off = isize::try_from(k)
            .ok()
            .and_then(|k| k.checked_mul(ext))
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a displacement overflows"))?;
        Ok(CBuf::new(self.mem.offset(off), count, self.ty.clone()))
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

    /// The data as wire bytes: the program's memory where it lies
    /// contiguous, a packed copy otherwise (read during the call).
    pub(crate) fn input<'a>(&self, form: Form) -> Res<Cow<'a, [u8]>> {
        let len = self.wire_len(form)?;
        match form {
            // `[addr + lb, + count * extent)`: the program's buffer spans
            // `count` extents (MPI's rule for a buffer of `count` elements).
            Form::Extent { lb, .. } => Ok(Cow::Borrowed(bytes(self.readable().offset(lb), len)?)),
            Form::Packed => match self.ty.contiguous_from(self.count) {
                Some(off) => Ok(Cow::Borrowed(bytes(self.readable().offset(off), len)?)),
                None => {
                    let mut v = vec![0u8; len];
                    crate::datatype::buf::pack_into(self.readable(), self.count, &self.ty, &mut v)?;
                    Ok(Cow::Owned(v))
                }
            },
        }
    }

    /// An owned copy of the wire bytes.
    pub(crate) fn to_vec(&self, form: Form) -> Res<Vec<u8>> {
        Ok(self.input(form)?.into_owned())
    }

    /// Where wire bytes for the buffer go during the call: its own memory
    /// where the data lies contiguous, else a staging vector (holding the
    /// buffer's current data if `prefill`: an in-place input).
    pub(crate) fn output<'a>(&self, form: Form, prefill: bool) -> Res<Out<'a>> {
        let contiguous = match form {
            Form::Packed => self.ty.contiguous_from(self.count),
            Form::Extent { .. } => None,
        };
        if let Some(off) = contiguous {
            let len = self.wire_len(form)?;
            return Ok(Out::Direct(bytes_mut(self.writable()?.offset(off), len)?));
        }
        let v = if prefill {
            self.to_vec(form)?
        } else {
            vec![0u8; self.wire_len(form)?]
        };
        Ok(Out::Staged(v))
    }

    /// Writes wire bytes (at most the buffer's) into the buffer.
    pub(crate) fn write(&self, form: Form, data: &[u8]) -> Res {
        let buf = self.writable()?;
        match form {
            Form::Packed => unpack_into(data, buf, self.count, &self.ty),
            Form::Extent { .. } => {
                let layout = self.ty.layout();
                let Some((lo, len)) = crate::datatype::pack::span(&layout, self.count)? else {
                    return Ok(());
                };
                // The span of the elements' data.
                let mem = bytes_mut(buf.offset(lo), len)?;
                let need = self.wire_len(form)?;
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
    pub(crate) fn finish(self, buf: &CBuf, form: Form) -> Res {
        match self {
            Out::Direct(_) => Ok(()),
            Out::Staged(v) => buf.write(form, &v),
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
    /// Copies a completed nonblocking collective's result out (the pieces'
    /// buffers are the program's, untouched by anything else until now:
    /// MPI's rule for a nonblocking collective's output).
    fn copy_out(&self, data: &[u8]) -> Res {
        copy_out(data, self)
    }
}

/// Copies a completed nonblocking collective's result out.
fn copy_out(data: &[u8], pieces: &[Piece]) -> Res {
    for p in pieces {
        let len = p.buf.wire_len(p.form)?;
        let part = data.get(p.off..p.off + len).ok_or_else(|| {
            Fail::new(
                MPI_ERR_INTERN,
                "a collective's result is shorter than expected",
            )
        })?;
        p.buf.write(p.form, part)?;
    }
    Ok(())
}
