//! [`VerbsOptions`]: the device's `FERRY_VERBS_*` variables.

use ferry_core::settings::{self, Source};

use crate::error::VerbsError;

/// Options, from the environment ([`VerbsOptions::from_env`]) or set by hand.
///
/// The variables take the syntax of `ferry_core::settings`: numbers in
/// decimal, `FERRY_VERBS_EAGER` as a size (`8192`, `8k`, `8KiB`), and an
/// empty value is the same as unset.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `FERRY_VERBS_DEVICE` | device name (`mlx5_0`, `rxe0`) | the first device with an active port |
/// | `FERRY_VERBS_PORT` | port number | the device's first active port |
/// | `FERRY_VERBS_GID_INDEX` | GID index (RoCE, or routed IB) | RoCE: the first RoCE v2 IPv4-mapped GID, else the first RoCE v2, else 0; IB: LID routing |
/// | `FERRY_VERBS_EAGER` | bytes of one eager buffer (header + payload) | 8192 |
/// | `FERRY_VERBS_CREDITS` | eager buffers reserved for each peer | 32 |
/// | `FERRY_VERBS_SEND_BUFS` | registered send buffers | 64 |
/// | `FERRY_VERBS_TIMEOUT` | QP local ACK timeout exponent (4.096 µs × 2^n) | 16 (≈ 0.27 s) |
/// | `FERRY_VERBS_RETRY` | QP transport retry count (0..=7) | 7 |
/// | `FERRY_VERBS_KEEPALIVE_MS` | keepalive probe interval per peer (0: off); see `liveness.rs` | 1000 |
/// | `FERRY_VERBS_SIGNAL_EVERY` | request a completion for one small inline send in this many (1: every send); see `signal.rs` | 16 |
/// | `FERRY_VERBS_CONNECT_MS` | how long a connection handshake may take before the peer is failed (`qp.rs`) | 600000 |
/// | `FERRY_VERBS_RCACHE` | bytes that cached registrations may pin (0: no cache, every rendezvous registers); see `mr.rs` | 256 MiB |
///
/// A dead peer is detected after about `timeout × (retry + 1)`: ≈ 2 s with
/// the defaults, slow enough that a busy emulated (TCG) VM does not trip it,
/// fast enough that a job does not hang for minutes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VerbsOptions {
    /// `FERRY_VERBS_DEVICE`.
    pub device: Option<String>,
    /// `FERRY_VERBS_PORT`.
    pub port: Option<u8>,
    /// `FERRY_VERBS_GID_INDEX`.
    pub gid_index: Option<u8>,
    /// `FERRY_VERBS_EAGER`.
    pub eager_size: usize,
    /// `FERRY_VERBS_CREDITS`.
    pub credits: u32,
    /// `FERRY_VERBS_SEND_BUFS`.
    pub send_bufs: u32,
    /// `FERRY_VERBS_TIMEOUT`.
    pub timeout: u8,
    /// `FERRY_VERBS_RETRY`.
    pub retry: u8,
    /// `FERRY_VERBS_KEEPALIVE_MS` (0 disables the probes).
    pub keepalive_ms: u32,
    /// `FERRY_VERBS_RCACHE`: the bound on bytes pinned by cached
    /// registrations (0 disables the registration cache).
    pub rcache: usize,
    /// `FERRY_VERBS_CONNECT_MS`: the bound on one lazy connection's
    /// handshake (a peer that does not answer within it is failed).
    pub connect_ms: u32,
    /// `FERRY_VERBS_SIGNAL_EVERY`: one small inline send in this many
    /// requests a completion (1: every send does).
    pub signal_every: u32,
}

impl Default for VerbsOptions {
    fn default() -> Self {
        VerbsOptions {
            device: None,
            port: None,
            gid_index: None,
            eager_size: 8192,
            credits: 32,
            send_bufs: 64,
            timeout: 16,
            retry: 7,
            keepalive_ms: 1000,
            rcache: 256 << 20,
            connect_ms: 600_000,
            signal_every: 16,
        }
    }
}

