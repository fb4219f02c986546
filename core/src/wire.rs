//! The wire headers ferry's protocols exchange, and their codec.
//!
//! Devices move opaque `(header, payload)` pairs; this module is the one
//! place that gives the header bytes meaning. Every decode validates kind,
//! flags and length before anything is trusted, so a corrupted or forged
//! header becomes [`PeerError::Protocol`](crate::PeerError::Protocol), never a
//! panic or an out-of-bounds access (fuzzed by `fuzz/fuzz_targets/wire.rs`).
//!
//! All integers are little-endian. The sending rank is not in the header: the
//! device knows which peer a packet came from.
//!
//! | kind | fields | payload |
//! |---|---|---|
//! | `Eager` | context, tag, seq, [sender request if SYNC] | the message |
//! | `Rts` | context, tag, seq, total length, sender request, [remote key], [SYNC, READY, PUT] | none |
//! | `Cts` | sender request, receiver request, length to send, [remote key] | none |
//! | `Frag` | receiver request, offset | a piece of the message |
//! | `Fin` | the request the FIN completes, \[FAILED\] | none |
//! | `SyncAck` | sender request | none |
//! | `Credit` | credits returned | none |

use crate::envelope::{ContextId, Tag};

/// No header is longer than this; devices may size their inline space by it.
pub const MAX_HEADER: usize = 64;

/// An opaque description of registered memory that a peer can read or write
/// (verbs: address + rkey; CMA: address; libfabric: address + key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RemoteKey {
    /// The address (or offset) of the region, as the device defines it.
    pub addr: u64,
    /// The device's access key.
    pub key: u64,
}

/// Flag bits of the header's second byte.
mod flag {
    /// Eager/RTS: synchronous send, acknowledge on match.
    pub(super) const SYNC: u8 = 1 << 0;
    /// RTS/CTS: a remote key follows.
    pub(super) const KEY: u8 = 1 << 1;
    /// RTS: ready-mode send (a matching receive should already be posted).
    pub(super) const READY: u8 = 1 << 2;
    /// FIN: the transfer failed.
    pub(super) const FAILED: u8 = 1 << 3;
    /// RTS without a key: the sender asks for rendezvous-put (else fragments).
    pub(super) const PUT: u8 = 1 << 4;
    pub(super) const ALL: u8 = SYNC | KEY | READY | FAILED | PUT;
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// A message whose data follows the header.
    Eager(Eager),
    /// Request to send a large message.
    Rts(Rts),
    /// Clear to send: the receiver matched an RTS.
    Cts(Cts),
    /// A fragment of a message sent by the fragmented protocol.
    Frag(Frag),
    /// End of a rendezvous transfer.
    Fin {
        /// The request this FIN completes (on the side receiving the FIN).
        request: u64,
        /// The transfer failed on the sending side of the FIN; the request
        /// completes with an error instead of hanging.
        failed: bool,
    },
    /// A synchronous eager send was matched.
    SyncAck {
        /// The sender's request.
        request: u64,
    },
    /// Eager credits returned to a sender.
    Credit {
        /// How many.
        credits: u32,
    },
}

/// Header of an eager message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eager {
    /// The context.
    pub context: ContextId,
    /// The tag.
    pub tag: Tag,
    /// Per-peer sequence number of matched messages.
    pub seq: u32,
    /// `Some(sender request)` for a synchronous send.
    pub sync: Option<u64>,
}

/// Header of a request-to-send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rts {
    /// The context.
    pub context: ContextId,
    /// The tag.
    pub tag: Tag,
    /// Per-peer sequence number of matched messages.
    pub seq: u32,
    /// Message length.
    pub len: u64,
    /// The sender's request.
    pub sender: u64,
    /// The sender's exposed buffer, for rendezvous-get.
    pub key: Option<RemoteKey>,
    /// Synchronous mode (informational: rendezvous is always synchronous).
    pub sync: bool,
    /// Ready mode.
    pub ready: bool,
    /// Without a key: the sender can put (else it sends fragments).
    pub put: bool,
}

