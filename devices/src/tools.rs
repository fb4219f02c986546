//! What a tool can list and read (MPI 4.1 chapter 15, the tools
//! interface, in Rust): ferry's settings as control variables
//! ([`Config::settings`], the `FERRY_*` variables in force) and its
//! counters as performance variables ([`COUNTERS`], read from a
//! [`Counters`] snapshot: [`World::counters`](crate::World::counters)),
//! the same figures `FERRY_PRINT_COUNTERS=1` prints at finalize. The MPI C
//! ABI's `MPI_T_*` functions serve these two lists.

use crate::config::{Config, DeviceChoice, WaitMode};
use crate::counters::Counters;

/// A setting's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A number (bytes, microseconds).
    Number(u64),
    /// On or off.
    Flag(bool),
    /// A name (a device, a mode, a filter).
    Text(String),
}

/// A setting in force: its variable, what it does, its value. Settings
/// are read once, when the world starts; they cannot change after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable (`FERRY_EAGER_LIMIT`).
    pub name: &'static str,
    /// What it sets.
    pub desc: &'static str,
    /// The value in force (the default where the variable is unset).
    pub value: Value,
}

/// How a performance variable's value behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterClass {
    /// Only grows (`MPI_T_PVAR_CLASS_COUNTER`).
    Counter,
    /// The current size of something, up or down (`MPI_T_PVAR_CLASS_LEVEL`).
    Level,
}

/// A performance variable: one of the counters.
#[derive(Debug, Clone, Copy)]
pub struct CounterVar {
    /// Its name (`ferry_eager_sent`).
    pub name: &'static str,
    /// What it counts.
    pub desc: &'static str,
    /// How it behaves.
    pub class: CounterClass,
    read: fn(&Counters) -> u64,
}

impl CounterVar {
    /// Its value in `counters`.
    pub fn read(&self, counters: &Counters) -> u64 {
        (self.read)(counters)
    }
}

macro_rules! counters {
    ($($name:literal $class:ident |$c:ident| $read:expr, $desc:literal;)*) => {
        /// Every performance variable, in a fixed order (a tool's index).
        pub const COUNTERS: &[CounterVar] = &[$(CounterVar {
            name: $name,
            desc: $desc,
            class: CounterClass::$class,
            read: |$c: &Counters| $read,
        }),*];
    };
}

counters! {
    "ferry_eager_sent" Counter |c| c.engine.eager_sent, "eager messages sent";
    "ferry_eager_bytes" Counter |c| c.engine.eager_bytes, "payload bytes sent eagerly";
    "ferry_rndv_get_sent" Counter |c| c.engine.rndv_get_sent, "rendezvous messages sent by get";
    "ferry_rndv_put_sent" Counter |c| c.engine.rndv_put_sent, "rendezvous messages sent by put";
    "ferry_rndv_frag_sent" Counter |c| c.engine.rndv_frag_sent, "rendezvous messages sent in fragments";
    "ferry_rndv_bytes" Counter |c| c.engine.rndv_bytes, "payload bytes sent by rendezvous";
    "ferry_empty_returns" Counter |c| c.engine.empty_returns, "sends complete inside their call (REQUEST_EMPTY)";
    "ferry_packets_in" Counter |c| c.engine.packets_in, "packets received";
    "ferry_unexpected_arrivals" Counter |c| c.engine.unexpected_arrivals, "messages that arrived before a matching receive";
    "ferry_direct_receives" Counter |c| c.engine.direct_receives, "blocking receives done without a request";
    "ferry_posted_depth" Level |c| c.engine.posted_depth, "receives posted now";
    "ferry_unexpected_depth" Level |c| c.engine.unexpected_depth, "messages in the unexpected queue now";
    "ferry_match_attempts" Counter |c| c.engine.match_attempts, "queue entries examined while matching";
    "ferry_backpressure" Counter |c| c.engine.backpressure, "times the device pushed back";
    "ferry_credit_stalls" Counter |c| c.engine.credit_stalls, "eager-sized sends that went by rendezvous for lack of credits";
    "ferry_ready_unmatched" Counter |c| c.engine.ready_unmatched, "ready-mode messages that found no posted receive";
    "ferry_protocol_errors" Counter |c| c.engine.protocol_errors, "protocol violations detected from peers";
    "ferry_waits" Counter |c| c.waits, "calls that had to wait";
    "ferry_spins" Counter |c| c.spins, "rounds of the spin phase";
    "ferry_polls" Counter |c| c.polls, "rounds of polling where sleeping was impossible";
    "ferry_sleeps" Counter |c| c.sleeps, "times a waiter slept in the kernel";
    "ferry_driven" Counter |c| c.driven, "spin budgets renewed for a transfer only this rank moves";
    "ferry_wakeups_device" Counter |c| c.wakeups_device, "sleeps ended by the device";
    "ferry_wakeups_kick" Counter |c| c.wakeups_kick, "sleeps ended by another thread";
    "ferry_wake_timeouts" Counter |c| c.wake_timeouts, "sleeps ended by the safety-net timeout";
    "ferry_kicks" Counter |c| c.kicks, "kicks sent to sleeping threads";
    "ferry_rearms" Counter |c| c.rearms, "times a releasing thread re-armed the device";
}

