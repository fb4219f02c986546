//! A [`Sink`] that records every event, for device tests: the in-memory
//! devices' tests, each device crate's unit tests, and new devices checking
//! themselves against the contract in [`crate::device`].

use crate::buffer::Buf;
use crate::device::{Incoming, OpToken, Sink};
use crate::envelope::Rank;
use crate::error::Error;

/// What a [`Recorder`] saw.
#[derive(Debug)]
pub enum Event {
    /// A packet.
    Packet {
        /// The sending rank.
        from: Rank,
        /// The header bytes.
        header: Vec<u8>,
        /// A copy of the payload bytes.
        payload: Vec<u8>,
        /// The address of the payload as the device held it.
        payload_addr: usize,
        /// [`Buf::id`] of what `into_payload` returned (0 when not taken).
        buf_id: usize,
        /// The payload taken with `into_payload`, when the recorder takes.
        buf: Option<Buf>,
    },
    /// An RDMA completion.
    Rdma(OpToken, Result<(), Error>),
    /// A peer failure.
    Failed(Rank, Error),
}

/// Records events in order. A recorder made by [`Recorder::taking`] takes
/// each payload with [`Incoming::into_payload`], as the engine does for an
/// unexpected message, so the device's handover path is exercised too.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Take payloads with `into_payload`.
    pub take: bool,
    /// Everything seen, in order.
    pub events: Vec<Event>,
}

impl Sink for Recorder {
    fn packet<I: Incoming>(&mut self, from: Rank, packet: I) {
        let header = packet.header().to_vec();
        let payload = packet.payload().to_vec();
        let payload_addr = packet.payload().as_ptr() as usize;
        let buf = if self.take {
            match packet.into_payload() {
                Ok(buf) => Some(buf),
                Err(e) => return self.events.push(Event::Failed(from, e)),
            }
        } else {
            None
        };
        let buf_id = buf.as_ref().map_or(0, Buf::id);
        let event = Event::Packet {
            from,
            header,
            payload,
            payload_addr,
            buf_id,
            buf,
        };
        self.events.push(event);
    }

    fn rdma_done(&mut self, token: OpToken, result: Result<(), Error>) {
        self.events.push(Event::Rdma(token, result));
    }

    fn peer_failed(&mut self, peer: Rank, error: Error) {
        self.events.push(Event::Failed(peer, error));
    }
}

impl Recorder {
    /// A recorder that takes every payload with `into_payload`.
    pub fn taking() -> Recorder {
        Recorder {
            take: true,
            events: Vec::new(),
        }
    }

    /// The (from, header, payload) of every packet, in order.
    pub fn packets(&self) -> Vec<(Rank, Vec<u8>, Vec<u8>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Packet {
                    from,
                    header,
                    payload,
                    ..
                } => Some((*from, header.clone(), payload.clone())),
                _ => None,
            })
            .collect()
    }

    /// The taken payloads, moved out of the record, in order.
    pub fn bufs(&mut self) -> Vec<Buf> {
        self.events
            .iter_mut()
            .filter_map(|e| match e {
                Event::Packet { buf, .. } => buf.take(),
                _ => None,
            })
            .collect()
    }

    /// Every RDMA completion, in order.
    pub fn rdma(&self) -> Vec<(OpToken, Result<(), Error>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Rdma(t, r) => Some((*t, *r)),
                _ => None,
            })
            .collect()
    }

    /// Every peer failure, in order.
    pub fn failures(&self) -> Vec<(Rank, Error)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Failed(p, err) => Some((*p, *err)),
                _ => None,
            })
            .collect()
    }
}
