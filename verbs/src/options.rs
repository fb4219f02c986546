//! [`VerbsOptions`]: the device's `FERRY_VERBS_*` variables.

use crate::error::VerbsError;

/// Options, from the environment ([`VerbsOptions::from_env`]) or set by hand.
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
        }
    }
}

fn var(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn number<T: std::str::FromStr + PartialOrd>(
    name: &'static str,
    min: T,
    max: T,
) -> Result<Option<T>, VerbsError> {
    let Some(v) = var(name) else {
        return Ok(None);
    };
    match v.trim().parse::<T>() {
        Ok(n) if n >= min && n <= max => Ok(Some(n)),
        Ok(_) => Err(VerbsError::BadVariable {
            var: name,
            value: v,
            why: "out of range",
        }),
        Err(_) => Err(VerbsError::BadVariable {
            var: name,
            value: v,
            why: "not a number",
        }),
    }
}

impl VerbsOptions {
    /// Reads the `FERRY_VERBS_*` variables (see the table above).
    ///
    /// # Errors
    /// [`VerbsError::BadVariable`] for a malformed or out-of-range value.
    pub fn from_env() -> Result<Self, VerbsError> {
        let d = VerbsOptions::default();
        Ok(VerbsOptions {
            device: var("FERRY_VERBS_DEVICE"),
            port: number("FERRY_VERBS_PORT", 1, 255)?,
            gid_index: number("FERRY_VERBS_GID_INDEX", 0, 255)?,
            eager_size: number("FERRY_VERBS_EAGER", 256, 1 << 20)?.unwrap_or(d.eager_size),
            credits: number("FERRY_VERBS_CREDITS", 2, 4096)?.unwrap_or(d.credits),
            send_bufs: number("FERRY_VERBS_SEND_BUFS", 1, 65536)?.unwrap_or(d.send_bufs),
            timeout: number("FERRY_VERBS_TIMEOUT", 1, 31)?.unwrap_or(d.timeout),
            retry: number("FERRY_VERBS_RETRY", 0, 7)?.unwrap_or(d.retry),
            keepalive_ms: number("FERRY_VERBS_KEEPALIVE_MS", 0, 3_600_000)?
                .unwrap_or(d.keepalive_ms),
        })
    }
}
