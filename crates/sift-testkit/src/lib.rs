//! Test infrastructure for sift: oracles, random generators and the
//! differential harness.
//!
//! * [`libpcap`]: the installed libpcap 1.10.3 through FFI (`pcap_compile`,
//!   `bpf_filter`): the semantic reference.
//! * [`kernel`]: the Linux kernel's classic-BPF engine (`SO_ATTACH_FILTER`
//!   on an `AF_UNIX` datagram socket pair).
//! * [`rng`]: a small deterministic PRNG.
//! * [`pool`]: the shared pools of addresses, ports and numbers that both
//!   generators draw from, so that random filters match random packets often.
//! * [`packets`]: structured random packets per link type, truncated often.
//! * [`exprs`]: a grammar-based random filter-expression generator.
//! * [`testrun`]: the name tables libpcap's TESTrun sets up.
//! * [`diff`]: the differential campaign (libpcap vs sift's evaluator,
//!   interpreter and codegen vs the kernel) with shrinking and a report.
//!
//! The `difftest` binary runs campaigns from the command line.

#![warn(missing_docs)]

pub mod diff;
pub mod exprs;
pub mod kernel;
pub mod libpcap;
pub mod packets;
mod packets_links;
pub mod packets_tunnel;
mod packets_wlan;
pub mod pool;
pub mod rng;
pub mod testrun;

pub use rng::Rng;
/// The link type the packet generators take (re-exported so that tests
/// need not depend on sift-ir to name it).
pub use sift_ir::LinkType;

/// A number from the environment variable `name` (decimal or `0x` hex,
/// `_` separators allowed), or `default` when it is not set: how the long
/// test campaigns are sized from the command line (`SIFT_DIFF_SEED`,
/// `SIFT_PIPELINE_PER_LINKTYPE`, ...). Panics on a value that is not a
/// number.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => {
            let v = v.trim().replace('_', "");
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|e| panic!("{name}={v:?}: not a number ({e})"))
        }
    }
}