impl VerbsOptions {
    /// Reads the `FERRY_VERBS_*` variables (see the table above).
    ///
    /// # Errors
    /// [`VerbsError::BadVariable`] for a malformed or out-of-range value.
    pub fn from_env() -> Result<Self, VerbsError> {
        VerbsOptions::from_source(&|var: &str| std::env::var(var).ok())
    }

    /// Reads the `FERRY_VERBS_*` variables from `src`, each in this one
    /// place, in the syntax of [`ferry_core::settings`] (`FERRY_VERBS_EAGER`
    /// as a size such as `8k`; an empty value is the same as unset).
    ///
    /// # Errors
    /// [`VerbsError::BadVariable`] for a malformed or out-of-range value.
    pub fn from_source(src: &impl Source) -> Result<Self, VerbsError> {
        let d = VerbsOptions::default();
        Ok(VerbsOptions {
            device: settings::text(src, "FERRY_VERBS_DEVICE"),
            port: settings::number(src, "FERRY_VERBS_PORT", 1, 255)?,
            gid_index: settings::number(src, "FERRY_VERBS_GID_INDEX", 0, 255)?,
            eager_size: settings::size_in(src, "FERRY_VERBS_EAGER", 256, 1 << 20)?
                .unwrap_or(d.eager_size),
            credits: settings::number(src, "FERRY_VERBS_CREDITS", 2, 4096)?.unwrap_or(d.credits),
            send_bufs: settings::number(src, "FERRY_VERBS_SEND_BUFS", 1, 65536)?
                .unwrap_or(d.send_bufs),
            timeout: settings::number(src, "FERRY_VERBS_TIMEOUT", 1, 31)?.unwrap_or(d.timeout),
            retry: settings::number(src, "FERRY_VERBS_RETRY", 0, 7)?.unwrap_or(d.retry),
            keepalive_ms: settings::number(src, "FERRY_VERBS_KEEPALIVE_MS", 0, 3_600_000)?
                .unwrap_or(d.keepalive_ms),
            rcache: settings::size(src, "FERRY_VERBS_RCACHE")?.unwrap_or(d.rcache),
            connect_ms: settings::number(src, "FERRY_VERBS_CONNECT_MS", 10, 3_600_000)?
                .unwrap_or(d.connect_ms),
            signal_every: settings::number(src, "FERRY_VERBS_SIGNAL_EVERY", 1, 4096)?
                .unwrap_or(d.signal_every),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_take_the_shared_syntax() {
        let env: std::collections::HashMap<&str, &str> = [
            ("FERRY_VERBS_EAGER", "4k"),
            ("FERRY_VERBS_CREDITS", "16"),
            ("FERRY_VERBS_DEVICE", " rxe0 "),
            ("FERRY_VERBS_PORT", ""),
            ("FERRY_VERBS_RCACHE", "0"),
        ]
        .into();
        let o = VerbsOptions::from_source(&|v: &str| env.get(v).map(|s| s.to_string())).unwrap();
        assert_eq!(o.eager_size, 4096);
        assert_eq!(o.credits, 16);
        assert_eq!(o.device.as_deref(), Some("rxe0"));
        assert_eq!(o.port, None, "empty is unset");
        assert_eq!(o.rcache, 0, "the cache can be turned off");
        assert_eq!(o.keepalive_ms, VerbsOptions::default().keepalive_ms);
        let retry = |v: &str| (v == "FERRY_VERBS_RETRY").then(|| "9".to_owned());
        let e = VerbsOptions::from_source(&retry).unwrap_err();
        let VerbsError::BadVariable(s) = &e else {
            panic!("{e}")
        };
        assert_eq!(s.var, "FERRY_VERBS_RETRY");
        assert!(
            std::error::Error::source(&e).is_some(),
            "carried as the source"
        );
    }
}
