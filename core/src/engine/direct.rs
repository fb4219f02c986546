//! A blocking receive without a request: [`Engine::recv_direct`].
//!
//! A blocking receive (`MPI_Recv`, `Comm::recv`) that no other receive can
//! compete with needs none of a request's machinery: no slab slot, no
//! posted-queue entry, no completion to store and take back. The caller's
//! slice is borrowed for the whole blocking call, so the engine copies
//! into it straight from the device's packet, or from the unexpected
//! queue, and returns the status.
//!
//! MPI's ordering is why the conditions below are what they are. A message
//! may be taken directly only if no receive posted earlier could match it:
//! so nothing may be posted at all (a probe waiting counts). The unexpected
//! queue is looked at first, so an earlier matching message is never
//! overtaken. While the direct receive waits, its pattern is not posted:
//! an arrival it cannot take (a rendezvous, a synchronous send, one that
//! would be truncated) is queued as unexpected as usual, and from then on
//! the direct receive gives way ([`Direct::GiveWay`]) so the caller posts
//! an ordinary receive, which matches that queued message first. Each
//! attempt checks the conditions again, because under `Multiple` another
//! thread may have posted or progressed between two attempts.

use super::incoming::arrival_status;
use super::{Body, Engine, State, Unexpected};
use crate::device::{Device, Incoming, OpToken, Sink};
use crate::envelope::{ContextId, Envelope, Pattern, Rank, Tag};
use crate::error::{Error, Result};
use crate::status::Status;
use crate::wire::Header;

/// What one attempt of [`Engine::recv_direct`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direct {
    /// Received: the message is in the slice. (Not a whole [`Status`]: an
    /// attempt's answer is moved on every spin round, so it stays small.)
    Done(Arrival),
    /// Nothing yet: attempt again (after spinning or parking).
    Pending,
    /// This receive cannot be done without a request (something is
    /// posted, a matching message needs a protocol, the source is
    /// `PROC_NULL` or has failed): post an ordinary receive instead.
    GiveWay,
}

/// What a direct receive received: its envelope's source and tag, and its
/// length (all of it fitted: a message that would not is not taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The sender.
    pub source: Rank,
    /// The message's tag.
    pub tag: Tag,
    /// Bytes received.
    pub bytes: usize,
}

impl From<Arrival> for Status {
    fn from(a: Arrival) -> Status {
        arrival_status(
            Envelope {
                source: a.source,
                tag: a.tag,
                context: 0,
            },
            a.bytes,
        )
    }
}

impl Arrival {
    fn of(env: Envelope, bytes: usize) -> Arrival {
        Arrival {
            source: env.source,
            tag: env.tag,
            bytes,
        }
    }
}

/// A direct receive's pattern, its arguments checked once
/// ([`Engine::direct_recv`]) for all its attempts.
#[derive(Debug, Clone, Copy)]
pub struct DirectRecv {
    pattern: Pattern,
}

impl<D: Device> Engine<D> {
    /// Checks a direct receive's arguments (as [`Engine::irecv`] does):
    /// `None` for `PROC_NULL`, which the ordinary receive answers.
    ///
    /// # Errors
    /// A bad rank or tag.
    pub fn direct_recv(
        &self,
        source: Rank,
        tag: Tag,
        context: ContextId,
    ) -> Result<Option<DirectRecv>> {
        Ok(self
            .pattern(source, tag, context)?
            .map(|pattern| DirectRecv { pattern }))
    }

    /// One attempt at a blocking receive into `dst` without a request (see
    /// the module docs): takes a matching eager message from the
    /// unexpected queue, or progresses once and takes one as it arrives.
    /// Call it until it says `Done` or `GiveWay`; between attempts, wait as
    /// for any request ([`Engine::device_check`]).
    ///
    /// # Errors
    /// A fatal device error.
    pub fn recv_direct(&mut self, want: &DirectRecv, dst: &mut [u8]) -> Result<Direct> {
        let pattern = want.pattern;
        if !self.st.posted.is_empty() || !self.st.probes.is_empty() {
            return Ok(Direct::GiveWay);
        }
        if self.st.cut_off(&pattern) {
            return Ok(Direct::GiveWay);
        }
        if !self.st.unexpected.is_empty() {
            match self.st.take_unexpected_direct(&pattern, dst) {
                Direct::Pending => {}
                found => return Ok(found),
            }
        }
        let (mut got, mut queued) = (None, false);
        self.progress_with(|device, st| {
            let mut sink = DirectSink {
                st,
                pattern,
                dst,
                got: None,
                queued: false,
            };
            let polled = device.progress(&mut sink);
            (got, queued) = (sink.got, sink.queued);
            polled
        })?;
        Ok(match got {
            Some(arrival) => Direct::Done(arrival),
            None if queued => Direct::GiveWay,
            None => Direct::Pending,
        })
    }
}

