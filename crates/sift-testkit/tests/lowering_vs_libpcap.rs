//! The decisive lowering test: sift's lowering, run by the reference
//! evaluator, against libpcap 1.10.3's *unoptimized* programs.
//!
//! For every expression of [`EXPRS`] (each primitive in scope, errors
//! included) on every link type of [`DLTS`], libpcap's program comes from
//! `tcpdump -O -ddd -y DLT -- EXPR` and runs in `sift_bpf`'s interpreter
//! (libpcap `bpf_filter` semantics); sift's predicate comes from
//! `sift_syntax::parse` + `sift_ir::lower` and runs in `sift_ir::eval`. The
//! two must agree on every packet of the shared captures (plus packets
//! re-encapsulated from the Ethernet ones for the other link types) and on
//! truncations of each (caplen below the wire length, which is kept).
//! Link types where it matters are also compiled as for a savefile
//! (`tcpdump -r EMPTY.pcap -O -ddd`, with `LowerOptions::savefile`), and
//! DLT_NULL also as for a savefile of the other byte order (`swapped`).
//!
//! Outcomes are compared, not only verdicts: "accepted", "rejected" and
//! "aborted" (an out-of-bounds load or a division by zero). An abort and a
//! rejection give the same verdict for the expression alone but differ in
//! any larger filter (under `not`, on the left of `or`), so comparing
//! outcomes checks the expression and its negation at once. Truncations are
//! what expose differences in which tests run, in which order, with which
//! loads.
//!
//! Expressions libpcap rejects must be rejected by sift (the message may
//! differ). An expression sift rejects as "not supported yet by sift" while
//! libpcap compiles it is counted apart (features of later issues).
//!
//! Where sift deliberately follows libpcap master instead of 1.10.3 (see
//! `sift_ir::lower`), the reference changes, explicitly:
//! - 1.10.3 compiles a value that master's range checks reject: sift must
//!   reject it with one of master's messages (`is_master_range_check`);
//! - `byte N & V` and `byte N | V` ([`FOLLOWS_MASTER`], libpcap commit
//!   82724cc7): sift is compared with master's program, written out here,
//!   and 1.10.3 must still compile the expression.
//!
//! Prints a summary (expressions, packets, comparisons, disagreements) and
//! fails on any disagreement. Skips, saying so, when `tcpdump` or the
//! captures are missing.

use sift_bpf::insn::op;
use sift_bpf::interp::Program;
use sift_bpf::Insn;
use sift_ir::{lower, LinkType, LowerOptions, PacketView, Pred};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The link types in scope, by the name `tcpdump -y` takes.
const DLTS: &[(&str, LinkType)] = &[
    ("EN10MB", LinkType::EN10MB),
    ("RAW", LinkType::RAW),
    ("IPV4", LinkType::IPV4),
    ("IPV6", LinkType::IPV6),
    ("NULL", LinkType::NULL),
    ("LOOP", LinkType::LOOP),
    ("LINUX_SLL", LinkType::LINUX_SLL),
    ("LINUX_SLL2", LinkType::LINUX_SLL2),
];

