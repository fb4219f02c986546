//! The engine over the ofi device, one engine per thread: eager,
//! rendezvous (by `fi_read`, or fragments without RMA), ARecv of an
//! unexpected eager message (handed over in its bounce buffer) and of a
//! rendezvous message, and self-sends.

use std::sync::mpsc;
use std::time::Duration;

use ferry_core::engine::Park;
use ferry_core::{Buf, Config, Engine, Rank, ThreadBoot};

use crate::{OfiDevice, OfiOptions};

/// Sleeps on the wait fd (bounded, so a lost wake-up shows as slowness in
/// the test rather than a hang).
struct PollPark;

impl Park for PollPark {
    fn park(&mut self, wait_fd: Option<i32>) -> ferry_core::Result<()> {
        match wait_fd {
            Some(fd) => {
                super::readable(fd, 100);
            }
            None => std::thread::yield_now(),
        }
        Ok(())
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

const BIG: usize = (1 << 20) + 3;

fn body(rank: Rank, e: &mut Engine<OfiDevice>, rma: bool) {
    let p = &mut PollPark;
    if rank == 0 {
        e.send(1, 1, 0, Buf::from(pattern(100, 1)), p).unwrap();
        e.send(1, 2, 0, Buf::from(pattern(BIG, 2)), p).unwrap();
        e.send(1, 3, 0, Buf::from(pattern(4000, 3)), p).unwrap();
        e.send(1, 4, 0, Buf::from(pattern(500, 4)), p).unwrap();
        e.recv(1, 9, 0, Buf::zeroed(0).unwrap(), p).unwrap();
        let c = e.counters();
        if rma {
            assert_eq!(c.rndv_get_sent + c.rndv_put_sent, 1, "{c:?}");
        } else {
            assert_eq!(c.rndv_frag_sent, 1, "{c:?}");
        }
    } else {
        let c = e.recv(0, 1, 0, Buf::zeroed(100).unwrap(), p).unwrap();
        assert_eq!(c.buf.unwrap().to_vec(), pattern(100, 1));
        let c = e.arecv(0, 2, 0, p).unwrap();
        assert!(
            c.buf.unwrap().to_vec() == pattern(BIG, 2),
            "rendezvous arecv"
        );
        // Let tags 3 and 4 arrive unexpected, then take 3 without a copy.
        let until = std::time::Instant::now() + Duration::from_millis(100);
        while std::time::Instant::now() < until {
            e.progress().unwrap();
        }
        let c = e.arecv(0, 3, 0, p).unwrap();
        let buf = c.buf.unwrap();
        assert_eq!(buf.to_vec(), pattern(4000, 3));
        assert!(
            buf.into_storage().is_ok(),
            "handed over in the bounce buffer"
        );
        // A small one was copied into the engine's pool on arrival (handing
        // the bounce buffer over would have boxed it: an allocation).
        let c = e.arecv(0, 4, 0, p).unwrap();
        let buf = c.buf.unwrap();
        assert_eq!(buf.to_vec(), pattern(500, 4));
        assert!(buf.into_storage().is_err(), "copied into a pooled vector");
        // Self traffic goes through the device too.
        let r = e.isend(1, 5, 0, Buf::from(pattern(BIG, 5))).unwrap();
        let c = e.recv(1, 5, 0, Buf::zeroed(BIG).unwrap(), p).unwrap();
        assert!(
            c.buf.unwrap().to_vec() == pattern(BIG, 5),
            "self rendezvous"
        );
        let mut req = r.request;
        e.wait(&mut req, p).unwrap();
        e.send(0, 9, 0, Buf::new(), p).unwrap();
    }
}

pub(super) fn run(provider: &str, rma: bool) {
    let job = format!("ofieng{}{provider}{rma}", std::process::id());
    let (tx, rx) = mpsc::channel();
    for mut boot in ThreadBoot::group(2, &job) {
        let tx = tx.clone();
        let o = OfiOptions {
            rma,
            ..OfiOptions::with_provider(provider)
        };
        std::thread::spawn(move || {
            let rank = ferry_core::Bootstrap::rank(&boot);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let dev = OfiDevice::new(&mut boot, &[0, 1], o).unwrap();
                let mut e = Engine::new(rank, 2, dev, Config::default()).unwrap();
                body(rank, &mut e, rma);
                // Both are done before either device goes away (a closed
                // device is a dead peer to the other).
                ferry_core::Bootstrap::barrier(&mut boot).unwrap();
            }));
            let _ = tx.send((rank, r.is_ok()));
        });
    }
    for _ in 0..2 {
        let (rank, ok) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("an engine test rank hung");
        assert!(ok, "rank {rank} failed");
    }
}

#[test]
fn engine_over_tcp_with_rma() {
    run("tcp;ofi_rxm", true);
}

#[test]
fn engine_over_tcp_without_rma() {
    run("tcp;ofi_rxm", false);
}

#[test]
fn engine_over_shm_with_rma() {
    run("shm", true);
}

#[test]
fn engine_over_shm_without_rma() {
    run("shm", false);
}
