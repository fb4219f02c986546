//! One collective call, parsed ([`Spec`]), and how it runs: blocking on
//! ferry's borrowed forms ([`Spec::run`]), or started on its owned forms
//! with the result copied out at completion ([`Spec::start`]).
//!
//! Buffers are [`CBuf`]s (`None` where the program passed
//! `MPI_IN_PLACE`, or where a buffer matters only at the root). The
//! v-variants' blocks (one per rank, each with its own place, count and,
//! for `MPI_Alltoallw`, datatype) travel packed in rank order; ferry's
//! counts and displacements are then in bytes of that packing.

use std::borrow::Cow;

use ferry::{Comm, Request};

use crate::coll::reduction::Red;
use crate::coll::{copy_out, CBuf, Form, Piece};
use crate::error::Res;
use crate::request::object::State;
use crate::request::post::Post;

const P: Form = Form::Packed;

/// A parsed collective call.
#[derive(Debug)]
pub(crate) enum Spec {
    Barrier,
    /// A rooted collective at a member of an intercommunicator's root
    /// group other than the root (`MPI_PROC_NULL`): it takes no part, but
    /// still takes the call's sequence number, as every member does.
    Idle,
    Bcast {
        buf: CBuf,
        root: i32,
    },
    /// `recv` (all blocks) at the root only.
    Gather {
        send: Option<CBuf>,
        recv: Option<CBuf>,
        root: i32,
    },
    Gatherv {
        send: Option<CBuf>,
        recv: Option<Vec<CBuf>>,
        root: i32,
    },
    /// `send` (all blocks) at the root only; `recv: None` in place.
    Scatter {
        send: Option<CBuf>,
        recv: Option<CBuf>,
        root: i32,
    },
    Scatterv {
        send: Option<Vec<CBuf>>,
        recv: Option<CBuf>,
        root: i32,
    },
    Allgather {
        send: Option<CBuf>,
        recv: CBuf,
    },
    Allgatherv {
        send: Option<CBuf>,
        recv: Vec<CBuf>,
    },
    Alltoall {
        send: Option<CBuf>,
        recv: CBuf,
    },
    /// Also `MPI_Alltoallw` (blocks of their own datatypes).
    Alltoallv {
        send: Option<Vec<CBuf>>,
        recv: Vec<CBuf>,
    },
    Reduce {
        send: Option<CBuf>,
        recv: Option<CBuf>,
        red: Red,
        root: i32,
    },
    Allreduce {
        send: Option<CBuf>,
        recv: CBuf,
        red: Red,
    },
    /// `recv` is this member's block; `input` what it reduces (`send`, or
    /// all of `recvbuf` in place).
    ReduceScatter {
        input: CBuf,
        recv: CBuf,
        counts: Vec<usize>,
        red: Red,
        block: bool,
    },
    Scan {
        send: Option<CBuf>,
        recv: CBuf,
        red: Red,
        exclusive: bool,
    },
}

/// A persistent collective: its spec, started at each `MPI_Start`.
#[derive(Debug)]
pub(crate) struct Deferred(pub(crate) Spec);

impl Deferred {
    /// Starts one activation.
    pub(crate) fn start(&self, c: &Comm) -> Res<(State, Post)> {
        let (req, post) = self.0.start(c)?;
        Ok((State::Active(req), post))
    }
}

/// The packed bytes, counts and displacements of blocks in rank order.
fn layout(blocks: &[CBuf]) -> Res<(Vec<usize>, Vec<usize>, usize)> {
    let mut counts = Vec::with_capacity(blocks.len());
    let mut displs = Vec::with_capacity(blocks.len());
    let mut at = 0usize;
    for b in blocks {
        let n = b.wire_len(P)?;
        counts.push(n);
        displs.push(at);
        at += n;
    }
    Ok((counts, displs, at))
}

/// The blocks packed in rank order.
fn pack_all(blocks: &[CBuf]) -> Res<Vec<u8>> {
    let mut out = Vec::new();
    for b in blocks {
        out.extend_from_slice(&b.input(P)?);
    }
    Ok(out)
}

