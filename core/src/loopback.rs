//! The loopback device: one rank talking to itself (`MPI_COMM_SELF`, or the
//! self-traffic of a composite device).
//!
//! Everything happens in memory inside the calling thread:
//! - [`Device::send`] copies the header into an inline array and the payload
//!   into a `Vec`, queues the packet and returns [`Sent::Done`]. With
//!   [`Loopback::with_capacity_limit`] the queue is bounded and a full queue
//!   returns [`Sent::Busy`], so the engine's back-pressure path can be tested.
//! - [`Device::progress`] hands the queued packets to the sink in send order;
//!   [`Incoming::into_payload`] gives the sink the queued `Vec` itself, so an
//!   unexpected self-message reaches `arecv` without a second copy.
//! - `get` and `put` copy between two of this rank's registrations at once and
//!   report the outcome on the next `progress`. Every failure of a call to
//!   this rank (unknown or stale key, wrong secret, wrong access, length past
//!   a region) is reported through [`Sink::rdma_done`], never returned or
//!   panicked on, as a [`DeviceError::Completion`] whose status mirrors
//!   `ibv_wc_status`: 1 (local length), 4 (local protection), 9 (remote
//!   length), 10 (remote access). Nothing is written unless both sides are
//!   valid.
//!
//! # Waiting
//! Only this rank's own calls create loopback events, so no event can appear
//! while its owner sleeps: `arm` reports [`Armed::Pending`] when something is
//! queued, and there is no wake flag to raise.

use std::collections::VecDeque;

use crate::buffer::Buf;
use crate::device::{
    Access, Armed, Caps, Device, Incoming, MemHandle, OpToken, RdmaDir, Sent, Sink, WcStatus,
};
use crate::envelope::Rank;
use crate::error::{DeviceError, Error, UsageError};
use crate::slab::Slab;
use crate::wire::{RemoteKey, MAX_HEADER};

/// A packet held by an in-memory device: the header inline (no allocation
/// for it), the payload in the `Vec` that [`Incoming::into_payload`] hands
/// over. Shared with the simulation network.
#[derive(Debug)]
pub(crate) struct InlinePacket {
    header: [u8; MAX_HEADER],
    header_len: u8,
    payload: Vec<u8>,
}

impl InlinePacket {
    /// Copies `header` in and takes `payload`.
    ///
    /// # Errors
    /// [`Error::Internal`] if the header is longer than [`MAX_HEADER`]: the
    /// engine builds every header, so a longer one is its bug.
    pub(crate) fn new(header: &[u8], payload: Vec<u8>) -> Result<InlinePacket, Error> {
        if header.len() > MAX_HEADER {
            return Err(Error::Internal("packet header longer than MAX_HEADER"));
        }
        let mut inline = [0; MAX_HEADER];
        inline[..header.len()].copy_from_slice(header);
        Ok(InlinePacket {
            header: inline,
            header_len: header.len() as u8,
            payload,
        })
    }

    /// The header, writable (the simulation corrupts headers on request).
    #[cfg(any(test, feature = "__testkit"))]
    pub(crate) fn header_mut(&mut self) -> &mut [u8] {
        &mut self.header[..usize::from(self.header_len)]
    }
}

impl Incoming for InlinePacket {
    fn header(&self) -> &[u8] {
        &self.header[..usize::from(self.header_len)]
    }

    fn payload(&self) -> &[u8] {
        &self.payload
    }

    fn into_payload(self) -> Result<Buf, Error> {
        Ok(Buf::from_vec(self.payload))
    }
}

/// One registration of an in-memory device.
#[derive(Debug)]
pub(crate) struct Region {
    pub(crate) buf: Buf,
    pub(crate) access: Access,
    /// The secret a [`RemoteKey`] must carry; never 0, so a default
    /// `RemoteKey` never names a region.
    pub(crate) secret: u64,
}

/// Where an in-memory device keeps its registrations, so that [`rdma_copy`]
/// serves both the loopback (a slab) and the simulation (a table keyed by
/// rank and handle).
pub(crate) trait RegionTable<K> {
    fn region(&self, key: K) -> Option<&Region>;
    fn region_mut(&mut self, key: K) -> Option<&mut Region>;
}

impl RegionTable<u64> for Slab<Region> {
    fn region(&self, key: u64) -> Option<&Region> {
        self.get(key)
    }
    fn region_mut(&mut self, key: u64) -> Option<&mut Region> {
        self.get_mut(key)
    }
}

