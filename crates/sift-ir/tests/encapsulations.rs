//! Encapsulations (`vlan`, `mpls`, `pppoed`, `pppoes`), `llc`, the OSI
//! primitives and DECnet hosts, on hand-built packets: the offset rules
//! libpcap 1.10.3 has (offsets move for everything after an encapsulation
//! in the expression text, across `or` and out of parentheses), and the
//! errors. The differential test against libpcap itself is
//! `crates/sift-testkit/tests/lowering_vs_libpcap.rs`.

use sift_ir::eval::matches;
use sift_ir::{lower, LinkType, LowerOptions, PacketView, Pred};

fn lower_on(lt: LinkType, expr: &str) -> Result<Pred, sift_syntax::Error> {
    let f = sift_syntax::parse(expr).unwrap_or_else(|e| panic!("{expr}: {}", e.message));
    lower(&f, &LowerOptions { linktype: lt, netmask: Some(0), ..LowerOptions::default() })
}

fn en(expr: &str) -> Pred {
    lower_on(LinkType::EN10MB, expr).unwrap_or_else(|e| panic!("{expr}: {}", e.message))
}

fn hit(expr: &str, data: &[u8]) -> bool {
    matches(&en(expr), PacketView { data, wire_len: data.len() as u32 })
}

fn error(lt: LinkType, expr: &str) -> String {
    match lower_on(lt, expr) {
        Ok(p) => panic!("{expr:?} on {lt}: lowered to\n{p}"),
        Err(e) => e.message,
    }
}

/// Ethernet addresses, then `tags` (TPID, TCI) and the final EtherType.
fn ether(tags: &[(u16, u16)], ethertype: u16) -> Vec<u8> {
    let mut p = vec![0u8; 12];
    for &(tpid, tci) in tags {
        p.extend_from_slice(&tpid.to_be_bytes());
        p.extend_from_slice(&tci.to_be_bytes());
    }
    p.extend_from_slice(&ethertype.to_be_bytes());
    p
}

/// An IPv4 + UDP header from `src` to 10.0.0.99, ports 1234 -> `dport`.
fn ipv4_udp(src: [u8; 4], dport: u16) -> Vec<u8> {
    let mut ip = vec![0u8; 28];
    ip[0] = 0x45;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&[10, 0, 0, 99]);
    ip[20..22].copy_from_slice(&1234u16.to_be_bytes());
    ip[22..24].copy_from_slice(&dport.to_be_bytes());
    ip
}

#[test]
fn vlan_tpids_and_id_mask() {
    for tpid in [0x8100u16, 0x88a8, 0x9100] {
        let mut p = ether(&[(tpid, 0xe000 | 100)], 0x0800);
        p.extend(ipv4_udp([10, 0, 0, 1], 53));
        assert!(hit("vlan", &p), "{tpid:#x}");
        // The priority bits are masked off.
        assert!(hit("vlan 100 and ip", &p), "{tpid:#x}");
        assert!(!hit("vlan 101", &p));
        assert!(hit("vlan and udp port 53", &p));
    }
    let mut other = ether(&[(0x8200, 100)], 0x0800);
    other.extend(ipv4_udp([10, 0, 0, 1], 53));
    assert!(!hit("vlan", &other));
}

#[test]
fn vlan_offsets_leak_across_or_and_out_of_parentheses() {
    // libpcap#798: the second alternative looks for a tag inside the first.
    let expr = "(vlan 1 and ip src 10.0.0.1) or (vlan 2 and ip src 10.0.0.2)";
    let mut single = ether(&[(0x8100, 2)], 0x0800);
    single.extend(ipv4_udp([10, 0, 0, 2], 53));
    assert!(!hit(expr, &single));
    let mut qinq = ether(&[(0x88a8, 1), (0x8100, 2)], 0x0800);
    qinq.extend(ipv4_udp([10, 0, 0, 2], 53));
    assert!(hit(expr, &qinq));
    // The idiom that works: untagged first, then tagged.
    let both = "udp port 53 or (vlan and udp port 53)";
    let mut untagged = ether(&[], 0x0800);
    untagged.extend(ipv4_udp([10, 0, 0, 1], 53));
    assert!(hit(both, &untagged));
    assert!(hit(both, &single));
    // ... and the one that does not (tcpdump#606): the trailing test looks
    // 4 bytes further in.
    assert!(!hit("(vlan and udp port 53) or udp port 53", &untagged));
}