/// Expressions compared on every link type of [`DLTS`].
const EXPRS: &[&str] = &[
    // Link-level protocol abbreviations.
    "ip", "ip6", "arp", "rarp", "atalk", "aarp", "decnet", "lat", "sca", "moprc", "mopdl",
    "iso", "stp", "ipx", "netbeui",
    // Layer 3/4 abbreviations.
    "tcp", "udp", "sctp", "icmp", "icmp6", "igmp", "igrp", "pim", "ah", "esp", "vrrp", "carp",
    "not tcp", "tcp or udp", "tcp and udp", "ip and not tcp", "not (ip or ip6)", "!arp && !ip",
    // proto.
    "proto 6", "proto 17", "proto \\tcp", "proto \\udp", "proto \\icmp", "proto ospf",
    "ip proto 1", "ip proto \\icmp", "ip proto 17", "ip proto ospf", "ip proto OSPFIGP",
    "ip proto 300", "ip6 proto 58", "ip6 proto 17", "ip6 proto \\tcp", "ip6 proto ipv6-icmp",
    "ip6 proto 44", "ip6 proto 0", "proto \\ip", "ip proto mptcp", "proto 256",
    "ether proto \\ip", "ether proto \\ip6", "ether proto \\arp", "ether proto \\rarp",
    "ether proto \\atalk", "ether proto \\aarp", "ether proto \\decnet", "ether proto \\lat",
    "ether proto \\sca", "ether proto \\moprc", "ether proto \\mopdl", "ether proto \\loopback",
    "ether proto \\iso", "ether proto \\stp", "ether proto \\ipx", "ether proto \\netbeui",
    "ether proto 0x800", "ether proto 0x86dd", "ether proto 0x88cc", "ether proto 100",
    "ether proto 1500", "ether proto 1501", "ether proto 6", "ether proto 0x10000",
    "link proto 0x806", "ether proto 0x9000", "ether proto 0", "ether proto 0xaa",
    // host / net, IPv4.
    "host 10.0.0.1", "host 192.168.1.1", "src host 127.0.0.1", "dst host 127.0.0.1",
    "src or dst host 127.0.0.1", "src and dst host 127.0.0.1", "host 127.0.0.1",
    "ip host 127.0.0.1", "arp host 127.0.0.1", "rarp host 127.0.0.1", "ip src 10.0.0.1",
    "arp dst 192.168.1.1", "host 10", "host 167772161", "host 10.1", "host 10.1.2",
    "src 10.0.0.1", "dst 10.0.0.1", "net 10", "net 192.168", "net 192.168.1", "net 127.0.0.0",
    "net 258", "net 4096", "net 0", "net 10.0.0.0/8", "net 127.0.0.0/8", "net 192.168.0.0/16",
    "net 0.0.0.0/0", "net 10.0.0.0 mask 255.0.0.0", "net 127.0.0.0 mask 255.255.0.0",
    "net 192.168 mask 255.255.0.0", "src net 127.0.0.0/8", "dst net 10.0.0.0/8",
    "ip net 127.0.0.0/24", "arp net 10.0.0.0/8", "src and dst net 127.0.0.0/8",
    "net 10.0.0.1/8", "net 10.0.0.0/33", "net 10.0.0.1 mask 255.0.0.0",
    "host 10.0.0.0/8", "src 10.0.0.0/8",
    // host / net, IPv6.
    "host ::1", "ip6 host ::1", "src host fe80::1", "dst host ff02::1", "host fe80::1/128",
    "host 2001:db8::1", "net fe80::/10", "net ff00::/8", "src net 2001:db8::/32",
    "dst net ::/0", "ip6 net fe80::/64", "src and dst host ::1", "host ::ffff:1.2.3.4",
    "net fe80::1/10", "net ::/129", "host fe80::/10", "tcp host ::1", "ip host ::1",
    // host names.
    "host localhost", "ip host localhost", "src host localhost", "arp host localhost",
    "ip6 host localhost", "host nonexistent.invalid", "net loopback", "net link-local",
    "net default", "net nosuchnet",
    // MAC.
    "ether host 1:2:3:4:5:6", "ether src 0:0:0:0:0:0", "ether dst ff:ff:ff:ff:ff:ff",
    "ether host 00:1b:21:3c:9d:f8", "ether src host 0:1:2:3:4:5", "ether dst host a:b:c:d:e:f",
    "ether src and dst 1:2:3:4:5:6", "ether host nosuchhost", "host 1:2:3:4:5:6",
    // broadcast / multicast.
    "broadcast", "ether broadcast", "multicast", "ether multicast", "ip multicast",
    "ip6 multicast", "ip broadcast", "ip6 broadcast", "tcp multicast",
    // ports.
    "port 80", "port 53", "port 22", "tcp port 80", "udp port 53", "sctp port 9",
    "src port 80", "dst port 443", "src or dst port 53", "src and dst port 53",
    "tcp src port 1024", "udp dst port 53", "port http", "port ssh", "port domain",
    "port bootps", "port www", "port mail", "tcp port domain", "udp port domain",
    "udp port ssh", "sctp port http", "tcp port bootps", "port 65535", "port 65536",
    "port 0", "port nosuchport", "port 80 or port 443", "tcp port 80 or 443",
    "port 80-90", "ip port 80", "ip6 port 80", "portrange 1-1023", "portrange 6000-6008",
    "portrange 90-80", "portrange 80", "portrange 25-smtp", "portrange smtp-25",
    "portrange ssh-domain", "tcp portrange ssh-domain", "udp portrange ssh-domain",
    "portrange ftp-data-ssh", "portrange 80--90", "portrange 70000-smtp", "portrange 0-65536",
    "src portrange 1-1023", "dst portrange 1024-65535", "src and dst portrange 1-1023",
    "tcp portrange 0-100", "udp portrange 53-53", "sctp portrange 1-2", "port 6000",
    // len / less / greater.
    "less 100", "greater 100", "less 0", "greater 1500", "len > 60", "len <= 60",
    "len = 60", "len != 60", "len >= 1500", "len < 100", "length > 100", "len - 14 > 100",
    "len + 1 > 5", "len * 2 > 200", "len / 2 > 50", "len % 7 = 3", "len & 1 = 1",
    "len | 1 = 61", "len ^ 1 = 61", "len << 1 > 100", "len >> 2 > 10", "-len = 0",
    "len - len = 0", "1 << len = 0", "0x80000000 >> len != 0", "2 << (len - 60) = 8",
    // Accessors and arithmetic.
    "ether[0] = 1", "ether[0] & 1 != 0", "ether[12:2] = 0x800", "ether[6:4] = 0",
    "link[0:2] = 0xffff", "ether[len - 1] = 0", "ether[1000] = 0", "ether[0:4] & 0xffffffff != 0",
    "ip[0] & 0xf = 5", "ip[0] & 0xf0 = 0x40", "ip[9] = 6", "ip[6:2] & 0x1fff = 0",
    "ip[2:2] > 100", "ip[12:4] = 0x7f000001", "ip[16] >= 224", "ip[ip[0] & 0xf] = 0",
    "ip6[6] = 17", "ip6[0] & 0xf0 = 0x60", "ip6[40] = 0", "ip6[24:4] = 0xff020000",
    "arp[6:2] = 1", "arp[7] = 2", "rarp[6:2] = 3", "atalk[0] = 0", "decnet[0] = 0",
    "lat[0] = 0", "sca[0] = 0", "moprc[0] = 0", "mopdl[0] = 0",
    "tcp[13] & 2 != 0", "tcp[tcpflags] & tcp-syn != 0", "tcp[0:2] = 80", "tcp[2:2] = 80",
    "tcp[12] >> 4 > 5", "tcp[0:4] = tcp[4:4]", "tcp[udp[0]] = 1", "tcp[1 + tcp[0]] = 0",
    "udp[0:2] = 53", "udp[2:2] = 53", "udp[4:2] > 100", "sctp[0:2] = 9", "icmp[0] = 8",
    "icmp[icmptype] = icmp-echo", "icmp[1] = 0", "igmp[0] = 0x11", "igrp[0] = 0",
    "pim[0] = 0x20", "vrrp[0] = 0x21", "carp[0] = 0x21", "icmp6[0] = 135",
    "icmp6[icmp6type] = icmp6-echo", "icmp6[1] = 0", "ip[0] = tcp[0]", "tcp[0] + udp[1] = 2",
    "1 + tcp[0] = 0", "ip[0] + ip6[0] = 0", "tcp[0:4] - tcp[4:4] > 0", "ip[2:2] - 20 > 100",
    "ip[len - 14 - 4:4] = 0", "tcp[ip[0] & 0xf] = 0", "ether[ip[0]] = 0",
    "ip[0] / ip[1] = 0", "ip[0] % ip[1] = 0", "ip[1] / (ip[0] - 0x45) = 0",
    "ether[12:2] / (ether[0] & 1) = 0x800", "tcp[0] * 256 + tcp[1] = 80",
    "ip[0] << ip[1] = 0", "ip[0] >> (ip[1] + 30) = 0", "-ip[0] = 0", "ip[0] ^ 0x45 = 0",
    "ip[0] | 1 = 0x45", "2 * 3 % 4 = 6", "1 + 2 ^ 3 = 2", "7 % 4 % 3 = 0", "1 = 1", "0 = 1",
    "1 != 1", "5 > 3", "3 >= 5", "3 < 5", "5 <= 3", "0 - 1 = 0xffffffff",
    "ip[0] = 1 / 0", "ip[0] = 1 % 0", "1 / (0 + 1) = 1", "1 / ip[0] = 1", "1 << 32 = 0",
    "1 << ip[40] = 1", "1 << (0 + 40) = 0", "1 >> 31 = 0", "ip[0:3] = 0", "radio[0] = 0",
    "ah[0] = 0", "esp[0] = 0", "aarp[0] = 0", "iso[0] = 0", "stp[0] = 0",
    "ip[0] = ip[1] + ip[2] + ip[3] + ip[4] + ip[5] + ip[6] + ip[7] + ip[8] + ip[9]",
    // Combinations: aborts under not / left of or.
    "not ip[100] = 0", "ip[100] = 0 or ip", "ether[200] = 0 or tcp", "tcp[100] = 0 or udp",
    "not tcp[100] = 0 and ip", "ether[1] > tcp[100] or ip", "udp or tcp[50] = 1",
    "(tcp or udp) and port 53", "host 127.0.0.1 and port 80", "ip and (port 80 or port 443)",
    "not port 22 and not arp", "icmp or arp or (udp and port 53)",
    "host 127.0.0.1 and not port 22 and len > 100", "tcp[13] & 0x12 = 0x12 and greater 60",
    "ether host 1:2:3:4:5:6 or ip6 multicast", "ip and ip6", "ip or ip6 or arp",
    "not not ip", "not (not tcp or not port 80)",
    // byte.
    "byte 12 = 8", "byte 0 < 5", "byte 0 > 5", "byte 8 | 5", "byte 8 & 5", "byte 0 & 0",
    "byte 13 | 0", "byte 20 & 0xff",
    // Master's range checks (1.10.3 compiles them).
    "byte 1 = 256", "byte 1 < 256", "byte 1 > 256", "byte 1 | 256", "byte 1 & 256",
    "ip6 proto 256", "proto 0x100", "protochain 256", "link proto 1500", "link proto 65536",
    "ether proto 255", "ether proto 256", "ether proto 65535", "iso proto 256", "isis proto 32",
    // Linux cooked captures and friends.
    "inbound", "outbound", "ifindex 2", "ifindex 3", "inbound and tcp", "outbound or udp",
    // Encapsulations (issue 3): vlan, mpls, pppoe; offsets move for
    // everything after them in the text.
    "vlan", "vlan 1", "vlan 100", "vlan 4095", "vlan 4096", "vlan and ip", "vlan 1 and tcp port 80",
    "vlan and vlan and ip", "vlan 1 and vlan 2 and udp",
    "(vlan 1 and ip src 10.0.0.1) or (vlan 2 and ip src 10.0.0.2)",
    "tcp port 80 or (vlan and tcp port 80)", "(vlan and tcp) or tcp", "vlan and ether host 1:2:3:4:5:6",
    "not vlan and ip", "not (vlan 5) or ip6", "vlan and ip6 proto 17", "vlan and arp", "vlan and ipx",
    "vlan and atalk", "vlan and stp", "vlan and ether[12:2] = 0x800", "vlan and byte 12 = 8",
    "vlan and tcp[13] & 2 != 0", "vlan and broadcast", "vlan and ip multicast", "vlan and llc",
    "vlan and iso", "vlan and mpls and ip", "vlan and pppoes and ip", "vlan and pppoed",
    "ip[0] = 0x45 and vlan and ip[0] = 0x45", "vlan and ip6 and icmp6[0] = 135",
    "mpls", "mpls 0", "mpls 100000", "mpls 1048575", "mpls 1048576", "mpls and ip", "mpls and ip6",
    "mpls and arp", "mpls and mpls and ip", "mpls 100000 and mpls 1024 and host 192.9.200.1",
    "(mpls and mpls and port 161) or (mpls and port 161)", "mpls and tcp port 80", "mpls and iso",
    "mpls and llc", "mpls and ether proto 0x800", "mpls and icmp6", "mpls and ip[1] = 0",
    "not mpls or ip", "mpls and vlan", "mpls and pppoes", "mpls and ether host 1:2:3:4:5:6",
    "mpls and udp[0:2] = 53", "mpls 5 and mpls 6 and mpls 7 and ip6",
    "pppoed", "pppoes", "pppoes 0", "pppoes 0x27", "pppoes 65535", "pppoes 65536", "pppoes and ip",
    "pppoes 3 and ip", "pppoes and ip6", "pppoes and tcp port 80", "pppoes and mpls",
    "pppoes and mpls and ip", "pppoes and mpls 5 and mpls 6 and ip6", "pppoes and vlan",
    "pppoes and arp", "pppoes and iso", "pppoes and isis", "pppoes and stp", "pppoes and ipx",
    "pppoes and decnet", "pppoes and atalk", "pppoes and netbeui", "pppoes and ether host 1:2:3:4:5:6",
    "pppoes and broadcast", "pppoes and multicast", "pppoes and ether[0] = 0", "pppoes and byte 0 = 0",
    "pppoes and llc", "pppoes and pppoes and ip", "pppoes and pppoed", "pppoes and ip or ip",
    "ip or pppoes and ip", "pppoes and link proto 0x21", "pppoes and ether proto 0x800",
    "pppoes and inbound", "pppoes and ip6 multicast", "pppoes and ip[9] = 17",
    // 802.2 LLC.
    "llc", "llc i", "llc s", "llc u", "llc rr", "llc rnr", "llc rej", "llc ui", "llc ua", "llc disc",
    "llc dm", "llc sabme", "llc test", "llc xid", "llc frmr", "llc foo", "not llc", "llc or ip",
    // OSI.
    "clnp", "esis", "isis", "l1", "l2", "iih", "lsp", "snp", "csnp", "psnp", "iso proto 0x81",
    "iso proto \\clnp", "iso proto \\esis", "iso proto \\isis", "iso proto 255", "isis proto 20",
    "isis proto 31", "isis proto 0x12 or 0x14", "clnp proto 1", "esis proto 1", "l1 proto 1",
    "iso proto foo", "not isis and iso",
    // DECnet hosts.
    "decnet src 1.2", "decnet dst 63.1023", "decnet host 10", "decnet net 1.2",
    "decnet src and dst 1.2", "decnet host 1.2 or 3.4", "decnet host 1.2 or 3", "decnet port 1.2",
    "decnet host 0.0", "decnet 1.2", "decnet net 1.2.3.0/24", "decnet net 1.2.3.0 mask 255.255.255.0",
    // Not supported yet / errors.
    "gateway localhost",
    // protochain (libpcap's loop; sift's bounded walk).
    "ip protochain 6", "protochain 6", "ip6 protochain 17", "ip6 protochain 44", "protochain 59",
    "protochain 51", "ip6 protochain 0", "ip6 protochain 60", "not protochain 58", "protochain ospf",
    "protochain 1 or protochain 58", "tcp protochain 6", "protochain foo", "ip protochain \\udp",
    "link protochain 6", "arp protochain 6", "vlan and protochain 17", "mpls and ip6 protochain 58",
    "ether proto \\foo", "ip proto foo", "proto foo", "ip6 proto foo", "tcp proto 6",
    "arp proto 6", "ether src proto 6", "link host 10.0.0.1", "tcp host 10.0.0.1",
    "icmp port 80", "ip6 net 10.0.0.0/8", "ip host fe80::1", "decnet host 1.1",
    // Protocol checks of nested accessors, in libpcap's order.
    "icmp6[tcp[0]] = 0", "ip[tcp[0]] = 0", "ip6[udp[0]] = 1", "arp[ip[0]] = 0",
    "tcp[icmp6[0]] = 0", "ether[tcp[0]] = 0", "-tcp[0] = 0", "udp[0] = tcp[0]",
    "tcp[0] - udp[0] = 0 or ip6", "icmp[ip6[0] & 3] = 0", "vrrp[len & 3] = 0x21",
    "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn", "ether[0:2] = 0xffff or ether[2:4] = 0xffffffff",
    "len > 0 and not len > 65535", "not broadcast", "not multicast", "host vm",
    "src host runsc", "portrange domain-http", "proto \\sctp", "ip6 proto \\udp",
    "ether proto \\ip and tcp", "not ip6 multicast", "ip6 and tcp[13] & 2 != 0",
    "not (arp or rarp) and not (ip or ip6)", "ip and (ip6 or arp)", "pim or vrrp or igmp",
    // Offsets that do not fit in 32 bits.
    "tcp[0xffffffff] = 0", "ip[0xfffffff2:2] = 0", "ether[0xffffffff] = 0",
    "ether[len + 0xfffffff0] = 0", "icmp6[0xffffffd0:4] = 0",
    // Qualifier inheritance.
    "host 127.0.0.1 or 10.0.0.1", "tcp port 80 or 443 or domain",
    "ether host 1:2:3:4:5:6 or 6:5:4:3:2:1", "net 10 or 192.168", "ip proto 6 or 17",
    "src net loopback", "ip6 src net fe80::/10 and tcp", "dst port 53 and not 54",
];

