//! Helpers shared by `sim_requests`, `sim_errors` and `sim_wait`.
//!
//! Each test binary uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;

use ferry_core::device::{Access, Armed, Caps, Device, MemHandle, OpToken, RdmaDir, Sent, Sink};
use ferry_core::sim::{NetConfig, Network, Sim, SimDevice};
use ferry_core::wire::RemoteKey;
use ferry_core::{
    Buf, Completion, Config, Engine, Error, Park, Rank, Request, Result, Status, UsageError,
};

/// Well inside the default eager limit (8 KiB).
pub(crate) const EAGER: usize = 64;
/// Past the eager limit: always rendezvous.
pub(crate) const RNDV: usize = 20_000;
/// Far more loop turns than any test here needs; reaching it means a hang.
pub(crate) const SPIN_LIMIT: usize = 10_000;

pub(crate) type Net = Rc<RefCell<Network>>;

/// `ranks` ranks, default engine config, default delays, seed 1.
pub(crate) fn sim(ranks: usize) -> Sim {
    Sim::new(NetConfig::new(ranks), Config::default())
}

pub(crate) fn sim_with(net: NetConfig, config: Config) -> Sim {
    Sim::new(net, config)
}

/// Recognisable bytes: a wrong offset or a foreign message shows up.
pub(crate) fn data(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

pub(crate) fn buf(bytes: &[u8]) -> Buf {
    Buf::from(bytes)
}

pub(crate) fn zeroed(len: usize) -> Buf {
    Buf::zeroed(len).expect("small allocation")
}

/// A filled buffer that must come back untouched (cancel tests).
pub(crate) fn filled(len: usize, byte: u8) -> Buf {
    Buf::from(vec![byte; len])
}

/// The usage error inside `err`, or a panic naming what it was instead.
#[track_caller]
pub(crate) fn usage(err: Error) -> UsageError {
    match err {
        Error::Usage(u) => u,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

/// A park that fails the call: for calls that must return without sleeping.
#[derive(Debug)]
pub(crate) struct MustNotPark;

impl Park for MustNotPark {
    fn park(&mut self, _wait_fd: Option<i32>) -> Result<()> {
        Err(Error::Internal(
            "parked where the call had to return at once",
        ))
    }
}

/// Moves time on, progressing nobody, until `rank` has an event to collect.
pub(crate) fn deliver_to(sim: &Sim, rank: Rank) {
    for _ in 0..SPIN_LIMIT {
        if sim.net().borrow().has_deliverable(rank) {
            return;
        }
        sim.net().borrow_mut().advance();
    }
    panic!("nothing became deliverable to rank {rank}");
}

/// An eager send that must complete inside `isend`.
pub(crate) fn send_now(sim: &mut Sim, from: Rank, to: Rank, tag: i32, bytes: &[u8]) {
    let s = sim
        .engine(from)
        .isend(to, tag, 0, buf(bytes))
        .expect("isend");
    assert!(
        s.request.is_empty(),
        "an eager send to a live peer returns EMPTY"
    );
}

/// Blocks `rank` on `request` and checks the received bytes.
pub(crate) fn wait_data(
    sim: &mut Sim,
    rank: Rank,
    request: &mut Request,
    want: &[u8],
) -> Completion {
    let c = sim.wait(rank, request).expect("wait");
    assert_eq!(c.status.error, None, "status {:?}", c.status);
    let got = c.buf.as_ref().expect("receive hands its buffer back");
    assert_eq!(&got[..c.status.bytes], want);
    assert!(request.is_null());
    c
}

/// The devices of a fresh network, for tests that build engines by hand.
pub(crate) fn manual(net: NetConfig) -> (Net, Vec<SimDevice>) {
    let net = Network::new(net);
    let devices = Network::devices(&net);
    (net, devices)
}

/// A [`SimDevice`] whose `arm` may misbehave or have something happen at the
/// exact moment between the engine's last progress and the arm.
#[derive(Debug)]
pub(crate) struct Wrapped {
    pub(crate) inner: SimDevice,
    /// Ticks to advance the network inside the next `arm`, before the inner
    /// arm looks (an arrival injected between progress and arm).
    pub(crate) advance_in_arm: Option<u64>,
    /// A broken device: `arm` says Sleep and never arms the inner device,
    /// so nothing will ever wake the sleeper.
    pub(crate) broken: bool,
    /// What each inner `arm` returned.
    pub(crate) arms: Vec<Armed>,
}

impl Wrapped {
    pub(crate) fn new(inner: SimDevice) -> Wrapped {
        Wrapped {
            inner,
            advance_in_arm: None,
            broken: false,
            arms: Vec::new(),
        }
    }
}

impl Device for Wrapped {
    fn caps(&self, peer: Rank) -> &Caps {
        self.inner.caps(peer)
    }
    fn send(&mut self, peer: Rank, header: &[u8], payload: &[u8]) -> Result<Sent> {
        self.inner.send(peer, header, payload)
    }
    #[allow(clippy::result_large_err)]
    fn register(
        &mut self,
        peer: Rank,
        buf: Buf,
        access: Access,
    ) -> Result<(MemHandle, RemoteKey), (Error, Buf)> {
        self.inner.register(peer, buf, access)
    }
    fn deregister(&mut self, mem: MemHandle) -> Option<Buf> {
        self.inner.deregister(mem)
    }
    fn rdma(
        &mut self,
        dir: RdmaDir,
        peer: Rank,
        local: MemHandle,
        remote: RemoteKey,
        len: usize,
        token: OpToken,
    ) -> Result<Sent> {
        self.inner.rdma(dir, peer, local, remote, len, token)
    }
    fn progress<S: Sink>(&mut self, sink: &mut S) -> Result<usize> {
        self.inner.progress(sink)
    }
    fn arm(&mut self) -> Result<Armed> {
        if self.broken {
            return Ok(Armed::Sleep);
        }
        if let Some(ticks) = self.advance_in_arm.take() {
            self.inner.network().borrow_mut().advance_by(ticks);
        }
        let armed = self.inner.arm()?;
        self.arms.push(armed);
        Ok(armed)
    }
    fn disarm(&mut self) {
        self.inner.disarm();
    }
    fn wait_fd(&self) -> Option<i32> {
        self.inner.wait_fd()
    }
}

/// The OS wait of one hand-built rank: while it sleeps, the other engine
/// progresses and time advances. Like `SimPark`, it fails on a lost wake-up
/// (an event deliverable to the sleeper, which was not woken) and on a
/// deadlock, instead of hanging.
pub(crate) struct DrivePark<'a, D: Device> {
    pub(crate) me: Rank,
    pub(crate) net: &'a Net,
    pub(crate) other: &'a mut Engine<D>,
    pub(crate) parks: u64,
}

impl<D: Device> Park for DrivePark<'_, D> {
    fn park(&mut self, _wait_fd: Option<i32>) -> Result<()> {
        self.parks += 1;
        for _ in 0..SPIN_LIMIT {
            {
                let net = self.net.borrow();
                if net.is_woken(self.me) {
                    return Ok(());
                }
                if net.has_deliverable(self.me) {
                    return Err(Error::Internal("lost wake-up"));
                }
            }
            let events = self.other.progress()?;
            if events == 0 && self.net.borrow().is_idle() {
                return Err(Error::Internal("deadlock"));
            }
            self.net.borrow_mut().advance();
        }
        Err(Error::Internal("livelock"))
    }
}

/// The id of the buffer a completion handed back.
pub(crate) fn buf_id(c: &Completion) -> Option<usize> {
    c.buf.as_ref().map(Buf::id)
}

/// The bytes a completion handed back (empty if none).
pub(crate) fn bytes_of(c: &Completion) -> &[u8] {
    c.buf.as_deref().unwrap_or(&[])
}

/// The status of a clean receive.
pub(crate) fn recv_status(source: Rank, tag: i32, bytes: usize) -> Status {
    Status {
        source,
        tag,
        bytes,
        error: None,
        cancelled: false,
    }
}
