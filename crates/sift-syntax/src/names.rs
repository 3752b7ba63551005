//! Built-in name tables: services, IP protocols, EtherTypes and LLC SAPs.
//!
//! libpcap resolves names through the C library (`getservbyname`,
//! `getprotobyname`) and its own tables (`pcap_nametoeproto`,
//! `pcap_nametollc`). sift does not read `/etc/services` or `/etc/protocols`:
//! the tables below hold the content of Debian's netbase files (the files
//! libpcap 1.10.3 reads on the reference machine), so compiled filters do not
//! depend on the host. All lookups are case-sensitive, as in the C library.
//!
//! Service names follow libpcap's `pcap_nametoport`, which asks for the TCP
//! and the UDP port of a name: a name known for TCP only is
//! [`ServiceProto::Tcp`], for UDP only [`ServiceProto::Udp`], and for both
//! with the same number [`ServiceProto::Both`] (libpcap's `PROTO_UNDEF`: the
//! filter then tests TCP, UDP and SCTP). When the TCP and UDP numbers differ
//! the TCP one wins. Names listed only for SCTP or DDP are unknown.

/// Which transport protocols a service name is defined for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServiceProto {
    /// Known for TCP only (`port ssh`): only TCP is tested.
    Tcp,
    /// Known for UDP only (`port bootps`): only UDP is tested.
    Udp,
    /// Known for both with the same number (`port domain`): TCP, UDP and SCTP
    /// are tested.
    Both,
}

/// Looks up a service name or alias (`http`, `www`, `domain`): its port and
/// the protocols it is defined for.
pub fn service(name: &str) -> Option<(u16, ServiceProto)> {
    SERVICES
        .binary_search_by(|e| e.0.cmp(name))
        .ok()
        .and_then(|i| SERVICES.get(i))
        .map(|e| (e.1, e.2))
}

/// Looks up an IP protocol name or alias (`tcp`, `ospf`, `OSPFIGP`,
/// `ipv6-icmp`), as `getprotobyname` does on the reference machine. The
/// value may exceed 255 (`mptcp` is 262): libpcap 1.10.3 accepts it and
/// the test then never matches; master's range check rejects it
/// ("protocol number 262 greater than maximum 255"), and so does sift's
/// lowering.
pub fn ip_protocol(name: &str) -> Option<u32> {
    PROTOCOLS
        .binary_search_by(|e| e.0.cmp(name))
        .ok()
        .and_then(|i| PROTOCOLS.get(i))
        .map(|e| e.1)
}

/// Looks up an EtherType name as libpcap 1.10.3's `pcap_nametoeproto`
/// (`ip`, `ip6`, `arp`, `rarp`, `atalk`, `aarp`, `decnet`, `lat`, `sca`,
/// `moprc`, `mopdl`, `loopback`), plus master's `lldp` (TESTrun accepts
/// `ether proto lldp`; docs/compat.md #32).
pub fn ether_type(name: &str) -> Option<u32> {
    ETHER_TYPES.iter().find(|e| e.0 == name).map(|e| e.1)
}

/// Looks up an LLC SAP name as libpcap's `pcap_nametollc` (`iso`, `stp`,
/// `ipx`, `netbeui`).
pub fn llc_sap(name: &str) -> Option<u32> {
    LLC_SAPS.iter().find(|e| e.0 == name).map(|e| e.1)
}

/// A link-level protocol name as `ether proto \NAME` resolves it: an
/// EtherType name first, then an LLC SAP name.
pub fn link_protocol(name: &str) -> Option<u32> {
    ether_type(name).or_else(|| llc_sap(name))
}

