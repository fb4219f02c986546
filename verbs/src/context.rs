//! Choosing the device, port and GID, and listing what a machine offers
//! ([`devices`], for `ferry-info`).
//!
//! # Default selection
//! Without `FERRY_VERBS_DEVICE`, the first device (in `ibv_get_device_list`
//! order) that has an `ACTIVE` port is used, on its first active port (or
//! `FERRY_VERBS_PORT`). On an Ethernet (RoCE) port the GID index is
//! `FERRY_VERBS_GID_INDEX`, else the first GID whose type (from sysfs,
//! `gid_attrs/types/N`) is "RoCE v2" and that is an IPv4-mapped address
//! (`::ffff:a.b.c.d`, what rdmacm and perftest use), else the first RoCE v2
//! GID, else the first non-zero GID. On an InfiniBand port, QPs are addressed
//! by LID, with a GRH only when `FERRY_VERBS_GID_INDEX` is set.

use crate::error::VerbsError;
use crate::ffi::{sys, Context, DeviceList};
use crate::options::VerbsOptions;

/// `IBV_LINK_LAYER_ETHERNET` (the header's `#define`, absent from rdma-sys).
pub(crate) const LINK_LAYER_ETHERNET: u8 = 2;
/// `IBV_LINK_LAYER_INFINIBAND`.
const LINK_LAYER_INFINIBAND: u8 = 1;

/// How many GID table entries are examined (real tables have a handful of
/// valid entries at the front).
const GID_SCAN: i32 = 64;

/// An opened device and the port and addressing chosen on it.
pub(crate) struct Selected {
    pub(crate) ctx: Context,
    pub(crate) name: String,
    pub(crate) port: u8,
    pub(crate) port_attr: sys::ibv_port_attr,
    pub(crate) dev_attr: sys::ibv_device_attr,
    /// `Some` when QPs are addressed by GID (RoCE always, IB when asked).
    pub(crate) gid_index: Option<u8>,
    pub(crate) gid: [u8; 16],
}

impl std::fmt::Debug for Selected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selected")
            .field("name", &self.name)
            .field("port", &self.port)
            .field("gid_index", &self.gid_index)
            .field("gid", &gid_text(&self.gid))
            .finish_non_exhaustive()
    }
}

fn active(attr: &sys::ibv_port_attr) -> bool {
    attr.state == sys::ibv_port_state::IBV_PORT_ACTIVE
}

/// The GID type sysfs reports ("IB/RoCE v1", "RoCE v2"), if readable.
fn gid_type(dev: &str, port: u8, index: i32) -> Option<String> {
    let path = format!("/sys/class/infiniband/{dev}/ports/{port}/gid_attrs/types/{index}");
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

fn ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// The valid GIDs of a port: (index, gid, type).
fn gids(ctx: &Context, dev: &str, port: u8, table_len: i32) -> Vec<(i32, [u8; 16], String)> {
    (0..table_len.clamp(0, GID_SCAN))
        .filter_map(|i| {
            let gid = ctx.query_gid(port, i).ok()?;
            (gid != [0; 16]).then(|| (i, gid, gid_type(dev, port, i).unwrap_or_default()))
        })
        .collect()
}

/// The default RoCE GID index; see the module docs.
fn default_gid(list: &[(i32, [u8; 16], String)]) -> Option<i32> {
    let v2 = |t: &str| t.eq_ignore_ascii_case("RoCE v2");
    list.iter()
        .find(|(_, g, t)| v2(t) && ipv4_mapped(g))
        .or_else(|| list.iter().find(|(_, _, t)| v2(t)))
        .or_else(|| list.first())
        .map(|(i, _, _)| *i)
}

/// Formats a GID as IPv6 text.
pub(crate) fn gid_text(gid: &[u8; 16]) -> String {
    std::net::Ipv6Addr::from(*gid).to_string()
}

/// Opens the device and picks the port and GID; see the module docs.
pub(crate) fn select(opts: &VerbsOptions) -> Result<Selected, VerbsError> {
    let list = DeviceList::get()?;
    let mut seen = Vec::new();
    for i in 0..list.len() {
        let Some(name) = list.name(i) else { continue };
        seen.push(name.clone());
        if opts.device.as_ref().is_some_and(|d| *d != name) {
            continue;
        }
        let ctx = list.open(i)?;
        let dev_attr = ctx.query_device()?;
        let ports: Vec<u8> = match opts.port {
            Some(p) => vec![p],
            None => (1..=dev_attr.phys_port_cnt).collect(),
        };
        for port in ports {
            let Ok(port_attr) = ctx.query_port(port) else {
                continue;
            };
            if !active(&port_attr) {
                continue;
            }
            let ethernet = port_attr.link_layer == LINK_LAYER_ETHERNET;
            let gid_index = match (opts.gid_index, ethernet) {
                (Some(g), _) => Some(i32::from(g)),
                (None, true) => {
                    let table = gids(&ctx, &name, port, port_attr.gid_tbl_len);
                    Some(default_gid(&table).ok_or_else(|| {
                        VerbsError::NoDevice(format!(
                            "{name} port {port} is RoCE but has no GID (does its netdev have an IP address?)"
                        ))
                    })?)
                }
                (None, false) => None,
            };
            let gid = match gid_index {
                Some(g) => ctx.query_gid(port, g)?,
                None => [0; 16],
            };
            tracing::debug!(device = %name, port, ?gid_index, gid = %gid_text(&gid), "verbs port selected");
            return Ok(Selected {
                ctx,
                name,
                port,
                port_attr,
                dev_attr,
                gid_index: gid_index.map(|g| g as u8),
                gid,
            });
        }
        if opts.device.is_some() {
            return Err(VerbsError::NoDevice(format!(
                "{name} has no active port{}",
                opts.port.map(|p| format!(" {p}")).unwrap_or_default()
            )));
        }
    }
    Err(VerbsError::NoDevice(match &opts.device {
        Some(d) => format!("no device named {d} (found: {seen:?})"),
        None if seen.is_empty() => "no RDMA devices found".to_owned(),
        None => format!("no device with an active port (found: {seen:?})"),
    }))
}

/// One port of one device, as [`devices`] reports it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PortInfo {
    /// One line: name, port, state, link layer, MTU, GIDs.
    pub summary: String,
    /// The device name.
    pub device: String,
    /// The port number.
    pub port: u8,
    /// True if the port is `ACTIVE` (usable).
    pub active: bool,
}

