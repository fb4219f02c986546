//! The progress and wait contract (MPICH's ADI completion design,
//! `MPID_DeviceCheck`):
//! `device_check(Blocking)` arms only when nothing happened, the
//! no-lost-wakeup rule holds wherever an arrival lands in the
//! progress/arm/sleep sequence, the checker that enforces it really catches a
//! device that breaks it, and every `wait*` form sleeps instead of spinning.

mod common_requests;

use common_requests::*;
use ferry_core::device::Armed;
use ferry_core::sim::{NetConfig, Sim, SimDevice};
use ferry_core::{Any, Check, CheckMode, Config, Engine, Error, Outcount, Rank, Request};

fn two_ranks(delay: u64) -> Sim {
    sim_with(
        NetConfig::new(2).with_delay(delay, delay),
        Config::default(),
    )
}

// --------------------------------------------------------- device_check ----

#[test]
fn device_check_arms_only_when_blocking_and_idle() {
    let mut sim = two_ranks(2);
    let net = sim.net().clone();
    let e = sim.engine(0);
    assert_eq!(e.device_check(CheckMode::NonBlocking).unwrap(), Check::Idle);
    assert!(!net.borrow().is_armed(0), "NonBlocking never arms");
    assert_eq!(
        e.device_check(CheckMode::Blocking).unwrap(),
        Check::WouldBlock
    );
    assert!(net.borrow().is_armed(0) && !net.borrow().is_woken(0));
    assert_eq!(e.progress().unwrap(), 0);
    assert!(!net.borrow().is_armed(0), "progress disarms");

    for mode in [CheckMode::NonBlocking, CheckMode::Blocking] {
        send_now(&mut sim, 1, 0, 1, b"p");
        deliver_to(&sim, 0);
        assert_eq!(
            sim.engine(0).device_check(mode).unwrap(),
            Check::Progressed,
            "{mode:?}"
        );
        assert!(
            !net.borrow().is_armed(0),
            "{mode:?}: something happened, no arming"
        );
    }
    assert_eq!(sim.engine(0).counters().unexpected_depth, 2);
    assert_eq!(
        sim.engine(0).device_check(CheckMode::Blocking).unwrap(),
        Check::WouldBlock
    );
}

#[test]
fn device_check_polls_instead_of_arming_while_the_device_pushes_back() {
    // Devices do not signal freed resources through the wait fd, so a rank
    // with pushed-back work must not go to sleep.
    let net = NetConfig::new(2).with_delay(3, 3).with_link_capacity(1);
    let mut sim = sim_with(net, Config::default());
    send_now(&mut sim, 0, 1, 1, b"first");
    let mut second = sim
        .engine(0)
        .isend(1, 2, 0, buf(b"second"))
        .unwrap()
        .request;
    assert!(!second.is_empty(), "the link is full: the send is queued");
    assert_eq!(
        sim.engine(0).device_check(CheckMode::Blocking).unwrap(),
        Check::Idle
    );
    assert!(!sim.net().borrow().is_armed(0));
    let mut r = sim.engine(1).irecv(0, 2, 0, zeroed(6)).unwrap().request;
    wait_data(&mut sim, 1, &mut r, b"second");
    sim.wait(0, &mut second).unwrap();
}

// ------------------------------------------------------ no lost wake-up ----

/// One message 1 -> 0 under a blocking wait on both ends; returns how many
/// times rank 0 slept.
fn roundtrip(net: NetConfig, len: usize, recv_first: bool) -> u64 {
    let seed = net.seed;
    let mut sim = sim_with(net, Config::default());
    let payload = data(len, seed as u8);
    let mut r = Request::NULL;
    if recv_first {
        r = sim.engine(0).irecv(1, 1, 0, zeroed(len)).unwrap().request;
    }
    let mut s = sim.engine(1).isend(0, 1, 0, buf(&payload)).unwrap().request;
    if !recv_first {
        sim.net().borrow_mut().advance_by(seed % 4);
        r = sim.engine(0).irecv(1, 1, 0, zeroed(len)).unwrap().request;
    }
    // SimPark fails with Error::Internal on a deadlock or a lost wake-up.
    let (c, parks) = sim.with_park(0, |e, park| (e.wait(&mut r, park), park.parks()));
    let c = c.unwrap_or_else(|e| panic!("{seed} {len} {recv_first}: {e}"));
    assert_eq!(bytes_of(&c), &payload[..]);
    if !s.is_empty() {
        sim.wait(1, &mut s)
            .unwrap_or_else(|e| panic!("sender {seed} {len}: {e}"));
    }
    sim.run_until_idle().unwrap();
    parks
}

