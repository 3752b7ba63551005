//! Name resolution: host names, network names and Ethernet host names, from
//! the system (as libpcap on Linux) or from tables the caller supplies.
//!
//! libpcap resolves
//! - host names with `getaddrinfo` (hosts(5), then DNS): every address, of
//!   either family;
//! - network names with `getnetbyname` (networks(5));
//! - Ethernet host names with `ether_hostton` (ethers(5)), for `ether host
//!   NAME` and `gateway NAME`.
//!
//! [`NameTables`] replaces those sources: tests (libpcap's TESTrun needs
//! hosts, networks and ethers entries that no normal machine has) and
//! embedders that want compiled filters not to depend on the machine give
//! their own tables. Lookups in tables are case-insensitive, as glibc's
//! `files` backend. With [`NameTables::system_fallback`], a name that the
//! tables do not know is looked up in the system's sources.

use std::net::{IpAddr, ToSocketAddrs};

/// Name tables that replace (or come before) the system's hosts, networks
/// and ethers databases.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameTables {
    /// Host names (and aliases) with one address each, in file order; a
    /// name with several addresses has several entries.
    pub hosts: Vec<(String, IpAddr)>,
    /// Network names with their number in host order, as `inet_network`
    /// gives it (`10.20` is `0x0a14`).
    pub networks: Vec<(String, u32)>,
    /// Ethernet host names with their MAC-48 address.
    pub ethers: Vec<(String, [u8; 6])>,
    /// Look up names the tables do not hold in the system's sources.
    pub system_fallback: bool,
}

/// A line of a hosts, networks or ethers file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TableError {}

/// The fields of a table line, without its `#` comment.
fn fields(line: &str) -> impl Iterator<Item = &str> {
    line.split('#').next().unwrap_or("").split_whitespace()
}

impl NameTables {
    /// Empty tables that resolve nothing (no system fallback).
    pub fn new() -> NameTables {
        NameTables::default()
    }

    /// Adds the entries of a hosts(5) text: `ADDRESS NAME [ALIAS...]`.
    pub fn add_hosts(&mut self, text: &str) -> Result<(), TableError> {
        for (i, line) in text.lines().enumerate() {
            let mut f = fields(line);
            let Some(addr) = f.next() else { continue };
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| TableError { line: i + 1, message: format!("invalid address '{addr}'") })?;
            let mut any = false;
            for name in f {
                self.hosts.push((name.to_string(), addr));
                any = true;
            }
            if !any {
                return Err(TableError { line: i + 1, message: "address without a name".into() });
            }
        }
        Ok(())
    }

    /// Adds the entries of a networks(5) text: `NAME NUMBER [ALIAS...]`.
    pub fn add_networks(&mut self, text: &str) -> Result<(), TableError> {
        for (i, line) in text.lines().enumerate() {
            let mut f = fields(line);
            let Some(name) = f.next() else { continue };
            let Some(num) = f.next() else {
                return Err(TableError { line: i + 1, message: format!("network '{name}' without a number") });
            };
            let n = inet_network(num)
                .ok_or_else(|| TableError { line: i + 1, message: format!("invalid network number '{num}'") })?;
            self.networks.push((name.to_string(), n));
            for alias in f {
                self.networks.push((alias.to_string(), n));
            }
        }
        Ok(())
    }

    /// Adds the entries of an ethers(5) text: `MAC NAME`.
    pub fn add_ethers(&mut self, text: &str) -> Result<(), TableError> {
        for (i, line) in text.lines().enumerate() {
            let mut f = fields(line);
            let Some(mac) = f.next() else { continue };
            let mac = parse_mac(mac)
                .ok_or_else(|| TableError { line: i + 1, message: format!("invalid MAC address '{mac}'") })?;
            let Some(name) = f.next() else {
                return Err(TableError { line: i + 1, message: "MAC address without a name".into() });
            };
            self.ethers.push((name.to_string(), mac));
        }
        Ok(())
    }
}

/// Where names are resolved: the system's sources (`None`) or tables.
pub type Names<'a> = Option<&'a NameTables>;

/// Every address of a host name, in table (or resolver) order; empty if the
/// name is unknown.
pub fn host_addrs(names: Names<'_>, name: &str) -> Vec<IpAddr> {
    if let Some(t) = names {
        let found: Vec<IpAddr> =
            t.hosts.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, a)| *a).collect();
        if !found.is_empty() || !t.system_fallback {
            return found;
        }
    }
    system_host_addrs(name)
}