fn state_name(s: u32) -> &'static str {
    match s {
        sys::ibv_port_state::IBV_PORT_DOWN => "DOWN",
        sys::ibv_port_state::IBV_PORT_INIT => "INIT",
        sys::ibv_port_state::IBV_PORT_ARMED => "ARMED",
        sys::ibv_port_state::IBV_PORT_ACTIVE => "ACTIVE",
        sys::ibv_port_state::IBV_PORT_ACTIVE_DEFER => "ACTIVE_DEFER",
        _ => "NOP",
    }
}

/// Bytes of an `ibv_mtu` value.
pub(crate) fn mtu_bytes(m: u32) -> u32 {
    if (1..=5).contains(&m) {
        128 << m
    } else {
        0
    }
}

/// Lists every port of every RDMA device on this machine, one line each.
///
/// # Errors
/// [`VerbsError::Os`] if libibverbs cannot list devices (no devices is an
/// empty list, not an error).
pub fn devices() -> Result<Vec<PortInfo>, VerbsError> {
    let list = DeviceList::get()?;
    let mut out = Vec::new();
    for i in 0..list.len() {
        let Some(name) = list.name(i) else { continue };
        let ctx = match list.open(i) {
            Ok(c) => c,
            Err(e) => {
                out.push(PortInfo {
                    summary: format!("{name}: cannot open: {e}"),
                    device: name,
                    port: 0,
                    active: false,
                });
                continue;
            }
        };
        let ports = ctx.query_device().map_or(0, |a| a.phys_port_cnt);
        for port in 1..=ports {
            let Ok(attr) = ctx.query_port(port) else {
                continue;
            };
            let link = match attr.link_layer {
                LINK_LAYER_ETHERNET => "Ethernet (RoCE)",
                LINK_LAYER_INFINIBAND => "InfiniBand",
                _ => "unspecified",
            };
            let gids: Vec<String> = gids(&ctx, &name, port, attr.gid_tbl_len)
                .iter()
                .map(|(i, g, t)| {
                    if t.is_empty() {
                        format!("[{i}] {}", gid_text(g))
                    } else {
                        format!("[{i}] {} {t}", gid_text(g))
                    }
                })
                .collect();
            let lid = if attr.link_layer == LINK_LAYER_ETHERNET {
                String::new()
            } else {
                format!(", lid {}", attr.lid)
            };
            out.push(PortInfo {
                summary: format!(
                    "{name} port {port}: {}, {link}, mtu {} (max {}){lid}, gids: {}",
                    state_name(attr.state),
                    mtu_bytes(attr.active_mtu),
                    mtu_bytes(attr.max_mtu),
                    if gids.is_empty() {
                        "none".to_owned()
                    } else {
                        gids.join(", ")
                    }
                ),
                device: name.clone(),
                port,
                active: active(&attr),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roce_v2_ipv4_mapped_gid_is_preferred() {
        let ll = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        v4[12..].copy_from_slice(&[10, 99, 0, 1]);
        let table = vec![
            (0, ll, "IB/RoCE v1".to_owned()),
            (1, ll, "RoCE v2".to_owned()),
            (2, v4, "IB/RoCE v1".to_owned()),
            (3, v4, "RoCE v2".to_owned()),
        ];
        assert_eq!(default_gid(&table), Some(3));
        assert_eq!(default_gid(&table[..3]), Some(1));
        assert_eq!(default_gid(&table[..1]), Some(0));
        assert_eq!(default_gid(&[]), None);
        assert_eq!(gid_text(&v4), "::ffff:10.99.0.1");
        assert_eq!(mtu_bytes(3), 1024);
    }
}