#[test]
fn no_lost_wakeup_for_every_delay_and_many_seeds() {
    for delay in 0..=6 {
        let mut parks = 0;
        for seed in 0..40 {
            for (lo, hi) in [(delay, delay), (0, delay)] {
                for len in [EAGER, RNDV] {
                    for recv_first in [true, false] {
                        let net = NetConfig::new(2).with_delay(lo, hi).with_seed(seed);
                        parks += roundtrip(net, len, recv_first);
                    }
                }
            }
        }
        // Otherwise the loop would prove nothing about sleeping.
        assert!(delay == 0 || parks > 0, "delay {delay}: rank 0 never slept");
    }
}

type Pair = (Net, Engine<Wrapped>, Engine<SimDevice>);

/// Rank 0 (with an instrumented device) and rank 1, built by hand.
fn pair(delay: u64) -> Pair {
    let (net, mut devices) = manual(NetConfig::new(2).with_delay(delay, delay));
    let d1 = devices.pop().unwrap();
    let d0 = Wrapped::new(devices.pop().unwrap());
    let e0 = Engine::new(0, 2, d0, Config::default()).unwrap();
    let e1 = Engine::new(1, 2, d1, Config::default()).unwrap();
    (net, e0, e1)
}

fn flags(net: &Net, rank: Rank) -> (bool, bool, bool) {
    let n = net.borrow();
    (n.is_armed(rank), n.is_woken(rank), n.has_deliverable(rank))
}

#[test]
fn an_arrival_at_any_point_of_the_wait_sequence_is_never_lost() {
    // The packet lands `delay` ticks after the send. `before` ticks pass
    // before device_check, `in_arm` more between its progress and its arm,
    // and the rest after the arm, while the rank would sleep.
    for delay in 0..=6u64 {
        for before in 0..=delay + 1 {
            for in_arm in 0..=delay.saturating_sub(before) + 1 {
                let (net, mut e0, mut e1) = pair(delay);
                let r = e0.irecv(1, 1, 0, zeroed(EAGER)).unwrap().request;
                assert!(e1.isend(0, 1, 0, buf(b"wake")).unwrap().request.is_empty());
                net.borrow_mut().advance_by(before);
                e0.device_mut().advance_in_arm = Some(in_arm);
                let check = e0.device_check(CheckMode::Blocking).unwrap();
                let arms = e0.device().arms.clone();
                let case = format!("delay {delay} before {before} in_arm {in_arm}");

                if before >= delay {
                    assert_eq!(check, Check::Progressed, "{case}: progress found it");
                    assert!(arms.is_empty(), "{case}: no arm after progress");
                } else if before + in_arm >= delay {
                    assert_eq!(check, Check::Progressed, "{case}");
                    assert_eq!(arms, vec![Armed::Pending], "{case}: arm saw the arrival");
                } else {
                    assert_eq!(check, Check::WouldBlock, "{case}");
                    assert_eq!(arms, vec![Armed::Sleep], "{case}");
                    for _ in before + in_arm..delay {
                        assert_eq!(flags(&net, 0), (true, false, false), "{case}: asleep");
                        net.borrow_mut().advance();
                    }
                    assert_eq!(flags(&net, 0), (true, true, true), "{case}: woken");
                    assert_eq!(
                        e0.device_check(CheckMode::Blocking).unwrap(),
                        Check::Progressed
                    );
                }
                assert!(e0.is_complete(&r).unwrap(), "{case}");
                assert!(!flags(&net, 0).0, "{case}: disarmed after waking");
            }
        }
    }
}

#[test]
fn a_zero_delay_send_wakes_an_already_armed_rank_at_once() {
    let (net, mut e0, mut e1) = pair(0);
    let r = e0.irecv(1, 1, 0, zeroed(1)).unwrap().request;
    assert_eq!(
        e0.device_check(CheckMode::Blocking).unwrap(),
        Check::WouldBlock
    );
    assert_eq!(flags(&net, 0), (true, false, false));
    assert!(e1.isend(0, 1, 0, buf(b"z")).unwrap().request.is_empty());
    assert_eq!(
        flags(&net, 0),
        (true, true, true),
        "woken by the send itself"
    );
    assert_eq!(
        e0.device_check(CheckMode::Blocking).unwrap(),
        Check::Progressed
    );
    assert!(e0.is_complete(&r).unwrap());
}

// --------------------------------------------------- the checker itself ----