/// One side of an RDMA copy: the region, the secret the peer presented
/// (`Some` for the remote side only) and the access the operation needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Endpoint<K> {
    pub(crate) key: K,
    pub(crate) secret: Option<u64>,
    pub(crate) access: Access,
}

fn completion(what: &'static str, status: WcStatus) -> Error {
    status.error(what)
}

fn check(region: Option<&Region>, end: Endpoint<impl Copy>, len: usize) -> Result<(), Error> {
    let remote = end.secret.is_some();
    let Some(region) = region else {
        return Err(if remote {
            completion(
                "rdma: remote key names no registration",
                WcStatus::RemAccessErr,
            )
        } else {
            completion(
                "rdma: local handle names no registration",
                WcStatus::LocProtErr,
            )
        });
    };
    if end.secret.is_some_and(|s| s != region.secret) {
        return Err(completion(
            "rdma: remote key secret mismatch",
            WcStatus::RemAccessErr,
        ));
    }
    if region.access != end.access {
        return Err(if remote {
            completion(
                "rdma: remote region lacks the access",
                WcStatus::RemAccessErr,
            )
        } else {
            completion("rdma: local region lacks the access", WcStatus::LocProtErr)
        });
    }
    if len > region.buf.len() {
        return Err(if remote {
            completion(
                "rdma: length exceeds the remote region",
                WcStatus::RemInvReqErr,
            )
        } else {
            completion("rdma: length exceeds the local region", WcStatus::LocLenErr)
        });
    }
    Ok(())
}

/// Validates both sides, then copies the first `len` bytes of `src` to the
/// start of `dst`. Nothing is written unless both sides are valid.
///
/// # Errors
/// [`DeviceError::Completion`] with a [`WcStatus`] code naming what was
/// wrong.
pub(crate) fn rdma_copy<K, T>(
    table: &mut T,
    src: Endpoint<K>,
    dst: Endpoint<K>,
    len: usize,
) -> Result<(), Error>
where
    K: Copy + PartialEq,
    T: RegionTable<K>,
{
    check(table.region(src.key), src, len)?;
    check(table.region(dst.key), dst, len)?;
    if src.key == dst.key {
        // Same region, same offset 0: the bytes are already where they go.
        return Ok(());
    }
    // Lend the source's buffer out so both regions can be borrowed at once
    // without a temporary copy; it goes back before anyone can look.
    let Some(source) = table.region_mut(src.key) else {
        return Err(Error::Internal("rdma source vanished during the copy"));
    };
    let data = std::mem::take(&mut source.buf);
    let copied = match table.region_mut(dst.key) {
        Some(target) => {
            target.buf[..len].copy_from_slice(&data[..len]);
            Ok(())
        }
        None => Err(Error::Internal("rdma target vanished during the copy")),
    };
    if let Some(source) = table.region_mut(src.key) {
        source.buf = data;
    }
    copied
}

/// The SplitMix64 output function: turns a counter into a well-spread secret.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An in-memory device that reaches exactly one rank: its own. See the
/// module docs.
#[derive(Debug)]
pub struct Loopback {
    rank: Rank,
    caps: Caps,
    queue: VecDeque<InlinePacket>,
    capacity: Option<usize>,
    regions: Slab<Region>,
    completions: VecDeque<(OpToken, Result<(), Error>)>,
    secret_counter: u64,
}

impl Loopback {
    /// The default capabilities: 64 KiB payloads, `get` and `put`, no fd.
    pub const DEFAULT_CAPS: Caps = Caps {
        name: "loopback",
        max_payload: 64 * 1024,
        eager_preferred: 8192,
        rdma_get: true,
        rdma_put: true,
        wait_fd: false,
    };

    /// A loopback device for `rank` with [`Loopback::DEFAULT_CAPS`] and an
    /// unbounded queue.
    pub fn new(rank: Rank) -> Loopback {
        Loopback::with_caps(rank, Loopback::DEFAULT_CAPS)
    }

