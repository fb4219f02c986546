//! A hostile peer: arbitrary packets (header bytes + payload) are delivered
//! to an engine that has receives posted and a rendezvous send in flight.
//! The engine must never panic, whatever arrives; malformed traffic cuts the
//! peer off with a protocol error.
#![no_main]

use ferry_core::device::{Device, Incoming, OpToken, Sink};
use ferry_core::loopback::Loopback;
use ferry_core::{Buf, Config, Engine, Error, Rank};
use libfuzzer_sys::fuzz_target;

/// Replays fuzz-chosen packets into the engine as if rank 1 sent them.
struct Hostile {
    inner: Loopback,
    packets: Vec<(Vec<u8>, Vec<u8>)>,
}

struct Raw(Vec<u8>, Vec<u8>);

impl Incoming for Raw {
    fn header(&self) -> &[u8] {
        &self.0
    }
    fn payload(&self) -> &[u8] {
        &self.1
    }
    fn into_payload(self) -> Result<Buf, Error> {
        Ok(Buf::from_vec(self.1))
    }
}

impl Device for Hostile {
    fn caps(&self, peer: Rank) -> &ferry_core::Caps {
        self.inner.caps(peer)
    }
    fn send(&mut self, _peer: Rank, _h: &[u8], _p: &[u8]) -> Result<ferry_core::device::Sent, Error> {
        Ok(ferry_core::device::Sent::Done)
    }
    fn register(
        &mut self,
        peer: Rank,
        buf: Buf,
        access: ferry_core::device::Access,
    ) -> Result<(ferry_core::device::MemHandle, ferry_core::wire::RemoteKey), (Error, Buf)> {
        self.inner.register(peer, buf, access)
    }
    fn deregister(&mut self, mem: ferry_core::device::MemHandle) -> Option<Buf> {
        self.inner.deregister(mem)
    }
    fn rdma(
        &mut self,
        _: ferry_core::device::RdmaDir,
        _: Rank,
        _: ferry_core::device::MemHandle,
        _: ferry_core::wire::RemoteKey,
        _: usize,
        _: OpToken,
    ) -> Result<ferry_core::device::Sent, Error> {
        Ok(ferry_core::device::Sent::Done)
    }
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize, Error> {
        let n = self.packets.len();
        for (h, p) in self.packets.drain(..) {
            sink.packet(1, Raw(h, p));
        }
        Ok(n)
    }
    fn arm(&mut self) -> Result<ferry_core::device::Armed, Error> {
        Ok(ferry_core::device::Armed::Sleep)
    }
    fn disarm(&mut self) {}
    fn wait_fd(&self) -> Option<i32> {
        None
    }
}

fuzz_target!(|data: &[u8]| {
    // Split the input into packets: [hlen u8][plen u8][header][payload]...
    let mut packets = Vec::new();
    let mut rest = data;
    while let [hlen, plen, tail @ ..] = rest {
        let (h, p) = (*hlen as usize % 80, *plen as usize);
        if tail.len() < h + p {
            break;
        }
        packets.push((tail[..h].to_vec(), tail[h..h + p].to_vec()));
        rest = &tail[h + p..];
    }
    let device = Hostile { inner: Loopback::new(0), packets: Vec::new() };
    // An RTS to the posted ARecv makes the engine allocate the announced
    // length, up to `max_arecv` (4 GiB by default: the bound itself is
    // tested in core/tests/sim_arecv_probe.rs); under libFuzzer's 4 GiB
    // RSS limit a hostile length must stay well below it.
    let config = Config {
        eager_limit: Some(64),
        max_arecv: 1 << 20,
        ..Config::default()
    };
    let mut engine = Engine::new(0, 2, device, config).expect("valid rank");
    let _ = engine.irecv(1, 5, 0, Buf::zeroed(100).unwrap());
    let _ = engine.iarecv(ferry_core::ANY_SOURCE, ferry_core::ANY_TAG, 0);
    let _ = engine.isend(1, 5, 0, Buf::from_vec(vec![1; 1000]));
    engine.device_mut().packets = packets;
    let _ = engine.progress();
    let _ = engine.progress();
});