/// Is `msg` one of master's rejections of what 1.10.3 compiles: its range
/// checks (`assert_maxval`, [`sift_testkit::diff::is_master_range_check`])
/// or its DECnet address rules?
fn is_master_range_check(msg: &str) -> bool {
    // Master takes only AREA.NODE as a DECnet address (1.10.3 also a
    // number, an IPv4 prefix or an address with a mask).
    if msg.starts_with("invalid DECnet address") || msg.starts_with("'decnet' is not a valid qualifier for") {
        return true;
    }
    sift_testkit::diff::is_master_range_check(msg)
}

/// Expressions where sift follows master's semantics: `byte INDEX OP VALUE`
/// with `&` or `|` (libpcap commit 82724cc7; 1.10.3 never loads the byte).
/// Master compiles them to `ldb [INDEX]; and|or #VALUE; jeq #0` with the
/// branches swapped (the link-layer header is at offset 0 on every link
/// type here).
const FOLLOWS_MASTER: &[(&str, u32, u16, u32)] = &[
    ("byte 8 | 5", 8, op::OR, 5),
    ("byte 8 & 5", 8, op::AND, 5),
    ("byte 0 & 0", 0, op::AND, 0),
    ("byte 13 | 0", 13, op::OR, 0),
    ("byte 20 & 0xff", 20, op::AND, 0xff),
];

