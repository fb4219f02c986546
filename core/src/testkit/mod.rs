//! The device-contract test kit: one generic check per clause of the
//! contract in [`crate::device`], instantiated for a device by
//! [`device_contract_tests!`](crate::device_contract_tests).
//!
//! A device crate describes its device once, with a [`DeviceKit`]: how to
//! build `n` connected devices (ranks `0..n`, each reaching every rank
//! including itself) in a few [`Setup`]s, which capabilities to expect
//! ([`Expect`]), and the few things only it can do (tell whether a sleeper's
//! wait fd is readable, kill a rank). Then:
//!
//! ```text
//! ferry_core::device_contract_tests!(crate::kit::ShmKit);
//! ```
//!
//! expands to one `#[test]` per check below. A check skips (printing
//! `SKIPPED` and the reason) only by capability, as the [`Expect`] and the
//! kit's setups say; it fails when a device claims a capability it lacks or
//! breaks a clause.
//!
//! | clause in [`crate::device`] | check |
//! |---|---|
//! | [`Caps`](crate::Caps) per peer | [`caps_match_the_device`] |
//! | *Peers*, *Order*, *Framing* | [`packets_arrive_in_order_from_every_sender_including_self`] |
//! | *Buffered* | [`a_sent_packet_is_buffered`] |
//! | *Size limits*, unknown ranks | [`packets_at_the_limits_arrive_and_unknown_ranks_are_refused`] |
//! | *Back-pressure* | [`back_pressure_is_busy_and_recovers_in_order`] |
//! | *Progress* returns the events it reported | [`progress_counts_what_it_reports`] |
//! | *Progress*: `into_payload` | [`into_payload_hands_over_a_buffer_that_outlives_the_device`] |
//! | *Memory and RDMA*, *Visibility* | [`get_and_put_move_the_bytes`] |
//! | `register`/`deregister` ownership | [`deregister_gives_the_buffer_back_once`] |
//! | a device without RDMA | [`without_rdma_get_and_put_are_unsupported`] |
//! | *Waiting* 2: `arm` | [`arm_is_pending_while_an_event_is_deliverable`] |
//! | *Waiting* 3: the wake-up | [`a_sleeper_is_woken_by_a_send`] |
//! | *Failure* | [`a_dead_peer_is_reported_once`] |
//!
//! The kit is test code (behind the `__testkit` feature): unlike the engine
//! it reads the clock, for the deadlines that keep a broken device from
//! hanging a test.

mod packets;
mod rdma;
mod waiting;

use std::time::{Duration, Instant};

pub use packets::{
    a_sent_packet_is_buffered, back_pressure_is_busy_and_recovers_in_order, caps_match_the_device,
    into_payload_hands_over_a_buffer_that_outlives_the_device,
    packets_arrive_in_order_from_every_sender_including_self,
    packets_at_the_limits_arrive_and_unknown_ranks_are_refused, progress_counts_what_it_reports,
};
pub use rdma::{
    deregister_gives_the_buffer_back_once, get_and_put_move_the_bytes,
    without_rdma_get_and_put_are_unsupported,
};
pub use waiting::{
    a_dead_peer_is_reported_once, a_sleeper_is_woken_by_a_send,
    arm_is_pending_while_an_event_is_deliverable,
};

use crate::bootstrap::ThreadBoot;
use crate::device::{Device, Sent};
use crate::envelope::Rank;
use crate::recorder::Recorder;

/// Every wait of a check ends by this deadline (Soft-RoCE under TCG is
/// slow, never this slow).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A configuration a check asks a [`DeviceKit`] for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// The device as a job would use it, RDMA on where the device has it.
    Default,
    /// Small send resources (a few cells, buffers or credits), so that a
    /// sender whose receiver does not progress soon gets [`Sent::Busy`].
    Bounded,
    /// RDMA turned off: the caps say so and `get`/`put` are unsupported.
    NoRdma,
    /// Short failure-detection timeouts, for the failure check.
    FailFast,
}