#[test]
fn mpls_label_stack() {
    // Two labels (100000, then 1024 with the bottom-of-stack bit), IPv4.
    let mut p = ether(&[], 0x8847);
    p.extend_from_slice(&((100_000u32 << 12) | 0x40).to_be_bytes());
    p.extend_from_slice(&((1024u32 << 12) | 0x100 | 0x40).to_be_bytes());
    p.extend(ipv4_udp([192, 9, 200, 1], 161));
    assert!(hit("mpls", &p));
    assert!(hit("mpls 100000 and mpls 1024 and host 192.9.200.1", &p));
    // After one label the bottom-of-stack bit is clear: not IPv4 yet.
    assert!(!hit("mpls and ip", &p));
    assert!(hit("mpls and mpls and ip and udp port 161", &p));
    // A third label would need the second one not to be the bottom one.
    assert!(!hit("mpls and mpls and mpls", &p));
    // libpcap#408: the offsets accumulate across `or`.
    // The second `mpls 1024` is the inner label: this matches.
    assert!(hit("mpls 1024 or mpls 1024", &p));
    assert!(!hit("mpls 1024", &p));
    // The second alternative looks at the third label, which is not there.
    assert!(!hit("(mpls 100000 and mpls 7) or (mpls and port 161)", &p));
    assert!(hit("(mpls and mpls and port 161) or (mpls and port 161)", &p));
    // The MPLS multicast EtherType is never matched.
    let mut mc = p.clone();
    mc[12..14].copy_from_slice(&0x8848u16.to_be_bytes());
    assert!(!hit("mpls", &mc));
}

#[test]
fn pppoe_session_switches_to_ppp() {
    let mut p = ether(&[], 0x8864);
    // ver/type, code, session 0x27, length; then PPP protocol IPv4.
    p.extend_from_slice(&[0x11, 0x00, 0x00, 0x27, 0x00, 0x1e, 0x00, 0x21]);
    p.extend(ipv4_udp([10, 0, 0, 1], 53));
    assert!(hit("pppoes", &p));
    assert!(hit("pppoes 0x27 and ip", &p));
    assert!(hit("pppoes and udp port 53 and ip src 10.0.0.1", &p));
    assert!(!hit("pppoes 0x28", &p));
    assert!(!hit("pppoes and ip6", &p));
    assert!(!hit("pppoed", &p));
    let mut d = ether(&[], 0x8863);
    d.extend_from_slice(&[0x11, 0x09, 0, 0, 0, 0]);
    assert!(hit("pppoed", &d));
    // On Linux cooked captures too, the PPP header follows at 16 + 6.
    let mut sll = vec![0u8; 14];
    sll.extend_from_slice(&0x8864u16.to_be_bytes());
    sll.extend_from_slice(&[0x11, 0x00, 0x00, 0x27, 0x00, 0x1e, 0x00, 0x21]);
    sll.extend(ipv4_udp([10, 0, 0, 1], 53));
    let pred = lower_on(LinkType::LINUX_SLL, "pppoes 0x27 and udp").expect("lowers");
    assert!(matches(&pred, PacketView { data: &sll, wire_len: sll.len() as u32 }));
}

#[test]
fn llc_frame_kinds() {
    // 802.3 length, then DSAP, SSAP and the control byte.
    let frame = |control: u8| {
        let mut p = ether(&[], 40);
        p.extend_from_slice(&[0x42, 0x42, control]);
        p.resize(60, 0);
        p
    };
    assert!(hit("llc", &frame(0x03)));
    assert!(hit("llc u and llc ui", &frame(0x03)));
    assert!(hit("llc i", &frame(0x00)));
    assert!(hit("llc s and llc rnr", &frame(0x05)));
    assert!(hit("llc xid", &frame(0xbf)));
    assert!(!hit("llc i", &frame(0x01)));
    // Raw 802.3 (NetWare) and Ethernet II are not LLC.
    let mut raw = ether(&[], 40);
    raw.extend_from_slice(&[0xff, 0xff, 0x03]);
    assert!(!hit("llc", &raw));
    let mut e2 = ether(&[], 0x0800);
    e2.extend(ipv4_udp([10, 0, 0, 1], 53));
    assert!(!hit("llc", &e2));
}