/// Master's program for a [`FOLLOWS_MASTER`] expression, with this test's
/// return values (1: rejected, 2: accepted; 0 stays "aborted").
fn master_program(expr: &str) -> Option<Program> {
    let &(_, index, alu, value) = FOLLOWS_MASTER.iter().find(|f| f.0 == expr)?;
    let prog = [
        Insn::stmt(op::LD | op::B | op::ABS, index),
        Insn::stmt(op::ALU | alu | op::K, value),
        Insn::jump(op::JMP | op::JEQ | op::K, 0, 0, 1),
        Insn::stmt(op::RET | op::K, 1),
        Insn::stmt(op::RET | op::K, 2),
    ];
    Some(Program::new(&prog).expect("master's program is valid"))
}

/// How libpcap compiles: for a dead handle (`tcpdump -d -y DLT`, sift's
/// default options) or for a savefile (`tcpdump -r FILE -d`), written in
/// this host's byte order or in the other one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Dead,
    Savefile { swapped: bool },
}

/// One case: an expression, a link type, a compilation mode.
#[derive(Clone, Copy)]
struct Job {
    expr: &'static str,
    dlt: &'static str,
    lt: LinkType,
    mode: Mode,
    /// Fewer truncations per packet ([`sparse_truncations`]): the other
    /// link types' campaign, which has many more packets per expression.
    sparse: bool,
}

/// Link types also compiled in savefile mode (where it changes something
/// in scope: DLT_NULL/DLT_LOOP `ip6`, `inbound`/`ifindex` errors).
const SAVEFILE_DLTS: &[&str] = &["EN10MB", "NULL", "LOOP"];

/// A captured packet.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Packet {
    data: Vec<u8>,
    wire_len: u32,
}

/// The shared captures: `$SIFT_PCAPS`, else `shared/data/pcaps` next to the
/// repository, else `/work/shared/data/pcaps`.
fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SIFT_PCAPS") {
        return PathBuf::from(d);
    }
    let rel = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pcaps");
    if rel.is_dir() {
        rel
    } else {
        PathBuf::from("/work/shared/data/pcaps")
    }
}

/// At most this many packets from each capture file.
const PER_FILE: usize = 100;

/// Ethernet packets re-encapsulated for each other link type.
const SYNTHESIZED: usize = 200;

