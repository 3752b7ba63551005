//! Lowering: AST → [`Pred`](crate::Pred), per link type, reproducing libpcap
//! 1.10.3's unoptimized code generation (evaluation order and loads).

use crate::linktype::LinkType;
use crate::pred::Pred;
use sift_syntax::ast::Filter;
use sift_syntax::Error;

/// What lowering needs besides the expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// The link-layer header type of the packets.
    pub linktype: LinkType,
    /// The IPv4 netmask for `ip broadcast` (`None`: unknown, and
    /// `ip broadcast` is an error, as `PCAP_NETMASK_UNKNOWN` in libpcap).
    pub netmask: Option<u32>,
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions { linktype: LinkType::EN10MB, netmask: None }
    }
}

/// Lowers a parsed filter to a predicate. The empty filter is [`Pred::True`].
pub fn lower(filter: &Filter, opts: &LowerOptions) -> Result<Pred, Error> {
    let _ = (filter, opts);
    Err(Error::new("lowering not implemented yet", sift_syntax::Span::default()))
}