/// The number of a network name (host order), if known.
pub fn network(names: Names<'_>, name: &str) -> Option<u32> {
    if let Some(t) = names {
        let found = t.networks.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v);
        if found.is_some() || !t.system_fallback {
            return found;
        }
    }
    system_network(name)
}

/// The MAC-48 address of an Ethernet host name, if known.
pub fn ether_host(names: Names<'_>, name: &str) -> Option<[u8; 6]> {
    if let Some(t) = names {
        let found = t.ethers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v);
        if found.is_some() || !t.system_fallback {
            return found;
        }
    }
    system_ether_host(name)
}

/// Resolves a host name with the system resolver (`getaddrinfo`, through
/// std), in the resolver's order, without duplicates (std asks for every
/// socket type, which repeats each address).
fn system_host_addrs(name: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    if let Ok(it) = (name, 0u16).to_socket_addrs() {
        for sa in it {
            if !out.contains(&sa.ip()) {
                out.push(sa.ip());
            }
        }
    }
    out
}

/// `getnetbyname` over `/etc/networks`.
fn system_network(name: &str) -> Option<u32> {
    let text = std::fs::read_to_string("/etc/networks").ok()?;
    let mut t = NameTables::new();
    for line in text.lines() {
        // Skip unreadable lines, as the C library does.
        let _ = t.add_networks(line);
    }
    network(Some(&t), name)
}

/// `ether_hostton` over `/etc/ethers`.
fn system_ether_host(name: &str) -> Option<[u8; 6]> {
    let text = std::fs::read_to_string("/etc/ethers").ok()?;
    let mut t = NameTables::new();
    for line in text.lines() {
        let _ = t.add_ethers(line);
    }
    ether_host(Some(&t), name)
}

/// `inet_network`: up to four dot-separated C numbers (decimal, `0x` hex,
/// leading-`0` octal), combined as `(a << 8 | b) << 8 ...`.
pub fn inet_network(s: &str) -> Option<u32> {
    let mut val: u32 = 0;
    for (n, part) in s.split('.').enumerate() {
        if n >= 4 || part.is_empty() {
            return None;
        }
        let (digits, radix) = if let Some(h) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (h, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
        let v = u32::from_str_radix(digits, radix).ok()?;
        if v > 255 {
            return None;
        }
        val = (val << 8) | v;
    }
    Some(val)
}

/// A MAC-48 address as ethers(5) writes it: six `:`-separated hex bytes of
/// one or two digits.
fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in out.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inet_network_forms() {
        assert_eq!(inet_network("127.0.0.0"), Some(0x7f00_0000));
        assert_eq!(inet_network("169.254"), Some(0xa9fe));
        assert_eq!(inet_network("10"), Some(10));
        assert_eq!(inet_network("0x7f.1"), Some(0x7f01));
        assert_eq!(inet_network("1.2.3.4.5"), None);
        assert_eq!(inet_network("256"), None);
    }

    #[test]
    fn tables_parse_and_resolve_case_insensitively() {
        let mut t = NameTables::new();
        t.add_hosts("10.0.0.1 a.example alias # comment\n\nfd00::1 a.example\n").unwrap();
        t.add_networks("net-a 10.20 # x\n").unwrap();
        t.add_ethers("aa:0:4:0:14:e eth-a\n").unwrap();
        assert_eq!(host_addrs(Some(&t), "A.EXAMPLE"), vec!["10.0.0.1".parse::<IpAddr>().unwrap(), "fd00::1".parse().unwrap()]);
        assert_eq!(host_addrs(Some(&t), "alias").len(), 1);
        assert!(host_addrs(Some(&t), "localhost").is_empty());
        assert_eq!(network(Some(&t), "NET-A"), Some(0x0a14));
        assert_eq!(ether_host(Some(&t), "eth-a"), Some([0xaa, 0, 4, 0, 0x14, 0x0e]));
        assert_eq!(ether_host(Some(&t), "eth-b"), None);
    }

    #[test]
    fn table_errors_name_the_line() {
        let mut t = NameTables::new();
        assert_eq!(t.add_hosts("10.0.0.1 ok\nbogus x\n").unwrap_err().line, 2);
        assert!(t.add_ethers("aa:bb name\n").is_err());
        assert!(t.add_networks("n 1.2.3.4.5\n").is_err());
        assert!(t.add_hosts("10.0.0.2\n").is_err());
    }
}