/// Every readable capture under the shared data, grouped by link type,
/// without duplicates, plus re-encapsulated Ethernet packets.
fn load_packets() -> BTreeMap<LinkType, Vec<Packet>> {
    let mut files = Vec::new();
    let mut dirs = vec![data_dir()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut by_link: BTreeMap<LinkType, Vec<Packet>> = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut add = |lt: LinkType, p: Packet, by_link: &mut BTreeMap<LinkType, Vec<Packet>>| {
        if DLTS.iter().any(|d| d.1 == lt) && seen.insert((lt, p.clone())) {
            by_link.entry(lt).or_default().push(p);
        }
    };
    for f in files {
        let Ok(cap) = sift_pcap::Capture::open(&f) else { continue };
        for p in cap.packets().map_while(Result::ok).take(PER_FILE) {
            let lt = LinkType::from_linktype(p.linktype);
            add(lt, Packet { data: p.data.to_vec(), wire_len: p.wire_len }, &mut by_link);
        }
    }
    // Re-encapsulate a spread of the Ethernet packets.
    let ether: Vec<Packet> = by_link.get(&LinkType::EN10MB).cloned().unwrap_or_default();
    let step = (ether.len() / SYNTHESIZED).max(1);
    for (i, p) in ether.iter().step_by(step).enumerate() {
        for (lt, q) in reencapsulate(p, i) {
            add(lt, q, &mut by_link);
        }
    }
    by_link
}

/// An Ethernet packet as the other link types would carry it.
fn reencapsulate(p: &Packet, i: usize) -> Vec<(LinkType, Packet)> {
    let (Some(head), Some(payload)) = (p.data.get(..14), p.data.get(14..)) else {
        return Vec::new();
    };
    let ethertype = u16::from_be_bytes([head[12], head[13]]);
    let wire = |hdr: usize| (p.wire_len - 14).saturating_add(hdr as u32);
    let with = |hdr: &[u8]| Packet {
        data: hdr.iter().chain(payload).copied().collect(),
        wire_len: wire(hdr.len()),
    };
    let mut out = Vec::new();
    let version = payload.first().map(|b| b >> 4);
    if ethertype == 0x0800 || ethertype == 0x86dd {
        out.push((LinkType::RAW, with(&[])));
        if ethertype == 0x0800 && version == Some(4) {
            out.push((LinkType::IPV4, with(&[])));
        }
        if ethertype == 0x86dd && version == Some(6) {
            out.push((LinkType::IPV6, with(&[])));
        }
        // IPv6 with Linux's AF_INET6 and the BSD ones savefiles may hold.
        let af: u32 = if ethertype == 0x0800 { 2 } else { [10, 24, 28, 30][i % 4] };
        out.push((LinkType::NULL, with(&af.to_ne_bytes())));
        out.push((LinkType::LOOP, with(&af.to_be_bytes())));
    }
    // Linux cooked captures: 802.3 frames carry LLC (0x0004) or raw IPX
    // (0x0001) as their protocol.
    let proto = if ethertype > 1500 {
        ethertype
    } else if payload.get(..2) == Some(&[0xff, 0xff]) {
        0x0001
    } else {
        0x0004
    };
    let pkttype = [0u16, 4, 1, 2, 3][i % 5];
    let mut sll = Vec::with_capacity(16);
    sll.extend_from_slice(&pkttype.to_be_bytes());
    sll.extend_from_slice(&1u16.to_be_bytes());
    sll.extend_from_slice(&6u16.to_be_bytes());
    sll.extend_from_slice(&head[6..12]);
    sll.extend_from_slice(&[0, 0]);
    sll.extend_from_slice(&proto.to_be_bytes());
    out.push((LinkType::LINUX_SLL, with(&sll)));
    let mut sll2 = Vec::with_capacity(20);
    sll2.extend_from_slice(&proto.to_be_bytes());
    sll2.extend_from_slice(&[0, 0]);
    sll2.extend_from_slice(&(2 + (i as u32 % 2)).to_be_bytes());
    sll2.extend_from_slice(&1u16.to_be_bytes());
    sll2.push(pkttype as u8);
    sll2.push(6);
    sll2.extend_from_slice(&head[6..12]);
    sll2.extend_from_slice(&[0, 0]);
    out.push((LinkType::LINUX_SLL2, with(&sll2)));
    out
}

/// The caplen values tried for a packet: every value up to 256, the last
/// few, and evenly spaced ones in between (the expressions read beyond
/// 256 bytes only through computed offsets).
fn truncations(len: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..=len.min(256)).collect();
    if len > 256 {
        let step = ((len - 256) / 64).max(1);
        v.extend((256..len).step_by(step));
        v.extend(len.saturating_sub(8)..=len);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// libpcap's unoptimized program for `expr`, ready to run, or its error
/// message. `ret #0` becomes `ret #1` and any other `ret #k` becomes
/// `ret #2`, so that the interpreter's 0 means "aborted".
fn libpcap_program(job: &Job) -> Result<Program, String> {
    let mut cmd = Command::new("tcpdump");
    cmd.arg("-O").arg("-ddd");
    match job.mode {
        Mode::Dead => cmd.args(["-y", job.dlt]),
        Mode::Savefile { swapped } => cmd.arg("-r").arg(empty_savefile(job.lt, swapped)),
    };
    let out = cmd.args(["--", job.expr]).output().map_err(|e| format!("cannot run tcpdump: {e}"))?;
    let expr = job.expr;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut prog: Vec<Insn> = sift_bpf::text::parse_program(&text)
        .unwrap_or_else(|e| panic!("cannot parse tcpdump's program for {expr:?}: {e}"));
    for i in &mut prog {
        if i.code == 0x06 {
            i.k = if i.k == 0 { 1 } else { 2 };
        }
        assert!(i.code != 0x16, "ret a in {expr:?}");
    }
    Ok(Program::new(&prog).unwrap_or_else(|e| panic!("invalid program for {expr:?}: {e}")))
}

/// An empty pcap file of link type `lt` in this host's byte order or the
/// other one, for `tcpdump -r` (created before the workers start, removed
/// at the end).
fn empty_savefile(lt: LinkType, swapped: bool) -> PathBuf {
    let order = if swapped { "swapped" } else { "native" };
    let path = std::env::temp_dir().join(format!(
        "sift-lowering-{}-{}-{order}.pcap",
        std::process::id(),
        lt.0
    ));
    if !path.exists() {
        let fields: [u32; 6] = [0xa1b2_c3d4, 0x0004_0002, 0, 0, 262_144, lt.to_linktype()];
        let mut header = Vec::with_capacity(24);
        for (i, f) in fields.iter().enumerate() {
            // Word 1 is two 16-bit fields: major 2, minor 4.
            if i == 1 {
                for v in [2u16, 4u16] {
                    let b = if swapped { v.swap_bytes() } else { v };
                    header.extend_from_slice(&b.to_ne_bytes());
                }
                continue;
            }
            let f = if swapped { f.swap_bytes() } else { *f };
            header.extend_from_slice(&f.to_ne_bytes());
        }
        std::fs::write(&path, &header).expect("write a temporary pcap");
    }
    path
}

#[test]
fn lowering_matches_libpcap_on_real_and_truncated_packets() {
    let mut jobs = Vec::new();
    for expr in EXPRS {
        for (dlt, lt) in DLTS {
            jobs.push(Job { expr, dlt, lt: *lt, mode: Mode::Dead, sparse: false });
            if SAVEFILE_DLTS.contains(dlt) {
                jobs.push(Job { expr, dlt, lt: *lt, mode: Mode::Savefile { swapped: false }, sparse: false });
            }
            if *dlt == "NULL" {
                jobs.push(Job { expr, dlt, lt: *lt, mode: Mode::Savefile { swapped: true }, sparse: false });
            }
        }
    }
    run_campaign(&jobs, EXPRS.len());
}

/// The same comparison for every expression of libpcap's own compiler test
/// suite (`testrun-filters.tsv`, see shared/research/libpcap.md §2) on the
/// link types in scope: about 3,500 cases, a few minutes. Run with
/// `cargo test -p sift-testkit --test lowering_vs_libpcap -- --ignored`.
#[test]
#[ignore = "slow: libpcap's TESTrun corpus (run with --ignored)"]
fn lowering_matches_libpcap_on_testrun_expressions() {
    let tsv = data_dir().join("../libpcap-tests/testrun-filters.tsv");
    let Ok(text) = std::fs::read_to_string(&tsv) else {
        eprintln!("{} not found: skipping", tsv.display());
        return;
    };
    let mut seen = HashSet::new();
    let mut jobs = Vec::new();
    for line in text.lines().skip(1) {
        let mut f = line.split('\t');
        let (Some(dlt), Some(expr)) = (f.next(), f.next()) else { continue };
        let Some((name, lt)) = DLTS.iter().find(|d| d.0 == dlt) else { continue };
        let name: &'static str = name;
        if expr.starts_with('_') || !seen.insert((dlt.to_string(), expr.to_string())) {
            continue;
        }
        let leaked: &'static str = Box::leak(expr.to_string().into_boxed_str());
        jobs.push(Job { expr: leaked, dlt: name, lt: *lt, mode: Mode::Dead, sparse: false });
    }
    let n = jobs.len();
    run_campaign(&jobs, n);
}

/// Expressions compared on every other link type sift supports (beyond
/// [`DLTS`]), with [`FAMILY_EXPRS`] for the link types of each family.
/// (No arithmetic before a primitive that needs the 802.11/radio header
/// offsets: libpcap#1192, compat #14.)
const OTHER_LINK_EXPRS: &[&str] = &[
    "", "ip", "ip6", "arp", "rarp", "tcp", "udp", "icmp", "icmp6", "sctp", "igmp", "pim", "vrrp",
    "not ip", "ip or ip6", "tcp or udp", "ip proto 47", "ip6 proto 17", "proto 58",
    "host 10.0.0.1", "src host 192.168.1.1", "dst net 10.0.0.0/8", "host ::1", "ip6 net fe80::/10",
    "arp host 10.0.0.1", "port 80", "tcp port 80", "udp port 53", "portrange 1-1023", "src port 1024",
    "tcp[13] & 2 != 0", "ip[0] & 0xf = 5", "ip[9] = 6", "udp[0:2] = 53", "icmp[0] = 8", "ip6[6] = 17",
    "ip[100] = 0 or ip", "not tcp[100] = 0 and ip", "ip multicast", "ip broadcast", "ip6 multicast",
    "protochain 6", "ip6 protochain 17", "iso", "stp", "ipx", "atalk", "decnet", "netbeui", "llc",
    "link proto \\ip", "link proto 0x86dd", "ether proto \\arp", "broadcast", "multicast",
    "ether host 1:2:3:4:5:6", "ether src 0:0:0:0:0:0", "vlan", "vlan 1 and ip", "mpls", "mpls 100 and ip",
    "pppoes", "pppoed", "inbound", "outbound", "link[0] = 0", "link[0:2] = 0x800", "less 60",
    "greater 100", "len > 100", "1 = 1", "link host $dd", "link src $dd", "link dst host $dd",
];

/// Per-family expressions on the link types named (libpcap's DLT names).
const FAMILY_EXPRS: &[(&[&str], &[&str])] = &[
    (
        &["IEEE802_11", "IEEE802_11_RADIO", "IEEE802_11_RADIO_AVS", "PRISM_HEADER", "PPI"],
        &[
            "type mgt", "type ctl", "type data", "type data subtype qos-data", "subtype beacon",
            "subtype probe-req", "subtype ack", "type ctl subtype rts", "subtype null", "dir nods",
            "dir tods", "dir fromds", "dir dstods", "not dir nods", "wlan host 0:1:2:3:4:5",
            "wlan src 0:1:2:3:4:5", "wlan dst ff:ff:ff:ff:ff:ff", "wlan addr1 0:1:2:3:4:5",
            "wlan addr2 0:1:2:3:4:5", "wlan addr3 0:1:2:3:4:5", "wlan addr4 0:1:2:3:4:5",
            "wlan ra 0:1:2:3:4:5", "wlan ta 0:1:2:3:4:5", "type data and ip", "type data and tcp port 80",
            "type mgt or arp", "wlan[0] = 0x80", "wlan[1] & 3 = 1", "radio[0] = 0", "type data and dir tods",
        ],
    ),
    (
        &["SUNATM"],
        &[
            "vpi 0", "vci 5", "vpi 1 and vci 32", "lane", "lane and ip", "oamf4", "oamf4s", "oamf4e",
            "oamf5", "oam", "metac", "bcc", "sc", "ilmic", "connectmsg", "metaconnect", "llc and ip",
            "vpi > 2", "vci <= 100",
        ],
    ),
    (
        &["MTP2", "MTP2_WITH_PHDR", "MTP3", "ERF"],
        &[
            "fisu", "lssu", "msu", "hfisu", "hlssu", "hmsu", "sio 3", "sio > 2", "opc 1", "opc > 100",
            "sls 3", "sls < 9", "hsio 3", "hopc 1", "hsls 3", "msu and sio 3 and opc 1",
        ],
    ),
    (
        &["PFLOG"],
        &[
            "ifname eth0", "on lo0", "rnr 1", "rulenum 2", "srnr 1", "subrulenum 3", "reason match",
            "reason bad-offset", "rset foo", "ruleset main", "action pass", "action block",
            "action nat", "inbound and action pass", "outbound or reason short",
        ],
    ),
    (
        &["PPP", "PPP_PPPD", "PPP_SERIAL", "PPP_ETHER", "PPP_BSDOS", "C_HDLC", "FRELAY"],
        &[
            "clnp", "esis", "isis", "l1", "l2", "iih", "lsp", "csnp", "psnp", "isis proto 0x11",
            "mpls and tcp port 179", "mpls and mpls", "not mpls and ip", "link proto 0x21",
            "link proto 0x281", "ppp proto 0x21",
        ],
    ),
    (
        &["ARCNET", "ARCNET_LINUX", "BACNET_MS_TP"],
        &[
            "link host $dd or link host 0xdd", "link src and dst host $dd", "link src or dst $dd",
            "ip and link src $dd", "not link dst host $dd", "link broadcast",
        ],
    ),
    (
        &["FDDI", "IEEE802", "IP_OVER_FC", "NETANALYZER", "NETANALYZER_TRANSPARENT", "DSA_TAG_BRCM", "DSA_TAG_DSA"],
        &[
            "ether dst ff:ff:ff:ff:ff:ff", "ether src and dst 1:2:3:4:5:6", "ether broadcast",
            "ether multicast", "llc i", "llc u", "llc ui", "llc xid", "vlan and tcp", "vlan and vlan",
            "mpls and ip", "pppoes and ip", "stp and ether[0] = 1", "ether proto 0x88cc",
            "ether[12:2] = 0x800", "iso and isis",
        ],
    ),
];

/// Where 1.10.3 and master disagree about compiling at all and sift follows
/// master, by link type: libpcap 1.10.3's error message (or sift's, which is
/// master's) and the compat.md row.
const MASTER_ONLY: &[(&[&str], &str, &str)] = &[
    (&["DSA_TAG_BRCM"], "Broadcom tag", "compat #26"),
    (&["DSA_TAG_DSA"], "Marvell DSA", "compat #26"),
    (&["DSA_TAG_BRCM", "DSA_TAG_DSA"], "not a broadcast link", "compat #26"),
    (&["DSA_TAG_BRCM", "DSA_TAG_DSA"], "ethernet addresses supported only on", "compat #26"),
    (&["DSA_TAG_BRCM", "DSA_TAG_DSA"], "link-layer multicast filters supported only on", "compat #26"),
    (&["PPI"], "802.11 link-layer types supported only on 802.11", "compat #16"),
    (&["PPI"], "frame direction supported only with 802.11 headers", "compat #16"),
    (&["BACNET_MS_TP"], "aid supported only on ARCnet", "compat #22"),
    (&["BACNET_MS_TP"], "not a broadcast link", "compat #22"),
    (&["BACNET_MS_TP"], "link-layer type filtering not implemented for DLT_BACNET_MS_TP", "compat #22"),
    // 1.10.3 compiles `inbound`/`outbound` to a Linux extension load on
    // link types without a direction field; sift rejects them.
    (&["*"], "'inbound'/'outbound' on this link type", "compat #5"),
    // Master's EtherType table names LLDP (TESTrun accepts `ether proto lldp`).
    (&["*"], "unknown ether proto 'lldp'", "compat #32"),
];

/// Primitives of master that 1.10.3's grammar does not have (a syntax error
/// there), with the compat.md row: sift accepts them as master does
/// (TESTrun's accept rows).
const MASTER_KEYWORDS: &[(&str, &str)] = &[("vxlan", "compat #27")];

/// Expressions both compile on these link types whose 1.10.3 program has
/// no defined or no comparable meaning (not compared; sift's semantics are
/// master's, checked by TESTrun rows where master has them).
const NOT_COMPARED: &[(&[&str], &str, &str)] = &[
    // libpcap#834: the program reads the 802.11 frame control at the offset
    // in M[0], which nothing writes.
    (&["IEEE802_11_RADIO", "IEEE802_11_RADIO_AVS", "PRISM_HEADER", "PPI"], "pppoes", "compat #15 (libpcap#834)"),
    // 1.10.3 compiles them to a Linux extension load (no direction offline).
    (&["DSA_TAG_BRCM", "DSA_TAG_DSA"], "inbound", "compat #26"),
    (&["DSA_TAG_BRCM", "DSA_TAG_DSA"], "outbound", "compat #26"),
];

/// Is this a [`MASTER_ONLY`] case: libpcap 1.10.3 rejects with one of its
/// messages while sift compiles, or sift rejects with master's message while
/// 1.10.3 compiles?
fn master_only(dlt: &str, expr: &str, theirs: Option<&String>, ours: Option<&String>) -> Option<String> {
    let msg = match (theirs, ours) {
        (Some(t), None) => t,
        (None, Some(o)) => o,
        _ => return None,
    };
    if theirs.is_some() && msg.contains("syntax error") {
        let words: Vec<&str> = expr.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        if let Some((k, row)) = MASTER_KEYWORDS.iter().find(|(k, _)| words.contains(k)) {
            return Some(format!("{msg}: `{k}` is master's ({row})"));
        }
    }
    MASTER_ONLY
        .iter()
        .find(|(dlts, m, _)| (dlts.contains(&dlt) || dlts.contains(&"*")) && msg.contains(m))
        .map(|(_, _, row)| format!("{msg} ({row})"))
}

/// Caplens tried in the other link types' campaign: every value up to 48
/// bytes (the link-layer headers), then every 7th, and the full length.
fn sparse_truncations(len: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..=len.min(48)).chain((48..len).step_by(7)).collect();
    v.push(len);
    v.sort_unstable();
    v.dedup();
    v
}

/// Structured random packets per link type in the other link types' campaign.
const RANDOM_PER_LINK: usize = 120;

/// Every link type sift supports beyond [`DLTS`]: [`OTHER_LINK_EXPRS`] plus
/// its family's [`FAMILY_EXPRS`], on the captures of that link type and
/// [`RANDOM_PER_LINK`] packets of `sift_testkit::packets::random_packet`
/// (realistic headers, payloads and truncations), each also truncated.
#[test]
fn lowering_matches_libpcap_on_every_other_link_type() {
    let mut links: Vec<(&'static str, LinkType)> = Vec::new();
    for lt in sift_ir::lower::supported_linktypes() {
        let Some(name) = lt.name() else { continue };
        if !DLTS.iter().any(|d| d.1 == lt) {
            links.push((name, lt));
        }
    }
    assert!(links.len() >= 30, "only {} other link types", links.len());
    let mut jobs = Vec::new();
    let mut distinct = HashSet::new();
    for &(dlt, lt) in &links {
        let family = FAMILY_EXPRS.iter().filter(|(dlts, _)| dlts.contains(&dlt)).flat_map(|(_, e)| e.iter());
        for &expr in OTHER_LINK_EXPRS.iter().chain(family) {
            distinct.insert(expr);
            jobs.push(Job { expr, dlt, lt, mode: Mode::Dead, sparse: true });
        }
    }
    if Command::new("tcpdump").arg("--version").output().is_err() {
        eprintln!("tcpdump not found: skipping the libpcap comparison");
        return;
    }
    // Captures of these link types, then random packets.
    let mut packets: BTreeMap<LinkType, Vec<Packet>> = BTreeMap::new();
    let mut files = Vec::new();
    let mut dirs = vec![data_dir()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        let Ok(cap) = sift_pcap::Capture::open(&f) else { continue };
        for p in cap.packets().map_while(Result::ok).take(PER_FILE) {
            let lt = LinkType::from_linktype(p.linktype);
            if links.iter().any(|l| l.1 == lt) {
                packets.entry(lt).or_default().push(Packet { data: p.data.to_vec(), wire_len: p.wire_len });
            }
        }
    }
    // DLT_ERF (libpcap filters the SS7 fields of an MTP2 payload after a
    // 20-byte ERF header): the MTP2 packets behind an ERF record header.
    if links.iter().any(|l| l.1 == LinkType::from_linktype(197)) {
        let mut rng = sift_testkit::Rng::fork(0x5eed_11a4, 197_000);
        let mut mtp2: Vec<Packet> = packets.get(&LinkType::from_linktype(140)).cloned().unwrap_or_default();
        for _ in 0..RANDOM_PER_LINK {
            let (data, wire_len) = sift_testkit::packets::random_packet(&mut rng, LinkType::from_linktype(140));
            mtp2.push(Packet { data, wire_len });
        }
        let erf = packets.entry(LinkType::from_linktype(197)).or_default();
        for p in mtp2 {
            let mut data = rng.bytes(20);
            data.extend_from_slice(&p.data);
            erf.push(Packet { data, wire_len: p.wire_len.saturating_add(20) });
        }
    }
    for &(_, lt) in &links {
        let mut rng = sift_testkit::Rng::fork(0x5eed_11a4, u64::from(lt.0));
        let v = packets.entry(lt).or_default();
        for _ in 0..RANDOM_PER_LINK {
            let (data, wire_len) = sift_testkit::packets::random_packet(&mut rng, lt);
            v.push(Packet { data, wire_len });
        }
    }
    execute(&jobs, distinct.len(), &links, &packets);
}

fn run_campaign(jobs: &[Job], nexprs: usize) {
    if Command::new("tcpdump").arg("--version").output().is_err() {
        eprintln!("tcpdump not found: skipping the libpcap comparison");
        return;
    }
    let packets = load_packets();
    let npackets: usize = packets.values().map(Vec::len).sum();
    if npackets == 0 {
        eprintln!("no captures under {}: skipping the libpcap comparison", data_dir().display());
        return;
    }
    for (name, lt) in DLTS {
        let n = packets.get(lt).map_or(0, Vec::len);
        assert!(n > 0, "no {name} packets");
    }
    let names: Vec<(&str, LinkType)> = DLTS.to_vec();
    execute(jobs, nexprs, &names, &packets);
}

/// Runs the jobs on the packets of their link types (`names`: the link
/// types in scope, for the summary), prints the summary and fails on any
/// disagreement.
fn execute(jobs: &[Job], nexprs: usize, names: &[(&str, LinkType)], packets: &BTreeMap<LinkType, Vec<Packet>>) {
    let npackets: usize = packets.values().map(Vec::len).sum();
    // DLT_NULL packets as a host of the other byte order writes them.
    let mut swapped_packets: BTreeMap<LinkType, Vec<Packet>> = BTreeMap::new();
    let null: Vec<Packet> = packets.get(&LinkType::NULL).cloned().unwrap_or_default();
    swapped_packets.insert(
        LinkType::NULL,
        null.into_iter()
            .map(|mut p| {
                if let Some(af) = p.data.get_mut(..4) {
                    af.reverse();
                }
                p
            })
            .collect(),
    );

    // Create the savefiles tcpdump reads before the workers start.
    let mut savefiles = Vec::new();
    for j in jobs {
        if let Mode::Savefile { swapped } = j.mode {
            let f = empty_savefile(j.lt, swapped);
            if !savefiles.contains(&f) {
                savefiles.push(f);
            }
        }
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        let pk = match job.mode {
                            Mode::Savefile { swapped: true } => swapped_packets
                                .get(&job.lt)
                                .map(Vec::as_slice)
                                .unwrap_or(&[]),
                            _ => packets.get(&job.lt).map(Vec::as_slice).unwrap_or(&[]),
                        };
                        out.push(compare(job, pk));
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("worker panicked")).collect()
    });

    for f in savefiles {
        let _ = std::fs::remove_file(f);
    }
    let verbose = std::env::var_os("LOWER_VERBOSE").is_some();
    let mut comparisons = 0u64;
    let mut disagreements = Vec::new();
    let (mut both_ok, mut both_err, mut unsupported) = (0, 0, 0);
    let mut stricter = Vec::new();
    let (mut range_checks, mut follows_master) = (Vec::new(), Vec::new());
    let mut master_only = Vec::new();
    for r in &results {
        comparisons += r.comparisons;
        match &r.kind {
            Kind::BothOk => both_ok += 1,
            Kind::BothErr(theirs, ours) => {
                both_err += 1;
                if verbose {
                    println!("  both reject [{}] {}: libpcap: {theirs} / sift: {ours}", r.dlt, r.expr);
                }
            }
            Kind::Unsupported => {
                unsupported += 1;
                if verbose {
                    println!("  not supported yet by sift [{}] {}", r.dlt, r.expr);
                }
            }
            Kind::StricterParser(m) => stricter.push(format!("[{}] {}: {m}", r.dlt, r.expr)),
            Kind::MasterRangeCheck(m) => range_checks.push(format!("[{}] {}: {m}", r.dlt, r.expr)),
            Kind::FollowsMaster(d) => {
                follows_master.push(format!("[{}] {} (1.10.3 differs on {d})", r.dlt, r.expr))
            }
            Kind::MasterOnly(m) => master_only.push(format!("[{}] {}: {m}", r.dlt, r.expr)),
            Kind::Mismatch(m) => disagreements.push(format!("[{}] {}: {m}", r.dlt, r.expr)),
        }
    }
    let per_link: Vec<String> = names
        .iter()
        .map(|(name, lt)| format!("{name} {}", packets.get(lt).map_or(0, Vec::len)))
        .collect();
    println!(
        "lowering vs libpcap: {} expressions, {} link types, {} cases ({} compiled by both, \
         {} rejected by both, {} not supported yet by sift, {} rejected by master's range checks, \
         {} following master's semantics, {} known differences: sift follows master where 1.10.3 \
         rejects, fails or is undefined); {} packets ({}); {} comparisons; {} disagreements",
        nexprs,
        names.len(),
        results.len(),
        both_ok,
        both_err,
        unsupported,
        range_checks.len(),
        follows_master.len(),
        master_only.len(),
        npackets,
        per_link.join(", "),
        comparisons,
        disagreements.len()
    );
    for d in &stricter {
        println!("  parser stricter than 1.10.3 (libpcap master rules): {d}");
    }
    if verbose {
        for d in &range_checks {
            println!("  master's range check (1.10.3 compiles it): {d}");
        }
        for d in &follows_master {
            println!("  follows master's semantics (compared with master's program): {d}");
        }
        for d in &master_only {
            println!("  follows master (1.10.3 compiles it differently or not at all): {d}");
        }
    }
    for d in disagreements.iter().take(50) {
        println!("  {d}");
    }
    assert!(disagreements.is_empty(), "{} disagreements with libpcap", disagreements.len());
}

