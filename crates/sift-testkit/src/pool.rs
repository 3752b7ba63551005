//! Shared pools of values drawn by both generators.
//!
//! Random packets take their addresses, ports, protocol numbers and
//! EtherTypes mostly from these pools, and random filter expressions take
//! their operands from the same pools, so a fair share of filters match a
//! fair share of packets (instead of testing only the "no match" paths).

/// IPv4 addresses (as `[a, b, c, d]`): private hosts, a /24, broadcast,
/// multicast (incl. 240/4 for libpcap 1.10.3's `ip multicast` quirk),
/// loopback, zero.
pub const IPV4: &[[u8; 4]] = &[
    [10, 0, 0, 1],
    [10, 0, 0, 2],
    [10, 1, 2, 3],
    [192, 168, 1, 1],
    [192, 168, 1, 2],
    [192, 168, 1, 10],
    [192, 168, 1, 255],
    [192, 168, 0, 1],
    [172, 16, 0, 1],
    [255, 255, 255, 255],
    [224, 0, 0, 1],
    [224, 0, 0, 251],
    [239, 255, 255, 250],
    [240, 0, 0, 1],
    [0, 0, 0, 0],
    [0, 0, 0, 10],
    [127, 0, 0, 1],
    [1, 2, 3, 4],
    [8, 8, 8, 8],
];

/// IPv6 addresses: loopback, unspecified, link-local, multicast
/// (all-nodes, all-routers, solicited-node), documentation, v4-mapped.
pub const IPV6: &[[u8; 16]] = &[
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0; 16],
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 1],
    [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1],
];

/// MAC-48 addresses: broadcast, IPv4/IPv6 multicast, STP, zero, ordinary.
pub const MAC: &[[u8; 6]] = &[
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
    [0x33, 0x33, 0x00, 0x00, 0x00, 0x01],
    [0x01, 0x80, 0xc2, 0x00, 0x00, 0x00],
    [0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
    [0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
    [0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
    [0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc],
];

/// TCP/UDP/SCTP ports.
pub const PORTS: &[u16] = &[0, 20, 21, 22, 53, 67, 68, 80, 123, 161, 443, 514, 1024, 8080, 65535];

/// Service names with their port and whether `/etc/services` (Debian
/// netbase) lists them for TCP and for UDP. libpcap tests only the
/// protocols a name is defined for.
pub const SERVICES: &[(&str, u16, bool, bool)] = &[
    ("ftp-data", 20, true, false),
    ("ftp", 21, true, false),
    ("ssh", 22, true, false),
    ("telnet", 23, true, false),
    ("smtp", 25, true, false),
    ("domain", 53, true, true),
    ("bootps", 67, false, true),
    ("bootpc", 68, false, true),
    ("tftp", 69, false, true),
    ("http", 80, true, false),
    ("www", 80, true, false),
    ("ntp", 123, false, true),
    ("snmp", 161, true, true),
    ("https", 443, true, true),
    ("syslog", 514, false, true),
    ("http-alt", 8080, true, false),
];

/// IP protocol numbers: the common transports plus a few others.
pub const IP_PROTOS: &[u8] = &[1, 2, 6, 17, 132, 58, 103, 112, 51, 50, 9, 47, 89, 0, 4, 41, 43, 44, 59, 60, 255];

/// Protocol names `ip proto` / `ip6 proto` / `proto` accept (through
/// `/etc/protocols` or backslash-escaped keywords), with their numbers.
pub const PROTO_NAMES: &[(&str, u8)] = &[
    ("\\icmp", 1),
    ("\\igmp", 2),
    ("\\tcp", 6),
    ("\\udp", 17),
    ("\\sctp", 132),
    ("\\pim", 103),
    ("\\vrrp", 112),
    ("\\ah", 51),
    ("\\esp", 50),
    ("ggp", 3),
    ("egp", 8),
    ("gre", 47),
    ("ospf", 89),
    ("ipv6-icmp", 58),
    ("ipv6-frag", 44),
    ("ipencap", 4),
];

/// EtherTypes (and 802.3 length values at the 1500/1501 boundary).
pub const ETHERTYPES: &[u16] = &[
    0x0800, 0x86dd, 0x0806, 0x8035, 0x8100, 0x88a8, 0x9100, 0x8847, 0x8863, 0x8864, 0x809b, 0x80f3, 0x6003,
    0x6004, 0x8137, 0x88cc, 0x0000, 0x05dc, 0x05dd, 0xffff,
];

/// EtherType names accepted by `ether proto \NAME` in the core language.
pub const ETHER_PROTO_NAMES: &[&str] = &["\\ip", "\\ip6", "\\arp", "\\rarp"];

/// 32-bit boundary values for constants.
pub const BOUNDARY_U32: &[u32] = &[0, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 255, 256, 65535, 65536];

/// An IPv4 address as a big-endian `u32`.
pub fn ipv4_u32(a: [u8; 4]) -> u32 {
    u32::from_be_bytes(a)
}