/// How an armed device wakes its sleeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Its `wait_fd` becomes readable ([`crate::Caps::wait_fd`]).
    Fd,
    /// An in-memory wake flag (the simulation's `is_woken`).
    Flag,
    /// No wake-up: the owner spins (`wait_fd` is `None`), or no other rank
    /// can create events (the loopback).
    None,
}

/// What a device's [`Setup::Default`] devices are expected to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// The most ranks a kit can build (1 for the loopback); checks use up
    /// to 3.
    pub max_ranks: usize,
    /// `get` and `put` work ([`crate::Caps::rdma_get`] and `rdma_put`).
    pub rdma: bool,
    /// How a sleeper is woken.
    pub wake: Wake,
    /// `into_payload` hands over the device's own buffer (at least for the
    /// first packet of an idle device) instead of copying.
    pub hands_over: bool,
}

/// A device under test: builds connected devices and does what only the
/// device's crate can do. See the module docs.
pub trait DeviceKit {
    /// The device.
    type Device: Device;

    /// What the [`Setup::Default`] devices are expected to do.
    fn expect(&self) -> Expect;

    /// Whether the device can run here at all; `false` skips the check
    /// (a kit that must not skip, as verbs under `FERRY_VERBS_REQUIRE=1`,
    /// panics instead).
    fn available(&self, _check: &str) -> bool {
        true
    }

    /// `n` connected devices, ranks `0..n`, each reaching every rank
    /// including itself; `None` if the device has no such setup (the check
    /// then skips).
    fn devices(&mut self, n: usize, setup: Setup) -> Option<Vec<Self::Device>>;

    /// Called once per round of progress, before the devices progress (the
    /// simulation advances its clock here).
    fn tick(&mut self, _devices: &mut [Self::Device]) {}

    /// Whether `devices[rank]`, armed and asleep, has been woken: its wait fd
    /// is readable within `timeout`, or its wake flag is up.
    fn woken(&self, devices: &[Self::Device], rank: usize, timeout: Duration) -> bool;

    /// Kills the last rank (`devices.pop()` and whatever the device needs to
    /// make its peers notice); `false` if the device cannot lose a rank
    /// inside one process (the check then skips).
    fn kill_last(&mut self, devices: &mut Vec<Self::Device>) -> bool {
        devices.pop();
        true
    }
}