/// EtherType values used by the filter language.
pub mod ethertype {
    /// IPv4.
    pub const IP: u32 = 0x0800;
    /// ARP.
    pub const ARP: u32 = 0x0806;
    /// Reverse ARP.
    pub const REVARP: u32 = 0x8035;
    /// IPv6.
    pub const IPV6: u32 = 0x86dd;
    /// AppleTalk.
    pub const ATALK: u32 = 0x809b;
    /// AppleTalk ARP.
    pub const AARP: u32 = 0x80f3;
    /// DECnet Phase IV.
    pub const DN: u32 = 0x6003;
    /// DEC LAT.
    pub const LAT: u32 = 0x6004;
    /// DEC SCA.
    pub const SCA: u32 = 0x6007;
    /// DEC MOP remote console.
    pub const MOPRC: u32 = 0x6002;
    /// DEC MOP dump/load.
    pub const MOPDL: u32 = 0x6001;
    /// Novell IPX.
    pub const IPX: u32 = 0x8137;
    /// Ethernet loopback (configuration testing).
    pub const LOOPBACK: u32 = 0x9000;
    /// Link Layer Discovery Protocol, 802.1AB (a name libpcap master
    /// knows for `ether proto lldp`; 1.10.3 does not).
    pub const LLDP: u32 = 0x88cc;
}

/// LLC SAP values used by the filter language.
pub mod llcsap {
    /// IP over 802.2 (LLCSAP_IP).
    pub const IP: u32 = 0x06;
    /// ISO network layer (LLCSAP_ISONS).
    pub const ISONS: u32 = 0xfe;
    /// Spanning tree, 802.1D (LLCSAP_8021D).
    pub const STP: u32 = 0x42;
    /// Novell IPX (LLCSAP_IPX).
    pub const IPX: u32 = 0xe0;
    /// NetBEUI (LLCSAP_NETBEUI).
    pub const NETBEUI: u32 = 0xf0;
    /// SNAP (LLCSAP_SNAP).
    pub const SNAP: u32 = 0xaa;
}

const ETHER_TYPES: &[(&str, u32)] = &[
    ("aarp", ethertype::AARP),
    ("arp", ethertype::ARP),
    ("atalk", ethertype::ATALK),
    ("decnet", ethertype::DN),
    ("ip", ethertype::IP),
    ("ip6", ethertype::IPV6),
    ("lat", ethertype::LAT),
    ("lldp", ethertype::LLDP),
    ("loopback", ethertype::LOOPBACK),
    ("mopdl", ethertype::MOPDL),
    ("moprc", ethertype::MOPRC),
    ("rarp", ethertype::REVARP),
    ("sca", ethertype::SCA),
];

const LLC_SAPS: &[(&str, u32)] = &[
    ("iso", llcsap::ISONS),
    ("stp", llcsap::STP),
    ("ipx", llcsap::IPX),
    ("netbeui", llcsap::NETBEUI),
];

