//! One collective call, parsed ([`Spec`]), and described once as core
//! describes it ([`Spec::lower`]: a [`Collective`] and this member's
//! input and output [`Place`]s), whichever form runs it: blocking on
//! borrowed slices ([`Lowered::run`], `ferry::Comm::collective`), or
//! nonblocking and persistent on buffers ferry holds until completion
//! ([`Lowered::start`], `ferry::Comm::icollective`).
//!
//! Buffers are [`CBuf`]s (`None` where the program passed
//! `MPI_IN_PLACE`, or where a buffer matters only at the root). Data that
//! lies in one run goes to ferry where it is, in every form: a
//! nonblocking collective lends it, so nothing is copied in or out. Other
//! data (a datatype with holes, a user op's extent layout, v-variant
//! blocks that do not tile one span) is packed into a staging vector and
//! copied out when the collective is done.

use std::sync::Arc;

use ferry::ferry_core::coll::{Collective, Counts, Neighbors, NO_NEIGHBOR};
use ferry::{Comm, Request};

use crate::coll::reduction::Red;
use crate::coll::{place_blocks, CBuf, Form, Place};
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
    /// A neighborhood collective: `recv` has a block per source.
    Neighbor {
        neighbors: Arc<Neighbors>,
        send: Sent,
        recv: Vec<CBuf>,
    },
}

/// What a neighborhood collective sends.
#[derive(Debug)]
pub(crate) enum Sent {
    /// One block to every destination (the allgathers).
    Same(CBuf),
    /// A block per destination (the alltoalls).
    Each(Vec<CBuf>),
}

/// A persistent collective: its spec, started at each `MPI_Start`.
#[derive(Debug)]
pub(crate) struct Deferred(pub(crate) Spec);

impl Deferred {
    /// Starts one activation.
    pub(crate) fn start(&self, c: &Comm) -> Res<(State, Post)> {
        let (req, post) = self.0.lower(c)?.start(c)?;
        Ok((State::Active(req), post))
    }
}

/// A call as core describes it, with this member's bytes.
#[derive(Debug)]
pub(crate) struct Lowered {
    coll: Collective,
    input: Option<Place>,
    output: Option<Place>,
}

impl Lowered {
    fn new(coll: Collective, input: Option<Place>, output: Option<Place>) -> Lowered {
        Lowered {
            coll,
            input,
            output,
        }
    }

    /// Runs it, blocking; a staged output is copied out after.
    #[inline(always)]
    pub(crate) fn run(self, c: &Comm) -> Res {
        let Lowered {
            coll,
            input,
            mut output,
        } = self;
        let input_bytes = input.as_ref().map(Place::read).transpose()?;
        let output_bytes = output.as_mut().map(Place::write).transpose()?;
        c.collective(coll, input_bytes, output_bytes)?;
        output.map_or(Ok(()), Place::finish)
    }

    /// Starts it: the request, and the post step that copies a staged
    /// output out at completion (none where ferry writes the program's
    /// memory).
    pub(crate) fn start(self, c: &Comm) -> Res<(Request, Post)> {
        let input = self.input.map(|p| p.into_buf(false)).transpose()?;
        let output = self.output.map(|p| p.into_buf(true)).transpose()?;
        let (output, pieces) = match output {
            Some((b, pieces)) => (Some(b), pieces),
            None => (None, Vec::new()),
        };
        let req = c.icollective(self.coll, input.map(|i| i.0), output)?;
        let post = if pieces.is_empty() {
            Post::None
        } else {
            Post::Coll(Box::new(pieces))
        };
        Ok((req, post))
    }
}

/// A v-collective's member that passes no blocks: no counts.
fn no_counts() -> Counts {
    Counts::packed(Vec::new())
}