    /// A loopback device with the given capabilities (it honours
    /// `max_payload`, `rdma_get` and `rdma_put`).
    pub fn with_caps(rank: Rank, caps: Caps) -> Loopback {
        Loopback {
            rank,
            caps,
            queue: VecDeque::new(),
            capacity: None,
            regions: Slab::default(),
            completions: VecDeque::new(),
            // Salting with the rank keeps the secrets of different ranks'
            // loopbacks apart, which catches keys sent to the wrong place.
            secret_counter: (rank as u32 as u64) << 32,
        }
    }

    /// Bounds the packet queue at `packets`: once that many are waiting for
    /// `progress`, `send` returns [`Sent::Busy`].
    #[must_use]
    pub fn with_capacity_limit(mut self, packets: usize) -> Loopback {
        self.capacity = Some(packets);
        self
    }

    /// The rank this device belongs to (and the only one it reaches).
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Packets sent and not yet delivered by `progress`.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    fn check_peer(&self, peer: Rank) -> Result<(), Error> {
        if peer == self.rank {
            Ok(())
        } else {
            // The loopback reaches a job of one: itself.
            Err(UsageError::InvalidRank {
                rank: peer,
                size: 1,
            }
            .into())
        }
    }

    fn next_secret(&mut self) -> u64 {
        self.secret_counter = self.secret_counter.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.secret_counter) | 1
    }
}

impl Device for Loopback {
    fn caps(&self, _peer: Rank) -> &Caps {
        &self.caps
    }

    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent, Error> {
        self.check_peer(peer)?;
        if payload.len() > self.caps.max_payload {
            return Err(UsageError::MessageTooLarge {
                len: payload.len(),
                max: self.caps.max_payload,
            }
            .into());
        }
        if self.capacity.is_some_and(|cap| self.queue.len() >= cap) {
            return Ok(Sent::Busy);
        }
        self.queue
            .push_back(InlinePacket::new(header, payload.to_vec())?);
        Ok(Sent::Done)
    }

