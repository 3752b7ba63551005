//! Lexer, parser, abstract syntax tree and name tables of the pcap filter
//! language (pcap-filter(7)).
//!
//! [`parse`] accepts the language of libpcap 1.10.3's `pcap_compile()`
//! (keywords, qualifier inheritance, arithmetic quirks included), except
//! where libpcap master is stricter, and produces an [`ast::Filter`].
//! Displaying a filter ([`std::fmt::Display`]) prints it back fully
//! parenthesized with every qualifier spelled out.
//!
//! ```
//! use sift_syntax::{parse, ast::*};
//!
//! let f = parse("host 10.0.0.1 or 10.0.0.2").unwrap();
//! let Some(Expr::Or(_, rhs)) = &f.expr else { panic!() };
//! // The bare id inherited the `host` qualifier of the primitive before it.
//! let Expr::Prim(Primitive::Id { qual, id }, _) = &**rhs else { panic!() };
//! assert_eq!(qual.addr, Some(AddrQual::Host));
//! assert_eq!(*id, Id::Ipv4 { addr: 0x0a00_0002, parts: 4 });
//! assert_eq!(f.to_string(), "(host 10.0.0.1 or host 10.0.0.2)");
//!
//! let err = parse("tcp and 80").unwrap_err();
//! assert_eq!(err.span.start, 8);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ast;
pub mod error;
pub mod lexer;
pub mod names;
mod parser;
mod print;
pub mod resolver;
pub mod span;

pub use error::Error;
pub use parser::MAX_DEPTH;
pub use span::Span;

/// Parses a filter expression. Empty or all-whitespace text gives a filter
/// with no expression (accept everything).
///
/// Errors carry the span of the offending token (an empty span at the end
/// of the text for an unexpected end); [`Error::render`] shows it.
pub fn parse(source: &str) -> Result<ast::Filter, Error> {
    parser::parse_filter(source)
}