/// Services of Debian netbase `/etc/services` (names and aliases), resolved
/// as described in the module documentation. Sorted by name.
const SERVICES: &[(&str, u16, ServiceProto)] = &[
    ("Clearcase", 371, ServiceProto::Udp),
    ("acr-nema", 104, ServiceProto::Tcp),
    ("afpovertcp", 548, ServiceProto::Tcp),
    ("afs3-bos", 7007, ServiceProto::Udp),
    ("afs3-callback", 7001, ServiceProto::Udp),
    ("afs3-fileserver", 7000, ServiceProto::Udp),
    ("afs3-kaserver", 7004, ServiceProto::Udp),
    ("afs3-prserver", 7002, ServiceProto::Udp),
    ("afs3-rmtsys", 7009, ServiceProto::Udp),
    ("afs3-update", 7008, ServiceProto::Udp),
    ("afs3-vlserver", 7003, ServiceProto::Udp),
    ("afs3-volser", 7005, ServiceProto::Udp),
    ("amanda", 10080, ServiceProto::Tcp),
    ("amandaidx", 10082, ServiceProto::Tcp),
    ("amidxtape", 10083, ServiceProto::Tcp),
    ("amqp", 5672, ServiceProto::Tcp),
    ("amqps", 5671, ServiceProto::Tcp),
    ("asf-rmcp", 623, ServiceProto::Udp),
    ("asp", 27374, ServiceProto::Both),
    ("auth", 113, ServiceProto::Tcp),
    ("authentication", 113, ServiceProto::Tcp),
    ("babel", 6696, ServiceProto::Udp),
    ("bacula-dir", 9101, ServiceProto::Tcp),
    ("bacula-fd", 9102, ServiceProto::Tcp),
    ("bacula-sd", 9103, ServiceProto::Tcp),
    ("bbs", 7000, ServiceProto::Tcp),
    ("bgp", 179, ServiceProto::Tcp),
    ("bgpd", 2605, ServiceProto::Tcp),
    ("biff", 512, ServiceProto::Udp),
    ("binkp", 24554, ServiceProto::Tcp),
    ("bootpc", 68, ServiceProto::Udp),
    ("bootps", 67, ServiceProto::Udp),
    ("canna", 5680, ServiceProto::Tcp),
    ("cfengine", 5308, ServiceProto::Tcp),
    ("chargen", 19, ServiceProto::Both),
    ("cisco-sccp", 2000, ServiceProto::Tcp),
    ("clc-build-daemon", 8990, ServiceProto::Tcp),
    ("clearcase", 371, ServiceProto::Udp),
    ("cmd", 514, ServiceProto::Tcp),
    ("cmip-agent", 164, ServiceProto::Both),
    ("cmip-man", 163, ServiceProto::Both),
    ("codaauth2", 370, ServiceProto::Both),
    ("codasrv", 2432, ServiceProto::Both),
    ("codasrv-se", 2433, ServiceProto::Both),
    ("comsat", 512, ServiceProto::Udp),
    ("csync2", 30865, ServiceProto::Tcp),
    ("cvspserver", 2401, ServiceProto::Tcp),
    ("daap", 3689, ServiceProto::Tcp),
    ("datametrics", 1645, ServiceProto::Both),
    ("daytime", 13, ServiceProto::Both),
    ("db-lsp", 17500, ServiceProto::Tcp),
    ("dcap", 22125, ServiceProto::Tcp),
    ("dhcpv6-client", 546, ServiceProto::Udp),
    ("dhcpv6-server", 547, ServiceProto::Udp),
    ("dicom", 104, ServiceProto::Tcp),
    ("dict", 2628, ServiceProto::Tcp),
    ("dircproxy", 57000, ServiceProto::Tcp),
    ("discard", 9, ServiceProto::Both),
    ("distcc", 3632, ServiceProto::Tcp),
    ("domain", 53, ServiceProto::Both),
    ("domain-s", 853, ServiceProto::Both),
    ("echo", 7, ServiceProto::Both),
    ("epmap", 135, ServiceProto::Tcp),
    ("epmd", 4369, ServiceProto::Tcp),
    ("exec", 512, ServiceProto::Tcp),
    ("f5-globalsite", 2792, ServiceProto::Tcp),
    ("f5-iquery", 4353, ServiceProto::Tcp),
    ("fax", 4557, ServiceProto::Tcp),
    ("fido", 60179, ServiceProto::Tcp),
    ("finger", 79, ServiceProto::Tcp),
    ("font-service", 7100, ServiceProto::Tcp),
    ("freeciv", 5556, ServiceProto::Tcp),
    ("fsp", 21, ServiceProto::Udp),
    ("fspd", 21, ServiceProto::Udp),
    ("ftp", 21, ServiceProto::Tcp),
    ("ftp-data", 20, ServiceProto::Tcp),
    ("ftps", 990, ServiceProto::Tcp),
    ("ftps-data", 989, ServiceProto::Tcp),
    ("gdomap", 538, ServiceProto::Both),
    ("gds-db", 3050, ServiceProto::Tcp),
    ("gds_db", 3050, ServiceProto::Tcp),
    ("git", 9418, ServiceProto::Tcp),
    ("gnunet", 2086, ServiceProto::Both),
    ("gnutella-rtr", 6347, ServiceProto::Both),
    ("gnutella-svc", 6346, ServiceProto::Both),
    ("gopher", 70, ServiceProto::Tcp),
    ("gpsd", 2947, ServiceProto::Tcp),
    ("gris", 2135, ServiceProto::Tcp),
    ("groupwise", 1677, ServiceProto::Tcp),
    ("gsidcap", 22128, ServiceProto::Tcp),
    ("gsiftp", 2811, ServiceProto::Tcp),
    ("gsigatekeeper", 2119, ServiceProto::Tcp),
    ("hkp", 11371, ServiceProto::Tcp),
    ("hprop", 754, ServiceProto::Tcp),
    ("http", 80, ServiceProto::Tcp),
    ("http-alt", 8080, ServiceProto::Tcp),
    ("https", 443, ServiceProto::Both),
    ("hylafax", 4559, ServiceProto::Tcp),
    ("iax", 4569, ServiceProto::Udp),
    ("icp", 3130, ServiceProto::Udp),
    ("icpv2", 3130, ServiceProto::Udp),
    ("ident", 113, ServiceProto::Tcp),
    ("imap", 143, ServiceProto::Tcp),
    ("imap2", 143, ServiceProto::Tcp),
    ("imaps", 993, ServiceProto::Tcp),
    ("ingreslock", 1524, ServiceProto::Tcp),
    ("ipp", 631, ServiceProto::Tcp),
    ("iprop", 2121, ServiceProto::Tcp),
    ("ipsec-nat-t", 4500, ServiceProto::Udp),
    ("ipx", 213, ServiceProto::Udp),
    ("ircd", 6667, ServiceProto::Tcp),
    ("ircs-u", 6697, ServiceProto::Tcp),
    ("isakmp", 500, ServiceProto::Udp),
    ("iscsi-target", 3260, ServiceProto::Tcp),
    ("isisd", 2608, ServiceProto::Tcp),
    ("isns", 3205, ServiceProto::Both),
    ("iso-tsap", 102, ServiceProto::Tcp),
    ("jabber-client", 5222, ServiceProto::Tcp),
    ("jabber-server", 5269, ServiceProto::Tcp),
    ("kamanda", 10081, ServiceProto::Tcp),
    ("kdc", 750, ServiceProto::Both),
    ("kerberos", 88, ServiceProto::Both),
    ("kerberos-adm", 749, ServiceProto::Tcp),
    ("kerberos-iv", 750, ServiceProto::Both),
    ("kerberos-master", 751, ServiceProto::Both),
    ("kerberos-sec", 88, ServiceProto::Both),
    ("kerberos4", 750, ServiceProto::Both),
    ("kerberos5", 88, ServiceProto::Both),
    ("kerberos_master", 751, ServiceProto::Udp),
    ("kermit", 1649, ServiceProto::Tcp),
    ("klogin", 543, ServiceProto::Tcp),
    ("kpasswd", 464, ServiceProto::Both),
    ("krb-prop", 754, ServiceProto::Tcp),
    ("krb5", 88, ServiceProto::Both),
    ("krb5_prop", 754, ServiceProto::Tcp),
    ("krb_prop", 754, ServiceProto::Tcp),
    ("krcmd", 544, ServiceProto::Tcp),
    ("kshell", 544, ServiceProto::Tcp),
    ("l2f", 1701, ServiceProto::Udp),
    ("l2tp", 1701, ServiceProto::Udp),
    ("ldap", 389, ServiceProto::Both),
    ("ldaps", 636, ServiceProto::Both),
    ("ldp", 646, ServiceProto::Both),
    ("loc-srv", 135, ServiceProto::Tcp),
    ("login", 513, ServiceProto::Tcp),
    ("lotusnote", 1352, ServiceProto::Tcp),
    ("lotusnotes", 1352, ServiceProto::Tcp),
    ("lrrd", 4949, ServiceProto::Tcp),
    ("mail", 25, ServiceProto::Tcp),
    ("mailq", 174, ServiceProto::Tcp),
    ("mdns", 5353, ServiceProto::Udp),
    ("microsoft-ds", 445, ServiceProto::Tcp),
    ("moira-db", 775, ServiceProto::Tcp),
    ("moira-update", 777, ServiceProto::Tcp),
    ("moira-ureg", 779, ServiceProto::Udp),
    ("moira_db", 775, ServiceProto::Tcp),
    ("moira_update", 777, ServiceProto::Tcp),
    ("moira_ureg", 779, ServiceProto::Udp),
    ("mon", 2583, ServiceProto::Both),
    ("ms-sql-m", 1434, ServiceProto::Udp),
    ("ms-sql-s", 1433, ServiceProto::Tcp),
    ("ms-wbt-server", 3389, ServiceProto::Tcp),
    ("mtn", 4691, ServiceProto::Tcp),
    ("munin", 4949, ServiceProto::Tcp),
    ("mysql", 3306, ServiceProto::Tcp),
    ("mysql-proxy", 6446, ServiceProto::Tcp),
    ("nbd", 10809, ServiceProto::Tcp),
    ("netbios-dgm", 138, ServiceProto::Udp),
    ("netbios-ns", 137, ServiceProto::Udp),
    ("netbios-ssn", 139, ServiceProto::Tcp),
    ("netstat", 15, ServiceProto::Tcp),
    ("nfs", 2049, ServiceProto::Both),
    ("nicname", 43, ServiceProto::Tcp),
    ("nntp", 119, ServiceProto::Tcp),
    ("nntps", 563, ServiceProto::Tcp),
    ("nqs", 607, ServiceProto::Tcp),
    ("nrpe", 5666, ServiceProto::Tcp),
    ("nsca", 5667, ServiceProto::Tcp),
    ("ntalk", 518, ServiceProto::Udp),
    ("ntp", 123, ServiceProto::Udp),
    ("ntske", 4460, ServiceProto::Tcp),
    ("null", 9, ServiceProto::Both),
    ("nut", 3493, ServiceProto::Both),
    ("old-radacct", 1646, ServiceProto::Both),
    ("old-radius", 1645, ServiceProto::Both),
    ("omniorb", 8088, ServiceProto::Tcp),
    ("openvpn", 1194, ServiceProto::Both),
    ("ospf6d", 2606, ServiceProto::Tcp),
    ("ospfapi", 2607, ServiceProto::Tcp),
    ("ospfd", 2604, ServiceProto::Tcp),
    ("passwd-server", 752, ServiceProto::Udp),
    ("passwd_server", 752, ServiceProto::Udp),
    ("pawserv", 345, ServiceProto::Tcp),
    ("pop-3", 110, ServiceProto::Tcp),
    ("pop3", 110, ServiceProto::Tcp),
    ("pop3s", 995, ServiceProto::Tcp),
    ("poppassd", 106, ServiceProto::Tcp),
    ("portmapper", 111, ServiceProto::Both),
    ("postgres", 5432, ServiceProto::Tcp),
    ("postgresql", 5432, ServiceProto::Tcp),
    ("predict", 1210, ServiceProto::Udp),
    ("printer", 515, ServiceProto::Tcp),
    ("proofd", 1093, ServiceProto::Tcp),
    ("ptp-event", 319, ServiceProto::Udp),
    ("ptp-general", 320, ServiceProto::Udp),
    ("puppet", 8140, ServiceProto::Tcp),
    ("qmqp", 628, ServiceProto::Tcp),
    ("qmtp", 209, ServiceProto::Tcp),
    ("qotd", 17, ServiceProto::Tcp),
    ("quote", 17, ServiceProto::Tcp),
    ("radacct", 1813, ServiceProto::Both),
    ("radius", 1812, ServiceProto::Both),
    ("radius-acct", 1813, ServiceProto::Both),
    ("radmin-port", 4899, ServiceProto::Tcp),
    ("readnews", 119, ServiceProto::Tcp),
    ("redis", 6379, ServiceProto::Tcp),
    ("remctl", 4373, ServiceProto::Tcp),
    ("ripd", 2602, ServiceProto::Tcp),
    ("ripngd", 2603, ServiceProto::Tcp),
    ("rmiregistry", 1099, ServiceProto::Tcp),
    ("rmtcfg", 1236, ServiceProto::Tcp),
    ("rootd", 1094, ServiceProto::Tcp),
    ("route", 520, ServiceProto::Udp),
    ("routed", 520, ServiceProto::Udp),
    ("router", 520, ServiceProto::Udp),
    ("rpc2portmap", 369, ServiceProto::Both),
    ("rplay", 5555, ServiceProto::Udp),
    ("rptp", 5556, ServiceProto::Tcp),
    ("rsync", 873, ServiceProto::Tcp),
    ("rtcm-sc104", 2101, ServiceProto::Both),
    ("rtsp", 554, ServiceProto::Both),
    ("sa-msg-port", 1646, ServiceProto::Both),
    ("saft", 487, ServiceProto::Tcp),
    ("sane", 6566, ServiceProto::Tcp),
    ("sane-port", 6566, ServiceProto::Tcp),
    ("saned", 6566, ServiceProto::Tcp),
    ("sge-execd", 6445, ServiceProto::Tcp),
    ("sge-qmaster", 6444, ServiceProto::Tcp),
    ("sge_execd", 6445, ServiceProto::Tcp),
    ("sge_qmaster", 6444, ServiceProto::Tcp),
    ("sgi-cad", 17004, ServiceProto::Tcp),
    ("sgi-cmsd", 17001, ServiceProto::Udp),
    ("sgi-crsd", 17002, ServiceProto::Udp),
    ("sgi-gcd", 17003, ServiceProto::Udp),
    ("shell", 514, ServiceProto::Tcp),
    ("sieve", 4190, ServiceProto::Tcp),
    ("silc", 706, ServiceProto::Tcp),
    ("sink", 9, ServiceProto::Both),
    ("sip", 5060, ServiceProto::Both),
    ("sip-tls", 5061, ServiceProto::Both),
    ("skkserv", 1178, ServiceProto::Tcp),
    ("smtp", 25, ServiceProto::Tcp),
    ("smtps", 465, ServiceProto::Tcp),
    ("smux", 199, ServiceProto::Tcp),
    ("snmp", 161, ServiceProto::Both),
    ("snmp-trap", 162, ServiceProto::Both),
    ("snmptrap", 162, ServiceProto::Both),
    ("snntp", 563, ServiceProto::Tcp),
    ("snpp", 444, ServiceProto::Tcp),
    ("socks", 1080, ServiceProto::Tcp),
    ("source", 19, ServiceProto::Both),
    ("spamd", 783, ServiceProto::Tcp),
    ("spooler", 515, ServiceProto::Tcp),
    ("ssh", 22, ServiceProto::Tcp),
    ("ssmtp", 465, ServiceProto::Tcp),
    ("submission", 587, ServiceProto::Tcp),
    ("submissions", 465, ServiceProto::Tcp),
    ("subversion", 3690, ServiceProto::Tcp),
    ("sunrpc", 111, ServiceProto::Both),
    ("supfiledbg", 1127, ServiceProto::Tcp),
    ("supfilesrv", 871, ServiceProto::Tcp),
    ("suucp", 4031, ServiceProto::Tcp),
    ("svn", 3690, ServiceProto::Tcp),
    ("svrloc", 427, ServiceProto::Both),
    ("syslog", 514, ServiceProto::Both),
    ("syslog-tls", 6514, ServiceProto::Tcp),
    ("sysrqd", 4094, ServiceProto::Tcp),
    ("systat", 11, ServiceProto::Tcp),
    ("tacacs", 49, ServiceProto::Both),
    ("talk", 517, ServiceProto::Udp),
    ("tap", 113, ServiceProto::Tcp),
    ("tcpmux", 1, ServiceProto::Tcp),
    ("telnet", 23, ServiceProto::Tcp),
    ("telnets", 992, ServiceProto::Tcp),
    ("tfido", 60177, ServiceProto::Tcp),
    ("tftp", 69, ServiceProto::Udp),
    ("time", 37, ServiceProto::Both),
    ("timserver", 37, ServiceProto::Both),
    ("tinc", 655, ServiceProto::Both),
    ("tproxy", 8081, ServiceProto::Tcp),
    ("tsap", 102, ServiceProto::Tcp),
    ("ttytst", 19, ServiceProto::Both),
    ("untp", 119, ServiceProto::Tcp),
    ("urd", 465, ServiceProto::Tcp),
    ("users", 11, ServiceProto::Tcp),
    ("uucp", 540, ServiceProto::Tcp),
    ("uucpd", 540, ServiceProto::Tcp),
    ("venus", 2430, ServiceProto::Both),
    ("venus-se", 2431, ServiceProto::Both),
    ("wais", 210, ServiceProto::Tcp),
    ("webcache", 8080, ServiceProto::Tcp),
    ("webmin", 10000, ServiceProto::Tcp),
    ("who", 513, ServiceProto::Udp),
    ("whod", 513, ServiceProto::Udp),
    ("whois", 43, ServiceProto::Tcp),
    ("wnn6", 22273, ServiceProto::Tcp),
    ("www", 80, ServiceProto::Tcp),
    ("x11", 6000, ServiceProto::Tcp),
    ("x11-0", 6000, ServiceProto::Tcp),
    ("x11-1", 6001, ServiceProto::Tcp),
    ("x11-2", 6002, ServiceProto::Tcp),
    ("x11-3", 6003, ServiceProto::Tcp),
    ("x11-4", 6004, ServiceProto::Tcp),
    ("x11-5", 6005, ServiceProto::Tcp),
    ("x11-6", 6006, ServiceProto::Tcp),
    ("x11-7", 6007, ServiceProto::Tcp),
    ("xdmcp", 177, ServiceProto::Udp),
    ("xfs", 7100, ServiceProto::Tcp),
    ("xinetd", 9098, ServiceProto::Tcp),
    ("xmms2", 9667, ServiceProto::Tcp),
    ("xmpp-client", 5222, ServiceProto::Tcp),
    ("xmpp-server", 5269, ServiceProto::Tcp),
    ("xtel", 1313, ServiceProto::Tcp),
    ("xtelw", 1314, ServiceProto::Tcp),
    ("z3950", 210, ServiceProto::Tcp),
    ("zabbix-agent", 10050, ServiceProto::Tcp),
    ("zabbix-trapper", 10051, ServiceProto::Tcp),
    ("zebra", 2601, ServiceProto::Tcp),
    ("zebrasrv", 2600, ServiceProto::Tcp),
    ("zephyr-clt", 2103, ServiceProto::Udp),
    ("zephyr-hm", 2104, ServiceProto::Udp),
    ("zephyr-srv", 2102, ServiceProto::Udp),
    ("zope", 9673, ServiceProto::Tcp),
    ("zope-ftp", 8021, ServiceProto::Tcp),
    ("zserv", 346, ServiceProto::Tcp),
];

