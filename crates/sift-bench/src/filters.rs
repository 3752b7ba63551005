//! The built-in standard filter set: pflua-bench's filters, the Swift
//! paper's six, the bpf-performance study's two patterns, a TCP payload
//! byte range and the 200-connection FTP filter.

use crate::gen::{dotted, ftp_servers};

/// A named filter expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterSpec {
    /// Short name (used by `--filters`, in tables and JSON).
    pub name: String,
    /// The pcap filter expression (empty = accept everything).
    pub expr: String,
    /// The groups it belongs to (`pflua`, `swift`, `bpfperf`, `misc`, `ftp`).
    pub groups: &'static [&'static str],
}

impl FilterSpec {
    fn new(name: &str, expr: impl Into<String>, groups: &'static [&'static str]) -> FilterSpec {
        FilterSpec {
            name: name.to_string(),
            expr: expr.into(),
            groups,
        }
    }
}

/// The 38 addresses of the Swift paper's sixth filter (19 in
/// 192.168.2.0/24, 19 in 10.0.0.0/8; the paper's own list is not public).
pub fn swift6_hosts() -> Vec<u32> {
    let mut v = Vec::with_capacity(38);
    for i in 0..19u32 {
        v.push(u32::from_be_bytes([192, 168, 2, (1 + 13 * i) as u8]));
    }
    for i in 0..19u32 {
        v.push(u32::from_be_bytes([
            10,
            (7 * i) as u8,
            (3 * i) as u8,
            (1 + i) as u8,
        ]));
    }
    v
}

/// The Swift paper's sixth filter.
fn swift6_expr() -> String {
    let hosts: Vec<String> = swift6_hosts().into_iter().map(dotted).collect();
    format!(
        "ip and (not tcp port (80 or 25 or 143) and not ip host ({}))",
        hosts.join(" or ")
    )
}

/// The 200-connection FTP filter: `(ip and tcp port 21) or (host X1 and
/// (tcp port Y1 or …)) or …` for the servers and data ports of the `ftp`
/// workload.
pub fn ftp200_expr() -> String {
    let mut s = String::from("(ip and tcp port 21)");
    for (host, ports) in ftp_servers() {
        let ports: Vec<String> = ports.iter().map(|p| format!("tcp port {p}")).collect();
        s.push_str(&format!(
            " or (host {} and ({}))",
            dotted(host),
            ports.join(" or ")
        ));
    }
    s
}

/// Every standard filter, in presentation order.
pub fn standard_filters() -> Vec<FilterSpec> {
    const PF: &[&str] = &["pflua"];
    const PF_SW: &[&str] = &["pflua", "swift"];
    const SW: &[&str] = &["swift"];
    const BP: &[&str] = &["bpfperf"];
    const MISC: &[&str] = &["misc"];
    const FTP: &[&str] = &["ftp"];
    vec![
        FilterSpec::new("accept-all", "", PF_SW),
        FilterSpec::new("ip", "ip", PF_SW),
        FilterSpec::new("tcp", "tcp", PF),
        FilterSpec::new("icmp", "icmp", PF),
        FilterSpec::new("tcp-port-5555", "tcp port 5555", PF),
        FilterSpec::new("portrange-0-6000", "portrange 0-6000", PF),
        FilterSpec::new("portrange-0-5", "portrange 0-5", PF),
        FilterSpec::new("tcp-src-port-80", "tcp src port 80", PF),
        FilterSpec::new("src-net-150", "src net 178.79.150.0/24", PF),
        FilterSpec::new("host-233", "host 178.79.150.233", PF),
        FilterSpec::new("host-234", "host 178.79.150.234", PF),
        FilterSpec::new("net-150", "net 178.79.150.0/24", PF),
        FilterSpec::new("net-151", "net 178.79.151.0/24", PF),
        FilterSpec::new(
            "swift3",
            "ip src net 192.168.2.0/24 and dst net 10.0.0.0/8",
            SW,
        ),
        FilterSpec::new("swift4", "ip src or dst net 192.168.2.0/24", SW),
        FilterSpec::new(
            "swift5",
            "ip and tcp port (ssh or http or imap or smtp or pop3 or ftp)",
            SW,
        ),
        FilterSpec::new("swift6", swift6_expr(), SW),
        FilterSpec::new(
            "bpfperf1",
            "src net 10.0.0.0/8 or (dst net 127.0.0.1 and port 22) or src net 2001:470::/28",
            BP,
        ),
        FilterSpec::new(
            "bpfperf2",
            "(tcp and portrange 0-1024) or (udp and portrange 1025-2048)",
            BP,
        ),
        FilterSpec::new("tcp-byte-20", "tcp[20:1] > 65 and tcp[20:1] < 90", MISC),
        FilterSpec::new("ftp200", ftp200_expr(), FTP),
    ]
}

/// The filter group names `--filters` accepts besides filter names.
pub const GROUPS: &[&str] = &["all", "pflua", "swift", "bpfperf", "misc", "ftp"];

/// Resolves a comma-separated list of filter names and group names
/// (`all`, `pflua`, `swift`, `bpfperf`, `misc`, `ftp`), keeping the
/// standard order and dropping duplicates.
pub fn select_filters(list: &str) -> Result<Vec<FilterSpec>, String> {
    let all = standard_filters();
    let mut keep = vec![false; all.len()];
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let mut found = false;
        for (i, f) in all.iter().enumerate() {
            if word == "all" || f.name == word || f.groups.contains(&word) {
                keep[i] = true;
                found = true;
            }
        }
        if !found {
            let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
            return Err(format!(
                "unknown filter '{word}' (filters: {}; groups: {})",
                names.join(", "),
                GROUPS.join(", ")
            ));
        }
    }
    Ok(all
        .into_iter()
        .zip(keep)
        .filter(|x| x.1)
        .map(|x| x.0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_standard_filter_compiles_with_sift() {
        for f in standard_filters() {
            sift::compile(&f.expr, &sift::CompileOptions::default())
                .unwrap_or_else(|e| panic!("{}: {}", f.name, e.render()));
        }
    }

    #[test]
    fn names_are_unique_and_groups_select() {
        let all = standard_filters();
        let mut names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert_eq!(select_filters("all").unwrap().len(), all.len());
        let sw = select_filters("swift").unwrap();
        assert_eq!(sw.len(), 6);
        let two = select_filters("ip,accept-all,ip").unwrap();
        assert_eq!(
            two.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["accept-all", "ip"]
        );
        assert!(select_filters("nope").is_err());
    }

    #[test]
    fn ftp200_has_200_data_ports() {
        let e = ftp200_expr();
        assert_eq!(e.matches("tcp port").count(), 201);
        assert_eq!(e.matches("host ").count(), 10);
        assert_eq!(swift6_hosts().len(), 38);
    }
}
