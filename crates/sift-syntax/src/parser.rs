//! The parser: hand-written recursive descent over the tokens of
//! [`crate::lexer`], accepting the language of libpcap's `grammar.y`.
//!
//! # How it maps to libpcap's grammar
//!
//! ```text
//! expr   := term | expr (and|or) term | expr (and|or) id
//! term   := not term | '(' expr ')' | head id | pname | arith relop arith | other
//! head   := [pname] dqual [aqual] | [pname] aqual | [pname] proto | [pname] protochain
//!         | [pname] gateway
//! id     := nid | pnum | '(' pid ')'
//! nid    := ID | HID ['/' NUM | mask HID] | HID6 ['/' NUM] | EID | AID | not id
//! pid    := nid ((and|or) id)* | pnum ((and|or) id)+
//! pnum   := NUM | '(' pnum ')'
//! ```
//!
//! `and` and `or` have equal precedence and associate to the left; chains
//! are built iteratively (left-deep), so their length is not limited.
//!
//! **Qualifier inheritance.** A bare `id` after `and`/`or` takes the
//! qualifier triple "in force", which is the one of the element just before
//! it: a `head id` term sets it to its head, an `id` keeps it, `( expr )`
//! restores the one in force before the parenthesis, `not term` passes the
//! inner term's through, and every other term (an abbreviation like `tcp`, a
//! relation, `vlan 100`, ...) clears it, so that a bare id after it is an
//! error, as in libpcap (`tcp and 80`).
//!
//! **Ambiguities** (the places where bison's LALR automaton decides with
//! its lookahead) are resolved by trying the alternatives in order and
//! keeping the first that succeeds; the alternatives never overlap:
//! - after `and`/`or`, a `(`, `not` or a number may start an `id` or a
//!   `term`: the id is tried first and kept if it ends where an id may end;
//! - at the start of a term, `(` may open `( expr )` or the first operand
//!   of a relation (`(len - 4) > 10`): the relation is tried first.
//!
//! Arithmetic follows bison's precedences: `|` < `&` < `<< >>` < `+ -` <
//! `* /` < unary `-`, all left-associative. `%` and `^` have no precedence
//! in `grammar.y`, so bison always shifts them: they bind tighter than the
//! operator on their left and their right operand runs to the end of the
//! arithmetic expression (`2*3%4` is `2*(3%4)`, `1+2^3` is `1+(2^3)`).
//!
//! Nesting (parentheses, `not`, unary minus, `%`/`^` right operands,
//! arithmetic trees) is limited to [`MAX_DEPTH`] levels so that hostile
//! input cannot exhaust the stack here or in later passes.

use std::collections::HashMap;

use crate::ast::*;
use crate::error::Error;
use crate::lexer::{self, Kw, Punct, Tok, Token};
use crate::span::Span;

/// How deeply expressions may nest: parentheses, `not`, unary minus and
/// arithmetic operator trees each count one level. `and`/`or` chains do not
/// count (they are built iteratively, left-deep).
pub const MAX_DEPTH: u32 = 500;

type PResult<T> = Result<T, Error>;

/// Parses `source` into a [`Filter`].
pub(crate) fn parse_filter(source: &str) -> PResult<Filter> {
    let (toks, lex_err) = lexer::tokenize_prefix(source);
    if toks.is_empty() {
        return match lex_err {
            Some(e) => Err(e),
            None => Ok(Filter { source: source.to_string(), expr: None }),
        };
    }
    // With a lexical error, the tokens stop before it and the parser sees
    // the end there: a syntax error found earlier is reported, otherwise
    // the lexical error is.
    let end = lex_err.as_ref().map_or(source.len(), |e| e.span.start as usize);
    let mut p = Parser {
        src: source,
        toks,
        end,
        pos: 0,
        depth: 0,
        fatal: None,
        arith_paren_failures: HashMap::new(),
        bare_name_end: None,
    };
    let result = p.top();
    match (result, lex_err) {
        (Ok(expr), None) => Ok(Filter { source: source.to_string(), expr: Some(expr) }),
        (Ok(_), Some(le)) => Err(le),
        (Err(pe), Some(le)) if pe.span.start as usize >= end => Err(le),
        (Err(pe), _) => Err(pe),
    }
}

/// `and` or `or`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BoolOp {
    And,
    Or,
}

fn combine(op: BoolOp, l: Expr, r: Expr) -> Expr {
    match op {
        BoolOp::And => Expr::And(Box::new(l), Box::new(r)),
        BoolOp::Or => Expr::Or(Box::new(l), Box::new(r)),
    }
}

/// An `id` as parsed, before its qualifier is applied (the qualifier check
/// and value conversions happen only once the parser commits to the id).
#[derive(Debug)]
enum RawId {
    /// A single token: NUM, ID, HID, HID6, EID or AID (the token index).
    Leaf(usize),
    /// `pnum` in parentheses: the number and the span of the whole group.
    ParenNum(u32, Span),
    /// `HID / NUM` or `HID6 / NUM`: token indexes of the address and length.
    Prefix(usize, usize),
    /// `HID mask HID`: token indexes of both addresses.
    Mask(usize, usize),
    /// `not id`, with the span of the `not`.
    Not(Box<RawId>, Span),
    /// `( pid )`: the first element and the rest with their operators.
    List(Box<RawId>, Vec<(BoolOp, RawId)>),
}

/// The qualifier triple in force; `None` is libpcap's `qerr` (no qualifier
/// to inherit).
type InForce = Option<Qual>;

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    /// Where the tokens end: the end of the source, or the start of a
    /// lexical error.
    end: usize,
    pos: usize,
    depth: u32,
    /// An error that must not be recovered from by backtracking (nesting
    /// too deep).
    fatal: Option<Error>,
    /// `(` tokens (by index) known not to start a parenthesized arithmetic
    /// operand, with the error: the answer does not depend on context, and
    /// remembering it keeps the relation-or-parenthesis guesses linear.
    arith_paren_failures: HashMap<usize, Error>,
    /// The token index just after the last bare name that inherited a
    /// qualifier (`hots` in `port 80 and hots 1.2.3.4`), with its span: an
    /// unexpected token right there is reported at the name, which is
    /// probably a misspelled keyword.
    bare_name_end: Option<(usize, Span)>,
}