/// IP protocols of Debian netbase `/etc/protocols` (names and aliases).
/// Sorted by name.
const PROTOCOLS: &[(&str, u32)] = &[
    ("AX.25", 93),
    ("CPHB", 73),
    ("DCCP", 33),
    ("DDP", 37),
    ("EGP", 8),
    ("EIGRP", 88),
    ("ENCAP", 98),
    ("ETHERIP", 97),
    ("Ethernet", 143),
    ("FC", 133),
    ("GGP", 3),
    ("GRE", 47),
    ("HIP", 139),
    ("HMP", 20),
    ("HOPOPT", 0),
    ("ICMP", 1),
    ("IDPR-CMTP", 38),
    ("IDRP", 45),
    ("IGMP", 2),
    ("IGP", 9),
    ("IP", 0),
    ("IP-ENCAP", 4),
    ("IPCOMP", 108),
    ("IPIP", 94),
    ("IPSEC-AH", 51),
    ("IPSEC-ESP", 50),
    ("IPv6", 41),
    ("IPv6-Frag", 44),
    ("IPv6-ICMP", 58),
    ("IPv6-NoNxt", 59),
    ("IPv6-Opts", 60),
    ("IPv6-Route", 43),
    ("ISIS", 124),
    ("ISO-TP4", 29),
    ("L2TP", 115),
    ("MPLS-in-IP", 137),
    ("MPTCP", 262),
    ("Mobility-Header", 135),
    ("OSPFIGP", 89),
    ("PIM", 103),
    ("PUP", 12),
    ("RDP", 27),
    ("ROHC", 142),
    ("RSPF", 73),
    ("RSVP", 46),
    ("SCTP", 132),
    ("SKIP", 57),
    ("ST", 5),
    ("Shim6", 140),
    ("TCP", 6),
    ("UDP", 17),
    ("UDPLite", 136),
    ("VMTP", 81),
    ("VRRP", 112),
    ("WESP", 141),
    ("XNS-IDP", 22),
    ("XTP", 36),
    ("ah", 51),
    ("ax.25", 93),
    ("dccp", 33),
    ("ddp", 37),
    ("egp", 8),
    ("eigrp", 88),
    ("encap", 98),
    ("esp", 50),
    ("etherip", 97),
    ("ethernet", 143),
    ("fc", 133),
    ("ggp", 3),
    ("gre", 47),
    ("hip", 139),
    ("hmp", 20),
    ("hopopt", 0),
    ("icmp", 1),
    ("idpr-cmtp", 38),
    ("idrp", 45),
    ("igmp", 2),
    ("igp", 9),
    ("ip", 0),
    ("ipcomp", 108),
    ("ipencap", 4),
    ("ipip", 94),
    ("ipv6", 41),
    ("ipv6-frag", 44),
    ("ipv6-icmp", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("ipv6-route", 43),
    ("isis", 124),
    ("iso-tp4", 29),
    ("l2tp", 115),
    ("manet", 138),
    ("mobility-header", 135),
    ("mpls-in-ip", 137),
    ("mptcp", 262),
    ("ospf", 89),
    ("pim", 103),
    ("pup", 12),
    ("rdp", 27),
    ("rohc", 142),
    ("rspf", 73),
    ("rsvp", 46),
    ("sctp", 132),
    ("shim6", 140),
    ("skip", 57),
    ("st", 5),
    ("tcp", 6),
    ("udp", 17),
    ("udplite", 136),
    ("vmtp", 81),
    ("vrrp", 112),
    ("wesp", 141),
    ("xns-idp", 22),
    ("xtp", 36),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_for_binary_search() {
        assert!(SERVICES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(PROTOCOLS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn services() {
        assert_eq!(service("ssh"), Some((22, ServiceProto::Tcp)));
        assert_eq!(service("http"), Some((80, ServiceProto::Tcp)));
        assert_eq!(service("www"), Some((80, ServiceProto::Tcp)));
        assert_eq!(service("domain"), Some((53, ServiceProto::Both)));
        assert_eq!(service("bootps"), Some((67, ServiceProto::Udp)));
        assert_eq!(service("mail"), Some((25, ServiceProto::Tcp)));
        assert_eq!(service("SSH"), None);
        assert_eq!(service("rtmp"), None, "DDP-only names are unknown");
        assert_eq!(service(""), None);
    }

    #[test]
    fn protocols() {
        assert_eq!(ip_protocol("tcp"), Some(6));
        assert_eq!(ip_protocol("TCP"), Some(6));
        assert_eq!(ip_protocol("Tcp"), None);
        assert_eq!(ip_protocol("ip"), Some(0));
        assert_eq!(ip_protocol("ospf"), Some(89));
        assert_eq!(ip_protocol("OSPFIGP"), Some(89));
        assert_eq!(ip_protocol("ipv6-icmp"), Some(58));
        assert_eq!(ip_protocol("mptcp"), Some(262));
        assert_eq!(ip_protocol("igrp"), None);
    }

    #[test]
    fn link_protocols() {
        assert_eq!(link_protocol("ip"), Some(0x800));
        assert_eq!(link_protocol("ip6"), Some(0x86dd));
        assert_eq!(link_protocol("loopback"), Some(0x9000));
        assert_eq!(link_protocol("iso"), Some(0xfe));
        assert_eq!(link_protocol("netbeui"), Some(0xf0));
        assert_eq!(link_protocol("ipx"), Some(0xe0), "ipx is an LLC SAP name only");
        assert_eq!(link_protocol("IP"), None);
        // New in libpcap master (1.10.3 does not know it); TESTrun accepts it.
        assert_eq!(link_protocol("lldp"), Some(0x88cc));
    }
}