/// Header of a clear-to-send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cts {
    /// The sender's request.
    pub sender: u64,
    /// The receiver's request.
    pub receiver: u64,
    /// How many bytes to send (less than the message when truncated).
    pub len: u64,
    /// The receiver's exposed buffer, for rendezvous-put.
    pub key: Option<RemoteKey>,
}

/// Header of a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frag {
    /// The receiver's request.
    pub receiver: u64,
    /// Where the payload goes in the message.
    pub offset: u64,
}

const K_EAGER: u8 = 1;
/// Bytes of a plain eager header: kind, flags, context, tag, sequence number.
pub const PLAIN_EAGER_LEN: usize = 2 + 4 + 4 + 4;
const K_RTS: u8 = 2;
const K_CTS: u8 = 3;
const K_FRAG: u8 = 4;
const K_FIN: u8 = 5;
const K_SYNC_ACK: u8 = 6;
const K_CREDIT: u8 = 7;

/// Why a header failed to decode.
pub type DecodeError = &'static str;

struct Writer<'a> {
    out: &'a mut [u8; MAX_HEADER],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.out[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
    fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.put(&v.to_le_bytes());
    }
    fn key(&mut self, key: Option<RemoteKey>) {
        if let Some(k) = key {
            self.u64(k.addr);
            self.u64(k.key);
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let (head, rest) = self
            .bytes
            .split_first_chunk::<N>()
            .ok_or("header too short")?;
        self.bytes = rest;
        Ok(*head)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        self.take::<4>().map(i32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.take::<8>().map(u64::from_le_bytes)
    }
    fn key(&mut self, present: bool) -> Result<Option<RemoteKey>, DecodeError> {
        if !present {
            return Ok(None);
        }
        Ok(Some(RemoteKey {
            addr: self.u64()?,
            key: self.u64()?,
        }))
    }
    fn finish(self) -> Result<(), DecodeError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err("trailing bytes after header")
        }
    }
}

impl Header {
    /// Encodes into `out`; returns the header length.
    pub fn encode(&self, out: &mut [u8; MAX_HEADER]) -> usize {
        let mut w = Writer { out, at: 2 };
        let (kind, flags) = match *self {
            Header::Eager(e) => {
                w.u32(e.context);
                w.u32(e.tag as u32);
                w.u32(e.seq);
                if let Some(s) = e.sync {
                    w.u64(s);
                }
                (K_EAGER, if e.sync.is_some() { flag::SYNC } else { 0 })
            }
            Header::Rts(r) => {
                w.u32(r.context);
                w.u32(r.tag as u32);
                w.u32(r.seq);
                w.u64(r.len);
                w.u64(r.sender);
                w.key(r.key);
                let mut f = 0;
                if r.key.is_some() {
                    f |= flag::KEY;
                }
                if r.sync {
                    f |= flag::SYNC;
                }
                if r.ready {
                    f |= flag::READY;
                }
                if r.put {
                    f |= flag::PUT;
                }
                (K_RTS, f)
            }
            Header::Cts(c) => {
                w.u64(c.sender);
                w.u64(c.receiver);
                w.u64(c.len);
                w.key(c.key);
                (K_CTS, if c.key.is_some() { flag::KEY } else { 0 })
            }
            Header::Frag(f) => {
                w.u64(f.receiver);
                w.u64(f.offset);
                (K_FRAG, 0)
            }
            Header::Fin { request, failed } => {
                w.u64(request);
                (K_FIN, if failed { flag::FAILED } else { 0 })
            }
            Header::SyncAck { request } => {
                w.u64(request);
                (K_SYNC_ACK, 0)
            }
            Header::Credit { credits } => {
                w.u32(credits);
                (K_CREDIT, 0)
            }
        };
        let len = w.at;
        out[0] = kind;
        out[1] = flags;
        len
    }