/// Runs `make` for every rank of an `n`-rank [`ThreadBoot`] group `job`,
/// each on its own thread (device setup is collective), and returns the
/// results in rank order. `mangle`, if given, rewrites what every rank
/// reads from the key-value space (see [`ThreadBoot::mangled`]).
///
/// # Panics
/// If a thread panics.
pub fn on_threads<T, F>(
    n: u32,
    job: &str,
    mangle: Option<fn(&str, String) -> String>,
    make: F,
) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Rank, &mut ThreadBoot) -> T + Send + Clone + 'static,
{
    let handles: Vec<_> = ThreadBoot::group(n, job)
        .into_iter()
        .enumerate()
        .map(|(rank, boot)| {
            let mut boot = match mangle {
                Some(f) => boot.mangled(f),
                None => boot,
            };
            let make = make.clone();
            std::thread::spawn(move || make(rank as Rank, &mut boot))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a setup thread panicked"))
        .collect()
}

/// Prints why a check did not run.
pub(crate) fn skip(check: &str, why: &str) {
    eprintln!("SKIPPED {check}: {why}");
}

/// Devices with one recorder each, driven together.
pub(crate) struct Bench<'k, K: DeviceKit> {
    pub(crate) kit: &'k mut K,
    pub(crate) devs: Vec<K::Device>,
    pub(crate) sinks: Vec<Recorder>,
}

impl<'k, K: DeviceKit> Bench<'k, K> {
    /// `n` devices in `setup`, or `None` (skip) if the kit has none.
    pub(crate) fn new(kit: &'k mut K, n: usize, setup: Setup, take: bool) -> Option<Self> {
        let devs = kit.devices(n, setup)?;
        assert_eq!(
            devs.len(),
            n,
            "the kit built {} devices, not {n}",
            devs.len()
        );
        let sinks = (0..n)
            .map(|_| Recorder {
                take,
                ..Recorder::default()
            })
            .collect();
        Some(Bench { kit, devs, sinks })
    }

    /// One round: the kit's tick, then `progress` on every device, checking
    /// that each returns exactly the number of events it reported.
    pub(crate) fn round(&mut self) -> usize {
        self.kit.tick(&mut self.devs);
        let mut total = 0;
        for (rank, (d, s)) in self.devs.iter_mut().zip(self.sinks.iter_mut()).enumerate() {
            let before = s.events.len();
            let n = d.progress(s).expect("progress");
            assert_eq!(
                n,
                s.events.len() - before,
                "rank {rank}: progress returned {n} but reported {}",
                s.events.len() - before
            );
            total += n;
        }
        total
    }

    /// Rounds until `done(sinks)`, or panics after [`DEADLINE`].
    pub(crate) fn drive(&mut self, what: &str, done: impl Fn(&[Recorder]) -> bool) {
        let start = Instant::now();
        while !done(&self.sinks) {
            self.round();
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; (packets, rdma, failures) per rank: {:?}",
                self.sinks
                    .iter()
                    .map(|s| (s.packets().len(), s.rdma().len(), s.failures()))
                    .collect::<Vec<_>>()
            );
        }
    }

    /// Sends, running rounds while the sender is busy.
    pub(crate) fn send(&mut self, from: usize, to: usize, header: &[u8], payload: &[u8]) {
        let start = Instant::now();
        while self.devs[from]
            .send(to as Rank, header, payload)
            .expect("send")
            == Sent::Busy
        {
            self.round();
            assert!(
                start.elapsed() < DEADLINE,
                "send {from} -> {to} stayed busy"
            );
        }
    }

    /// Retries `op` (a `get` or `put` on `devs[from]`) while it is busy.
    pub(crate) fn rdma(
        &mut self,
        from: usize,
        mut op: impl FnMut(&mut K::Device) -> Result<Sent, crate::Error>,
    ) {
        let start = Instant::now();
        while op(&mut self.devs[from]).expect("rdma") == Sent::Busy {
            self.round();
            assert!(start.elapsed() < DEADLINE, "rdma on {from} stayed busy");
        }
    }
}

/// Instantiates every check of [`crate::testkit`] as a `#[test]` for one
/// device: `device_contract_tests!(kit)`, where `kit` is an expression of a
/// type implementing [`DeviceKit`], evaluated afresh by each test.
///
/// Put it in its own module per device configuration (for example one per
/// libfabric provider).
#[macro_export]
macro_rules! device_contract_tests {
    ($kit:expr $(,)?) => {
        $crate::device_contract_tests!(@each $kit;
            caps_match_the_device,
            packets_arrive_in_order_from_every_sender_including_self,
            a_sent_packet_is_buffered,
            packets_at_the_limits_arrive_and_unknown_ranks_are_refused,
            back_pressure_is_busy_and_recovers_in_order,
            progress_counts_what_it_reports,
            into_payload_hands_over_a_buffer_that_outlives_the_device,
            get_and_put_move_the_bytes,
            deregister_gives_the_buffer_back_once,
            without_rdma_get_and_put_are_unsupported,
            arm_is_pending_while_an_event_is_deliverable,
            a_sleeper_is_woken_by_a_send,
            a_dead_peer_is_reported_once,
        );
    };
    (@each $kit:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::testkit::$check($kit);
            }
        )*
    };
}

#[cfg(test)]
mod tests;
