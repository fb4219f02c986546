//! What the single-process API tests share.

use ferry::{Config, DeviceChoice, WaitMode, World};

/// A singleton world on the loopback device, spinning (no syscalls, so
/// the tests also run under Miri).
pub(crate) fn loopback_world() -> World {
    Config {
        device: DeviceChoice::Loopback,
        wait_mode: WaitMode::Spin,
        ..Config::default()
    }
    .init()
    .expect("singleton init")
}
