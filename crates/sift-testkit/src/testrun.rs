//! What libpcap's TESTrun (its test driver) sets up on the machine before
//! it runs its rows.

/// The hosts, networks and ethers entries TESTrun asks the machine to have
/// (its `@hosts_lines`, `@networks_lines`, `@ethers_lines`; the `host357`
/// names, which have several addresses each, as master's expected programs
/// show them), as sift name tables; other names go to the system's
/// resolver if `system_fallback`.
pub fn name_tables(system_fallback: bool) -> sift_ir::NameTables {
    let mut t = sift_ir::NameTables { system_fallback, ..Default::default() };
    let v4 = "10.20.30.40";
    let v6 = "fd00:a1b2:c3d4::1020:3040:5060:7080";
    let mut hosts = String::new();
    for n in ["noeth-ipv4-noipv6", "noeth-ipv4-ipv6", "eth-ipv4-noipv6", "eth-ipv4-ipv6"] {
        hosts += &format!("{v4} {n}.host123.libpcap.test\n");
    }
    for n in ["noeth-noipv4-ipv6", "noeth-ipv4-ipv6", "eth-noipv4-ipv6", "eth-ipv4-ipv6"] {
        hosts += &format!("{v6} {n}.host123.libpcap.test\n");
    }
    for a in ["192.168.241.3", "192.168.242.4", "192.168.243.1", "192.168.244.2"] {
        for n in ["eth-ipv4x4-noipv6", "eth-ipv4x4-ipv6x2"] {
            hosts += &format!("{a} {n}.host357.libpcap.test\n");
        }
    }
    for a in ["fd00:a1b2:c3d4:0:a0b0:c0d0:e0f0:1278", "fd00:a1b2:c3d4:0:a0b0:c0d0:e0f0:3456"] {
        for n in ["eth-noipv4-ipv6x2", "eth-ipv4x4-ipv6x2"] {
            hosts += &format!("{a} {n}.host357.libpcap.test\n");
        }
    }
    t.add_hosts(&hosts).expect("hosts lines");
    t.add_networks(
        "net-10-0-0-0.libpcap.test 10.0.0.0\n\
         net-10-20-0-0.libpcap.test 10.20.0.0\n\
         net-10-20-30-0.libpcap.test 10.20.30.0\n",
    )
    .expect("networks lines");
    let mut ethers = String::new();
    for n in ["eth-noipv4-noipv6", "eth-noipv4-ipv6", "eth-ipv4-noipv6", "eth-ipv4-ipv6"] {
        ethers += &format!("aa:00:04:00:14:0e {n}.host123.libpcap.test\n");
    }
    for n in ["eth-ipv4x4-noipv6", "eth-ipv4x4-ipv6x2", "eth-noipv4-ipv6x2"] {
        ethers += &format!("aa:00:04:00:01:08 {n}.host357.libpcap.test\n");
    }
    t.add_ethers(&ethers).expect("ethers lines");
    t
}
