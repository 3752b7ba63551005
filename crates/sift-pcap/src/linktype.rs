//! Link-layer type bookkeeping that affects how savefiles are read and
//! written: the LINKTYPE_* ↔ DLT_* mapping of libpcap 1.10.3 on Linux, the
//! per-link-type maximum capture length and the snapshot-length fix-up.
//!
//! Everything here was checked against the installed libpcap 1.10.3 by
//! opening files with every link type from 0 to 299 and dumping them again
//! with `pcap_dump_open`.

/// Mask of the link-type bits of a pcap file header's `linktype` field.
/// The upper 6 bits carry extra information (FCS length) that libpcap keeps
/// aside and writes back unchanged.
pub const LINKTYPE_MASK: u32 = 0x03FF_FFFF;

/// The default maximum snapshot length of libpcap (`MAXIMUM_SNAPLEN`).
pub const MAXIMUM_SNAPLEN: u32 = 262_144;

/// LINKTYPE_LINUX_SLL: Linux cooked capture v1.
pub const LINUX_SLL: u32 = 113;
/// LINKTYPE_PFLOG: OpenBSD pflog.
pub const PFLOG: u32 = 117;
/// LINKTYPE_USB_LINUX: Linux USB with the 48-byte header.
pub const USB_LINUX: u32 = 189;
/// LINKTYPE_USB_LINUX_MMAPPED: Linux USB with the 64-byte header.
pub const USB_LINUX_MMAPPED: u32 = 220;
/// LINKTYPE_DBUS: D-Bus messages (128 MiB maximum snapshot length).
pub const DBUS: u32 = 231;
/// LINKTYPE_NFLOG: Linux netfilter log.
pub const NFLOG: u32 = 239;
/// LINKTYPE_USBPCAP: Windows USBPcap (1 MiB maximum snapshot length).
pub const USBPCAP: u32 = 249;
/// LINKTYPE_LINUX_SLL2: Linux cooked capture v2.
pub const LINUX_SLL2: u32 = 276;
/// LINKTYPE_EBHSCR: Elektrobit high-speed capture (8 MiB maximum).
pub const EBHSCR: u32 = 279;

/// The DLT_* value libpcap uses internally on Linux for a LINKTYPE_* value
/// read from a file. Only the five "non-matching" link types differ.
pub fn linktype_to_dlt(linktype: u32) -> u32 {
    match linktype {
        100 => 11, // ATM_RFC1483
        101 => 12, // RAW
        102 => 15, // SLIP_BSDOS
        103 => 16, // PPP_BSDOS
        106 => 19, // ATM_CLIP
        other => other,
    }
}

/// The LINKTYPE_* value libpcap writes for a DLT_* value, or `None` when
/// libpcap refuses to write it ("link-layer type N isn't supported in
/// savefiles").
pub fn dlt_to_linktype(dlt: u32) -> Option<u32> {
    match dlt {
        0..=10 | 50 | 51 | 99 | 104..=289 => Some(dlt),
        11 => Some(100),
        12 => Some(101),
        15 => Some(102),
        16 => Some(103),
        19 => Some(106),
        _ => None,
    }
}

/// The canonical LINKTYPE_* value for a link-type number found in a file:
/// what libpcap 1.10.3 would write back after reading it (so a file that
/// says 12, the Linux DLT_RAW, becomes 101, LINKTYPE_RAW). Values libpcap
/// cannot write are returned unchanged.
pub fn normalize(linktype: u32) -> u32 {
    dlt_to_linktype(linktype_to_dlt(linktype)).unwrap_or(linktype)
}

/// Whether libpcap can write this link type to a savefile (tcpdump `-w`
/// fails for the others).
pub fn is_writable(linktype: u32) -> bool {
    dlt_to_linktype(linktype_to_dlt(linktype)).is_some()
}

/// libpcap's largest acceptable captured length for a link type
/// (`max_snaplen_for_dlt`): a record with a bigger captured length is
/// treated as damage.
pub fn max_snaplen(linktype: u32) -> u32 {
    match linktype_to_dlt(linktype) {
        DBUS => 128 * 1024 * 1024,
        EBHSCR => 8 * 1024 * 1024,
        USBPCAP => 1024 * 1024,
        _ => MAXIMUM_SNAPLEN,
    }
}

/// The snapshot length libpcap 1.10.3 reports (`pcap_snapshot`) for a
/// header value: 0 and values above `i32::MAX` become the link type's
/// maximum; everything else, even values above that maximum, is kept.
pub fn adjust_snapshot(linktype: u32, snaplen: u32) -> u32 {
    if snaplen == 0 || snaplen > i32::MAX as u32 {
        max_snaplen(linktype)
    } else {
        snaplen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_matches_libpcap() {
        assert_eq!(normalize(1), 1);
        assert_eq!(normalize(12), 101);
        assert_eq!(normalize(101), 101);
        assert_eq!(normalize(11), 100);
        assert_eq!(normalize(19), 106);
        assert_eq!(normalize(106), 106);
        assert_eq!(normalize(13), 13);
        assert!(!is_writable(13));
        assert!(!is_writable(32));
        assert!(is_writable(50));
        assert!(is_writable(289));
        assert!(!is_writable(290));
        assert!(!is_writable(3_145_728));
    }

    #[test]
    fn snapshot_adjustment() {
        assert_eq!(adjust_snapshot(1, 0), MAXIMUM_SNAPLEN);
        assert_eq!(adjust_snapshot(1, 0x8000_0000), MAXIMUM_SNAPLEN);
        assert_eq!(adjust_snapshot(1, 8_400_944), 8_400_944);
        assert_eq!(adjust_snapshot(DBUS, 0), 128 * 1024 * 1024);
        assert_eq!(adjust_snapshot(USBPCAP, 0), 1024 * 1024);
        assert_eq!(adjust_snapshot(EBHSCR, 0), 8 * 1024 * 1024);
        assert_eq!(adjust_snapshot(1, 65535), 65535);
    }
}
