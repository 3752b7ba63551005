//! The guarded predicate IR of sift: lowering from the AST per link type,
//! the reference evaluator, and the optimizer ([`opt`]).
//!
//! Pipeline: `sift_syntax::ast::Filter` → [`lower()`] (per link type) →
//! [`Pred`] → engines (cBPF codegen in `sift-bpf`, JIT, ...).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod eval;
pub mod linktype;
pub mod lower;
pub mod opt;
pub mod pred;

pub use eval::{matches, PacketView};
pub use linktype::LinkType;
pub use lower::{lower, LowerOptions};
pub use opt::{optimize, optimize_with, OptOptions};
pub use pred::{BinOp, CmpOp, Pred, Size, Test, Value, PROTOCHAIN_MAX_STEPS};
pub use sift_syntax::resolver::NameTables;
