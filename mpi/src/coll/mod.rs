//! Collectives in their three forms (blocking, nonblocking `MPI_I*`,
//! persistent `MPI_*_init`), on any committed datatype, with `MPI_IN_PLACE`.
//!
//! Every collective call is first parsed into a [`spec::Spec`]: the
//! buffers as [`CBuf`]s (the program's memory, count, datatype), the root,
//! the reduction; then described once as core describes it
//! (`Spec::lower`: a `Collective` and this member's input and output
//! [`Place`]s). A blocking call runs that on borrowed slices
//! (`ferry::Comm::collective`); a nonblocking one starts it on buffers
//! ferry holds until completion (`ferry::Comm::icollective`): the
//! program's memory lent where the data lies in one run, else a staging
//! vector copied out when the request completes (`Post::Coll`); a
//! persistent request keeps the spec and starts it again at every
//! `MPI_Start`.
//!
//! Data crosses ferry as bytes ("wire" bytes): packed in type-map order,
//! or, for a user reduction op on a non-contiguous datatype, laid out as in
//! memory from the lower bound ([`Form::Extent`]), since the program's
//! function reads its own layout.

pub(crate) mod api;
pub(crate) mod large_ops;
pub(crate) mod neighbor;
pub(crate) mod reduction;
pub(crate) mod spec;

