//! Output: the OSU-style table (header lines start with `#`, data rows are
//! `size value [more columns]`) and the `--json` file (every repetition,
//! with the median and spread of each column).

use std::path::Path;

use serde_json::{json, Value};

use crate::cli::Subcommand;
use crate::job::{Bench, Sample};

/// The extra column appended when allocations are counted.
pub(crate) const ALLOCS: &str = "allocs/iter";

/// One size and its samples (one per repetition).
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// Message size in bytes.
    pub(crate) size: usize,
    /// Timed iterations.
    pub(crate) iters: usize,
    /// Warm-up iterations.
    pub(crate) warmup: usize,
    /// One per repetition, in column order.
    pub(crate) samples: Vec<Sample>,
}

impl Row {
    /// A row with no samples yet.
    pub(crate) fn new(size: usize, iters: usize, warmup: usize) -> Row {
        Row {
            size,
            iters,
            warmup,
            samples: Vec::new(),
        }
    }

    fn column(&self, i: usize) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.get(i).copied())
            .collect()
    }
}

/// The median of `v` (NaN if empty).
pub(crate) fn median(v: &[f64]) -> f64 {
    percentile(v, 0.5)
}

/// The `p` quantile of `v` by nearest rank (NaN if empty); sorts a copy.
pub(crate) fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * p).round() as usize]
}

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// What the run was, for the header and the JSON.
#[derive(Debug)]
pub(crate) struct Report {
    sub: &'static Subcommand,
    columns: Vec<&'static str>,
    context: Vec<(String, Value)>,
}

impl Report {
    /// Collects the run's context (device, thresholds, wait mode).
    ///
    /// # Errors
    /// A ferry error reading the protocol table.
    pub(crate) fn new(
        sub: &'static Subcommand,
        b: &Bench,
        counting: bool,
    ) -> Result<Report, String> {
        let world = &b.world;
        let table = world.protocol_table(b.peer).map_err(|e| e.to_string())?;
        let config = world.config();
        let mut columns = sub.columns.to_vec();
        if counting && sub.counts_allocations {
            columns.push(ALLOCS);
        }
        let o = &b.options;
        let binding = bindings(b)?;
        let context = vec![
            ("benchmark".into(), json!(sub.name)),
            ("device".into(), json!(world.device_name())),
            ("ranks".into(), json!(world.size())),
            ("eager_limit".into(), json!(table.eager_max)),
            ("rendezvous".into(), json!(format!("{:?}", table.rdma))),
            ("rdma_min".into(), json!(table.rdma_min)),
            ("fragment".into(), json!(table.fragment)),
            (
                "wait_mode".into(),
                json!(format!("{:?}", config.wait_mode).to_lowercase()),
            ),
            ("spin_us".into(), json!(config.spin.as_micros() as u64)),
            ("thread_level".into(), json!(world.thread_level().name())),
            ("reps".into(), json!(o.reps)),
            ("validate".into(), json!(o.validate)),
            ("window".into(), json!(o.window)),
            ("binding".into(), json!(binding)),
        ];
        Ok(Report {
            sub,
            columns,
            context,
        })
    }