/// The pieces that copy packed blocks back, leaving out `skip`.
fn pieces(blocks: &[CBuf], displs: &[usize], skip: Option<usize>) -> Vec<Piece> {
    blocks
        .iter()
        .zip(displs)
        .enumerate()
        .filter(|(i, _)| Some(*i) != skip)
        .map(|(_, (b, &off))| Piece {
            off,
            buf: b.clone(),
            form: P,
        })
        .collect()
}

/// `len` bytes as `n` equal blocks' counts (the remainder, if `len` is
/// not a multiple, in none: the collective then finds the sizes wrong).
fn equal_blocks(len: usize, n: u32) -> Vec<usize> {
    vec![len / n.max(1) as usize; n as usize]
}

/// One piece: all of `buf` from offset 0.
fn whole(buf: &CBuf, form: Form) -> Vec<Piece> {
    vec![Piece {
        off: 0,
        buf: buf.clone(),
        form,
    }]
}

/// The post step of a nonblocking collective.
fn post(pieces: Vec<Piece>) -> Post {
    if pieces.is_empty() {
        Post::None
    } else {
        Post::Coll(Box::new(pieces))
    }
}

impl Spec {
    /// Runs a blocking collective (the buffers are the program's, valid
    /// for the call; each output is written by ferry before `finish`
    /// copies a staged one back).
    pub(crate) fn run(&self, c: &Comm) -> Res {
        let me = c.rank() as usize;
            match self {
                Spec::Barrier => c.barrier()?,
                Spec::Idle => c.bcast::<u8>(&mut [], ferry::PROC_NULL)?,
                Spec::Bcast { buf, root } => {
                    let mut out = buf.output(P, c.is_root(*root))?;
                    c.bcast(out.bytes(), *root)?;
                    out.finish(buf, P)?;
                }
                Spec::Gather { send, recv, root } => match (send, recv) {
                    (None, Some(r)) => {
                        let mut out = r.output(P, true)?;
                        c.gather_in_place(out.bytes(), *root)?;
                        out.finish(r, P)?;
                    }
                    (Some(s), Some(r)) => {
                        let input = s.input(P)?;
                        let mut out = r.output(P, false)?;
                        c.gather(&input, Some(out.bytes()), *root)?;
                        out.finish(r, P)?;
                    }
                    (Some(s), None) => c.gather(&s.input(P)?, None, *root)?,
                    (None, None) => c.gather::<u8>(&[], None, *root)?,
                },
                Spec::Gatherv { send, recv, root } => match recv {
                    Some(blocks) => {
                        let (counts, displs, total) = layout(blocks)?;
                        let input = match send {
                            Some(s) => s.input(P)?,
                            None => Cow::Owned(blocks[me].to_vec(P)?),
                        };
                        let mut wire = vec![0u8; total];
                        c.gatherv(
                            &input,
                            Some((&mut wire[..], &counts[..], &displs[..])),
                            *root,
                        )?;
                        let skip = send.is_none().then_some(me);
                        copy_out(&wire, &pieces(blocks, &displs, skip))?;
                    }
                    None => {
                        let input = match send {
                            Some(s) => s.input(P)?,
                            None => Cow::Borrowed(&[][..]),
                        };
                        c.gatherv(&input, None, *root)?;
                    }
                },
                Spec::Scatter { send, recv, root } => match (send, recv) {
                    (Some(s), None) => c.scatter_in_place(&s.input(P)?, *root)?,
                    (s, Some(r)) => {
                        let input = s.as_ref().map(|s| s.input(P)).transpose()?;
                        let mut out = r.output(P, false)?;
                        c.scatter(input.as_deref(), out.bytes(), *root)?;
                        out.finish(r, P)?;
                    }
                    (None, None) => c.scatter::<u8>(None, &mut [], *root)?,
                },
                Spec::Scatterv { send, recv, root } => {
                    let packed = match send {
                        Some(blocks) => Some((pack_all(blocks)?, layout(blocks)?)),
                        None => None,
                    };
                    let input = packed
                        .as_ref()
                        .map(|(w, (counts, displs, _))| (&w[..], &counts[..], &displs[..]));
                    match recv {
                        Some(r) => {
                            let mut out = r.output(P, false)?;
                            c.scatterv(input, out.bytes(), *root)?;
                            out.finish(r, P)?;
                        }
                        None => {
                            // In place at the root: its own block stays put.
                            let mine = packed.as_ref().map_or(0, |(_, (counts, _, _))| counts[me]);
                            let mut scratch = vec![0u8; mine];
                            c.scatterv(input, &mut scratch, *root)?;
                        }
                    }
                }
                Spec::Allgather { send, recv } => {
                    let mut out = recv.output(P, send.is_none())?;
                    match send {
                        Some(s) => c.allgather(&s.input(P)?, out.bytes())?,
                        None => c.allgather_in_place(out.bytes())?,
                    }
                    out.finish(recv, P)?;
                }
                Spec::Allgatherv { send, recv } => {
                    let (counts, displs, total) = layout(recv)?;
                    let input = match send {
                        Some(s) => s.input(P)?,
                        None => Cow::Owned(recv[me].to_vec(P)?),
                    };
                    let mut wire = vec![0u8; total];
                    c.allgatherv(&input, &mut wire, &counts, &displs)?;
                    copy_out(&wire, &pieces(recv, &displs, send.is_none().then_some(me)))?;
                }
                Spec::Alltoall { send, recv } => {
                    let mut out = recv.output(P, send.is_none())?;
                    match send {
                        Some(s) => c.alltoall(&s.input(P)?, out.bytes())?,
                        None => c.alltoall_in_place(out.bytes())?,
                    }
                    out.finish(recv, P)?;
                }
                Spec::Alltoallv { send, recv } => {
                    let sblocks = send.as_deref().unwrap_or(recv);
                    let swire = pack_all(sblocks)?;
                    let (sc, sd, _) = layout(sblocks)?;
                    let (rc, rd, total) = layout(recv)?;
                    let mut rwire = vec![0u8; total];
                    c.alltoallv((&swire, &sc, &sd), (&mut rwire, &rc, &rd))?;
                    copy_out(&rwire, &pieces(recv, &rd, None))?;
                }
                Spec::Reduce {
                    send,
                    recv,
                    red,
                    root,
                } => {
                    let op = red.ferry_op();
                    match (send, recv) {
                        (None, Some(r)) => {
                            let mut out = r.output(red.form, true)?;
                            c.reduce_in_place(out.bytes(), &op, *root)?;
                            out.finish(r, red.form)?;
                        }
                        (Some(s), Some(r)) => {
                            let input = s.input(red.form)?;
                            let mut out = r.output(red.form, false)?;
                            c.reduce(&input, Some(out.bytes()), &op, *root)?;
                            out.finish(r, red.form)?;
                        }
                        (Some(s), None) => c.reduce(&s.input(red.form)?, None, &op, *root)?,
                        (None, None) => c.reduce::<u8>(&[], None, &op, *root)?,
                    }
                }
                Spec::Allreduce { send, recv, red } => {
                    let op = red.ferry_op();
                    let mut out = recv.output(red.form, send.is_none())?;
                    match send {
                        Some(s) => c.allreduce(&s.input(red.form)?, out.bytes(), &op)?,
                        None => c.allreduce_in_place(out.bytes(), &op)?,
                    }
                    out.finish(recv, red.form)?;
                }
                Spec::ReduceScatter {
                    input,
                    recv,
                    counts,
                    red,
                    block,
                } => {
                    let op = red.ferry_op();
                    // In place, the input and the output share memory.
                    let data = input.to_vec(red.form)?;
                    let mut out = recv.output(red.form, false)?;
                    if *block {
                        c.reduce_scatter_block(&data, out.bytes(), &op)?;
                    } else {
                        c.reduce_scatter(&data, out.bytes(), counts, &op)?;
                    }
                    out.finish(recv, red.form)?;
                }
                Spec::Scan {
                    send,
                    recv,
                    red,
                    exclusive,
                } => {
                    let op = red.ferry_op();
                    let data = match send {
                        Some(s) => s.input(red.form)?,
                        None => Cow::Owned(recv.to_vec(red.form)?),
                    };
                    // Member 0 of an exscan keeps its buffer as it was.
                    let mut out = recv.output(red.form, *exclusive)?;
                    if *exclusive {
                        c.exscan(&data, out.bytes(), &op)?;
                    } else {
                        c.scan(&data, out.bytes(), &op)?;
                    }
                    out.finish(recv, red.form)?;
                }
            }
                Ok(())
    }

