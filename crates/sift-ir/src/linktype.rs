//! Link-layer header types (libpcap's DLT_* values on Linux).

use std::fmt;

/// A link-layer header type, by its libpcap DLT value as on Linux.
///
/// Savefiles store LINKTYPE_* values, which equal the DLT values except for a
/// few historical ones; [`LinkType::from_linktype`] and
/// [`LinkType::to_linktype`] convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

/// (DLT value, LINKTYPE value in files, name as `pcap_datalink_name_to_val` accepts it).
const TABLE: &[(u32, u32, &str)] = &[
    (0, 0, "NULL"),
    (1, 1, "EN10MB"),
    (2, 2, "EN3MB"),
    (3, 3, "AX25"),
    (4, 4, "PRONET"),
    (5, 5, "CHAOS"),
    (6, 6, "IEEE802"),
    (7, 7, "ARCNET"),
    (8, 8, "SLIP"),
    (9, 9, "PPP"),
    (10, 10, "FDDI"),
    (11, 100, "ATM_RFC1483"),
    (12, 101, "RAW"),
    (15, 102, "SLIP_BSDOS"),
    (16, 103, "PPP_BSDOS"),
    (19, 106, "ATM_CLIP"),
    (50, 50, "PPP_SERIAL"),
    (51, 51, "PPP_ETHER"),
    (99, 99, "SYMANTEC_FIREWALL"),
    (104, 104, "C_HDLC"),
    (105, 105, "IEEE802_11"),
    (107, 107, "FRELAY"),
    (108, 108, "LOOP"),
    (109, 109, "ENC"),
    (113, 113, "LINUX_SLL"),
    (114, 114, "LTALK"),
    (117, 117, "PFLOG"),
    (119, 119, "PRISM_HEADER"),
    (122, 122, "IP_OVER_FC"),
    (123, 123, "SUNATM"),
    (127, 127, "IEEE802_11_RADIO"),
    (129, 129, "ARCNET_LINUX"),
    (134, 134, "JUNIPER_MFR"),
    (138, 138, "APPLE_IP_OVER_IEEE1394"),
    (139, 139, "MTP2_WITH_PHDR"),
    (140, 140, "MTP2"),
    (141, 141, "MTP3"),
    (142, 142, "SCCP"),
    (143, 143, "DOCSIS"),
    (144, 144, "LINUX_IRDA"),
    (163, 163, "IEEE802_11_RADIO_AVS"),
    (165, 165, "BACNET_MS_TP"),
    (166, 166, "PPP_PPPD"),
    (187, 187, "BLUETOOTH_HCI_H4"),
    (192, 192, "PPI"),
    (195, 195, "IEEE802_15_4"),
    (197, 197, "ERF"),
    (201, 201, "BLUETOOTH_HCI_H4_WITH_PHDR"),
    (215, 215, "IEEE802_15_4_NONASK_PHY"),
    (220, 220, "USB_LINUX_MMAPPED"),
    (226, 226, "IPNET"),
    (227, 227, "CAN_SOCKETCAN"),
    (228, 228, "IPV4"),
    (229, 229, "IPV6"),
    (239, 239, "NFLOG"),
    (240, 240, "NETANALYZER"),
    (241, 241, "NETANALYZER_TRANSPARENT"),
    (242, 242, "IPOIB"),
    (249, 249, "USBPCAP"),
    (276, 276, "LINUX_SLL2"),
    (281, 281, "DSA_TAG_BRCM"),
    (282, 282, "DSA_TAG_BRCM_PREPEND"),
    (284, 284, "DSA_TAG_DSA"),
    (285, 285, "DSA_TAG_EDSA"),
];

impl LinkType {
    /// BSD loopback: a 4-byte address family in host byte order.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet.
    pub const EN10MB: LinkType = LinkType(1);
    /// Raw IP (IPv4 or IPv6 by the version nibble).
    pub const RAW: LinkType = LinkType(12);
    /// OpenBSD loopback: a 4-byte address family in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux cooked capture v1.
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux cooked capture v2.
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// IEEE 802 Token Ring.
    pub const IEEE802: LinkType = LinkType(6);
    /// FDDI.
    pub const FDDI: LinkType = LinkType(10);
    /// IEEE 802.11 wireless LAN.
    pub const IEEE802_11: LinkType = LinkType(105);
    /// 802.11 after a Prism (or AVS) monitor-mode header.
    pub const PRISM_HEADER: LinkType = LinkType(119);
    /// RFC 2625 IP over Fibre Channel.
    pub const IP_OVER_FC: LinkType = LinkType(122);
    /// 802.11 after a radiotap header.
    pub const IEEE802_11_RADIO: LinkType = LinkType(127);
    /// 802.11 after an AVS radio information header.
    pub const IEEE802_11_RADIO_AVS: LinkType = LinkType(163);
    /// Per-Packet Information header (802.11 inside it, for filtering).
    pub const PPI: LinkType = LinkType(192);

    /// The link type of a savefile header's LINKTYPE_* value.
    pub fn from_linktype(linktype: u32) -> LinkType {
        TABLE
            .iter()
            .find(|e| e.1 == linktype)
            .map_or(LinkType(linktype), |e| LinkType(e.0))
    }

    /// The LINKTYPE_* value to write in a savefile.
    pub fn to_linktype(self) -> u32 {
        TABLE.iter().find(|e| e.0 == self.0).map_or(self.0, |e| e.1)
    }

    /// Looks up a name as `tcpdump -y` accepts it (`EN10MB`, `en10mb`,
    /// `DLT_EN10MB`) or a decimal DLT number.
    pub fn from_name(name: &str) -> Option<LinkType> {
        if let Ok(n) = name.parse::<u32>() {
            return Some(LinkType(n));
        }
        let bare = name
            .strip_prefix("DLT_")
            .or_else(|| name.strip_prefix("dlt_"))
            .unwrap_or(name);
        TABLE
            .iter()
            .find(|e| e.2.eq_ignore_ascii_case(bare))
            .map(|e| LinkType(e.0))
    }

    /// Every link type sift knows by name (libpcap's DLT table), in table order.
    pub fn all() -> impl Iterator<Item = LinkType> {
        TABLE.iter().map(|e| LinkType(e.0))
    }

    /// The libpcap name (without `DLT_`), if known.
    pub fn name(self) -> Option<&'static str> {
        TABLE.iter().find(|e| e.0 == self.0).map(|e| e.2)
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "DLT {}", self.0),
        }
    }
}