impl Spec {
    /// The call as core describes it, with this member's input and output.
    /// Inlined into its two callers ([`Spec::run`], [`Spec::start`]), so
    /// the description is built in place rather than returned and moved
    /// (a blocking barrier paid 160 instructions and a `memcpy` for it).
    #[inline(always)]
    pub(crate) fn lower(&self, c: &Comm) -> Res<Lowered> {
        let me = c.rank() as usize;
        let root = |r: i32| -> Res<u32> { Ok(c.collective_root(r)?) };
        Ok(match self {
            Spec::Barrier => Lowered::new(Collective::Barrier, None, None),
            Spec::Idle => Lowered::new(
                Collective::Bcast {
                    root: root(ferry::PROC_NULL)?,
                },
                None,
                Some(Place::empty()),
            ),
            Spec::Bcast { buf, root: r } => {
                let at_root = c.is_root(*r);
                Lowered::new(
                    Collective::Bcast { root: root(*r)? },
                    None,
                    Some(buf.place_out(P, at_root, !at_root)?),
                )
            }
            Spec::Gather {
                send,
                recv,
                root: r,
            } => {
                let coll = Collective::Gather {
                    root: root(*r)?,
                    v: None,
                };
                match (send, recv) {
                    (None, Some(rv)) => {
                        Lowered::new(coll, None, Some(rv.place_out(P, true, true)?))
                    }
                    (s, rv) => Lowered::new(
                        coll,
                        Some(s.as_ref().map_or(Ok(Place::empty()), |s| s.place_in(P))?),
                        rv.as_ref()
                            .map(|rv| rv.place_out(P, false, true))
                            .transpose()?,
                    ),
                }
            }
            Spec::Gatherv {
                send,
                recv,
                root: r,
            } => {
                let root = root(*r)?;
                match recv {
                    Some(blocks) => {
                        let skip = send.is_none().then_some(me);
                        let (out, counts, direct) =
                            place_blocks(blocks, true, |i| Some(i) == skip)?;
                        // In place: the root's block is where it belongs if
                        // ferry writes the program's memory; else it goes in.
                        let input = match send {
                            Some(s) => Some(s.place_in(P)?),
                            None if direct => None,
                            None => Some(blocks[me].place_in(P)?),
                        };
                        let coll = Collective::Gather {
                            root,
                            v: Some(counts),
                        };
                        Lowered::new(coll, input, Some(out))
                    }
                    None => {
                        let input = send
                            .as_ref()
                            .map_or(Ok(Place::empty()), |s| s.place_in(P))?;
                        let coll = Collective::Gather {
                            root,
                            v: Some(no_counts()),
                        };
                        Lowered::new(coll, Some(input), None)
                    }
                }
            }
            Spec::Scatter {
                send,
                recv,
                root: r,
            } => {
                let coll = Collective::Scatter {
                    root: root(*r)?,
                    v: None,
                };
                let input = send.as_ref().map(|s| s.place_in(P)).transpose()?;
                match recv {
                    Some(rv) => Lowered::new(coll, input, Some(rv.place_out(P, false, true)?)),
                    None if input.is_some() => Lowered::new(coll, input, None),
                    None => Lowered::new(coll, None, Some(Place::empty())),
                }
            }
            Spec::Scatterv {
                send,
                recv,
                root: r,
            } => {
                let (input, counts) = match send {
                    Some(blocks) => {
                        let (place, counts, _) = place_blocks(blocks, false, |_| false)?;
                        (Some(place), counts)
                    }
                    None => (None, no_counts()),
                };
                let output = match recv {
                    Some(rv) => rv.place_out(P, false, true)?,
                    // In place at the root: its own block stays put; it
                    // receives it into scratch.
                    None => Place::Staged(
                        vec![0u8; counts.counts.get(me).copied().unwrap_or(0)],
                        Vec::new(),
                    ),
                };
                let coll = Collective::Scatter {
                    root: root(*r)?,
                    v: Some(counts),
                };
                Lowered::new(coll, input, Some(output))
            }
            Spec::Allgather { send, recv } => Lowered::new(
                Collective::Allgather { v: None },
                send.as_ref().map(|s| s.place_in(P)).transpose()?,
                Some(recv.place_out(P, send.is_none(), true)?),
            ),
            Spec::Allgatherv { send, recv } => {
                let skip = send.is_none().then_some(me);
                let (out, counts, direct) = place_blocks(recv, true, |i| Some(i) == skip)?;
                let input = match send {
                    Some(s) => Some(s.place_in(P)?),
                    None if direct => None,
                    None => Some(recv[me].place_in(P)?),
                };
                Lowered::new(Collective::Allgather { v: Some(counts) }, input, Some(out))
            }
            Spec::Alltoall { send, recv } => Lowered::new(
                Collective::Alltoall { v: None },
                send.as_ref().map(|s| s.place_in(P)).transpose()?,
                Some(recv.place_out(P, send.is_none(), true)?),
            ),
            Spec::Alltoallv { send, recv } => {
                // In place, the blocks sent are the receive buffer's, read
                // into a copy first (ferry writes the buffer meanwhile).
                let (input, scounts) = match send {
                    Some(blocks) => {
                        let (place, counts, _) = place_blocks(blocks, false, |_| false)?;
                        (place, counts)
                    }
                    None => {
                        let (place, counts, _) = place_blocks(recv, false, |_| false)?;
                        (Place::Staged(place.read()?.to_vec(), Vec::new()), counts)
                    }
                };
                let (out, rcounts, _) = place_blocks(recv, true, |_| false)?;
                let coll = Collective::Alltoall {
                    v: Some((scounts, rcounts)),
                };
                Lowered::new(coll, Some(input), Some(out))
            }
            Spec::Reduce {
                send,
                recv,
                red,
                root: r,
            } => {
                let coll = Collective::Reduce {
                    root: root(*r)?,
                    op: red.op.clone(),
                    dtype: red.dtype,
                };
                match (send, recv) {
                    (None, Some(rv)) => {
                        Lowered::new(coll, None, Some(rv.place_out(red.form, true, true)?))
                    }
                    (s, rv) => Lowered::new(
                        coll,
                        Some(
                            s.as_ref()
                                .map_or(Ok(Place::empty()), |s| s.place_in(red.form))?,
                        ),
                        rv.as_ref()
                            .map(|rv| rv.place_out(red.form, false, true))
                            .transpose()?,
                    ),
                }
            }
            Spec::Allreduce { send, recv, red } => Lowered::new(
                Collective::Allreduce {
                    op: red.op.clone(),
                    dtype: red.dtype,
                },
                send.as_ref().map(|s| s.place_in(red.form)).transpose()?,
                Some(recv.place_out(red.form, send.is_none(), true)?),
            ),
            Spec::ReduceScatter {
                input,
                recv,
                counts,
                red,
                block,
            } => {
                // In place the input and the output share memory: the
                // input is read into a copy first.
                let data = if input.addr() == recv.addr() {
                    Place::Staged(input.to_vec(red.form)?, Vec::new())
                } else {
                    input.place_in(red.form)?
                };
                let coll = Collective::ReduceScatter {
                    counts: (!*block).then(|| counts.clone()),
                    op: red.op.clone(),
                    dtype: red.dtype,
                };
                Lowered::new(
                    coll,
                    Some(data),
                    Some(recv.place_out(red.form, false, true)?),
                )
            }
            Spec::Scan {
                send,
                recv,
                red,
                exclusive,
            } => {
                // In place (no input), the output holds this member's data.
                let data = send.as_ref().map(|s| s.place_in(red.form)).transpose()?;
                let (op, dtype) = (red.op.clone(), red.dtype);
                let coll = if *exclusive {
                    Collective::Exscan { op, dtype }
                } else {
                    Collective::Scan { op, dtype }
                };
                // Member 0 of an exscan keeps its buffer as it was.
                let keep = *exclusive && me == 0;
                let prefill = *exclusive || send.is_none();
                Lowered::new(coll, data, Some(recv.place_out(red.form, prefill, !keep)?))
            }
            Spec::Neighbor {
                neighbors,
                send,
                recv,
            } => {
                let (input, send) = match send {
                    Sent::Same(b) => (b.place_in(P)?, None),
                    Sent::Each(blocks) => {
                        let (place, counts, _) = place_blocks(blocks, false, |_| false)?;
                        (place, Some(counts))
                    }
                };
                // A block with no neighbor (past a grid's open edge) keeps
                // what it held.
                let none = |i: usize| neighbors.sources.get(i) == Some(&NO_NEIGHBOR);
                let (output, recv, _) = place_blocks(recv, true, none)?;
                let coll = Collective::Neighbor {
                    neighbors: Arc::clone(neighbors),
                    send,
                    recv,
                };
                Lowered::new(coll, Some(input), Some(output))
            }
        })
    }