/// The result of one expression on one link type.
struct Outcome {
    expr: &'static str,
    dlt: String,
    comparisons: u64,
    kind: Kind,
}

enum Kind {
    /// Both compile and agree on every packet.
    BothOk,
    /// Both reject the expression (libpcap's message, sift's).
    BothErr(String, String),
    /// libpcap compiles it; sift reports a feature it does not have yet.
    Unsupported,
    /// libpcap 1.10.3 compiles it; sift's parser rejects it, following
    /// libpcap master's stricter checks (not a lowering matter).
    StricterParser(String),
    /// libpcap 1.10.3 compiles it; sift's lowering rejects it with one of
    /// master's range checks.
    MasterRangeCheck(String),
    /// 1.10.3 compiles it; sift follows master's semantics and agrees with
    /// master's program on every packet (1.10.3 differs on this many).
    FollowsMaster(u64),
    /// libpcap 1.10.3 rejects what master (and sift) compile, or compiles
    /// what master (and sift) reject, on a link type where sift follows
    /// master ([`MASTER_ONLY`]; the message, with the compat.md row).
    MasterOnly(String),
    /// What went wrong.
    Mismatch(String),
}

fn outcome(o: Option<bool>) -> &'static str {
    match o {
        Some(true) => "accepts",
        Some(false) => "rejects",
        None => "aborts",
    }
}

