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
//! * [`opt`]: the bounded optimizer [`codegen`] runs on its output (jump
//!   threading on path facts, tail merging, redundant and dead loads).
//!
//! ```
//! use sift_bpf::{codegen, interp, text, validate};
//! use sift_ir::{Pred, Size, Value};
//!
//! // ether[12:2] == 0x800
//! let ip = Pred::eq(Value::load(Size::Half, 12), 0x800);
//! let prog = codegen::compile(&ip, &codegen::CodegenOptions::default()).unwrap();
//! assert_eq!(
//!     text::dump_d(&prog),
//!     "(000) ldh      [12]\n(001) jeq      #0x800           jt 2\tjf 3\n(002) ret      #262144\n(003) ret      #0\n"
//! );
//! validate::validate(&prog).unwrap();
//! let filter = interp::Program::new(&prog).unwrap();
//! let mut packet = [0u8; 60];
//! packet[12] = 0x08;
//! assert_eq!(filter.run(&packet, 60), 262144);
//! assert_eq!(filter.run(&packet[..13], 60), 0); // too short: the load aborts
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codegen;
pub mod insn;
pub mod interp;
pub mod opt;
pub mod text;
pub mod validate;

pub use insn::Insn;