/// A mode's name as its variable takes it.
fn name_of<T: PartialEq + Copy>(table: &[(&'static str, T)], v: T) -> String {
    table
        .iter()
        .find(|e| e.1 == v)
        .map_or("auto", |e| e.0)
        .to_owned()
}

impl Config {
    /// The settings in force, one per `FERRY_*` variable.
    pub fn settings(&self) -> Vec<Setting> {
        let e = &self.engine;
        let text = |s: String| Value::Text(s);
        let coll = |v: Option<String>| text(v.unwrap_or_else(|| "auto".into()));
        let device = match self.device {
            DeviceChoice::Auto => "auto",
            d => d.name(),
        };
        let wait = match self.wait_mode {
            WaitMode::Spin => "spin",
            WaitMode::Passive => "passive",
            _ => "hybrid",
        };
        vec![
            Setting {
                name: "FERRY_DEVICE",
                desc: "the device that carries the job's traffic",
                value: text(device.into()),
            },
            Setting {
                name: "FERRY_EAGER_LIMIT",
                desc: "the largest message sent eagerly, in bytes (0: the device's own)",
                value: Value::Number(e.eager_limit.unwrap_or(0) as u64),
            },
            Setting {
                name: "FERRY_RNDV_THRESHOLD",
                desc: "the size from which rendezvous uses RDMA, in bytes (0: the device's own)",
                value: Value::Number(e.rdma_threshold as u64),
            },
            Setting {
                name: "FERRY_RNDV_MODE",
                desc: "the rendezvous protocol",
                value: text(name_of(crate::config::RNDV_MODES, e.rndv_mode)),
            },
            Setting {
                name: "FERRY_WAIT_MODE",
                desc: "how waiting works",
                value: text(wait.into()),
            },
            Setting {
                name: "FERRY_SPIN_US",
                desc: "how long hybrid waiting polls before it sleeps, in microseconds",
                value: Value::Number(self.spin.as_micros() as u64),
            },
            Setting {
                name: "FERRY_THREAD_LEVEL",
                desc: "which threads may call",
                value: text(self.thread_level.name().into()),
            },
            Setting {
                name: "FERRY_ASYNC_PROGRESS",
                desc: "a progress thread",
                value: Value::Flag(self.async_progress),
            },
            Setting {
                name: "FERRY_PRINT_COUNTERS",
                desc: "print the counters at finalize",
                value: Value::Flag(self.print_counters),
            },
            Setting {
                name: "FERRY_COLL_NODE",
                desc: "node collectives through shared memory",
                value: Value::Flag(self.coll_node),
            },
            Setting {
                name: "FERRY_RMA_NODE",
                desc: "one-sided windows in shared memory on a node",
                value: Value::Flag(self.rma_node),
            },
            Setting {
                name: "FERRY_RECV_MAY_BE_EMPTY",
                desc: "the hint world and self start with",
                value: Value::Flag(e.recv_may_be_empty),
            },
            Setting {
                name: "FERRY_COLL_BCAST",
                desc: "the forced bcast algorithm",
                value: coll(self.coll.bcast.map(|a| snake(&format!("{a:?}")))),
            },
            Setting {
                name: "FERRY_COLL_ALLREDUCE",
                desc: "the forced allreduce algorithm",
                value: coll(self.coll.allreduce.map(|a| snake(&format!("{a:?}")))),
            },
            Setting {
                name: "FERRY_COLL_ALLGATHER",
                desc: "the forced allgather algorithm",
                value: coll(self.coll.allgather.map(|a| snake(&format!("{a:?}")))),
            },
            Setting {
                name: "FERRY_COLL_ALLTOALL",
                desc: "the forced alltoall algorithm",
                value: coll(self.coll.alltoall.map(|a| snake(&format!("{a:?}")))),
            },
            Setting {
                name: "FERRY_LOG",
                desc: "the tracing filter",
                value: text(self.log.clone().unwrap_or_default()),
            },
        ]
    }
}

/// `ScatterAllgather` as its variable spells it: `scatter_allgather`.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_back_what_the_variables_set() {
        let vars = [
            ("FERRY_EAGER_LIMIT", "16KiB"),
            ("FERRY_COLL_BCAST", "scatter_allgather"),
        ];
        let c = Config::from_lookup(|k| vars.iter().find(|v| v.0 == k).map(|v| v.1.to_owned()))
            .unwrap();
        let s = c.settings();
        let get = |n: &str| s.iter().find(|x| x.name == n).map(|x| x.value.clone());
        assert_eq!(get("FERRY_EAGER_LIMIT"), Some(Value::Number(16384)));
        assert_eq!(
            get("FERRY_COLL_BCAST"),
            Some(Value::Text("scatter_allgather".into()))
        );
        assert_eq!(
            get("FERRY_COLL_ALLREDUCE"),
            Some(Value::Text("auto".into()))
        );
        let names: std::collections::HashSet<_> = s.iter().map(|x| x.name).collect();
        assert_eq!(names.len(), s.len(), "every setting once");
    }

    #[test]
    fn counters_read_their_field() {
        let mut c = Counters::default();
        c.engine.eager_sent = 7;
        c.kicks = 3;
        let var = |n: &str| COUNTERS.iter().find(|v| v.name == n).unwrap();
        assert_eq!(var("ferry_eager_sent").read(&c), 7);
        assert_eq!(var("ferry_kicks").read(&c), 3);
        assert_eq!(var("ferry_posted_depth").class, CounterClass::Level);
    }
}