    fn register(
        &mut self,
        _peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        let secret = self.next_secret();
        let handle = self.regions.insert(Region {
            buf,
            access,
            secret,
        });
        Ok((
            MemHandle(handle),
            RemoteKey {
                addr: handle,
                key: secret,
            },
        ))
    }

    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        self.regions.remove(mem.0).map(|region| region.buf)
    }

    /// Copies at once, reports on the next `progress`.
    fn rdma(
        &mut self,
        dir: RdmaDir,
        peer: Rank,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent, Error> {
        self.check_peer(peer)?;
        if !self.caps.rdma(dir) {
            return Err(DeviceError::Unsupported(dir.name()).into());
        }
        let local = Endpoint {
            key: local.0,
            secret: None,
            access: dir.local_access(),
        };
        let remote = Endpoint {
            key: remote.addr,
            secret: Some(remote.key),
            access: dir.remote_access(),
        };
        let (src, dst) = match dir {
            RdmaDir::Get => (remote, local),
            RdmaDir::Put => (local, remote),
        };
        let result = rdma_copy(&mut self.regions, src, dst, len);
        self.completions.push_back((token, result));
        Ok(Sent::Done)
    }

    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        // The sink never calls back into the device, so the queue cannot grow
        // while it drains.
        let mut events = 0;
        while let Some(packet) = self.queue.pop_front() {
            sink.packet(self.rank, packet);
            events += 1;
        }
        while let Some((token, result)) = self.completions.pop_front() {
            sink.rdma_done(token, result);
            events += 1;
        }
        Ok(events)
    }

    fn arm(&mut self) -> Result<Armed, Error> {
        if self.queue.is_empty() && self.completions.is_empty() {
            Ok(Armed::Sleep)
        } else {
            Ok(Armed::Pending)
        }
    }

    fn disarm(&mut self) {}

    fn wait_fd(&self) -> Option<i32> {
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) use crate::recorder::{Event, Recorder};

    fn status_of(result: Result<(), Error>) -> i32 {
        match result {
            Err(Error::Device(DeviceError::Completion { status, .. })) => status,
            other => panic!("expected a completion error, got {other:?}"),
        }
    }

    #[test]
    fn loopback_delivers_in_fifo_order_and_hands_payload_over_without_copy() {
        let mut dev = Loopback::new(3);
        for i in 0..5u8 {
            assert_eq!(dev.send(3, &[i, 0xAA], &[i; 100]).unwrap(), Sent::Done);
        }
        assert_eq!(dev.send(3, &[9], &[]).unwrap(), Sent::Done);
        assert_eq!(dev.arm().unwrap(), Armed::Pending);
        let mut sink = Recorder::taking();
        assert_eq!(dev.progress(&mut sink).unwrap(), 6);
        let packets = sink.packets();
        for (i, (from, header, payload)) in packets.iter().take(5).enumerate() {
            assert_eq!(*from, 3);
            assert_eq!(header, &[i as u8, 0xAA]);
            assert_eq!(payload, &vec![i as u8; 100]);
        }
        assert_eq!(packets[5], (3, vec![9], vec![]));
        for event in &sink.events[..5] {
            let Event::Packet {
                payload_addr,
                buf_id,
                ..
            } = event
            else {
                unreachable!()
            };
            assert_eq!(
                payload_addr, buf_id,
                "into_payload handed over the queued Vec"
            );
        }
        assert_eq!(dev.progress(&mut sink).unwrap(), 0);
        assert_eq!(dev.arm().unwrap(), Armed::Sleep);
        dev.disarm();
        assert_eq!(dev.wait_fd(), None);
    }

    #[test]
    fn loopback_refuses_other_ranks_and_oversized_packets() {
        let mut dev = Loopback::with_caps(
            0,
            Caps {
                max_payload: 8,
                eager_preferred: 8192,
                ..Loopback::DEFAULT_CAPS
            },
        );
        let err = dev.send(1, &[], &[]).unwrap_err();
        assert!(matches!(
            err,
            Error::Usage(UsageError::InvalidRank { rank: 1, .. })
        ));
        let err = dev.send(0, &[], &[0; 9]).unwrap_err();
        assert!(matches!(
            err,
            Error::Usage(UsageError::MessageTooLarge { len: 9, max: 8 })
        ));
        let err = dev.send(0, &[0; MAX_HEADER + 1], &[]).unwrap_err();
        assert!(matches!(err, Error::Internal(_)));
        assert_eq!(dev.send(0, &[0; MAX_HEADER], &[0; 8]).unwrap(), Sent::Done);
        let token = OpToken(1);
        let err = dev
            .get(2, RemoteKey::default(), MemHandle(0), 0, token)
            .unwrap_err();
        assert!(matches!(
            err,
            Error::Usage(UsageError::InvalidRank { rank: 2, .. })
        ));
        assert_eq!(dev.queued(), 1);
        assert_eq!(dev.rank(), 0);
    }

    #[test]
    fn loopback_capacity_limit_gives_back_pressure() {
        let mut dev = Loopback::new(0).with_capacity_limit(2);
        assert_eq!(dev.send(0, &[1], &[]).unwrap(), Sent::Done);
        assert_eq!(dev.send(0, &[2], &[]).unwrap(), Sent::Done);
        assert_eq!(
            dev.send(0, &[3], &[]).unwrap(),
            Sent::Busy,
            "full queue is Busy, not an error"
        );
        assert_eq!(dev.queued(), 2, "a Busy send queued nothing");
        let mut sink = Recorder::taking();
        assert_eq!(dev.progress(&mut sink).unwrap(), 2);
        assert_eq!(
            dev.send(0, &[3], &[]).unwrap(),
            Sent::Done,
            "progress freed room"
        );
        dev.progress(&mut sink).unwrap();
        let headers: Vec<_> = sink.packets().into_iter().map(|p| p.1).collect();
        assert_eq!(headers, vec![vec![1], vec![2], vec![3]]);
    }

    #[test]
    fn loopback_get_and_put_copy_between_registrations() {
        let mut dev = Loopback::new(0);
        let (src, src_key) = dev
            .register(0, Buf::from(&b"abcdef"[..]), Access::RemoteRead)
            .unwrap();
        let (dst, _) = dev
            .register(0, Buf::zeroed(6).unwrap(), Access::LocalWrite)
            .unwrap();
        assert_eq!(dev.get(0, src_key, dst, 4, OpToken(7)).unwrap(), Sent::Done);
        assert_eq!(
            dev.arm().unwrap(),
            Armed::Pending,
            "a completion is waiting"
        );
        let mut sink = Recorder::taking();
        assert_eq!(dev.progress(&mut sink).unwrap(), 1);
        assert_eq!(sink.rdma(), vec![(OpToken(7), Ok(()))]);
        assert_eq!(&dev.deregister(dst).unwrap()[..], b"abcd\0\0");

        let (out, _) = dev
            .register(0, Buf::from(&b"xyz"[..]), Access::LocalRead)
            .unwrap();
        let (target, target_key) = dev
            .register(0, Buf::zeroed(4).unwrap(), Access::RemoteWrite)
            .unwrap();
        assert_eq!(
            dev.put(0, out, target_key, 3, OpToken(8)).unwrap(),
            Sent::Done
        );
        dev.progress(&mut sink).unwrap();
        assert_eq!(sink.rdma()[1], (OpToken(8), Ok(())));
        assert_eq!(&dev.deregister(target).unwrap()[..], b"xyz\0");
        assert_eq!(
            &dev.deregister(out).unwrap()[..],
            b"xyz",
            "the source is intact"
        );
        assert_eq!(&dev.deregister(src).unwrap()[..], b"abcdef");
        assert!(
            dev.deregister(src).is_none(),
            "double deregister is None, not a panic"
        );
    }

    #[test]
    fn loopback_rdma_errors_arrive_through_rdma_done() {
        let mut dev = Loopback::new(0);
        let (src, src_key) = dev
            .register(0, Buf::from(&b"abcdef"[..]), Access::RemoteRead)
            .unwrap();
        let (dst, _) = dev
            .register(0, Buf::zeroed(4).unwrap(), Access::LocalWrite)
            .unwrap();
        let forged = RemoteKey {
            key: src_key.key ^ 1,
            ..src_key
        };
        let cases = [
            (forged, dst, 4, WcStatus::RemAccessErr),
            (RemoteKey::default(), dst, 4, WcStatus::RemAccessErr),
            (src_key, dst, 7, WcStatus::RemInvReqErr),
            (src_key, dst, 5, WcStatus::LocLenErr),
            (src_key, MemHandle(12345), 1, WcStatus::LocProtErr),
            // The source registered for reading is not a valid get target.
            (src_key, src, 1, WcStatus::LocProtErr),
        ];
        for (i, &(key, local, len, _)) in cases.iter().enumerate() {
            assert_eq!(
                dev.get(0, key, local, len, OpToken(i as u64)).unwrap(),
                Sent::Done
            );
        }
        // A get source is not a put target.
        assert_eq!(
            dev.put(0, dst, src_key, 1, OpToken(99)).unwrap(),
            Sent::Done
        );
        let mut sink = Recorder::taking();
        assert_eq!(dev.progress(&mut sink).unwrap(), cases.len() + 1);
        let done = sink.rdma();
        for (i, &(_, _, _, code)) in cases.iter().enumerate() {
            assert_eq!(done[i].0, OpToken(i as u64));
            assert_eq!(status_of(done[i].1), code.code(), "case {i}");
        }
        assert_eq!(status_of(done[cases.len()].1), WcStatus::LocProtErr.code());
        assert_eq!(
            &dev.deregister(dst).unwrap()[..],
            &[0; 4],
            "failed ops wrote nothing"
        );

        let stale = src_key;
        dev.deregister(src).unwrap();
        let (_, _) = dev
            .register(0, Buf::zeroed(8).unwrap(), Access::RemoteRead)
            .unwrap();
        let (dst, _) = dev
            .register(0, Buf::zeroed(4).unwrap(), Access::LocalWrite)
            .unwrap();
        assert_eq!(dev.get(0, stale, dst, 1, OpToken(5)).unwrap(), Sent::Done);
        dev.progress(&mut sink).unwrap();
        assert_eq!(
            status_of(sink.rdma().last().unwrap().1),
            WcStatus::RemAccessErr.code(),
            "stale key"
        );
    }

    #[test]
    fn loopback_without_rdma_reports_unsupported() {
        let caps = Caps {
            rdma_get: false,
            rdma_put: false,
            ..Loopback::DEFAULT_CAPS
        };
        let mut dev = Loopback::with_caps(0, caps);
        let (h, key) = dev
            .register(0, Buf::zeroed(1).unwrap(), Access::RemoteRead)
            .unwrap();
        let err = dev.get(0, key, h, 1, OpToken(0)).unwrap_err();
        assert_eq!(err, Error::Device(DeviceError::Unsupported("rdma get")));
        let err = dev.put(0, h, key, 1, OpToken(0)).unwrap_err();
        assert_eq!(err, Error::Device(DeviceError::Unsupported("rdma put")));
    }
}
