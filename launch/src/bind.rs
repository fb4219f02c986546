//! Where ranks run: `ferryrun --bind-to core|none --map-by core|package`.
//!
//! Open MPI binds each rank to a core by default, so an Open MPI user's
//! first ping-pong runs pinned; ferryrun does the same, so its first
//! command measures what the user will get, not the scheduler's moods.
//! By default (`auto`) each rank is bound to one CPU when the job's ranks
//! fit on the CPUs ferryrun may use, and left unbound when they do not
//! (an oversubscribed job must let the scheduler move ranks, or ranks that
//! share a CPU would wait whole time slices for each other).
//!
//! `--map-by core` gives rank `i` the `i`-th CPU ferryrun may use;
//! `--map-by package` deals the ranks round-robin over the physical
//! packages (sockets) first, as Open MPI's `--map-by socket`, reading the
//! topology from sysfs.

use std::collections::BTreeMap;

use nix::sched::CpuSet;

use crate::args::UsageError;

/// `--bind-to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BindTo {
    /// One CPU per rank when the ranks fit, none otherwise (the default).
    #[default]
    Auto,
    /// One CPU per rank; more ranks than CPUs is an error.
    Core,
    /// No binding.
    None,
}

/// `--map-by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MapBy {
    /// In the order of the CPUs ferryrun may use (the default).
    #[default]
    Core,
    /// Round-robin over physical packages first.
    Package,
}

impl BindTo {
    pub(crate) fn parse(s: &str) -> Result<BindTo, UsageError> {
        match s {
            "auto" => Ok(BindTo::Auto),
            "core" | "cpu" | "hwthread" => Ok(BindTo::Core),
            "none" => Ok(BindTo::None),
            _ => Err(UsageError(format!(
                "--bind-to {s:?}: expected core, none or auto"
            ))),
        }
    }
}

impl MapBy {
    pub(crate) fn parse(s: &str) -> Result<MapBy, UsageError> {
        match s {
            "core" | "slot" => Ok(MapBy::Core),
            "package" | "socket" => Ok(MapBy::Package),
            _ => Err(UsageError(format!(
                "--map-by {s:?}: expected core or package"
            ))),
        }
    }
}

/// The CPUs this process may run on, in increasing order.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The physical package of `cpu`, from sysfs (`None` where it cannot be
/// read: a container without sysfs, an unusual kernel).
pub(crate) fn package_of(cpu: usize) -> Option<u32> {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id");
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The CPU of every rank, or `None` for an unbound job.
///
/// # Errors
/// `--bind-to core` with more ranks than CPUs, or no CPU to bind to.
pub fn plan(
    ranks: u32,
    bind: BindTo,
    map: MapBy,
    cpus: &[usize],
    package: impl Fn(usize) -> Option<u32>,
) -> Result<Option<Vec<usize>>, UsageError> {
    let n = ranks as usize;
    let fits = !cpus.is_empty() && n <= cpus.len();
    match bind {
        BindTo::None => return Ok(None),
        BindTo::Auto if !fits => return Ok(None),
        BindTo::Core if !fits => {
            return Err(UsageError(format!(
                "--bind-to core: {n} ranks but ferryrun may use {} CPU(s); use --bind-to none \
                 to oversubscribe",
                cpus.len()
            )))
        }
        _ => {}
    }
    let order: Vec<usize> = match map {
        MapBy::Core => cpus.to_vec(),
        MapBy::Package => {
            // Each package's CPUs in order, then dealt one per package.
            let mut by_package: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for &c in cpus {
                by_package
                    .entry(package(c).unwrap_or(0))
                    .or_default()
                    .push(c);
            }
            let deepest = by_package.values().map(Vec::len).max().unwrap_or(0);
            (0..deepest)
                .flat_map(|i| by_package.values().filter_map(move |v| v.get(i).copied()))
                .collect()
        }
    };
    Ok(Some(order.into_iter().take(n).collect()))
}

/// The line `--report-bindings` prints for `rank`.
pub(crate) fn report(rank: u32, cpu: Option<usize>) -> String {
    match cpu {
        Some(c) => format!("rank {rank} bound to cpu {c}"),
        None => format!("rank {rank} not bound"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_topology(_: usize) -> Option<u32> {
        None
    }

    #[test]
    fn auto_binds_when_the_ranks_fit_and_not_otherwise() {
        let cpus = [0, 1];
        let p = plan(2, BindTo::Auto, MapBy::Core, &cpus, no_topology).unwrap();
        assert_eq!(p, Some(vec![0, 1]));
        let p = plan(3, BindTo::Auto, MapBy::Core, &cpus, no_topology).unwrap();
        assert_eq!(p, None, "oversubscribed: left to the scheduler");
        let p = plan(1, BindTo::None, MapBy::Core, &cpus, no_topology).unwrap();
        assert_eq!(p, None);
    }

    #[test]
    fn core_binding_follows_the_allowed_cpus_and_refuses_oversubscription() {
        // ferryrun itself under `taskset -c 2,5,7`.
        let cpus = [2, 5, 7];
        let p = plan(2, BindTo::Core, MapBy::Core, &cpus, no_topology).unwrap();
        assert_eq!(p, Some(vec![2, 5]));
        let e = plan(4, BindTo::Core, MapBy::Core, &cpus, no_topology).unwrap_err();
        assert!(e.0.contains("--bind-to none"), "{e}");
        let e = plan(1, BindTo::Core, MapBy::Core, &[], no_topology).unwrap_err();
        assert!(e.0.contains("0 CPU"), "{e}");
    }

    #[test]
    fn package_mapping_deals_over_packages_first() {
        // CPUs 0-3 on package 0, 4-7 on package 1.
        let cpus: Vec<usize> = (0..8).collect();
        let topo = |c: usize| Some((c / 4) as u32);
        let p = plan(4, BindTo::Core, MapBy::Package, &cpus, topo).unwrap();
        assert_eq!(p, Some(vec![0, 4, 1, 5]));
        // Unknown topology: one package, so the order of the CPUs.
        let p = plan(3, BindTo::Core, MapBy::Package, &cpus, no_topology).unwrap();
        assert_eq!(p, Some(vec![0, 1, 2]));
    }

    #[test]
    fn names_parse_and_mistakes_say_what_is_expected() {
        assert_eq!(BindTo::parse("core").unwrap(), BindTo::Core);
        assert_eq!(BindTo::parse("none").unwrap(), BindTo::None);
        assert_eq!(BindTo::parse("auto").unwrap(), BindTo::Auto);
        assert_eq!(MapBy::parse("socket").unwrap(), MapBy::Package);
        assert!(BindTo::parse("numa")
            .unwrap_err()
            .0
            .contains("core, none or auto"));
        assert!(MapBy::parse("node")
            .unwrap_err()
            .0
            .contains("core or package"));
    }
}