impl Parser<'_> {
    // ----------------------------------------------------------------
    // Token helpers.

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn peek_kw(&self) -> Option<Kw> {
        match self.peek() {
            Some(Tok::Kw(k)) => Some(*k),
            _ => None,
        }
    }

    fn peek_punct(&self) -> Option<Punct> {
        match self.peek() {
            Some(Tok::Punct(p)) => Some(*p),
            _ => None,
        }
    }

    fn is_punct(&self, p: Punct) -> bool {
        self.peek_punct() == Some(p)
    }

    fn is_kw(&self, k: Kw) -> bool {
        self.peek_kw() == Some(k)
    }

    /// Span of token `i`, or an empty span at the end of the source.
    fn span_of(&self, i: usize) -> Span {
        match self.toks.get(i) {
            Some(t) => t.span,
            None => lexer::span(self.end, self.end),
        }
    }

    fn here(&self) -> Span {
        self.span_of(self.pos)
    }

    /// Span of the last consumed token.
    fn prev(&self) -> Span {
        self.pos.checked_sub(1).map_or_else(|| self.here(), |i| self.span_of(i))
    }

    fn text(&self, sp: Span) -> &str {
        self.src.get(sp.range()).unwrap_or("")
    }

    /// A syntax error at the current token.
    #[inline(never)]
    fn unexpected(&self, expected: &str) -> Error {
        let sp = self.here();
        if let Some((end, name)) = self.bare_name_end {
            if end == self.pos && self.pos < self.toks.len() {
                return Error::new(
                    format!(
                        "syntax error: unexpected '{}' after '{}' (is '{}' a misspelled keyword?)",
                        self.text(sp),
                        self.text(name),
                        self.text(name)
                    ),
                    name,
                );
            }
        }
        let found = if self.pos >= self.toks.len() {
            "syntax error: unexpected end of expression".to_string()
        } else {
            format!("syntax error: unexpected '{}'", self.text(sp))
        };
        if expected.is_empty() {
            Error::new(found, sp)
        } else {
            Error::new(format!("{found}, expected {expected}"), sp)
        }
    }

    fn expect_punct(&mut self, p: Punct, expected: &str) -> PResult<Span> {
        if self.is_punct(p) {
            self.pos += 1;
            Ok(self.prev())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn expect_num(&mut self, expected: &str) -> PResult<(u32, Span)> {
        match self.peek() {
            Some(Tok::Num(n)) => {
                let n = *n;
                self.pos += 1;
                Ok((n, self.prev()))
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    fn expect_name(&mut self, expected: &str) -> PResult<(String, Span)> {
        match self.peek() {
            Some(Tok::Id(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok((s, self.prev()))
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// Runs `f` one nesting level deeper.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_DEPTH {
            return Err(self.too_deep());
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// The (fatal) error for nesting beyond [`MAX_DEPTH`].
    #[cold]
    #[inline(never)]
    fn too_deep(&mut self) -> Error {
        let e =
            Error::new(format!("expression nested too deeply (more than {MAX_DEPTH} levels)"), self.here());
        self.fatal = Some(e.clone());
        e
    }

    /// Tries `f`; on failure restores the position (the error is returned
    /// for reporting unless it is fatal, which is propagated as is).
    fn attempt<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> Result<PResult<T>, Error> {
        let save = self.pos;
        let r = f(self);
        if let Some(e) = &self.fatal {
            return Err(e.clone());
        }
        if r.is_err() {
            self.pos = save;
        }
        Ok(r)
    }

    // ----------------------------------------------------------------
    // Boolean structure.

    fn top(&mut self) -> PResult<Expr> {
        let (e, _) = self.expr(None)?;
        if self.pos < self.toks.len() {
            let msg = if self.is_punct(Punct::RParen) { "" } else { "'and', 'or' or the end" };
            return Err(self.unexpected(msg));
        }
        Ok(*e)
    }

    // The functions on the recursion paths pass boxed trees around so that
    // their stack frames stay small: nesting is bounded by MAX_DEPTH, and
    // every level costs a few frames.

    /// `expr`: a term followed by any number of `and`/`or` operands.
    fn expr(&mut self, q_in: InForce) -> PResult<(Box<Expr>, InForce)> {
        let (mut lhs, mut q) = self.term(q_in)?;
        loop {
            let op = match self.peek_kw() {
                Some(Kw::And) => BoolOp::And,
                Some(Kw::Or) => BoolOp::Or,
                _ => break,
            };
            self.pos += 1;
            let (rhs, q2) = self.term_or_id(q)?;
            lhs = Box::new(match op {
                BoolOp::And => Expr::And(lhs, rhs),
                BoolOp::Or => Expr::Or(lhs, rhs),
            });
            q = q2;
        }
        Ok((lhs, q))
    }

    /// Whether the current token may follow an `id` in an expression.
    fn at_id_follow(&self) -> bool {
        matches!(self.peek(), None | Some(Tok::Kw(Kw::And | Kw::Or)) | Some(Tok::Punct(Punct::RParen)))
    }

    /// The operand after `and`/`or`: a term, or an id inheriting `q`.
    #[inline(never)]
    fn term_or_id(&mut self, q: InForce) -> PResult<(Box<Expr>, InForce)> {
        match self.peek() {
            Some(Tok::Id(_) | Tok::Hid(_) | Tok::Hid6(..) | Tok::Eid(_) | Tok::Aid(_)) => {
                let raw = self.id()?;
                Ok((self.build_boxed(&raw, q)?, q))
            }
            Some(Tok::Num(_) | Tok::Punct(Punct::LParen) | Tok::Kw(Kw::Not)) => {
                let try_id = |p: &mut Self| {
                    let raw = p.id()?;
                    if p.at_id_follow() {
                        Ok(raw)
                    } else {
                        Err(p.unexpected(""))
                    }
                };
                if self.id_fails_after_paren() {
                    // The id cannot match: try the term first, and build
                    // the id's error only if it is needed.
                    let term_err = match self.attempt(|p| p.term(q))? {
                        Ok(r) => return Ok(r),
                        Err(e) => e,
                    };
                    let id_err = self.attempt(try_id)?.err().unwrap_or_else(|| term_err.clone());
                    return Err(furthest(id_err, term_err));
                }
                let id_err = match self.attempt(try_id)? {
                    Ok(raw) => return Ok((self.build_boxed(&raw, q)?, q)),
                    Err(e) => e,
                };
                match self.attempt(|p| p.term(q))? {
                    Ok(r) => Ok(r),
                    Err(term_err) => Err(furthest(id_err, term_err)),
                }
            }
            _ => self.term(q),
        }
    }

    /// `term`.
    fn term(&mut self, q_in: InForce) -> PResult<(Box<Expr>, InForce)> {
        enum Next {
            Not,
            Paren,
            Relation,
            Head,
            Other,
            Abbrev(ProtoQual),
            Bad,
        }
        let next = match self.peek() {
            Some(Tok::Kw(Kw::Not)) => Next::Not,
            Some(Tok::Punct(Punct::LParen)) => Next::Paren,
            Some(Tok::Num(_) | Tok::Kw(Kw::Len) | Tok::Punct(Punct::Minus)) => Next::Relation,
            Some(Tok::Kw(k)) => match pname(*k) {
                Some(proto) => match self.peek_at(1) {
                    Some(Tok::Punct(Punct::LBracket)) => Next::Relation,
                    Some(Tok::Kw(n)) if starts_head(*n) => Next::Head,
                    Some(Tok::Kw(Kw::Broadcast | Kw::Multicast | Kw::Type | Kw::Subtype | Kw::Dir)) => {
                        Next::Other
                    }
                    _ => Next::Abbrev(proto),
                },
                None if starts_head(*k) => Next::Head,
                None => Next::Other,
            },
            _ => Next::Bad,
        };
        match next {
            Next::Not => {
                let not_span = self.here();
                self.pos += 1;
                let (e, q) = self.nested(|p| p.term(q_in))?;
                Ok((Box::new(Expr::Not(e, not_span)), q))
            }
            Next::Paren if self.relation_fails_after_paren() => {
                // The relation cannot match: try `( expr )` first, and
                // build the relation's error only if it is needed.
                let paren_err = match self.attempt(|p| p.paren_expr(q_in))? {
                    Ok(e) => return Ok((e, q_in)),
                    Err(e) => e,
                };
                let rel_err = self.attempt(|p| p.relation())?.err().unwrap_or_else(|| paren_err.clone());
                Err(furthest(rel_err, paren_err))
            }
            Next::Paren => {
                let rel_err = match self.attempt(|p| p.relation())? {
                    Ok(e) => return Ok((e, None)),
                    Err(e) => e,
                };
                match self.attempt(|p| p.paren_expr(q_in))? {
                    Ok(e) => Ok((e, q_in)),
                    Err(paren_err) => Err(furthest(rel_err, paren_err)),
                }
            }
            Next::Relation => Ok((self.relation()?, None)),
            Next::Head => self.head_id(),
            Next::Other => Ok((self.other()?, None)),
            Next::Abbrev(proto) => {
                let sp = self.here();
                self.pos += 1;
                Ok((Box::new(Expr::Prim(Primitive::ProtoAbbrev(proto), sp)), None))
            }
            Next::Bad => Err(self.unexpected("a primitive")),
        }
    }

    /// At a `(` followed by a keyword other than `not`: an `id` cannot
    /// start here (`( pid )` needs an address, name, number, `(` or `not`),
    /// and trying one fails at that keyword without reaching the nesting
    /// limit, leaving no trace but its error (which does not depend on
    /// what is parsed before it: the token before the keyword is no bare
    /// name). So the alternatives may be tried in the other order.
    fn id_fails_after_paren(&self) -> bool {
        self.is_punct(Punct::LParen)
            && self.depth + 2 < MAX_DEPTH
            && matches!(self.peek_at(1), Some(Tok::Kw(k)) if *k != Kw::Not)
    }

    /// At a `(` followed by a keyword that starts no arithmetic operand
    /// (not `len`, not `proto [`): the relation fails at that keyword,
    /// like [`Self::id_fails_after_paren`]. (Its one side effect, the
    /// memo of `(` tokens that start no operand, only saves time.)
    fn relation_fails_after_paren(&self) -> bool {
        self.is_punct(Punct::LParen)
            && self.depth + 3 < MAX_DEPTH
            && match self.peek_at(1) {
                Some(Tok::Kw(k)) => {
                    *k != Kw::Len
                        && !(pname(*k).is_some() && self.peek_at(2) == Some(&Tok::Punct(Punct::LBracket)))
                }
                _ => false,
            }
    }

    /// `( expr )`.
    fn paren_expr(&mut self, q_in: InForce) -> PResult<Box<Expr>> {
        self.pos += 1;
        let (e, _) = self.nested(|p| p.expr(q_in))?;
        self.expect_punct(Punct::RParen, "')'")?;
        Ok(e)
    }

    // ----------------------------------------------------------------
    // Qualified identifiers.

    /// `head id`.
    #[inline(never)]
    fn head_id(&mut self) -> PResult<(Box<Expr>, InForce)> {
        let start = self.here();
        let mut qual = Qual::default();
        if let Some(p) = self.peek_kw().and_then(pname) {
            qual.proto = Some(p);
            self.pos += 1;
        }
        let dir = match self.peek_kw() {
            Some(k @ (Kw::Src | Kw::Dst)) => {
                self.pos += 1;
                let other = if k == Kw::Src { Kw::Dst } else { Kw::Src };
                match self.peek_kw() {
                    Some(c @ (Kw::And | Kw::Or)) if self.peek_at(1) == Some(&Tok::Kw(other)) => {
                        self.pos += 2;
                        Some(if c == Kw::And { DirQual::SrcAndDst } else { DirQual::SrcOrDst })
                    }
                    Some(Kw::And | Kw::Or) => {
                        self.pos += 1;
                        let want = if k == Kw::Src { "'dst'" } else { "'src'" };
                        return Err(self.unexpected(want));
                    }
                    _ => Some(if k == Kw::Src { DirQual::Src } else { DirQual::Dst }),
                }
            }
            Some(Kw::Addr1) => Some(DirQual::Addr1),
            Some(Kw::Addr2) => Some(DirQual::Addr2),
            Some(Kw::Addr3) => Some(DirQual::Addr3),
            Some(Kw::Addr4) => Some(DirQual::Addr4),
            Some(Kw::Ra) => Some(DirQual::Ra),
            Some(Kw::Ta) => Some(DirQual::Ta),
            _ => None,
        };
        if matches!(
            dir,
            Some(
                DirQual::Addr1 | DirQual::Addr2 | DirQual::Addr3 | DirQual::Addr4 | DirQual::Ra | DirQual::Ta
            )
        ) {
            self.pos += 1;
        }
        qual.dir = dir;
        let aqual = match self.peek_kw() {
            Some(Kw::Host) => Some(AddrQual::Host),
            Some(Kw::Net) => Some(AddrQual::Net),
            Some(Kw::Port) => Some(AddrQual::Port),
            Some(Kw::Portrange) => Some(AddrQual::Portrange),
            Some(Kw::Proto) if dir.is_none() => Some(AddrQual::Proto),
            Some(Kw::Protochain) if dir.is_none() => Some(AddrQual::Protochain),
            Some(Kw::Gateway) if dir.is_none() => Some(AddrQual::Gateway),
            _ => None,
        };
        if aqual.is_some() {
            self.pos += 1;
        } else if dir.is_none() {
            return Err(self.unexpected("a qualifier"));
        }
        qual.addr = aqual;
        let head = start.to(self.prev());
        let raw = self.id()?;
        let e = self.build_id(&raw, Some(qual), Some(head))?;
        Ok((e, Some(qual)))
    }

    /// `id` (structure only).
    fn id(&mut self) -> PResult<RawId> {
        self.nested(|p| match p.peek() {
            Some(Tok::Kw(Kw::Not)) => {
                let sp = p.here();
                p.pos += 1;
                Ok(RawId::Not(Box::new(p.id()?), sp))
            }
            Some(Tok::Punct(Punct::LParen)) => p.id_paren(),
            Some(Tok::Num(_)) => {
                p.pos += 1;
                Ok(RawId::Leaf(p.pos - 1))
            }
            _ => p.nid_leaf(),
        })
    }

    /// A single-token `nid`, with the `/ NUM` and `mask HID` forms.
    #[inline(never)]
    fn nid_leaf(&mut self) -> PResult<RawId> {
        let i = self.pos;
        match self.peek() {
            Some(Tok::Hid(_)) => {
                self.pos += 1;
                if self.is_punct(Punct::Slash) {
                    self.pos += 1;
                    self.expect_num("a prefix length")?;
                    Ok(RawId::Prefix(i, self.pos - 1))
                } else if self.is_kw(Kw::Mask) {
                    self.pos += 1;
                    match self.peek() {
                        Some(Tok::Hid(_)) => {
                            self.pos += 1;
                            Ok(RawId::Mask(i, self.pos - 1))
                        }
                        _ => Err(self.unexpected("a dotted netmask")),
                    }
                } else {
                    Ok(RawId::Leaf(i))
                }
            }
            Some(Tok::Hid6(..)) => {
                self.pos += 1;
                if self.is_punct(Punct::Slash) {
                    self.pos += 1;
                    self.expect_num("a prefix length")?;
                    Ok(RawId::Prefix(i, self.pos - 1))
                } else {
                    Ok(RawId::Leaf(i))
                }
            }
            Some(Tok::Id(_) | Tok::Eid(_) | Tok::Aid(_)) => {
                self.pos += 1;
                Ok(RawId::Leaf(i))
            }
            _ => Err(self.unexpected("an address, name or number")),
        }
    }

    /// `pnum := NUM | '(' pnum ')'`.
    fn pnum(&mut self) -> PResult<u32> {
        self.nested(|p| match p.peek() {
            Some(Tok::Num(n)) => {
                let n = *n;
                p.pos += 1;
                Ok(n)
            }
            Some(Tok::Punct(Punct::LParen)) => {
                p.pos += 1;
                let n = p.pnum()?;
                p.expect_punct(Punct::RParen, "')'")?;
                Ok(n)
            }
            _ => Err(p.unexpected("a number")),
        })
    }

    /// An `id` starting with `(`: a parenthesized `pnum` or `( pid )`.
    #[inline(never)]
    fn id_paren(&mut self) -> PResult<RawId> {
        let open = self.here();
        self.pos += 1;
        let first = match self.peek() {
            Some(Tok::Num(_) | Tok::Punct(Punct::LParen)) => {
                let start = self.here();
                let n = self.attempt(|p| p.pnum())??;
                if self.is_punct(Punct::RParen) {
                    // `( pnum )` is itself a pnum.
                    self.pos += 1;
                    return Ok(RawId::ParenNum(n, open.to(self.prev())));
                }
                if !matches!(self.peek_kw(), Some(Kw::And | Kw::Or)) {
                    return Err(self.unexpected("')', 'and' or 'or'"));
                }
                RawId::ParenNum(n, start.to(self.prev()))
            }
            Some(Tok::Kw(Kw::Not)) => {
                let sp = self.here();
                self.pos += 1;
                RawId::Not(Box::new(self.id()?), sp)
            }
            _ => self.nid_leaf()?,
        };
        // Room for a list of a few names or addresses, with one allocation.
        let mut rest = Vec::with_capacity(8);
        loop {
            let op = match self.peek_kw() {
                Some(Kw::And) => BoolOp::And,
                Some(Kw::Or) => BoolOp::Or,
                _ => break,
            };
            self.pos += 1;
            rest.push((op, self.id()?));
        }
        self.expect_punct(Punct::RParen, "')', 'and' or 'or'")?;
        Ok(RawId::List(Box::new(first), rest))
    }

    /// [`Self::build_id`] for a bare id.
    fn build_boxed(&mut self, raw: &RawId, q: InForce) -> PResult<Box<Expr>> {
        self.build_id(raw, q, None)
    }

    /// Applies the qualifier in force to a parsed id: checks and value
    /// conversions (libpcap's `nid` actions), building the primitives.
    #[inline(never)]
    fn build_id(&mut self, raw: &RawId, q: InForce, head: Option<Span>) -> PResult<Box<Expr>> {
        match raw {
            RawId::Leaf(_) | RawId::ParenNum(..) | RawId::Prefix(..) | RawId::Mask(..) => {
                Ok(Box::new(self.build_leaf(raw, q, head)?))
            }
            RawId::Not(inner, sp) => {
                let e = self.build_id(inner, q, None)?;
                Ok(Box::new(Expr::Not(e, *sp)))
            }
            RawId::List(first, rest) => {
                let mut acc = self.build_id(first, q, None)?;
                for (op, r) in rest {
                    let e = self.build_id(r, q, None)?;
                    acc = Box::new(match op {
                        BoolOp::And => Expr::And(acc, e),
                        BoolOp::Or => Expr::Or(acc, e),
                    });
                }
                Ok(acc)
            }
        }
    }

    /// One address, name or number of an id, with its checks.
    #[inline(never)]
    fn build_leaf(&mut self, raw: &RawId, q: InForce, head: Option<Span>) -> PResult<Expr> {
        let with_head = |sp: Span| head.map_or(sp, |h| h.to(sp));
        match raw {
            RawId::Leaf(i) => {
                let sp = self.span_of(*i);
                let qual = self.inherited(q, sp)?;
                let tok = self.toks.get(*i).map(|t| &t.tok);
                let id = match tok {
                    Some(Tok::Num(n)) => Id::Num(*n),
                    Some(Tok::Id(name)) => {
                        if head.is_none() {
                            self.bare_name_end = Some((*i + 1, sp));
                        }
                        Id::Name(name.clone())
                    }
                    Some(Tok::Hid(text)) => {
                        addr_qual_check(qual, "IPv4 address", sp)?;
                        let host_or_net = matches!(qual.addr, None | Some(AddrQual::Host | AddrQual::Net));
                        if qual.proto == Some(ProtoQual::Decnet) && host_or_net {
                            decnet_address(text, sp)?
                        } else {
                            let (addr, parts) = ipv4_address(text, sp)?;
                            Id::Ipv4 { addr, parts }
                        }
                    }
                    Some(Tok::Hid6(_, addr)) => {
                        addr_qual_check(qual, "IPv6 address", sp)?;
                        Id::Ipv6 { addr: *addr, len: None }
                    }
                    Some(Tok::Eid(mac)) => Id::Mac(*mac),
                    Some(Tok::Aid(a)) => Id::Mac8(*a),
                    _ => return Err(Error::new("syntax error", sp)),
                };
                Ok(Expr::Prim(Primitive::Id { qual, id }, with_head(sp)))
            }
            RawId::ParenNum(n, sp) => {
                let qual = self.inherited(q, *sp)?;
                Ok(Expr::Prim(Primitive::Id { qual, id: Id::Num(*n) }, with_head(*sp)))
            }
            RawId::Prefix(a, l) => {
                let sp = self.span_of(*a).to(self.span_of(*l));
                let qual = self.inherited(q, sp)?;
                let len = match self.toks.get(*l).map(|t| &t.tok) {
                    Some(Tok::Num(n)) => *n,
                    _ => 0,
                };
                let a_sp = self.span_of(*a);
                let id = match self.toks.get(*a).map(|t| &t.tok) {
                    Some(Tok::Hid(text)) => {
                        addr_qual_check(qual, "IPv4 address and prefix length", sp)?;
                        let (addr, parts) = ipv4_address(text, a_sp)?;
                        Id::Ipv4Prefix { addr, parts, len }
                    }
                    Some(Tok::Hid6(_, addr)) => {
                        addr_qual_check(qual, "IPv6 address and prefix length", sp)?;
                        Id::Ipv6 { addr: *addr, len: Some(len) }
                    }
                    _ => return Err(Error::new("syntax error", sp)),
                };
                Ok(Expr::Prim(Primitive::Id { qual, id }, with_head(sp)))
            }
            RawId::Mask(a, m) => {
                let sp = self.span_of(*a).to(self.span_of(*m));
                let qual = self.inherited(q, sp)?;
                addr_qual_check(qual, "IPv4 address and netmask", sp)?;
                let text_of = |p: &Self, i: usize| match p.toks.get(i).map(|t| &t.tok) {
                    Some(Tok::Hid(t)) => t.clone(),
                    _ => String::new(),
                };
                let (addr, _) = ipv4_address(&text_of(self, *a), self.span_of(*a))?;
                let (mask, _) = ipv4_address(&text_of(self, *m), self.span_of(*m))?;
                Ok(Expr::Prim(Primitive::Id { qual, id: Id::Ipv4Mask { addr, mask } }, with_head(sp)))
            }
            RawId::Not(..) | RawId::List(..) => Ok(*self.build_id(raw, q, head)?),
        }
    }

    /// The qualifier a bare id inherits, or an error if there is none.
    fn inherited(&self, q: InForce, sp: Span) -> PResult<Qual> {
        q.ok_or_else(|| {
            Error::new(
                format!(
                    "syntax error: '{}' has no qualifier to inherit (a bare value after 'and'/'or' \
                     reuses the qualifiers of the primitive before it, as in 'host a or b')",
                    self.text(sp)
                ),
                sp,
            )
        })
    }

    // ----------------------------------------------------------------
    // Arithmetic.

    /// `arith relop arith`.
    #[inline(never)]
    fn relation(&mut self) -> PResult<Box<Expr>> {
        let (lhs, _) = self.arith()?;
        let op = match self.peek_punct() {
            Some(Punct::Gt) => RelOp::Gt,
            Some(Punct::Ge) => RelOp::Ge,
            Some(Punct::Eq) => RelOp::Eq,
            Some(Punct::Le) => RelOp::Le,
            Some(Punct::Lt) => RelOp::Lt,
            Some(Punct::Ne) => RelOp::Ne,
            _ => return Err(self.unexpected("a comparison operator")),
        };
        self.pos += 1;
        let (rhs, _) = self.arith()?;
        let sp = arith_span(&lhs).to(arith_span(&rhs));
        Ok(Box::new(Expr::Prim(Primitive::Relation { op, lhs: *lhs, rhs: *rhs }, sp)))
    }

    /// An arithmetic expression, with its tree depth.
    fn arith(&mut self) -> PResult<(Box<Arith>, u32)> {
        self.arith_prec(1)
    }

    fn arith_prec(&mut self, min: u8) -> PResult<(Box<Arith>, u32)> {
        let mut lhs = self.arith_operand()?;
        loop {
            let (op, prec) = match self.peek_punct() {
                Some(Punct::Pipe) => (ArithOp::Or, 1),
                Some(Punct::Amp) => (ArithOp::And, 2),
                Some(Punct::Shl) => (ArithOp::Shl, 3),
                Some(Punct::Shr) => (ArithOp::Shr, 3),
                Some(Punct::Plus) => (ArithOp::Add, 4),
                Some(Punct::Minus) => (ArithOp::Sub, 4),
                Some(Punct::Star) => (ArithOp::Mul, 5),
                Some(Punct::Slash) => (ArithOp::Div, 5),
                _ => break,
            };
            if prec < min {
                break;
            }
            self.pos += 1;
            let rhs = self.arith_prec(prec + 1)?;
            lhs = self.binary(op, lhs, rhs)?;
        }
        Ok(lhs)
    }

    /// A unary-minus chain or a primary, with any `%`/`^` that follows it
    /// (those take everything to their right as their right operand).
    fn arith_operand(&mut self) -> PResult<(Box<Arith>, u32)> {
        self.nested(|p| {
            if p.is_punct(Punct::Minus) {
                let sp = p.here();
                p.pos += 1;
                let (inner, d) = p.arith_operand()?;
                let sp = sp.to(arith_span(&inner));
                return p.depth_checked(Arith::Neg(inner, sp), d + 1);
            }
            let mut x = p.arith_primary()?;
            loop {
                let op = match p.peek_punct() {
                    Some(Punct::Percent) => ArithOp::Mod,
                    Some(Punct::Caret) => ArithOp::Xor,
                    _ => break,
                };
                p.pos += 1;
                let rhs = p.arith_prec(1)?;
                x = p.binary(op, x, rhs)?;
            }
            Ok(x)
        })
    }

    fn depth_checked(&mut self, a: Arith, d: u32) -> PResult<(Box<Arith>, u32)> {
        if d > MAX_DEPTH {
            let e = Error::new(
                format!("arithmetic expression nested too deeply (more than {MAX_DEPTH} levels)"),
                arith_span(&a),
            );
            self.fatal = Some(e.clone());
            return Err(e);
        }
        Ok((Box::new(a), d))
    }

    /// Builds `lhs op rhs`, with libpcap's checks on constant operands.
    #[inline(never)]
    fn binary(
        &mut self,
        op: ArithOp,
        lhs: (Box<Arith>, u32),
        rhs: (Box<Arith>, u32),
    ) -> PResult<(Box<Arith>, u32)> {
        let (l, ld) = lhs;
        let (r, rd) = rhs;
        // libpcap 1.10.3 (`gen_arth`) looks at the first instruction of the
        // right operand's code: a constant load there is checked. That first
        // instruction loads the leftmost leaf of the operand, so
        // `len / (0 + len)` and `len / ip[0]` are rejected too.
        if let Some(k) = leftmost_constant(&r) {
            let msg = match op {
                ArithOp::Div if k == 0 => Some("division by zero"),
                ArithOp::Mod if k == 0 => Some("modulus by zero"),
                ArithOp::Shl | ArithOp::Shr if k > 31 => Some("shift by more than 31 bits"),
                _ => None,
            };
            if let Some(m) = msg {
                return Err(Error::new(m, arith_span(&r)));
            }
        }
        let sp = arith_span(&l).to(arith_span(&r));
        let d = ld.max(rd) + 1;
        self.depth_checked(Arith::Binary { op, lhs: l, rhs: r, span: sp }, d)
    }

    #[inline(never)]
    fn known_failure(&self, at: usize) -> Option<Error> {
        self.arith_paren_failures.get(&at).cloned()
    }

    #[inline(never)]
    fn remember_failure(&mut self, at: usize, e: &Error) {
        if self.fatal.is_none() {
            self.arith_paren_failures.insert(at, e.clone());
        }
    }

    /// `NUM`, `len`, `pname [ arith [: size] ]` or `( arith )`.
    fn arith_primary(&mut self) -> PResult<(Box<Arith>, u32)> {
        let start = self.here();
        match self.peek().cloned() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok((Box::new(Arith::Num(n, start)), 0))
            }
            Some(Tok::Kw(Kw::Len)) => {
                self.pos += 1;
                Ok((Box::new(Arith::Len(start)), 0))
            }
            Some(Tok::Punct(Punct::LParen)) => {
                let at = self.pos;
                if let Some(e) = self.known_failure(at) {
                    return Err(e);
                }
                self.pos += 1;
                let r = self.arith().and_then(|x| {
                    self.expect_punct(Punct::RParen, "')' or an arithmetic operator")?;
                    Ok(x)
                });
                if let Err(e) = &r {
                    self.remember_failure(at, e);
                }
                r
            }
            Some(Tok::Kw(k))
                if pname(k).is_some() && self.peek_at(1) == Some(&Tok::Punct(Punct::LBracket)) =>
            {
                let proto = pname(k).unwrap_or(ProtoQual::Link);
                self.pos += 2;
                let (index, d) = self.arith()?;
                let mut size = 1u8;
                if self.is_punct(Punct::Colon) {
                    self.pos += 1;
                    let (n, nsp) = self.expect_num("a size (1, 2 or 4)")?;
                    size = match n {
                        1 => 1,
                        2 => 2,
                        4 => 4,
                        _ => return Err(Error::new("data size must be 1, 2, or 4", nsp)),
                    };
                }
                self.expect_punct(Punct::RBracket, "']'")?;
                let sp = start.to(self.prev());
                self.depth_checked(Arith::Load { proto, index, size, span: sp }, d + 1)
            }
            _ => Err(self.unexpected("a number, 'len', 'proto[...]' or '('")),
        }
    }

    // ----------------------------------------------------------------
    // Primitives without qualifiers.

    /// libpcap's `other` and the ATM/MTP forms; the current token is a
    /// keyword (possibly a protocol qualifier before `broadcast`, `type`...).
    #[inline(never)]
    fn other(&mut self) -> PResult<Box<Expr>> {
        let start = self.here();
        let Some(k) = self.peek_kw() else {
            return Err(self.unexpected("a primitive"));
        };
        let pqual = pname(k);
        if pqual.is_some() {
            self.pos += 1;
        }
        let Some(k) = self.peek_kw() else {
            return Err(self.unexpected("a primitive"));
        };
        self.pos += 1;
        let prim = match k {
            Kw::Broadcast => Primitive::Broadcast(pqual),
            Kw::Multicast => Primitive::Multicast(pqual),
            Kw::Type | Kw::Subtype | Kw::Dir => Primitive::Wlan(pqual, self.wlan(k)?),
            _ if pqual.is_some() => {
                self.pos -= 1;
                return Err(self.unexpected(""));
            }
            Kw::Less => Primitive::Less(self.expect_num("a number after 'less'")?.0),
            Kw::Greater => Primitive::Greater(self.expect_num("a number after 'greater'")?.0),
            Kw::Byte => {
                let (index, _) = self.expect_num("a byte offset after 'byte'")?;
                let op = match self.peek_punct() {
                    Some(Punct::Eq) => ByteOp::Eq,
                    Some(Punct::Lt) => ByteOp::Lt,
                    Some(Punct::Gt) => ByteOp::Gt,
                    Some(Punct::Amp) => ByteOp::And,
                    Some(Punct::Pipe) => ByteOp::Or,
                    _ => return Err(self.unexpected("one of '=', '<', '>', '&', '|'")),
                };
                self.pos += 1;
                let (value, _) = self.expect_num("a number")?;
                Primitive::Byte { index, op, value }
            }
            Kw::Inbound => Primitive::Inbound,
            Kw::Outbound => Primitive::Outbound,
            Kw::Ifindex => Primitive::Ifindex(self.expect_num("an interface index")?.0),
            Kw::Vlan => Primitive::Vlan(self.opt_pnum()?),
            Kw::Mpls => Primitive::Mpls(self.opt_pnum()?),
            Kw::Pppoed => Primitive::Pppoed,
            Kw::Pppoes => Primitive::Pppoes(self.opt_pnum()?),
            Kw::Geneve => Primitive::Geneve(self.opt_pnum()?),
            Kw::Vxlan => Primitive::Vxlan(self.opt_pnum()?),
            Kw::PfIfname => Primitive::Pflog(Pflog::Ifname(self.expect_name("an interface name")?.0)),
            Kw::PfRset => Primitive::Pflog(Pflog::Ruleset(self.expect_name("a ruleset name")?.0)),
            Kw::PfRnr => Primitive::Pflog(Pflog::Rulenum(self.expect_num("a rule number")?.0)),
            Kw::PfSrnr => Primitive::Pflog(Pflog::Subrulenum(self.expect_num("a rule number")?.0)),
            Kw::PfReason => match self.peek() {
                Some(Tok::Num(n)) => {
                    let n = *n;
                    self.pos += 1;
                    Primitive::Pflog(Pflog::Reason(n))
                }
                _ => {
                    let (name, sp) = self.expect_name("a PF reason")?;
                    match lookup(PF_REASONS, &name) {
                        Some(v) => Primitive::Pflog(Pflog::Reason(v)),
                        None => return Err(Error::new(format!("unknown PF reason \"{name}\""), sp)),
                    }
                }
            },
            Kw::PfAction => {
                let (name, sp) = self.expect_name("a PF action")?;
                match lookup(PF_ACTIONS, &name) {
                    Some(v) => Primitive::Pflog(Pflog::Action(v)),
                    None => return Err(Error::new(format!("unknown PF action \"{name}\""), sp)),
                }
            }
            Kw::Llc => match self.peek() {
                Some(Tok::Kw(Kw::PfRnr)) => {
                    self.pos += 1;
                    Primitive::Llc(Llc::Subtype(LLC_RNR))
                }
                Some(Tok::Id(name)) => {
                    let name = name.clone();
                    let sp = self.here();
                    self.pos += 1;
                    Primitive::Llc(llc_kind(&name, sp)?)
                }
                _ => Primitive::Llc(Llc::Any),
            },
            Kw::Lane => Primitive::AtmAbbrev(AtmType::Lane),
            Kw::Metac => Primitive::AtmAbbrev(AtmType::Metac),
            Kw::Bcc => Primitive::AtmAbbrev(AtmType::Bcc),
            Kw::Oamf4ec => Primitive::AtmAbbrev(AtmType::Oamf4Ec),
            Kw::Oamf4sc => Primitive::AtmAbbrev(AtmType::Oamf4Sc),
            Kw::Sc => Primitive::AtmAbbrev(AtmType::Sc),
            Kw::Ilmic => Primitive::AtmAbbrev(AtmType::Ilmic),
            Kw::Oam => Primitive::AtmAbbrev(AtmType::Oam),
            Kw::Oamf4 => Primitive::AtmAbbrev(AtmType::Oamf4),
            Kw::Connectmsg => Primitive::AtmAbbrev(AtmType::Connectmsg),
            Kw::Metaconnect => Primitive::AtmAbbrev(AtmType::Metaconnect),
            Kw::Fisu => Primitive::Mtp2(Mtp2Type::Fisu),
            Kw::Lssu => Primitive::Mtp2(Mtp2Type::Lssu),
            Kw::Msu => Primitive::Mtp2(Mtp2Type::Msu),
            Kw::Hfisu => Primitive::Mtp2(Mtp2Type::Hfisu),
            Kw::Hlssu => Primitive::Mtp2(Mtp2Type::Hlssu),
            Kw::Hmsu => Primitive::Mtp2(Mtp2Type::Hmsu),
            Kw::Vpi | Kw::Vci => {
                let f = if k == Kw::Vpi { AtmField::Vpi } else { AtmField::Vci };
                return self.field_tests(start, |t| Primitive::Atm(f, t));
            }
            Kw::Sio | Kw::Opc | Kw::Dpc | Kw::Sls | Kw::Hsio | Kw::Hopc | Kw::Hdpc | Kw::Hsls => {
                let f = match k {
                    Kw::Sio => Mtp3Field::Sio,
                    Kw::Opc => Mtp3Field::Opc,
                    Kw::Dpc => Mtp3Field::Dpc,
                    Kw::Sls => Mtp3Field::Sls,
                    Kw::Hsio => Mtp3Field::Hsio,
                    Kw::Hopc => Mtp3Field::Hopc,
                    Kw::Hdpc => Mtp3Field::Hdpc,
                    _ => Mtp3Field::Hsls,
                };
                return self.field_tests(start, |t| Primitive::Mtp3(f, t));
            }
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a primitive"));
            }
        };
        Ok(Box::new(Expr::Prim(prim, start.to(self.prev()))))
    }

    /// An optional `pnum` after `vlan`, `mpls`, `pppoes`, `geneve`, `vxlan`.
    fn opt_pnum(&mut self) -> PResult<Option<u32>> {
        match self.peek() {
            Some(Tok::Num(_) | Tok::Punct(Punct::LParen)) => Ok(Some(self.pnum()?)),
            _ => Ok(None),
        }
    }

    /// The value part of `vpi`/`vci`/MTP3 field primitives: `N`,
    /// `relop N`, or `(N or N ...)` (expanded to an `or` of tests).
    #[inline(never)]
    fn field_tests(&mut self, start: Span, mk: impl Fn(FieldTest) -> Primitive) -> PResult<Box<Expr>> {
        let op = match self.peek() {
            Some(Tok::Num(_)) => None,
            Some(Tok::Punct(Punct::LParen)) => {
                self.pos += 1;
                let (v, sp) = self.expect_num("a number")?;
                let mut acc = Expr::Prim(mk(FieldTest { op: RelOp::Eq, value: v }), start.to(sp));
                while self.is_kw(Kw::Or) {
                    self.pos += 1;
                    let (v, sp) = self.expect_num("a number")?;
                    let e = Expr::Prim(mk(FieldTest { op: RelOp::Eq, value: v }), start.to(sp));
                    acc = combine(BoolOp::Or, acc, e);
                }
                self.expect_punct(Punct::RParen, "')' or 'or'")?;
                return Ok(Box::new(acc));
            }
            Some(Tok::Punct(p)) => {
                let op = match p {
                    Punct::Gt => RelOp::Gt,
                    Punct::Ge => RelOp::Ge,
                    Punct::Eq => RelOp::Eq,
                    Punct::Le => RelOp::Le,
                    Punct::Lt => RelOp::Lt,
                    Punct::Ne => RelOp::Ne,
                    _ => return Err(self.unexpected("a number, a comparison or '('")),
                };
                self.pos += 1;
                Some(op)
            }
            _ => return Err(self.unexpected("a number, a comparison or '('")),
        };
        let (value, sp) = self.expect_num("a number")?;
        Ok(Box::new(Expr::Prim(mk(FieldTest { op: op.unwrap_or(RelOp::Eq), value }), start.to(sp))))
    }

    /// 802.11 `type T [subtype S]`, `subtype S`, `dir D` (keyword consumed).
    #[inline(never)]
    fn wlan(&mut self, k: Kw) -> PResult<Wlan> {
        match k {
            Kw::Type => {
                let ty = match self.peek().cloned() {
                    Some(Tok::Num(n)) => {
                        let sp = self.here();
                        self.pos += 1;
                        if n & !WLAN_TYPE_MASK != 0 {
                            return Err(Error::new(format!("invalid 802.11 type value 0x{n:02x}"), sp));
                        }
                        n
                    }
                    Some(Tok::Id(name)) => {
                        let sp = self.here();
                        self.pos += 1;
                        lookup(WLAN_TYPES, &name)
                            .ok_or_else(|| Error::new(format!("unknown 802.11 type name \"{name}\""), sp))?
                    }
                    _ => return Err(self.unexpected("an 802.11 frame type")),
                };
                if !self.is_kw(Kw::Subtype) {
                    return Ok(Wlan::Type(ty));
                }
                self.pos += 1;
                let subtype = match self.peek().cloned() {
                    Some(Tok::Num(n)) => {
                        let sp = self.here();
                        self.pos += 1;
                        if n & !WLAN_SUBTYPE_MASK != 0 {
                            return Err(Error::new(format!("invalid 802.11 subtype value 0x{n:02x}"), sp));
                        }
                        n
                    }
                    Some(Tok::Id(name)) => {
                        let sp = self.here();
                        self.pos += 1;
                        let Some(table) = wlan_subtypes(ty) else {
                            return Err(Error::new(
                                format!("802.11 type 0x{ty:02x} has no named subtypes (unknown 802.11 type)"),
                                sp,
                            ));
                        };
                        lookup(table, &name).ok_or_else(|| {
                            Error::new(format!("unknown 802.11 subtype name \"{name}\""), sp)
                        })?
                    }
                    _ => return Err(self.unexpected("an 802.11 frame subtype")),
                };
                Ok(Wlan::TypeSubtype { ty, subtype })
            }
            Kw::Subtype => {
                let (name, sp) = self.expect_name("an 802.11 subtype name")?;
                for &(ty, table) in WLAN_SUBTYPE_TABLES {
                    if let Some(v) = lookup(table, &name) {
                        return Ok(Wlan::Subtype(v | ty));
                    }
                }
                Err(Error::new(format!("unknown 802.11 subtype name \"{name}\""), sp))
            }
            _ => match self.peek().cloned() {
                Some(Tok::Num(n)) => {
                    let sp = self.here();
                    self.pos += 1;
                    if n > 3 {
                        return Err(Error::new(format!("invalid 802.11 direction value {n}"), sp));
                    }
                    Ok(Wlan::Dir(n))
                }
                Some(Tok::Id(name)) => {
                    let sp = self.here();
                    self.pos += 1;
                    lookup(WLAN_DIRS, &name)
                        .map(Wlan::Dir)
                        .ok_or_else(|| Error::new(format!("unknown 802.11 direction \"{name}\""), sp))
                }
                _ => Err(self.unexpected("an 802.11 direction")),
            },
        }
    }
}

/// Of two alternative failures, the one that got further into the input
/// (ties keep the first).
fn furthest(a: Error, b: Error) -> Error {
    if b.span.start > a.span.start {
        b
    } else {
        a
    }
}

/// The protocol qualifier a keyword names, if it is one (`pname`).
pub(crate) fn pname(k: Kw) -> Option<ProtoQual> {
    Some(match k {
        Kw::Link => ProtoQual::Link,
        Kw::Ip => ProtoQual::Ip,
        Kw::Arp => ProtoQual::Arp,
        Kw::Rarp => ProtoQual::Rarp,
        Kw::Sctp => ProtoQual::Sctp,
        Kw::Tcp => ProtoQual::Tcp,
        Kw::Udp => ProtoQual::Udp,
        Kw::Icmp => ProtoQual::Icmp,
        Kw::Igmp => ProtoQual::Igmp,
        Kw::Igrp => ProtoQual::Igrp,
        Kw::Pim => ProtoQual::Pim,
        Kw::Vrrp => ProtoQual::Vrrp,
        Kw::Carp => ProtoQual::Carp,
        Kw::Atalk => ProtoQual::Atalk,
        Kw::Aarp => ProtoQual::Aarp,
        Kw::Decnet => ProtoQual::Decnet,
        Kw::Lat => ProtoQual::Lat,
        Kw::Sca => ProtoQual::Sca,
        Kw::Mopdl => ProtoQual::Mopdl,
        Kw::Moprc => ProtoQual::Moprc,
        Kw::Ip6 => ProtoQual::Ip6,
        Kw::Icmp6 => ProtoQual::Icmp6,
        Kw::Ah => ProtoQual::Ah,
        Kw::Esp => ProtoQual::Esp,
        Kw::Iso => ProtoQual::Iso,
        Kw::Esis => ProtoQual::Esis,
        Kw::Isis => ProtoQual::Isis,
        Kw::L1 => ProtoQual::L1,
        Kw::L2 => ProtoQual::L2,
        Kw::Iih => ProtoQual::Iih,
        Kw::Lsp => ProtoQual::Lsp,
        Kw::Snp => ProtoQual::Snp,
        Kw::Psnp => ProtoQual::Psnp,
        Kw::Csnp => ProtoQual::Csnp,
        Kw::Clnp => ProtoQual::Clnp,
        Kw::Stp => ProtoQual::Stp,
        Kw::Ipx => ProtoQual::Ipx,
        Kw::Netbeui => ProtoQual::Netbeui,
        Kw::Radio => ProtoQual::Radio,
        _ => return None,
    })
}

/// Whether a keyword can start a `head` after the optional `pname`.
fn starts_head(k: Kw) -> bool {
    matches!(
        k,
        Kw::Src
            | Kw::Dst
            | Kw::Addr1
            | Kw::Addr2
            | Kw::Addr3
            | Kw::Addr4
            | Kw::Ra
            | Kw::Ta
            | Kw::Host
            | Kw::Net
            | Kw::Port
            | Kw::Portrange
            | Kw::Proto
            | Kw::Protochain
            | Kw::Gateway
    )
}

/// The span of an arithmetic expression.
pub(crate) fn arith_span(a: &Arith) -> Span {
    match a {
        Arith::Num(_, s) | Arith::Len(s) | Arith::Neg(_, s) => *s,
        Arith::Load { span, .. } | Arith::Binary { span, .. } => *span,
    }
}

/// The constant libpcap's code for `a` starts by loading, if any: the
/// leftmost leaf of the expression when that leaf is a number.
fn leftmost_constant(a: &Arith) -> Option<u32> {
    let mut cur = a;
    loop {
        match cur {
            Arith::Num(n, _) => return Some(*n),
            Arith::Len(_) => return None,
            Arith::Load { index, .. } => cur = index,
            Arith::Binary { lhs, .. } => cur = lhs,
            Arith::Neg(inner, _) => cur = inner,
        }
    }
}

/// Rejects an address id under a `port`/`portrange`/`proto`/`protochain`
/// qualifier (libpcap master's grammar checks).
fn addr_qual_check(q: Qual, what: &str, sp: Span) -> PResult<()> {
    let name = match q.addr {
        Some(AddrQual::Port) => "port",
        Some(AddrQual::Portrange) => "portrange",
        Some(AddrQual::Proto) => "proto",
        Some(AddrQual::Protochain) => "protochain",
        _ => return Ok(()),
    };
    Err(Error::new(format!("'{name}' qualifier applied to {what}"), sp))
}

/// A dotted IPv4 address as libpcap reads it: 2-4 decimal parts (leading
/// zeros allowed), each at most 255, packed from the top byte down.
fn ipv4_address(text: &str, sp: Span) -> PResult<(u32, u8)> {
    let bad = || Error::new(format!("invalid IPv4 address '{text}'"), sp);
    // 2 to 4 dot-separated parts of decimal digits, each at most 255
    // (checked digit by digit); one pass over the bytes.
    let mut addr: u32 = 0;
    let mut parts: u8 = 0;
    let mut part: Option<u32> = None;
    for &c in text.as_bytes().iter().chain([&b'.']) {
        match c {
            b'0'..=b'9' => {
                let n = part.unwrap_or(0) * 10 + u32::from(c - b'0');
                if n > 255 {
                    return Err(bad());
                }
                part = Some(n);
            }
            b'.' => match part.take() {
                Some(v) if parts < 4 => {
                    addr = (addr << 8) | v;
                    parts += 1;
                }
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        }
    }
    if parts < 2 {
        return Err(bad());
    }
    let shift = 8 * u32::from(4 - parts);
    Ok((addr.checked_shl(shift).unwrap_or(0), parts))
}

/// A DECnet `AREA.NODE` address (libpcap master's ranges).
fn decnet_address(text: &str, sp: Span) -> PResult<Id> {
    let bad = || Error::new(format!("invalid DECnet address '{text}'"), sp);
    let mut it = text.split('.');
    let (Some(a), Some(n), None) = (it.next(), it.next(), it.next()) else {
        return Err(bad());
    };
    let num = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.bytes().try_fold(0u32, |acc, d| acc.checked_mul(10)?.checked_add(u32::from(d - b'0')))
    };
    let (Some(area), Some(node)) = (num(a), num(n)) else {
        return Err(bad());
    };
    match (u8::try_from(area), u16::try_from(node)) {
        (Ok(area), Ok(node)) if area <= 63 && node <= 1023 => Ok(Id::Decnet { area, node }),
        _ => Err(bad()),
    }
}

/// Case-insensitive lookup in a name table.
fn lookup(table: &[(&str, u32)], name: &str) -> Option<u32> {
    table.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, v)| v)
}

/// The 802.11 frame type bits (`IEEE80211_FC0_TYPE_MASK`).
const WLAN_TYPE_MASK: u32 = 0x0c;
/// The 802.11 frame subtype bits (`IEEE80211_FC0_SUBTYPE_MASK`).
const WLAN_SUBTYPE_MASK: u32 = 0xf0;

/// 802.11 frame type names.
pub(crate) const WLAN_TYPES: &[(&str, u32)] =
    &[("data", 0x08), ("mgt", 0x00), ("management", 0x00), ("ctl", 0x04), ("control", 0x04)];

/// Management frame subtypes.
pub(crate) const WLAN_MGT_SUBTYPES: &[(&str, u32)] = &[
    ("assocreq", 0x00),
    ("assoc-req", 0x00),
    ("assocresp", 0x10),
    ("assoc-resp", 0x10),
    ("reassocreq", 0x20),
    ("reassoc-req", 0x20),
    ("reassocresp", 0x30),
    ("reassoc-resp", 0x30),
    ("probereq", 0x40),
    ("probe-req", 0x40),
    ("proberesp", 0x50),
    ("probe-resp", 0x50),
    ("beacon", 0x80),
    ("atim", 0x90),
    ("disassoc", 0xa0),
    ("disassociation", 0xa0),
    ("auth", 0xb0),
    ("authentication", 0xb0),
    ("deauth", 0xc0),
    ("deauthentication", 0xc0),
];

/// Control frame subtypes (`bar` and `ba` are libpcap master additions).
pub(crate) const WLAN_CTL_SUBTYPES: &[(&str, u32)] = &[
    ("bar", 0x80),
    ("ba", 0x90),
    ("ps-poll", 0xa0),
    ("rts", 0xb0),
    ("cts", 0xc0),
    ("ack", 0xd0),
    ("cf-end", 0xe0),
    ("cf-end-ack", 0xf0),
];

/// Data frame subtypes.
pub(crate) const WLAN_DATA_SUBTYPES: &[(&str, u32)] = &[
    ("data", 0x00),
    ("data-cf-ack", 0x10),
    ("data-cf-poll", 0x20),
    ("data-cf-ack-poll", 0x30),
    ("null", 0x40),
    ("cf-ack", 0x50),
    ("cf-poll", 0x60),
    ("cf-ack-poll", 0x70),
    ("qos-data", 0x80),
    ("qos-data-cf-ack", 0x90),
    ("qos-data-cf-poll", 0xa0),
    ("qos-data-cf-ack-poll", 0xb0),
    ("qos", 0xc0),
    ("qos-cf-poll", 0xe0),
    ("qos-cf-ack-poll", 0xf0),
];

/// Subtype tables by frame type, in libpcap's search order for `subtype S`.
pub(crate) const WLAN_SUBTYPE_TABLES: &[(u32, &[(&str, u32)])] =
    &[(0x00, WLAN_MGT_SUBTYPES), (0x04, WLAN_CTL_SUBTYPES), (0x08, WLAN_DATA_SUBTYPES)];

fn wlan_subtypes(ty: u32) -> Option<&'static [(&'static str, u32)]> {
    WLAN_SUBTYPE_TABLES.iter().find(|(t, _)| *t == ty).map(|(_, tab)| *tab)
}

/// 802.11 `dir` names.
pub(crate) const WLAN_DIRS: &[(&str, u32)] = &[("nods", 0), ("tods", 1), ("fromds", 2), ("dstods", 3)];

/// PF reasons (the portable part of libpcap's table, as on Linux).
pub(crate) const PF_REASONS: &[(&str, u32)] = &[
    ("match", 0),
    ("bad-offset", 1),
    ("fragment", 2),
    ("short", 3),
    ("normalize", 4),
    ("memory", 5),
    ("bad-timestamp", 6),
    ("congestion", 7),
    ("ip-option", 8),
    ("proto-cksum", 9),
    ("state-mismatch", 10),
    ("state-insert", 11),
    ("state-limit", 12),
    ("src-limit", 13),
    ("synproxy", 14),
];

/// PF actions (the portable part of libpcap's table, as on Linux).
pub(crate) const PF_ACTIONS: &[(&str, u32)] = &[
    ("pass", 0),
    ("accept", 0),
    ("drop", 1),
    ("block", 1),
    ("scrub", 2),
    ("noscrub", 3),
    ("nat", 4),
    ("nonat", 5),
    ("binat", 6),
    ("nobinat", 7),
    ("rdr", 8),
    ("nordr", 9),
    ("synproxy-drop", 10),
];

/// LLC S-format `rnr` (a PF keyword, hence its own grammar rule).
const LLC_RNR: u32 = 0x05;

/// LLC S-format and U-format subtype names with their control values.
pub(crate) const LLC_SUBTYPES: &[(&str, u32)] = &[
    ("rr", 0x01),
    ("rnr", LLC_RNR),
    ("rej", 0x09),
    ("ui", 0x03),
    ("ua", 0x63),
    ("disc", 0x43),
    ("dm", 0x0f),
    ("sabme", 0x6f),
    ("test", 0xe3),
    ("xid", 0xaf),
    ("frmr", 0x87),
];

fn llc_kind(name: &str, sp: Span) -> PResult<Llc> {
    if name.eq_ignore_ascii_case("i") {
        Ok(Llc::I)
    } else if name.eq_ignore_ascii_case("s") {
        Ok(Llc::S)
    } else if name.eq_ignore_ascii_case("u") {
        Ok(Llc::U)
    } else {
        lookup(LLC_SUBTYPES, name)
            .map(Llc::Subtype)
            .ok_or_else(|| Error::new(format!("unknown LLC type name \"{name}\""), sp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_address_forms() {
        let sp = Span::new(0, 0);
        let ok = |t: &str| ipv4_address(t, sp).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        assert_eq!(ok("1.2"), (0x0102_0000, 2));
        assert_eq!(ok("1.2.3"), (0x0102_0300, 3));
        assert_eq!(ok("001.002.003.004"), (0x0102_0304, 4));
        assert_eq!(ok("255.255.255.255"), (u32::MAX, 4));
        assert_eq!(ok("0.0"), (0, 2));
        let bad_forms =
            ["", "1", "1.", ".1", "1..2", "1.2.3.4.5", "0.0.0.256", "2550.1", "1.0x2", "1.2 ", "-1.2"];
        for bad in bad_forms {
            let e = ipv4_address(bad, sp).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert_eq!(e.message, format!("invalid IPv4 address '{bad}'"));
        }
    }
}
