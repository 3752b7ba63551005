//! Classic BPF: instructions, text formats (`-d`/`-dd`/`-ddd`), validator,
//! interpreter with libpcap `bpf_filter` semantics, and IR → cBPF codegen.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod insn;

pub use insn::Insn;