    /// The common packet's header, a plain eager one (no sync ack asked
    /// for), written without the general encoder: the same bytes as
    /// [`Header::encode`] of that `Eager`, at a fixed length.
    #[inline]
    pub fn encode_plain_eager(context: u32, tag: i32, seq: u32) -> [u8; PLAIN_EAGER_LEN] {
        let mut b = [0u8; PLAIN_EAGER_LEN];
        b[0] = K_EAGER;
        b[2..6].copy_from_slice(&context.to_le_bytes());
        b[6..10].copy_from_slice(&tag.to_le_bytes());
        b[10..14].copy_from_slice(&seq.to_le_bytes());
        b
    }

    /// The common packet, a plain eager header (no sync ack asked for),
    /// read without building a [`Header`]: one length and two byte
    /// compares, then three fixed loads. `None` for anything else, which
    /// [`Header::decode`] then decodes (and validates) in full, a
    /// malformed eager header included.
    #[inline]
    pub fn decode_plain_eager(bytes: &[u8]) -> Option<Eager> {
        let b: &[u8; PLAIN_EAGER_LEN] = bytes.try_into().ok()?;
        if b[0] != K_EAGER || b[1] != 0 {
            return None;
        }
        let word = |at: usize| [b[at], b[at + 1], b[at + 2], b[at + 3]];
        let tag = i32::from_le_bytes(word(6));
        if !(0..=crate::envelope::TAG_UB).contains(&tag) {
            return None;
        }
        Some(Eager {
            context: u32::from_le_bytes(word(2)),
            tag,
            seq: u32::from_le_bytes(word(10)),
            sync: None,
        })
    }

