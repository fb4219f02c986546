//! Configuration: `FERRY_*` parsing, typed errors naming the variable, and
//! devices that are not compiled in.

use std::collections::HashMap;
use std::time::Duration;

use ferry::{Config, DeviceChoice, Error, Fault, SetupError, WaitMode};

fn parse(vars: &[(&str, &str)]) -> ferry::Result<Config> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned())
}

#[test]
fn defaults() {
    let c = parse(&[]).unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.wait_mode, WaitMode::Hybrid);
    assert_eq!(c.spin, Duration::from_micros(50));
    assert_eq!(c.device, DeviceChoice::Auto);
    assert!(!c.print_counters);
}

#[test]
fn every_variable_parses() {
    let c = parse(&[
        ("FERRY_DEVICE", "loopback"),
        ("FERRY_EAGER_LIMIT", "16k"),
        ("FERRY_RNDV_THRESHOLD", "1M"),
        ("FERRY_WAIT_MODE", "passive"),
        ("FERRY_SPIN_US", "0"),
        ("FERRY_LOG", "ferry=debug,warn"),
        ("FERRY_PRINT_COUNTERS", "1"),
    ])
    .unwrap();
    assert_eq!(c.device, DeviceChoice::Loopback);
    assert_eq!(c.engine.eager_limit, Some(16384));
    assert_eq!(c.engine.rdma_threshold, 1 << 20);
    assert_eq!(c.wait_mode, WaitMode::Passive);
    assert_eq!(c.spin, Duration::ZERO);
    assert_eq!(c.log.as_deref(), Some("ferry=debug,warn"));
    assert!(c.print_counters);
    assert_eq!(
        parse(&[("FERRY_WAIT_MODE", "SPIN")]).unwrap().wait_mode,
        WaitMode::Spin
    );
}

#[test]
fn a_bad_value_names_its_variable() {
    for (var, value) in [
        ("FERRY_DEVICE", "tcp"),
        ("FERRY_EAGER_LIMIT", "lots"),
        ("FERRY_EAGER_LIMIT", "-5"),
        ("FERRY_RNDV_THRESHOLD", "12q"),
        ("FERRY_WAIT_MODE", "sometimes"),
        ("FERRY_SPIN_US", "1.5"),
        ("FERRY_LOG", "ferry=loudly"),
        ("FERRY_PRINT_COUNTERS", "2"),
    ] {
        match parse(&[(var, value)]) {
            Err(Error::Config(e)) => {
                assert_eq!(e.var, var);
                assert_eq!(e.value, value);
                assert!(e.to_string().contains(var), "{e}");
            }
            other => panic!("{var}={value}: {other:?}"),
        }
        assert_eq!(parse(&[(var, value)]).unwrap_err().fault(), Fault::Usage);
    }
}

#[test]
fn an_empty_value_is_unset_and_sizes_share_one_syntax() {
    let all_empty: Vec<(&str, &str)> = [
        "FERRY_DEVICE",
        "FERRY_EAGER_LIMIT",
        "FERRY_RNDV_THRESHOLD",
        "FERRY_RNDV_MODE",
        "FERRY_WAIT_MODE",
        "FERRY_SPIN_US",
        "FERRY_LOG",
        "FERRY_PRINT_COUNTERS",
    ]
    .into_iter()
    .map(|var| (var, ""))
    .collect();
    assert_eq!(parse(&all_empty).unwrap(), Config::default());
    for (text, bytes) in [
        ("65536", 65536),
        ("64k", 65536),
        ("64KiB", 65536),
        ("1M", 1 << 20),
    ] {
        let c = parse(&[("FERRY_EAGER_LIMIT", text)]).unwrap();
        assert_eq!(c.engine.eager_limit, Some(bytes), "{text}");
    }
}

#[test]
fn network_devices_not_compiled_in_are_a_typed_error() {
    let devices = [
        (DeviceChoice::Ofi, "ofi", cfg!(feature = "ofi")),
        (DeviceChoice::Verbs, "verbs", cfg!(feature = "verbs")),
    ];
    // A compiled-in device is real: its own suites test it (ci/ofi.sh,
    // ci/verbs.sh).
    for (device, feature, _) in devices.into_iter().filter(|d| !d.2) {
        let err = Config {
            device,
            ..Config::default()
        }
        .init()
        .unwrap_err();
        match &err {
            Error::Setup(SetupError::FeatureNotCompiled {
                device: d,
                feature: f,
                ..
            }) => {
                assert_eq!((*d, *f), (feature, feature));
                assert!(
                    err.to_string().contains(&format!("--features {feature}")),
                    "{err}"
                );
            }
            other => panic!("{feature}: {other:?}"),
        }
        assert_eq!(err.fault(), Fault::Environment);
    }
    // Through the environment variable, as a user would ask.
    if !cfg!(feature = "ofi") {
        let err = parse(&[("FERRY_DEVICE", "ofi")])
            .unwrap()
            .init()
            .unwrap_err();
        assert!(matches!(err, Error::Setup(_)), "{err:?}");
    }
}

#[test]
fn explicit_devices_serve_a_singleton() {
    let mut devices = vec![
        (DeviceChoice::Auto, "loopback"),
        (DeviceChoice::Loopback, "loopback"),
    ];
    if cfg!(feature = "shm") {
        devices.push((DeviceChoice::Shm, "shm"));
    } else {
        let err = Config {
            device: DeviceChoice::Shm,
            ..Config::default()
        }
        .init()
        .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Setup(SetupError::FeatureNotCompiled { device: "shm", .. })
            ),
            "{err:?}"
        );
    }
    for (device, name) in devices {
        let w = Config {
            device,
            ..Config::default()
        }
        .init()
        .unwrap();
        assert_eq!(w.device_name(), name);
        assert_eq!((w.rank(), w.size()), (0, 1));
        let t = w.protocol_table(0).unwrap();
        // Unset, the eager limit is the device's own choice.
        let caps = w.caps(0).unwrap();
        assert_eq!(t.eager_max, caps.eager_preferred.min(caps.max_payload));
        let want = if name == "shm" { 64 * 1024 } else { 8192 };
        assert_eq!(t.eager_max, want, "{name}");
        w.finalize().unwrap();
    }
}

#[test]
fn thresholds_reach_the_protocol_table() {
    let w = parse(&[
        ("FERRY_EAGER_LIMIT", "100"),
        ("FERRY_RNDV_THRESHOLD", "4096"),
    ])
    .unwrap()
    .init()
    .unwrap();
    let t = w.protocol_table(0).unwrap();
    assert_eq!((t.eager_max, t.rdma_min), (100, 4096));
    let comm = w.world();
    let mut r = comm.isend(vec![0u8; 101], 0, 1).unwrap();
    assert!(!r.is_empty(), "past the eager limit: rendezvous");
    comm.recv(&mut [0u8; 101], 0, 1).unwrap();
    r.wait().unwrap();
    assert_eq!(
        w.counters().engine.rndv_frag_sent,
        1,
        "under the RDMA threshold: fragments"
    );
}