    /// Prints the `#` header lines.
    pub(crate) fn print_header(
        &self,
        sizes: &[usize],
        iterations: impl Fn(usize) -> (usize, usize),
    ) {
        let get = |k: &str| {
            self.context
                .iter()
                .find(|(n, _)| n == k)
                .map_or(String::new(), |(_, v)| {
                    v.to_string().trim_matches('"').to_owned()
                })
        };
        println!("# ferry-bench {}: {}", self.sub.name, self.sub.about);
        println!(
            "# device {}, {} ranks, eager limit {} B, rendezvous {} from {} B (fragment {} B)",
            get("device"),
            get("ranks"),
            get("eager_limit"),
            get("rendezvous"),
            get("rdma_min"),
            get("fragment")
        );
        println!("# binding (CPUs each rank may run on): {}", get("binding"));
        println!(
            "# wait mode {} (spin {} us), thread level {}, repetitions {}, validate {}",
            get("wait_mode"),
            get("spin_us"),
            get("thread_level"),
            get("reps"),
            if get("validate") == "true" {
                "on"
            } else {
                "off"
            }
        );
        let mut groups: Vec<(usize, usize, usize, usize)> = Vec::new();
        for &s in sizes {
            let (i, w) = iterations(s);
            match groups.last_mut() {
                Some(g) if (g.2, g.3) == (i, w) => g.1 = s,
                _ => groups.push((s, s, i, w)),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(a, b, i, w)| format!("{a}..{b} B: {i} (+{w} warm-up)"))
            .collect();
        println!("# iterations: {}", parts.join("; "));
        let mut line = format!("# {:<10}", "size");
        for c in &self.columns {
            line.push_str(&format!(" {c:>14}"));
        }
        println!("{line}");
    }

    /// Prints a row: the median over repetitions of each column.
    pub(crate) fn print_row(&self, row: &Row) {
        let mut line = format!("  {:<10}", row.size);
        for i in 0..self.columns.len() {
            line.push_str(&format!(" {:>14}", fmt(median(&row.column(i)))));
        }
        println!("{line}");
    }

    /// Writes every repetition, median, min, max and relative spread.
    ///
    /// # Errors
    /// The file cannot be written.
    pub(crate) fn write_json(&self, path: &Path, rows: &[Row]) -> Result<(), String> {
        let results: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut cols = serde_json::Map::new();
                for (i, name) in self.columns.iter().enumerate() {
                    let v = row.column(i);
                    let (lo, hi) = v
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                            (a.min(x), b.max(x))
                        });
                    let med = median(&v);
                    cols.insert(
                        (*name).to_owned(),
                        json!({
                            "median": med,
                            "min": lo,
                            "max": hi,
                            "spread": if med != 0.0 { (hi - lo) / med } else { 0.0 },
                            "values": v,
                        }),
                    );
                }
                json!({"size": row.size, "iters": row.iters, "warmup": row.warmup, "columns": cols})
            })
            .collect();
        let mut doc: serde_json::Map<String, Value> = self.context.iter().cloned().collect();
        doc.insert("columns".into(), json!(self.columns));
        doc.insert("results".into(), Value::Array(results));
        let text = serde_json::to_string_pretty(&Value::Object(doc)).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

/// Every rank's CPUs, as `--report-bindings` shows them: `rank 0: 0; rank
/// 1: 1` for a pinned job, `rank 0: 0-1; ...` for an unbound one on two
/// CPUs. Collective (an allgather of each rank's mask of its first 64
/// CPUs).
///
/// # Errors
/// A ferry error in the allgather.
fn bindings(b: &Bench) -> Result<String, String> {
    let mask = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map(|set| {
            (0..64).fold(0u64, |m, c| {
                m | u64::from(set.is_set(c).unwrap_or(false)) << c
            })
        })
        .unwrap_or(0);
    let mut all = vec![0u64; b.comm.size() as usize];
    b.comm
        .allgather(&[mask], &mut all)
        .map_err(|e| format!("allgather of the bindings: {e}"))?;
    Ok(all
        .iter()
        .enumerate()
        .map(|(r, &m)| format!("rank {r}: {}", cpu_list(m)))
        .collect::<Vec<_>>()
        .join("; "))
}

/// `0-3,6` for a mask of CPUs.
fn cpu_list(mask: u64) -> String {
    let mut parts = Vec::new();
    let mut c = 0;
    while c < 64 {
        if mask >> c & 1 == 0 {
            c += 1;
            continue;
        }
        let start = c;
        while c < 64 && mask >> c & 1 == 1 {
            c += 1;
        }
        parts.push(if c - 1 == start {
            start.to_string()
        } else {
            format!("{start}-{}", c - 1)
        });
    }
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join(",")
    }
}

#[cfg(test)]
mod binding_tests {
    #[test]
    fn cpu_lists_read_like_taskset() {
        assert_eq!(super::cpu_list(0b1), "0");
        assert_eq!(super::cpu_list(0b11), "0-1");
        assert_eq!(super::cpu_list(0b100_1111), "0-3,6");
        assert_eq!(super::cpu_list(0), "unknown");
    }
}