    /// Runs a blocking collective.
    #[inline]
    pub(crate) fn run(&self, c: &Comm) -> Res {
        if let Some(r) = self.run_direct(c) {
            return r;
        }
        self.lower(c)?.run(c)
    }

    /// The blocking calls' fast branch: a barrier, and a bcast, reduce or
    /// allreduce whose data lies in one run, handed to
    /// `ferry::Comm::collective` with the program's slices at once (the
    /// same description as [`Spec::lower`]'s, without building its
    /// [`Lowered`]: 60-80 instructions a call, 8 % of a 2-rank barrier on
    /// the node path). `None`: the general path.
    #[inline(always)]
    fn run_direct(&self, c: &Comm) -> Option<Res> {
        let run =
            |coll: Collective, input: Option<Res<&[u8]>>, output: Option<Res<&mut [u8]>>| -> Res {
                c.collective(coll, input.transpose()?, output.transpose()?)?;
                Ok(())
            };
        let packed = |red: &Red| red.form == P;
        Some(match self {
            Spec::Barrier => run(Collective::Barrier, None, None),
            Spec::Bcast { buf, root } => {
                let out = buf.direct_out()?;
                let root = match c.collective_root(*root) {
                    Ok(r) => r,
                    Err(e) => return Some(Err(e.into())),
                };
                run(Collective::Bcast { root }, None, Some(out))
            }
            Spec::Allreduce { send, recv, red } if packed(red) => {
                let out = recv.direct_out()?;
                let input = match send {
                    Some(s) => Some(s.direct_in()?),
                    None => None,
                };
                let coll = Collective::Allreduce {
                    op: red.op.clone(),
                    dtype: red.dtype,
                };
                run(coll, input, Some(out))
            }
            Spec::Reduce {
                send,
                recv,
                red,
                root,
            } if packed(red) => {
                let input = match send {
                    Some(s) => Some(s.direct_in()?),
                    None if recv.is_none() => Some(Ok(&[][..])),
                    None => None,
                };
                let output = match recv {
                    Some(r) => Some(r.direct_out()?),
                    None => None,
                };
                let root = match c.collective_root(*root) {
                    Ok(r) => r,
                    Err(e) => return Some(Err(e.into())),
                };
                let coll = Collective::Reduce {
                    root,
                    op: red.op.clone(),
                    dtype: red.dtype,
                };
                run(coll, input, output)
            }
            _ => return None,
        })
    }

    /// Starts a nonblocking one: the request and its post step.
    pub(crate) fn start(&self, c: &Comm) -> Res<(Request, Post)> {
        self.lower(c)?.start(c)
    }
}