impl State {
    /// True if the source the pattern names (or, for `ANY_SOURCE`, some
    /// member of its context) has failed: the ordinary receive reports it.
    /// (A source outside this job counts as cut off: the ordinary receive
    /// reports it.)
    fn cut_off(&self, pattern: &Pattern) -> bool {
        match pattern.source {
            Some(s) => usize::try_from(s)
                .ok()
                .and_then(|s| self.peers.get(s))
                .is_none_or(|p| p.failed.is_some()),
            None => self.failed_member(pattern.context).is_some(),
        }
    }

    /// A matching message already queued: taken if it is plain eager data
    /// that fits, else the ordinary receive must take it.
    fn take_unexpected_direct(&mut self, pattern: &Pattern, dst: &mut [u8]) -> Direct {
        let fits = match self.unexpected.peek(pattern) {
            None => return Direct::Pending,
            Some((_, _, m)) => match &m.body {
                Body::Eager { data, sync: None } => data.len() <= dst.len(),
                _ => false,
            },
        };
        if !fits {
            return Direct::GiveWay;
        }
        let Some((env, msg)) = self.unexpected.take(pattern) else {
            return Direct::GiveWay;
        };
        let Unexpected {
            body: Body::Eager { data, .. },
        } = msg
        else {
            return Direct::GiveWay;
        };
        let len = data.len();
        crate::buffer::copy_short(&mut dst[..len], data.as_slice());
        self.consumed_eager(env.source);
        self.small.give_back(data);
        self.counters.direct_receives += 1;
        Direct::Done(Arrival::of(env, len))
    }

    /// Lands plain eager data straight in the direct receive's slice; the
    /// checks are those [`State::packet`] makes before its own eager path.
    fn land_direct(&mut self, from: Rank, seq: u32, payload: &[u8], dst: &mut [u8]) -> bool {
        self.events += 1;
        self.counters.packets_in += 1;
        if !self.check_seq(from, seq) {
            return false;
        }
        crate::buffer::copy_short(dst, payload);
        self.consumed_eager(from);
        self.counters.direct_receives += 1;
        true
    }
}

/// The engine's sink while a direct receive waits: plain eager data that
/// matches and fits goes into the slice; everything else, and anything
/// after the receive is satisfied, goes the ordinary way.
struct DirectSink<'a> {
    st: &'a mut State,
    pattern: Pattern,
    dst: &'a mut [u8],
    got: Option<Arrival>,
    /// A matching arrival was queued as unexpected: this receive must not
    /// overtake it, so it takes nothing more.
    queued: bool,
}

impl Sink for DirectSink<'_> {
    fn packet<I: Incoming>(&mut self, from: Rank, packet: I) {
        if self.got.is_none() && !self.queued && self.st.valid_live_peer(from) {
            if let Some(e) = Header::decode_plain_eager(packet.header()) {
                let env = Envelope {
                    source: from,
                    tag: e.tag,
                    context: e.context,
                };
                let payload = packet.payload();
                if self.pattern.matches(&env) && payload.len() <= self.dst.len() {
                    if self.st.land_direct(from, e.seq, payload, self.dst) {
                        self.got = Some(Arrival::of(env, payload.len()));
                    }
                    return;
                }
            }
        }
        // A new message this receive matches but cannot take is queued as
        // unexpected (nothing is posted): it must not be overtaken.
        let envelope = match Header::decode(packet.header()) {
            Ok(Header::Eager(e)) => Some((e.tag, e.context)),
            Ok(Header::Rts(r)) => Some((r.tag, r.context)),
            _ => None,
        };
        let matches = envelope.is_some_and(|(tag, context)| {
            self.pattern.matches(&Envelope {
                source: from,
                tag,
                context,
            })
        });
        self.st.packet(from, packet);
        self.queued |= matches;
    }

    fn rdma_done(&mut self, token: OpToken, result: Result<(), Error>) {
        self.st.rdma_done(token, result);
    }

    fn satisfied(&self) -> bool {
        self.got.is_some()
    }

    fn peer_failed(&mut self, peer: Rank, error: Error) {
        self.st.peer_failed(peer, error);
    }
}
