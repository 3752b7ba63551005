//! The predicate trees lowering builds for representative primitives, as
//! printed by `Pred`'s `Display`. Each expected tree was checked against
//! libpcap 1.10.3's unoptimized program (`tcpdump -O -d -y DLT 'expr'`): same
//! tests, same order, same loads. They document the shapes and guard them
//! against accidental change; the verdict-level proof is the differential
//! test in `sift-testkit` (`lowering_vs_libpcap`).

use sift_ir::{lower, LinkType, LowerOptions};

fn tree(lt: LinkType, expr: &str) -> String {
    let f = sift_syntax::parse(expr).unwrap_or_else(|e| panic!("{expr}: {}", e.message));
    let o = LowerOptions { linktype: lt, netmask: Some(0), ..LowerOptions::default() };
    lower(&f, &o).unwrap_or_else(|e| panic!("{expr}: {}", e.message)).to_string()
}

fn check(lt: LinkType, expr: &str, want: &str) {
    let got = tree(lt, expr);
    assert_eq!(got.trim_end(), want.trim(), "tree of {expr:?} on {lt}");
}

#[test]
fn port_is_ipv6_then_ipv4_with_first_fragment_and_variable_header() {
    check(
        LinkType::EN10MB,
        "tcp dst port 80",
        "
or
  and
    u16[12] == 0x86dd
    u8[20] == 6
    u16[56] == 0x50
  and
    u16[12] == 0x800
    u8[23] == 6
    not
      u16[20] & 0x1fff != 0
    u16[((u8[14] & 0xf) << 2) + 16] == 0x50",
    );
}

/// libpcap repeats the port test once per protocol (SCTP, TCP, UDP); sift
/// tests the protocol byte against the three, then the ports once: the same
/// loads in the same order on every path, so the same outcomes (see
/// `sift_ir::lower`, "Where the tree is smaller than 1.10.3's program").
#[test]
fn port_without_protocol_tests_the_three_protocols_then_the_ports_once() {
    check(
        LinkType::EN10MB,
        "port 53",
        "
or
  and
    u16[12] == 0x86dd
    or
      u8[20] == 0x84
      u8[20] == 6
      u8[20] == 0x11
    or
      u16[54] == 0x35
      u16[56] == 0x35
  and
    u16[12] == 0x800
    or
      u8[23] == 0x84
      u8[23] == 6
      u8[23] == 0x11
    not
      u16[20] & 0x1fff != 0
    or
      u16[((u8[14] & 0xf) << 2) + 14] == 0x35
      u16[((u8[14] & 0xf) << 2) + 16] == 0x35",
    );
}

#[test]
fn ip6_proto_accepts_one_fragment_header() {
    check(
        LinkType::EN10MB,
        "ip6 proto 17",
        "
and
  u16[12] == 0x86dd
  or
    u8[20] == 0x11
    and
      u8[20] == 0x2c
      u8[54] == 0x11",
    );
}

#[test]
fn transport_accessor_checks_ip_then_the_protocol_then_the_fragment() {
    check(
        LinkType::EN10MB,
        "tcp[13] & 2 != 0",
        "
and
  u16[12] == 0x800
  or
    and
      u16[12] == 0x800
      u8[23] == 6
    and
      u16[12] == 0x86dd
      or
        u8[20] == 6
        and
          u8[20] == 0x2c
          u8[54] == 6
  not
    u16[20] & 0x1fff != 0
  not
    (u8[(0xd + ((u8[14] & 0xf) << 2)) + 14] & 2) == 0",
    );
}

#[test]
fn icmp6_accessor_uses_the_fixed_header() {
    check(
        LinkType::EN10MB,
        "icmp6[0] = 135",
        "
and
  u16[12] == 0x86dd
  u8[20] == 0x3a
  u8[0 + 54] == 0x87",
    );
}

#[test]
fn ethernet_appletalk_and_snap() {
    check(
        LinkType::EN10MB,
        "ether proto \\atalk",
        "
or
  u16[12] == 0x809b
  and
    not
      u16[12] > 0x5dc
    u32[18] == 0x7809b
    u32[14] == 0xaaaa0308",
    );
}

#[test]
fn mac_addresses_compare_the_last_four_bytes_first() {
    check(
        LinkType::EN10MB,
        "ether src 1:2:3:4:5:6",
        "
and
  u32[8] == 0x3040506
  u16[6] == 0x102",
    );
}

#[test]
fn ipv6_host_is_four_words() {
    check(
        LinkType::EN10MB,
        "ip6 src host ::1",
        "
and
  u16[12] == 0x86dd
  u32[22] == 0
  u32[26] == 0
  u32[30] == 0
  u32[34] == 1",
    );
}

#[test]
fn linux_cooked_ipx() {
    check(
        LinkType::LINUX_SLL,
        "ether proto \\ipx",
        "
or
  u16[14] == 0x8137
  u16[14] == 1
  and
    u16[14] == 4
    or
      u8[16] == 0xe0
      and
        u32[20] == 0x8137
        u32[16] == 0xaaaa0300",
    );
}

#[test]
fn raw_ip_tests_the_version_nibble() {
    check(
        LinkType::RAW,
        "udp src port 53",
        "
or
  and
    (u8[0] & 0xf0) == 0x60
    u8[6] == 0x11
    u16[40] == 0x35
  and
    (u8[0] & 0xf0) == 0x40
    u8[9] == 0x11
    not
      u16[6] & 0x1fff != 0
    u16[((u8[0] & 0xf) << 2) + 0] == 0x35",
    );
}

#[test]
fn loopback_address_families() {
    let af6 = 10u32.to_be();
    check(LinkType::NULL, "ip6", &format!("u32[0] == {af6:#x}"));
    check(LinkType::LOOP, "ip6", "u32[0] == 0xa");
}

#[test]
fn linux_cooked_v2_direction_and_interface() {
    check(LinkType::LINUX_SLL2, "inbound", "not\n  u8[10] == 4");
    check(LinkType::LINUX_SLL2, "ifindex 3", "u32[4] == 3");
    check(LinkType::LINUX_SLL, "outbound", "u16[0] == 4");
}

#[test]
fn raw_ipv4_and_ipv6_have_constant_link_tests() {
    check(LinkType::IPV4, "ip", "true");
    check(LinkType::IPV4, "arp", "false");
    check(LinkType::IPV6, "ip6 and ip", "and\n  true\n  false");
}

#[test]
fn arithmetic_is_not_folded() {
    check(LinkType::EN10MB, "len - 14 > 100", "(len - 0xe) > 0x64");
    check(LinkType::EN10MB, "less 60", "not\n  len > 0x3c");
    check(LinkType::EN10MB, "greater 60", "len >= 0x3c");
}

#[test]
fn shifts_by_a_computed_count_are_masked() {
    check(LinkType::EN10MB, "1 << len = 0", "((1 << len) & -(1 / ((len >> 5) + 1))) == 0");
    check(LinkType::EN10MB, "len << 3 = 0", "(len << 3) == 0");
}