use crate::datatype::buf::{bytes, bytes_mut, lend_in, lend_out, unpack_into};

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
    /// The address.
    pub(crate) fn addr(self) -> usize {
        match self {
            Mem::In(b) => b.addr(),
            Mem::Out(b) => b.addr(),
        }
    }

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

    /// The buffer's address.
    pub(crate) fn addr(&self) -> usize {
        self.mem.addr()
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

    /// Where the data lies as wire bytes: the program's memory where it is
    /// one run (or in extent form, which is the memory as it is), else a
    /// packed copy.
    pub(crate) fn place_in(&self, form: Form) -> Res<Place> {
        let len = self.wire_len(form)?;
        let off = match form {
            Form::Extent { lb, .. } => Some(lb),
            Form::Packed => self.ty.contiguous_from(self.count),
        };
        Ok(match off {
            Some(off) => Place::Direct(self.mem.offset(off), len),
            None => Place::Staged(self.to_vec(form)?, Vec::new()),
        })
    }

    /// The packed data as the program's own bytes, when it lies in one run
    /// (for the blocking calls' fast branch; `None`: it does not).
    #[inline]
    pub(crate) fn direct_in<'a>(&self) -> Option<Res<&'a [u8]>> {
        let off = self.ty.contiguous_from(self.count)?;
        Some(
            self.wire_len(Form::Packed)
                .and_then(|len| bytes(self.readable().offset(off), len)),
        )
    }

    /// As [`CBuf::direct_in`], to write.
    #[inline]
    pub(crate) fn direct_out<'a>(&self) -> Option<Res<&'a mut [u8]>> {
        let off = self.ty.contiguous_from(self.count)?;
        Some(
            self.wire_len(Form::Packed)
                .and_then(|len| bytes_mut(self.writable()?.offset(off), len)),
        )
    }

    /// An owned copy of the wire bytes.
    pub(crate) fn to_vec(&self, form: Form) -> Res<Vec<u8>> {
        let len = self.wire_len(form)?;
        let off = match form {
            Form::Extent { lb, .. } => Some(lb),
            Form::Packed => self.ty.contiguous_from(self.count),
        };
        match off {
            Some(off) => Ok(bytes(self.readable().offset(off), len)?.to_vec()),
            None => {
                let mut v = vec![0u8; len];
                crate::datatype::buf::pack_into(self.readable(), self.count, &self.ty, &mut v)?;
                Ok(v)
            }
        }
    }

    /// Where wire bytes for the buffer go: its own memory where the data is
    /// one run, else a staging vector (holding the buffer's current data
    /// if `prefill`: an in-place input) that is copied into it afterwards
    /// (unless `!copy_back`: a result this member does not get).
    pub(crate) fn place_out(&self, form: Form, prefill: bool, copy_back: bool) -> Res<Place> {
        if let (Form::Packed, Some(off)) = (form, self.ty.contiguous_from(self.count)) {
            self.writable()?;
            return Ok(Place::Direct(self.mem.offset(off), self.wire_len(form)?));
        }
        let v = if prefill {
            self.to_vec(form)?
        } else {
            vec![0u8; self.wire_len(form)?]
        };
        let pieces = if copy_back {
            vec![Piece {
                off: 0,
                buf: self.clone(),
                form,
            }]
        } else {
            Vec::new()
        };
        Ok(Place::Staged(v, pieces))
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

/// Where one side of a collective's bytes are.
#[derive(Debug)]
pub(crate) enum Place {
    /// The program's memory: `len` bytes there.
    Direct(Mem, usize),
    /// A staging vector; for an output, the pieces it is copied into when
    /// the collective is done.
    Staged(Vec<u8>, Vec<Piece>),
}

impl Place {
    /// Nothing: a zero-length side.
    pub(crate) fn empty() -> Place {
        Place::Staged(Vec::new(), Vec::new())
    }

    /// The bytes to read, during the call.
    pub(crate) fn read(&self) -> Res<&[u8]> {
        match self {
            Place::Direct(Mem::In(b), len) => bytes(*b, *len),
            Place::Direct(Mem::Out(b), len) => bytes(b.input(), *len),
            Place::Staged(v, _) => Ok(v),
        }
    }

    /// The bytes to write, during the call.
    pub(crate) fn write(&mut self) -> Res<&mut [u8]> {
        match self {
            Place::Direct(Mem::Out(b), len) => bytes_mut(*b, *len),
            Place::Direct(Mem::In(_), _) => Err(Fail::new(
                MPI_ERR_INTERN,
                "internal error (please report): a collective writes a send buffer",
            )),
            Place::Staged(v, _) => Ok(v),
        }
    }

    /// Copies a staged output into the program's buffers (a direct one is
    /// there already).
    pub(crate) fn finish(self) -> Res {
        match self {
            Place::Direct(..) => Ok(()),
            Place::Staged(v, pieces) => copy_out(&v, &pieces),
        }
    }

    /// The bytes as a buffer ferry holds until a nonblocking collective
    /// completes: the program's memory lent where it lies (the token's
    /// promise lasts that long), or the staging vector; and the pieces to
    /// copy a staged output into at completion.
    pub(crate) fn into_buf(self, output: bool) -> Res<(ferry::Buf, Vec<Piece>)> {
        match self {
            Place::Direct(Mem::In(b), len) => Ok((lend_in(b, len)?, Vec::new())),
            Place::Direct(Mem::Out(b), len) if output => Ok((lend_out(b, len)?, Vec::new())),
            Place::Direct(Mem::Out(b), len) => Ok((lend_in(b.input(), len)?, Vec::new())),
            Place::Staged(v, pieces) => Ok((ferry::Buf::from_vec(v), pieces)),
        }
    }
}

/// The blocks of a v-collective, one per rank in rank order, as one side:
/// the program's memory where every block is one run and together they
/// tile one span without gaps (the usual layout: displacements the prefix
/// sums of the counts), so ferry reads or writes them where they lie;
/// else packed in rank order in a staging vector (an output's blocks,
/// but those `skip` names, copied out afterwards). The byte counts and displacements
/// within that side, and whether it is the program's memory.
pub(crate) fn place_blocks(
    blocks: &[CBuf],
    output: bool,
    skip: impl Fn(usize) -> bool,
) -> Res<(Place, ferry::ferry_core::coll::Counts, bool)> {
    let mut runs = Vec::with_capacity(blocks.len());
    for b in blocks {
        let len = b.wire_len(Form::Packed)?;
        match b.ty.contiguous_from(b.count) {
            Some(off) => runs.push((b.mem.offset(off), len)),
            None => break,
        }
    }
    if runs.len() == blocks.len() {
        if let Some((base, span)) = tiling(&runs) {
            if !output || matches!(base, Mem::Out(_)) {
                let counts = runs.iter().map(|r| r.1).collect();
                let displs = runs
                    .iter()
                    .map(|r| {
                        if r.1 == 0 {
                            0
                        } else {
                            r.0.addr() - base.addr()
                        }
                    })
                    .collect();
                let counts = ferry::ferry_core::coll::Counts { counts, displs };
                return Ok((Place::Direct(base, span), counts, true));
            }
        }
    }
    let mut counts = Vec::with_capacity(blocks.len());
    let mut displs = Vec::with_capacity(blocks.len());
    let mut at = 0usize;
    for b in blocks {
        let n = b.wire_len(Form::Packed)?;
        counts.push(n);
        displs.push(at);
        at += n;
    }
    let place = if output {
        let pieces = blocks
            .iter()
            .zip(&displs)
            .enumerate()
            .filter(|&(i, _)| !skip(i))
            .map(|(_, (b, &off))| Piece {
                off,
                buf: b.clone(),
                form: Form::Packed,
            })
            .collect();
        Place::Staged(vec![0u8; at], pieces)
    } else {
        let mut v = Vec::with_capacity(at);
        for b in blocks {
            v.extend_from_slice(&b.to_vec(Form::Packed)?);
        }
        Place::Staged(v, Vec::new())
    };
    Ok((
        place,
        ferry::ferry_core::coll::Counts { counts, displs },
        false,
    ))
}

/// The span `runs` (address, length) tile without gaps or overlaps, as
/// its first byte's memory and its length; `None` if they do not (or hold
/// no bytes).
fn tiling(runs: &[(Mem, usize)]) -> Option<(Mem, usize)> {
    let mut sorted: Vec<&(Mem, usize)> = runs.iter().filter(|r| r.1 > 0).collect();
    sorted.sort_by_key(|r| r.0.addr());
    let first = sorted.first()?;
    let mut end = first.0.addr();
    for r in &sorted {
        if r.0.addr() != end {
            return None;
        }
        end += r.1;
    }
    Some((first.0, end - first.0.addr()))
}