#[test]
fn isis_pdu_types_compare_the_whole_byte_as_1_10_3() {
    // 802.3 + LLC FE FE 03, NLPID 0x83, then IS-IS header bytes 1-3 and
    // the PDU type (byte 4 after the NLPID: offset 21).
    let isis = |pdu: u8| {
        let mut p = ether(&[], 40);
        p.extend_from_slice(&[0xfe, 0xfe, 0x03, 0x83, 27, 1, 0, pdu]);
        p.resize(60, 0);
        p
    };
    assert!(hit("isis", &isis(0x12)));
    assert!(hit("l1 and lsp and isis proto 0x12", &isis(0x12)));
    assert!(hit("csnp and snp and l2", &isis(25)));
    assert!(hit("iih", &isis(17)));
    assert!(!hit("psnp", &isis(17)));
    // Deliberate: master masks the PDU type with 0x1f (reserved bits set
    // here), 1.10.3 and sift do not.
    assert!(!hit("lsp", &isis(0x20 | 0x12)));
    assert!(hit("iso proto \\isis and not clnp and not esis", &isis(0x12)));
}

#[test]
fn decnet_hosts_in_all_four_header_formats() {
    // 1.2 = 1 << 10 | 2 = 0x0402, little-endian on the wire: 02 04.
    let addr = [0x02u8, 0x04];
    let with = |flags: &[u8], at: usize| {
        let mut p = ether(&[], 0x6003);
        p.extend_from_slice(&[0, 0]); // the DECnet length word
        p.extend_from_slice(flags);
        p.resize(60, 0);
        p[at..at + 2].copy_from_slice(&addr);
        p
    };
    // Short format, no padding: destination right after the flags.
    assert!(hit("decnet dst 1.2", &with(&[0x02], 17)));
    assert!(!hit("decnet src 1.2", &with(&[0x02], 17)));
    // Short format with one pad byte: source after flags + destination.
    assert!(hit("decnet src 1.2", &with(&[0x81, 0x02], 20)));
    // Long format, no padding: source at 2 + 15.
    assert!(hit("decnet host 1.2", &with(&[0x06], 16 + 15)));
    // Long format with padding: destination at 3 + 7.
    assert!(hit("decnet dst 1.2 and decnet", &with(&[0x81, 0x06], 16 + 8)));
}

#[test]
fn errors_as_libpcap() {
    let sll = LinkType::LINUX_SLL;
    assert_eq!(error(sll, "vlan"), "no VLAN support for Linux cooked v1");
    assert_eq!(error(LinkType::LINUX_SLL2, "mpls"), "no MPLS support for Linux cooked v2");
    assert_eq!(error(LinkType::RAW, "llc"), "'llc' not supported for Raw IP");
    let en = LinkType::EN10MB;
    assert_eq!(error(en, "mpls and vlan"), "no VLAN match after MPLS");
    assert_eq!(error(en, "mpls and arp"), "unsupported protocol over mpls");
    assert_eq!(error(en, "pppoes and vlan"), "no VLAN support for PPP");
    assert_eq!(error(en, "pppoes and llc"), "'llc' not supported for PPP");
    assert_eq!(error(en, "vlan 4096"), "VLAN tag 4096 greater than maximum 4095");
    assert_eq!(error(en, "mpls 1048576"), "MPLS label 1048576 greater than maximum 1048575");
    assert_eq!(error(en, "pppoes 65536"), "PPPoE session number 65536 greater than maximum 65535");
    // Deliberate (master): a DECnet address is AREA.NODE, not a number.
    assert_eq!(error(en, "decnet host 10"), "invalid DECnet address '10'");
    // Offsets moved by an encapsulation stay moved, but errors do not
    // depend on where the encapsulation was.
    assert!(lower_on(en, "pppoes and mpls and ip").is_ok());
    assert!(lower_on(en, "(vlan or ip) and vlan and ip").is_ok());
}
