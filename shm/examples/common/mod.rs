//! What the device-level examples share: a sink that counts packets and
//! copies each payload out (as a pre-posted receive would), and a send
//! that progresses until the device takes the packet.

use ferry_core::device::{Device, Incoming, OpToken, Sent, Sink};
use ferry_core::{Error, Rank};
use ferry_shm::ShmDevice;

/// The engine's eager header for a small message is 24 bytes.
pub(crate) const HEADER: [u8; 24] = [0; 24];

/// Counts packets and copies each payload out.
pub(crate) struct Count {
    pub(crate) n: u64,
    buf: Vec<u8>,
}

impl Count {
    /// A sink for payloads of up to `size` bytes.
    pub(crate) fn new(size: usize) -> Count {
        Count {
            n: 0,
            buf: vec![0; size.max(1)],
        }
    }

    /// Progresses `dev` until `n` packets have arrived in all.
    pub(crate) fn wait_for(&mut self, dev: &mut ShmDevice, n: u64) {
        while self.n < n {
            dev.progress(self).expect("progress");
        }
    }
}

impl Sink for Count {
    fn packet<I: Incoming>(&mut self, _from: Rank, packet: I) {
        let p = packet.payload();
        self.buf[..p.len()].copy_from_slice(p);
        self.n += 1;
    }
    fn rdma_done(&mut self, _: OpToken, _: Result<(), Error>) {}
    fn peer_failed(&mut self, peer: Rank, error: Error) {
        panic!("peer {peer} failed: {error}");
    }
}

/// Sends one packet to `peer`, progressing (into `sink`) while the device
/// is busy.
pub(crate) fn send(dev: &mut ShmDevice, sink: &mut Count, peer: Rank, payload: &[u8]) {
    loop {
        match dev.send(peer, &HEADER, payload).expect("send") {
            Sent::Done => return,
            Sent::Busy => {
                dev.progress(sink).expect("progress");
            }
        }
    }
}