    /// Decodes a header, validating kind, flags and exact length.
    ///
    /// # Errors
    /// A short, long or malformed header.
    pub fn decode(bytes: &[u8]) -> Result<Header, DecodeError> {
        let [kind, flags] = *bytes.first_chunk::<2>().ok_or("header too short")?;
        if flags & !flag::ALL != 0 {
            return Err("unknown header flags");
        }
        let allowed = match kind {
            K_EAGER => flag::SYNC,
            K_RTS => flag::SYNC | flag::KEY | flag::READY | flag::PUT,
            K_CTS => flag::KEY,
            K_FIN => flag::FAILED,
            _ => 0,
        };
        if flags & !allowed != 0 {
            return Err("flags not valid for this header kind");
        }
        let mut r = Reader { bytes: &bytes[2..] };
        let header = match kind {
            K_EAGER => Header::Eager(Eager {
                context: r.u32()?,
                tag: r.i32()?,
                seq: r.u32()?,
                sync: if flags & flag::SYNC != 0 {
                    Some(r.u64()?)
                } else {
                    None
                },
            }),
            K_RTS => Header::Rts(Rts {
                context: r.u32()?,
                tag: r.i32()?,
                seq: r.u32()?,
                len: r.u64()?,
                sender: r.u64()?,
                key: r.key(flags & flag::KEY != 0)?,
                sync: flags & flag::SYNC != 0,
                ready: flags & flag::READY != 0,
                put: flags & flag::PUT != 0,
            }),
            K_CTS => Header::Cts(Cts {
                sender: r.u64()?,
                receiver: r.u64()?,
                len: r.u64()?,
                key: r.key(flags & flag::KEY != 0)?,
            }),
            K_FRAG => Header::Frag(Frag {
                receiver: r.u64()?,
                offset: r.u64()?,
            }),
            K_FIN => Header::Fin {
                request: r.u64()?,
                failed: flags & flag::FAILED != 0,
            },
            K_SYNC_ACK => Header::SyncAck { request: r.u64()? },
            K_CREDIT => Header::Credit { credits: r.u32()? },
            _ => return Err("unknown header kind"),
        };
        r.finish()?;
        if let Header::Eager(Eager { tag, .. }) | Header::Rts(Rts { tag, .. }) = header {
            if !(0..=crate::envelope::TAG_UB).contains(&tag) {
                return Err("tag out of range");
            }
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(h: Header) {
        let mut buf = [0u8; MAX_HEADER];
        let n = h.encode(&mut buf);
        assert!(n <= MAX_HEADER);
        assert_eq!(Header::decode(&buf[..n]), Ok(h));
        // Any truncation or extension is rejected.
        for cut in 0..n {
            assert!(Header::decode(&buf[..cut]).is_err(), "{h:?} cut at {cut}");
        }
        if n < MAX_HEADER {
            assert!(Header::decode(&buf[..n + 1]).is_err());
        }
    }

    #[test]
    fn the_plain_eager_path_agrees_with_the_full_decode() {
        let mut buf = [0u8; MAX_HEADER];
        let e = Eager {
            context: 9,
            tag: 77,
            seq: 123_456,
            sync: None,
        };
        let n = Header::Eager(e).encode(&mut buf);
        assert_eq!(Header::decode_plain_eager(&buf[..n]), Some(e));
        let synced = Header::Eager(Eager { sync: Some(5), ..e }).encode(&mut buf);
        assert_eq!(
            Header::decode_plain_eager(&buf[..synced]),
            None,
            "sync goes the full way"
        );
    }

    proptest! {
        #[test]
        fn plain_eager_never_accepts_what_decode_rejects(bytes in prop::collection::vec(any::<u8>(), 0..20)) {
            if let Some(e) = Header::decode_plain_eager(&bytes) {
                prop_assert_eq!(Header::decode(&bytes), Ok(Header::Eager(e)));
            }
        }

        #[test]
        fn plain_eager_takes_every_plain_eager_header(context: u32, tag in 0..=crate::envelope::TAG_UB, seq: u32) {
            let mut buf = [0u8; MAX_HEADER];
            let e = Eager { context, tag, seq, sync: None };
            let n = Header::Eager(e).encode(&mut buf);
            prop_assert_eq!(Header::decode_plain_eager(&buf[..n]), Some(e));
            prop_assert_eq!(&Header::encode_plain_eager(context, tag, seq)[..], &buf[..n]);
        }
    }

    #[test]
    fn every_kind_roundtrips() {
        let key = Some(RemoteKey {
            addr: 0xdead_beef,
            key: 42,
        });
        roundtrip(Header::Eager(Eager {
            context: 3,
            tag: 7,
            seq: 9,
            sync: None,
        }));
        roundtrip(Header::Eager(Eager {
            context: 3,
            tag: 7,
            seq: 9,
            sync: Some(77),
        }));
        for (key, sync, ready, put) in [(None, false, false, true), (key, true, true, false)] {
            roundtrip(Header::Rts(Rts {
                context: 1,
                tag: 2,
                seq: 3,
                len: 1 << 40,
                sender: 5,
                key,
                sync,
                ready,
                put,
            }));
        }
        roundtrip(Header::Cts(Cts {
            sender: 1,
            receiver: 2,
            len: 3,
            key,
        }));
        roundtrip(Header::Cts(Cts {
            sender: 1,
            receiver: 2,
            len: 3,
            key: None,
        }));
        roundtrip(Header::Frag(Frag {
            receiver: 1,
            offset: 4096,
        }));
        roundtrip(Header::Fin {
            request: 9,
            failed: false,
        });
        roundtrip(Header::Fin {
            request: 9,
            failed: true,
        });
        roundtrip(Header::SyncAck { request: 9 });
        roundtrip(Header::Credit { credits: 32 });
    }

    #[test]
    fn bad_headers_are_rejected() {
        assert_eq!(Header::decode(&[]), Err("header too short"));
        assert_eq!(Header::decode(&[99, 0]), Err("unknown header kind"));
        assert_eq!(Header::decode(&[K_FIN, 0x80]), Err("unknown header flags"));
        let bad_flags = Header::decode(&[K_FIN, flag::SYNC]);
        assert_eq!(bad_flags, Err("flags not valid for this header kind"));
        let mut buf = [0u8; MAX_HEADER];
        let n = Header::Eager(Eager {
            context: 0,
            tag: 0,
            seq: 0,
            sync: None,
        })
        .encode(&mut buf);
        buf[6..10].copy_from_slice(&(-5i32).to_le_bytes());
        assert_eq!(Header::decode(&buf[..n]), Err("tag out of range"));
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Header::decode(&bytes);
        }
    }
}