#[test]
fn a_device_that_never_wakes_the_sleeper_is_caught() {
    for broken in [false, true] {
        let (net, mut e0, mut e1) = pair(2);
        e0.device_mut().broken = broken;
        let mut r = e0.irecv(1, 1, 0, zeroed(4)).unwrap().request;
        assert!(e1.isend(0, 1, 0, buf(b"lost")).unwrap().request.is_empty());
        let mut park = DrivePark {
            me: 0,
            net: &net,
            other: &mut e1,
            parks: 0,
        };
        let result = e0.wait(&mut r, &mut park);
        let parks = park.parks;
        if broken {
            assert_eq!(result.unwrap_err(), Error::Internal("lost wake-up"));
            assert_eq!(parks, 1);
            assert!(
                !r.is_null(),
                "the receive was not completed behind our back"
            );
        } else {
            let c = result.expect("a correct device wakes the sleeper");
            assert_eq!(&c.buf.unwrap()[..], b"lost");
            assert!(parks >= 1, "the rank slept");
        }
    }
}

#[test]
fn sim_wait_reports_a_deadlock_instead_of_hanging() {
    let mut sim = two_ranks(1);
    let mut r = sim.engine(0).irecv(1, 1, 0, zeroed(1)).unwrap().request;
    let err = sim.wait(0, &mut r).unwrap_err();
    assert!(
        matches!(err, Error::Internal(m) if m.contains("deadlock")),
        "{err:?}"
    );
    assert!(!sim.engine(0).is_complete(&r).unwrap());
    // The request survives the failed wait and completes normally later.
    send_now(&mut sim, 1, 0, 1, b"k");
    wait_data(&mut sim, 0, &mut r, b"k");
}

// ------------------------------------------------ wait* actually sleep ----

/// Runs `f` on rank 0 under a SimPark; returns its result and the parks.
fn parked<T>(
    sim: &mut Sim,
    f: impl FnOnce(&mut Engine<SimDevice>, &mut ferry_core::sim::SimPark<'_>) -> T,
) -> (T, u64) {
    sim.with_park(0, |e, park| {
        let t = f(e, park);
        (t, park.parks())
    })
}

/// A receive on rank 0 whose message rank 1 sends now (it lands later).
fn later(sim: &mut Sim, tag: i32) -> Request {
    let r = sim.engine(0).irecv(1, tag, 0, zeroed(1)).unwrap().request;
    send_now(sim, 1, 0, tag, b"L");
    r
}

/// A receive on rank 0 that is already complete.
fn done(sim: &mut Sim, tag: i32) -> Request {
    let r = later(sim, tag);
    sim.run_until_idle().unwrap();
    assert!(sim.engine(0).is_complete(&r).unwrap());
    r
}

#[test]
fn every_wait_form_sleeps_when_it_must_and_not_otherwise() {
    let mut sim = two_ranks(3);
    for (name, setup) in [
        ("later", later as fn(&mut Sim, i32) -> Request),
        ("done", done),
    ] {
        let sleeps = name == "later";
        let check = |parks: u64, form: &str| {
            assert_eq!(
                parks > 0,
                sleeps,
                "{form} on a {name} request slept {parks} times"
            )
        };

        let mut r = setup(&mut sim, 1);
        let (c, parks) = parked(&mut sim, |e, p| e.wait(&mut r, p));
        assert_eq!(&c.unwrap().buf.unwrap()[..], b"L");
        check(parks, "wait");

        let mut list = [setup(&mut sim, 2), Request::EMPTY];
        let mut out = Vec::new();
        let (res, parks) = parked(&mut sim, |e, p| e.waitall(&mut list, &mut out, p));
        res.unwrap();
        assert_eq!(out.len(), 2);
        check(parks, "waitall");

        let mut list = [Request::NULL, setup(&mut sim, 3)];
        let (any, parks) = parked(&mut sim, |e, p| e.waitany(&mut list, p));
        assert!(matches!(any.unwrap(), Any::Completed { index: 1, .. }));
        check(parks, "waitany");

        let mut list = [setup(&mut sim, 4)];
        let mut out = Vec::new();
        let (n, parks) = parked(&mut sim, |e, p| e.waitsome(&mut list, &mut out, p));
        assert_eq!(n.unwrap(), Outcount::Count(1));
        check(parks, "waitsome");
    }

    // EMPTY alone never needs the device.
    let mut list = [Request::EMPTY, Request::EMPTY];
    let mut out = Vec::new();
    let (res, parks) = parked(&mut sim, |e, p| e.waitall(&mut list, &mut out, p));
    res.unwrap();
    assert_eq!(parks, 0);
}
