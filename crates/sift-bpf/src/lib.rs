//! Classic BPF: instructions, text formats (`-d`/`-dd`/`-ddd`), validator,
//! interpreter with libpcap `bpf_filter` semantics, and IR → cBPF codegen.
//!
//! * [`text`]: libpcap 1.10.3's `bpf_dump()` output, byte for byte, and a
//!   parser for the `-ddd`, `-dd` and `tc`/`iptables` comma forms.
//! * [`validate`]: the Linux kernel's `SO_ATTACH_FILTER` checks.
//! * [`interp`]: a pre-decoding interpreter with libpcap 1.10.3 `bpf_filter`
//!   semantics.
//! * [`codegen`]: [`sift_ir::Pred`] → a program that gives the same verdicts
//!   in libpcap and in the Linux kernel.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codegen;
pub mod insn;
pub mod interp;
pub mod text;
pub mod validate;

pub use insn::Insn;
