//! Asynchronous events: the port going down fails every peer with a typed
//! error, also for a rank that only sleeps on its wait fd.

use std::process::Command;
use std::time::Instant;

use ferry_core::device::{Armed, Device};
use ferry_core::recorder::Recorder;
use ferry_core::{DeviceError, Error};

use super::{devices, poll_in, rdma_present, small, DEADLINE};
use crate::VerbsOptions;

/// The netdev under the RDMA port (`dummy0` in the CI VM;
/// `FERRY_VERBS_TEST_NETDEV` to name another).
fn netdev() -> String {
    std::env::var("FERRY_VERBS_TEST_NETDEV").unwrap_or_else(|_| "dummy0".into())
}

fn link(state: &str) {
    let ok = Command::new("ip")
        .args(["link", "set", &netdev(), state])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ip link set {} {state} failed", netdev());
}

/// Brings the link back up (and waits for an active port) however the test
/// ends, for whatever runs after it in the same VM.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        link("up");
        let t0 = Instant::now();
        while !crate::devices().is_ok_and(|d| d.iter().any(|p| p.active)) {
            assert!(t0.elapsed() < DEADLINE, "the port never came back");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// `IBV_EVENT_PORT_ERR`.
const PORT_ERR: u32 = 10;

/// Takes the port down (`ip link set dummy0 down`); each device fails all
/// its peers with `DeviceError::Event`, the sleeping one woken by its wait
/// fd. Keepalives are off, so nothing but the event can report it.
#[test]
#[ignore = "takes the RDMA port down: ci/verbs.sh runs it last in the VM"]
fn a_port_going_down_fails_every_peer_with_a_typed_error() {
    if !rdma_present("a_port_going_down_fails_every_peer") {
        return;
    }
    let opts = VerbsOptions {
        keepalive_ms: 0,
        ..small()
    };
    let mut devs = devices(2, opts);
    let mut sink = Recorder::default();
    // Rank 1 goes to sleep before the port goes down.
    assert_eq!(devs[1].arm().unwrap(), Armed::Sleep);
    let _restore = Restore;
    link("down");
    assert!(poll_in(&devs[1], 10_000), "the port event wakes a sleeper");
    devs[1].disarm();
    let t0 = Instant::now();
    while sink.failures().len() < 2 {
        devs[1].progress(&mut sink).unwrap();
        assert!(t0.elapsed() < DEADLINE, "saw {:?}", sink.failures());
    }
    for (peer, err) in sink.failures() {
        assert!(
            matches!(
                err,
                Error::Device(DeviceError::Event {
                    event: PORT_ERR,
                    ..
                })
            ),
            "peer {peer}: {err:?}"
        );
        eprintln!("peer {peer}: {err}");
    }
    // Rank 0, polling, learns it too, and a send to a failed peer is
    // refused with the same error.
    let mut sink0 = Recorder::default();
    while sink0.failures().len() < 2 {
        devs[0].progress(&mut sink0).unwrap();
        assert!(t0.elapsed() < DEADLINE, "rank 0 never heard");
    }
    assert!(matches!(
        devs[0].send(1, b"h", b"p"),
        Err(Error::Device(DeviceError::Event { .. }))
    ));
}