    /// Starts the collective on ferry's owned forms: the request, and the
    /// post step that copies its result out (the inputs are read during
    /// this call; the outputs are written only by the post step, at
    /// completion: MPI's rule for nonblocking collectives).
    pub(crate) fn start(&self, c: &Comm) -> Res<(Request, Post)> {
        let me = c.rank() as usize;
            Ok(match self {
                Spec::Barrier => (c.ibarrier()?, Post::None),
                Spec::Idle => (c.ibcast(Vec::<u8>::new(), ferry::PROC_NULL)?, Post::None),
                Spec::Bcast { buf, root } => {
                    let at_root = c.is_root(*root);
                    let data = if at_root {
                        buf.to_vec(P)?
                    } else {
                        vec![0u8; buf.wire_len(P)?]
                    };
                    let out = if at_root { Vec::new() } else { whole(buf, P) };
                    (c.ibcast(data, *root)?, post(out))
                }
                Spec::Gather { send, recv, root } => {
                    let data = match (send, recv) {
                        (Some(s), _) => s.to_vec(P)?,
                        (None, Some(r)) => {
                            let per = r.count / c.size().max(1) as usize;
                            r.at(me * per, per)?.to_vec(P)?
                        }
                        (None, None) => Vec::new(),
                    };
                    let out = recv.as_ref().map(|r| whole(r, P)).unwrap_or_default();
                    match recv {
                        // An intercommunicator's root sends nothing, so
                        // its blocks' size comes from its receive buffer.
                        Some(r) if c.is_inter() => {
                            let counts = equal_blocks(r.wire_len(P)?, c.peer_size());
                            (c.igatherv(data, &counts, *root)?, post(out))
                        }
                        _ => (c.igather(data, *root)?, post(out)),
                    }
                }
                Spec::Gatherv { send, recv, root } => {
                    let data = match (send, recv) {
                        (Some(s), _) => s.to_vec(P)?,
                        (None, Some(b)) => b[me].to_vec(P)?,
                        (None, None) => Vec::new(),
                    };
                    match recv {
                        Some(blocks) => {
                            let (counts, displs, _) = layout(blocks)?;
                            let skip = send.is_none().then_some(me);
                            (
                                c.igatherv(data, &counts, *root)?,
                                post(pieces(blocks, &displs, skip)),
                            )
                        }
                        None => (c.igatherv(data, &[], *root)?, Post::None),
                    }
                }
                Spec::Scatter { send, recv, root } => {
                    let data = send.as_ref().map(|s| s.to_vec(P)).transpose()?;
                    let (mine, out) = match (recv, send) {
                        (Some(r), _) => (r.wire_len(P)?, whole(r, P)),
                        (None, Some(s)) => (s.wire_len(P)? / c.size().max(1) as usize, Vec::new()),
                        (None, None) => (0, Vec::new()),
                    };
                    (c.iscatter(data, mine, *root)?, post(out))
                }
                Spec::Scatterv { send, recv, root } => {
                    let (data, counts) = match send {
                        Some(b) => (Some(pack_all(b)?), layout(b)?.0),
                        None => (None, Vec::new()),
                    };
                    let (mine, out) = match recv {
                        Some(r) => (r.wire_len(P)?, whole(r, P)),
                        None => (counts.get(me).copied().unwrap_or(0), Vec::new()),
                    };
                    (c.iscatterv(data, &counts, mine, *root)?, post(out))
                }
                Spec::Allgather { send, recv } => {
                    let data = match send {
                        Some(s) => s.to_vec(P)?,
                        None => {
                            let per = recv.count / c.size().max(1) as usize;
                            recv.at(me * per, per)?.to_vec(P)?
                        }
                    };
                    let req = if c.is_inter() {
                        // The other group's blocks may differ in size from
                        // this member's.
                        let counts = equal_blocks(recv.wire_len(P)?, c.peer_size());
                        c.iallgatherv(data, &counts)?
                    } else {
                        c.iallgather(data)?
                    };
                    (req, post(whole(recv, P)))
                }
                Spec::Allgatherv { send, recv } => {
                    let data = match send {
                        Some(s) => s.to_vec(P)?,
                        None => recv[me].to_vec(P)?,
                    };
                    let (counts, displs, _) = layout(recv)?;
                    let skip = send.is_none().then_some(me);
                    (
                        c.iallgatherv(data, &counts)?,
                        post(pieces(recv, &displs, skip)),
                    )
                }
                Spec::Alltoall { send, recv } => {
                    let data = match send {
                        Some(s) => s.to_vec(P)?,
                        None => recv.to_vec(P)?,
                    };
                    let req = if c.is_inter() {
                        // Blocks sent and received may differ in size.
                        let n = c.peer_size();
                        let sc = equal_blocks(data.len(), n);
                        let rc = equal_blocks(recv.wire_len(P)?, n);
                        c.ialltoallv(data, &sc, &rc)?
                    } else {
                        c.ialltoall(data)?
                    };
                    (req, post(whole(recv, P)))
                }
                Spec::Alltoallv { send, recv } => {
                    let sblocks = send.as_deref().unwrap_or(recv);
                    let data = pack_all(sblocks)?;
                    let (sc, _, _) = layout(sblocks)?;
                    let (rc, rd, _) = layout(recv)?;
                    (c.ialltoallv(data, &sc, &rc)?, post(pieces(recv, &rd, None)))
                }
                Spec::Reduce {
                    send,
                    recv,
                    red,
                    root,
                } => {
                    let data = match (send, recv) {
                        (Some(s), _) => s.to_vec(red.form)?,
                        (None, Some(r)) => r.to_vec(red.form)?,
                        (None, None) => Vec::new(),
                    };
                    let out = recv
                        .as_ref()
                        .map(|r| whole(r, red.form))
                        .unwrap_or_default();
                    (c.ireduce(data, &red.ferry_op(), *root)?, post(out))
                }
                Spec::Allreduce { send, recv, red } => {
                    let data = send.as_ref().unwrap_or(recv).to_vec(red.form)?;
                    (
                        c.iallreduce(data, &red.ferry_op())?,
                        post(whole(recv, red.form)),
                    )
                }
                Spec::ReduceScatter {
                    input,
                    recv,
                    counts,
                    red,
                    block,
                } => {
                    let data = input.to_vec(red.form)?;
                    let op = red.ferry_op();
                    let req = if *block {
                        c.ireduce_scatter_block(data, &op)?
                    } else {
                        c.ireduce_scatter(data, counts, &op)?
                    };
                    (req, post(whole(recv, red.form)))
                }
                Spec::Scan {
                    send,
                    recv,
                    red,
                    exclusive,
                } => {
                    let data = send.as_ref().unwrap_or(recv).to_vec(red.form)?;
                    let op = red.ferry_op();
                    if *exclusive {
                        // Member 0's buffer is left as it was.
                        let out = if me == 0 {
                            Vec::new()
                        } else {
                            whole(recv, red.form)
                        };
                        (c.iexscan(data, &op)?, post(out))
                    } else {
                        (c.iscan(data, &op)?, post(whole(recv, red.form)))
                    }
                }
            })
            }
}