fn compare(job: &Job, packets: &[Packet]) -> Outcome {
    let dlt = match job.mode {
        Mode::Dead => job.dlt.to_string(),
        Mode::Savefile { swapped: false } => format!("{} savefile", job.dlt),
        Mode::Savefile { swapped: true } => format!("{} swapped savefile", job.dlt),
    };
    let (expr, lt) = (job.expr, job.lt);
    let mk = |comparisons, kind| Outcome { expr, dlt: dlt.clone(), comparisons, kind };
    let theirs = libpcap_program(job);
    let parsed = sift_syntax::parse(expr);
    if let (Ok(_), Err(e)) = (&theirs, &parsed) {
        if e.message.starts_with("invalid DECnet address") {
            return mk(0, Kind::StricterParser(e.message.clone()));
        }
    }
    let ours: Result<Pred, String> = parsed
        .map_err(|e| format!("parse: {}", e.message))
        .and_then(|f| {
            // tcpdump compiles with netmask 0 when not capturing.
            let (savefile, swapped) = match job.mode {
                Mode::Dead => (false, false),
                Mode::Savefile { swapped } => (true, swapped),
            };
            let opts = LowerOptions { linktype: lt, netmask: Some(0), savefile, swapped, names: None, port_lists: true };
            lower(&f, &opts).map_err(|e| e.message)
        });
    if let Some(why) = master_only(job.dlt, expr, theirs.as_ref().err(), ours.as_ref().err()) {
        return mk(0, Kind::MasterOnly(why));
    }
    if let Some((_, _, why)) =
        NOT_COMPARED.iter().find(|(dlts, e, _)| dlts.contains(&job.dlt) && *e == expr && job.sparse)
    {
        if theirs.is_ok() && ours.is_ok() {
            return mk(0, Kind::MasterOnly(format!("compiled, not compared: {why}")));
        }
    }
    let (prog, pred) = match (theirs, ours) {
        (Err(t), Err(o)) => return mk(0, Kind::BothErr(t, o)),
        (Err(t), Ok(_)) => {
            return mk(0, Kind::Mismatch(format!("libpcap rejects ({t}), sift accepts")))
        }
        (Ok(_), Err(o)) if is_master_range_check(&o) => return mk(0, Kind::MasterRangeCheck(o)),
        (Ok(_), Err(o)) if o.contains("not supported yet by sift") => {
            return mk(0, Kind::Unsupported)
        }
        (Ok(_), Err(o)) => {
            return mk(0, Kind::Mismatch(format!("sift rejects ({o}), libpcap accepts")))
        }
        (Ok(p), Ok(q)) => (p, q),
    };
    // The reference: master's program for the known differences.
    let v1_10_3 = prog;
    let master = master_program(expr);
    let prog = master.as_ref().unwrap_or(&v1_10_3);
    let mut n = 0u64;
    let mut differ = 0u64;
    let mut bad = Vec::new();
    for (pi, p) in packets.iter().enumerate() {
        let caplens = if job.sparse { sparse_truncations(p.data.len()) } else { truncations(p.data.len()) };
        for caplen in caplens {
            let data = &p.data[..caplen];
            let run = |prog: &Program| match prog.run(data, p.wire_len) {
                0 => None,
                r => Some(r == 2),
            };
            let want = run(prog);
            if master.is_some() && want != run(&v1_10_3) {
                differ += 1;
            }
            let view = PacketView { data, wire_len: p.wire_len };
            let got = sift_ir::eval::eval_pred(&pred, view).ok();
            n += 1;
            if want != got && bad.len() < 3 {
                bad.push(format!(
                    "packet #{pi} caplen {caplen}/{}: libpcap {}, sift {}",
                    p.data.len(),
                    outcome(want),
                    outcome(got)
                ));
            }
        }
    }
    if !bad.is_empty() && master.is_some() {
        mk(n, Kind::Mismatch(format!("against master's program: {}\n{pred}", bad.join("; "))))
    } else if master.is_some() {
        mk(n, Kind::FollowsMaster(differ))
    } else if bad.is_empty() {
        mk(n, Kind::BothOk)
    } else {
        mk(n, Kind::Mismatch(format!("{}\n{pred}", bad.join("; "))))
    }
}
