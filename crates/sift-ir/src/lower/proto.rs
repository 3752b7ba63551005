//! Protocols: `proto N`, `ip proto N`, `ip6 proto N`, `ether proto N`
//! (numbers and names), and the protocol abbreviations (`tcp`, `udp`, `ip6`,
//! `arp`, `icmp`, `stp`...). Mirrors libpcap's `gen_proto`,
//! `gen_proto_abbrev` and `lookup_proto`.
//!
//! As libpcap master (and unlike 1.10.3), protocol numbers above 255 are
//! errors (see the module documentation of `lower`).
//!
//! 1.10.3 orders the two halves of a dual-stack abbreviation IPv4 first
//! (`tcp` = `ip proto 6 or ip6 proto 6`), and `ip6 proto N` also accepts
//! one Fragment header: `ip6[6] == N or (ip6[6] == 44 and ip6[40] == N)`.

use super::link::Rel;
use super::{proto_name, Lowerer, Result};
use crate::pred::{Pred, Size, Value};
use sift_syntax::ast::{DirQual, ProtoQual, Qual};
use sift_syntax::names::{self, ethertype, llcsap};

/// IPv6 Fragment header.
const IPPROTO_FRAGMENT: u32 = 44;

impl Lowerer<'_> {
    /// `gen_proto`: the packet is protocol `proto` and its next-protocol
    /// field is `v`.
    pub(crate) fn gen_proto(
        &self,
        v: u32,
        proto: Option<ProtoQual>,
        dir: Option<DirQual>,
    ) -> Result<Pred> {
        if dir.is_some() {
            return self.err("direction applied to 'proto'");
        }
        match proto {
            None => {
                let v4 = self.gen_proto(v, Some(ProtoQual::Ip), None)?;
                let v6 = self.gen_proto(v, Some(ProtoQual::Ip6), None)?;
                Ok(v4.or(v6))
            }
            Some(ProtoQual::Link) => self.gen_linktype(v),
            Some(ProtoQual::Ip) => {
                self.assert_maxval("protocol number", v, 255)?;
                let lt = self.gen_linktype(ethertype::IP)?;
                Ok(lt.and(self.cmp(Rel::LinkPl, 9, Size::Byte, v)))
            }
            Some(ProtoQual::Ip6) => {
                self.assert_maxval("protocol number", v, 255)?;
                let lt = self.gen_linktype(ethertype::IPV6)?;
                let frag = self
                    .cmp(Rel::LinkPl, 6, Size::Byte, IPPROTO_FRAGMENT)
                    .and(self.cmp(Rel::LinkPl, 40, Size::Byte, v));
                let next = self.cmp(Rel::LinkPl, 6, Size::Byte, v).or(frag);
                Ok(lt.and(next))
            }
            Some(ProtoQual::Arp) => self.err("arp does not encapsulate another protocol"),
            Some(ProtoQual::Rarp) => self.err("rarp does not encapsulate another protocol"),
            Some(ProtoQual::Atalk) => self.err("AppleTalk encapsulation is not specifiable"),
            Some(ProtoQual::Decnet) => self.err("DECNET encapsulation is not specifiable"),
            Some(ProtoQual::Lat) => self.err("LAT does not encapsulate another protocol"),
            Some(ProtoQual::Sca) => self.err("SCA does not encapsulate another protocol"),
            Some(ProtoQual::Moprc) => self.err("MOPRC does not encapsulate another protocol"),
            Some(ProtoQual::Mopdl) => self.err("MOPDL does not encapsulate another protocol"),
            Some(ProtoQual::Iso) => self.iso_proto(v),
            Some(ProtoQual::Isis) => self.isis_proto(v),
            Some(ProtoQual::Clnp) => self.err("'clnp proto' is not supported"),
            Some(p) => self.err(format!("'{} proto' is bogus", proto_name(p))),
        }
    }

    /// A protocol name alone (`gen_proto_abbrev`).
    pub(crate) fn proto_abbrev(&mut self, proto: ProtoQual) -> Result<Pred> {
        let v4 = |cx: &Self, n: u32| cx.gen_proto(n, Some(ProtoQual::Ip), None);
        let dual = |cx: &Self, n: u32| -> Result<Pred> {
            Ok(v4(cx, n)?.or(cx.gen_proto(n, Some(ProtoQual::Ip6), None)?))
        };
        match proto {
            ProtoQual::Sctp => dual(self, 132),
            ProtoQual::Tcp => dual(self, 6),
            ProtoQual::Udp => dual(self, 17),
            ProtoQual::Icmp => v4(self, 1),
            ProtoQual::Igmp => v4(self, 2),
            ProtoQual::Igrp => v4(self, 9),
            ProtoQual::Pim => dual(self, 103),
            ProtoQual::Vrrp | ProtoQual::Carp => v4(self, 112),
            ProtoQual::Ip => self.gen_linktype(ethertype::IP),
            ProtoQual::Arp => self.gen_linktype(ethertype::ARP),
            ProtoQual::Rarp => self.gen_linktype(ethertype::REVARP),
            ProtoQual::Link => self.err("link layer applied in wrong context"),
            ProtoQual::Atalk => self.gen_linktype(ethertype::ATALK),
            ProtoQual::Aarp => self.gen_linktype(ethertype::AARP),
            ProtoQual::Decnet => self.gen_linktype(ethertype::DN),
            ProtoQual::Sca => self.gen_linktype(ethertype::SCA),
            ProtoQual::Lat => self.gen_linktype(ethertype::LAT),
            ProtoQual::Mopdl => self.gen_linktype(ethertype::MOPDL),
            ProtoQual::Moprc => self.gen_linktype(ethertype::MOPRC),
            ProtoQual::Ip6 => self.gen_linktype(ethertype::IPV6),
            ProtoQual::Icmp6 => self.gen_proto(58, Some(ProtoQual::Ip6), None),
            ProtoQual::Ah => dual(self, 51),
            ProtoQual::Esp => dual(self, 50),
            ProtoQual::Iso => self.gen_linktype(llcsap::ISONS),
            ProtoQual::Stp => self.gen_linktype(llcsap::STP),
            ProtoQual::Ipx => self.gen_linktype(llcsap::IPX),
            ProtoQual::Netbeui => self.gen_linktype(llcsap::NETBEUI),
            ProtoQual::Esis
            | ProtoQual::Isis
            | ProtoQual::Clnp
            | ProtoQual::L1
            | ProtoQual::L2
            | ProtoQual::Iih
            | ProtoQual::Lsp
            | ProtoQual::Snp
            | ProtoQual::Csnp
            | ProtoQual::Psnp => self.iso_abbrev(proto),
            ProtoQual::Radio => self.err("'radio' is not a valid protocol type"),
        }
    }

    /// `protochain N` (`gen_protochain`): the IPv4 and/or IPv6 header chain
    /// contains protocol `v` (see [`Value::Protochain`] for the walk).
    pub(crate) fn gen_protochain(&self, v: u32, proto: Option<ProtoQual>) -> Result<Pred> {
        if self.link.pl_var != super::link::VarPart::None {
            return self.err("'protochain' not supported with variable length headers");
        }
        let chain = |cx: &Self, v6: bool| -> Result<Pred> {
            let lt = cx.gen_linktype(if v6 { ethertype::IPV6 } else { ethertype::IP })?;
            // Checked against 255 by the caller.
            let proto = u8::try_from(v).unwrap_or(u8::MAX);
            let walk = Value::Protochain { v6, proto, nl: cx.link.nl() };
            Ok(lt.and(Pred::eq(walk, v)))
        };
        // libpcap's `gen_protochain` allocates a scratch register on entry
        // and frees it at the end, except for the unqualified form, which
        // returns early after the IPv4 and IPv6 walks (each with its own
        // register): its register is never freed, and later arithmetic
        // (or protochains) have one less.
        self.check_regs(1)?;
        match proto {
            None => {
                self.leaked_regs.set(self.leaked_regs.get() + 1);
                self.check_regs(1)?;
                Ok(chain(self, false)?.or(chain(self, true)?))
            }
            Some(ProtoQual::Ip) => chain(self, false),
            Some(ProtoQual::Ip6) => chain(self, true),
            Some(_) => self.err("bad protocol applied for 'protochain'"),
        }
    }

    /// `protochain NAME` (`gen_scode`, `Q_PROTOCHAIN`, with `lookup_proto`).
    pub(crate) fn protochain_by_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        let v = self.lookup_proto(q, name)?;
        self.assert_maxval("protocol number", v, 255)?;
        self.gen_protochain(v, q.proto)
    }

    /// `proto NAME` (`gen_scode`, `Q_PROTO`, with `lookup_proto`).
    pub(crate) fn proto_by_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        let v = self.lookup_proto(q, name)?;
        self.gen_proto(v, q.proto, q.dir)
    }

    /// libpcap's `lookup_proto`: a protocol name in the namespace of the
    /// protocol qualifier.
    fn lookup_proto(&self, q: &Qual, name: &str) -> Result<u32> {
        Ok(match q.proto {
            None | Some(ProtoQual::Ip) | Some(ProtoQual::Ip6) => match names::ip_protocol(name) {
                Some(v) => v,
                None => return self.name_err(name, format!("unknown ip proto '{name}'")),
            },
            Some(ProtoQual::Link) => match names::link_protocol(name) {
                Some(v) => v,
                None => return self.name_err(name, format!("unknown ether proto '{name}'")),
            },
            Some(ProtoQual::Iso) => match name {
                "esis" => super::encap::nlpid::ESIS,
                "isis" => super::encap::nlpid::ISIS,
                "clnp" => super::encap::nlpid::CLNP,
                _ => return self.err(format!("unknown osi proto '{name}'")),
            },
            Some(_) => return self.err(format!("unknown protocol: {name}")),
        })
    }
}
