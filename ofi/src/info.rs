//! Choosing a provider with `fi_getinfo`, and listing what this machine
//! offers (for `ferry-info` and for the error a bad provider name gets).

use crate::error::OfiError;
use crate::ffi::{Fabric, Info, InfoList};
use crate::sys;

/// The MR modes this device can satisfy (see `rma.rs` and `eager.rs`):
/// local descriptors, virtual or offset addressing, provider keys,
/// allocated-memory-only registration, and per-endpoint binding.
pub(crate) const MR_MODES: u64 = sys::FI_MR_LOCAL as u64
    | sys::FI_MR_VIRT_ADDR as u64
    | sys::FI_MR_PROV_KEY as u64
    | sys::FI_MR_ALLOCATED as u64
    | sys::FI_MR_ENDPOINT as u64;

/// Modes the device honours: it passes an `fi_context2` with every
/// operation.
const MODES: u64 = sys::FI_CONTEXT | sys::FI_CONTEXT2;

const BASE_CAPS: u64 = sys::FI_TAGGED as u64 | sys::FI_MSG as u64;
const RMA_CAPS: u64 = sys::FI_RMA as u64
    | sys::FI_READ as u64
    | sys::FI_WRITE as u64
    | sys::FI_REMOTE_READ as u64
    | sys::FI_REMOTE_WRITE as u64;

/// The chosen provider entry.
#[derive(Debug)]
pub(crate) struct Chosen {
    pub(crate) info: InfoList,
    pub(crate) rma: bool,
}

fn hints(provider: Option<&str>, rma: bool) -> Result<InfoList, OfiError> {
    let mut h = InfoList::alloc_hints()?;
    let mut m = h.hints_mut();
    m.set_caps(if rma { BASE_CAPS | RMA_CAPS } else { BASE_CAPS }, MODES);
    // Per-pair order of sends (send-after-send) is the device contract's
    // FIFO rule; the receive side restores order of *completions* itself.
    m.set_attrs(MR_MODES, u64::from(sys::FI_ORDER_SAS));
    if let Some(p) = provider {
        m.set_provider(p)?;
    }
    Ok(h)
}

fn usable(e: &Info<'_>) -> bool {
    e.is_rdm() && e.mode() & !MODES == 0 && e.mr_mode() & !MR_MODES == 0
}

/// The first usable entry for `provider` (libfabric's first choice when
/// `None`), with RMA if the provider has it.
///
/// # Errors
/// [`OfiError::NoProvider`] listing what `fi_getinfo` offers, or a
/// libfabric failure.
pub(crate) fn choose(provider: Option<&str>) -> Result<Chosen, OfiError> {
    for rma in [true, false] {
        let h = hints(provider, rma)?;
        let Some(list) = InfoList::get(Some(&h))? else {
            continue;
        };
        let found = list.iter().find(usable).map(|e| {
            tracing::debug!(
                provider = e.provider(),
                fabric = e.fabric(),
                domain = e.domain(),
                rma,
                "ofi provider chosen"
            );
            InfoList::dup(e)
        });
        if let Some(info) = found {
            return Ok(Chosen { info: info?, rma });
        }
    }
    Err(OfiError::NoProvider {
        wanted: provider.map(str::to_owned),
        offers: offers(),
    })
}

/// Every provider name `fi_getinfo` reports (any endpoint type), once each.
fn offers() -> Vec<String> {
    let Ok(Some(list)) = InfoList::get(None) else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for e in list.iter() {
        let p = e.provider();
        if !names.contains(&p) {
            names.push(p);
        }
    }
    names
}

/// One `fi_getinfo` entry ferry could use.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// One line describing the entry.
    pub summary: String,
    /// The provider (`tcp;ofi_rxm`, `shm`, `verbs;ofi_rxm`, ...): a valid
    /// `FERRY_OFI_PROVIDER`.
    pub provider: String,
    /// The fabric's name.
    pub fabric: String,
    /// The domain's name.
    pub domain: String,
    /// Offers FI_RMA (rendezvous by `fi_read`).
    pub rma: bool,
    /// Its CQ can be opened with FI_WAIT_FD (passive waiting); `None` if the
    /// probe could not open an endpoint at all.
    pub wait_fd: Option<bool>,
}

fn mr_mode_text(m: u64) -> String {
    let names = [
        (sys::FI_MR_LOCAL as u64, "local"),
        (sys::FI_MR_VIRT_ADDR as u64, "virt_addr"),
        (sys::FI_MR_PROV_KEY as u64, "prov_key"),
        (sys::FI_MR_ALLOCATED as u64, "allocated"),
        (sys::FI_MR_ENDPOINT as u64, "endpoint"),
    ];
    let set: Vec<&str> = names
        .iter()
        .filter(|(b, _)| m & b != 0)
        .map(|(_, n)| *n)
        .collect();
    if set.is_empty() {
        "none".to_owned()
    } else {
        set.join("|")
    }
}

/// What this machine offers: every FI_EP_RDM entry with tagged messages,
/// each probed for FI_WAIT_FD by opening a CQ and an endpoint.
///
/// # Errors
/// libfabric cannot be queried.
pub fn providers() -> Result<Vec<ProviderInfo>, OfiError> {
    let mut out: Vec<ProviderInfo> = Vec::new();
    // With RMA first: an entry's caps only show what the hints asked for.
    for rma_hint in [true, false] {
        let h = hints(None, rma_hint)?;
        if let Some(list) = InfoList::get(Some(&h))? {
            list_entries(&list, &mut out);
        }
    }
    Ok(out)
}

fn list_entries(list: &InfoList, out: &mut Vec<ProviderInfo>) {
    for e in list.iter().filter(usable) {
        let seen = out.iter().any(|p| {
            p.provider == e.provider() && p.fabric == e.fabric() && p.domain == e.domain()
        });
        if seen {
            continue;
        }
        let rma = e.caps() & RMA_CAPS == RMA_CAPS;
        let wait_fd = InfoList::dup(e)
            .ok()
            .and_then(|one| Fabric::open(&one, 16, true, None).ok())
            .map(|f| f.wait_fd().is_some());
        let yes = |b: bool| if b { "yes" } else { "no" };
        let summary = format!(
            "{} fabric={} domain={} rma={} wait_fd={} mr_mode={} progress={} inject={}",
            e.provider(),
            e.fabric(),
            e.domain(),
            yes(rma),
            wait_fd.map_or("?", yes),
            mr_mode_text(e.mr_mode()),
            if e.manual_progress() {
                "manual"
            } else {
                "auto"
            },
            e.inject_size(),
        );
        out.push(ProviderInfo {
            summary,
            provider: e.provider(),
            fabric: e.fabric(),
            domain: e.domain(),
            rma,
            wait_fd,
        });
    }
}
