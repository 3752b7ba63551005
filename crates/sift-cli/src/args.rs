//! Command-line parsing in tcpdump's getopt style: short flags cluster
//! (`-nnr file`, `-c5`), `-d`/`-dd`/`-ddd` count, the expression is every
//! remaining argument joined by spaces, `--` ends the options.

use std::fmt;

/// What the command line asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    /// `-r FILE` (`-` = stdin).
    pub read: Option<String>,
    /// `-i IFACE`: capture live (`any` = every interface, cooked).
    pub interface: Option<String>,
    /// `-D`: list the interfaces live capture can use.
    pub list_interfaces: bool,
    /// `-p`: do not put the interface into promiscuous mode.
    pub no_promisc: bool,
    /// `-U`: flush the output after every packet.
    pub packet_buffered: bool,
    /// `-B KiB`: capture ring size.
    pub buffer_kib: Option<u32>,
    /// `--ring-block-size BYTES` (a power of two, multiple of the page size).
    pub ring_block_size: Option<u32>,
    /// `--ring-timeout MS`: the kernel hands over a non-full block after MS ms.
    pub ring_timeout_ms: Option<u32>,
    /// `--fanout N`: N capture threads joined in a PACKET_FANOUT group.
    pub fanout: Option<usize>,
    /// `--sched-slice US`: the scheduler time slice capture threads ask for
    /// (0: the kernel's default).
    pub sched_slice_us: Option<u32>,
    /// `-w FILE` (`-` = stdout).
    pub write: Option<String>,
    /// `-C N`: rotate the `-w` file when it exceeds N × 1,000,000 bytes.
    pub file_size_mb: Option<u64>,
    /// `-G SECONDS`: rotate the `-w` file (a strftime template) every SECONDS.
    pub rotate_seconds: Option<u64>,
    /// `-W N`: number of rotated files.
    pub max_files: Option<u32>,
    /// `--pcapng`: write pcapng instead of pcap.
    pub pcapng: bool,
    /// `--updates FILE|-`: filter updates for a running capture, one per line.
    pub updates: Option<String>,
    /// `-c N`: stop after N matching packets.
    pub max_packets: Option<u64>,
    /// `-y LINKTYPE`.
    pub linktype: Option<String>,
    /// `-F FILE`: read the expression from a file.
    pub filter_file: Option<String>,
    /// Number of `d`s: 1 = `-d`, 2 = `-dd`, 3 = `-ddd`.
    pub dump: u8,
    /// `-s SNAPLEN` (0 = default).
    pub snaplen: Option<u32>,
    /// `--count`: print the number of matching packets.
    pub count: bool,
    /// `--engine NAME`.
    pub engine: Option<String>,
    /// `--bpf-file FILE`: a cBPF program in -ddd/-dd text instead of an expression.
    pub bpf_file: Option<String>,
    /// `--time-stamp-precision micro|nano` (for `-w` and printing).
    pub nano: bool,
    /// `-O`/`--no-optimize`: compile without the IR optimizer (as tcpdump's `-O`).
    pub no_optimize: bool,
    /// `-q`: no per-packet lines (useful with `--count`).
    pub quiet: bool,
    /// `-h`/`--help`.
    pub help: bool,
    /// `--version`.
    pub version: bool,
    /// The expression words.
    pub expr: Vec<String>,
}

/// A command-line error, shown with the usage hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Options of tcpdump's that sift accepts and ignores (they only change
/// printing or name resolution, which sift's summary lines do not do).
const IGNORED_FLAGS: &[char] = &['n', 'N', 'v', 'e', 't', 'S', 'x', 'X', 'A', 'l', 'K', '#'];

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, ArgError> {
    v.parse().map_err(|_| ArgError(format!("invalid number '{v}' for {flag}")))
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[String]) -> Result<Args, ArgError> {
    let mut a = Args::default();
    let mut i = 0;
    let need = |i: &mut usize, flag: &str| -> Result<String, ArgError> {
        *i += 1;
        argv.get(*i).cloned().ok_or_else(|| ArgError(format!("option {flag} needs an argument")))
    };
    while i < argv.len() {
        let arg = &argv[i];
        if arg == "--" {
            a.expr.extend(argv[i + 1..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let value = |i: &mut usize| -> Result<String, ArgError> {
                match &inline {
                    Some(v) => Ok(v.clone()),
                    None => need(i, &format!("--{name}")),
                }
            };
            match name {
                "count" => a.count = true,
                "pcapng" => a.pcapng = true,
                "updates" => a.updates = Some(value(&mut i)?),
                "interface" => a.interface = Some(value(&mut i)?),
                "list-interfaces" => a.list_interfaces = true,
                "no-promiscuous-mode" => a.no_promisc = true,
                "packet-buffered" => a.packet_buffered = true,
                "buffer-size" => a.buffer_kib = Some(number("--buffer-size", &value(&mut i)?)?),
                "ring-block-size" => a.ring_block_size = Some(number("--ring-block-size", &value(&mut i)?)?),
                "ring-timeout" => a.ring_timeout_ms = Some(number("--ring-timeout", &value(&mut i)?)?),
                "fanout" => a.fanout = Some(number("--fanout", &value(&mut i)?)?),
                "sched-slice" => a.sched_slice_us = Some(number("--sched-slice", &value(&mut i)?)?),
                "engine" => a.engine = Some(value(&mut i)?),
                "bpf-file" => a.bpf_file = Some(value(&mut i)?),
                "linktype" => a.linktype = Some(value(&mut i)?),
                "snapshot-length" => a.snaplen = Some(number("--snapshot-length", &value(&mut i)?)?),
                "time-stamp-precision" => {
                    a.nano = match value(&mut i)?.as_str() {
                        "nano" => true,
                        "micro" => false,
                        other => return Err(ArgError(format!("unknown time stamp precision '{other}' (micro or nano)"))),
                    }
                }
                "no-optimize" => a.no_optimize = true,
                "immediate-mode" => {}
                "help" => a.help = true,
                "version" => a.version = true,
                _ => return Err(ArgError(format!("unknown option '--{name}'"))),
            }
            i += 1;
            continue;
        }
        if arg.len() > 1 && arg.starts_with('-') {
            let flags: Vec<char> = arg[1..].chars().collect();
            let mut j = 0;
            while j < flags.len() {
                let f = flags[j];
                // Options with an argument take the rest of this word or the next word.
                let mut arg_value = |i: &mut usize| -> Result<String, ArgError> {
                    let rest: String = flags[j + 1..].iter().collect();
                    j = flags.len();
                    if rest.is_empty() {
                        need(i, &format!("-{f}"))
                    } else {
                        Ok(rest)
                    }
                };
                match f {
                    'r' => a.read = Some(arg_value(&mut i)?),
                    'i' => a.interface = Some(arg_value(&mut i)?),
                    'B' => a.buffer_kib = Some(number("-B", &arg_value(&mut i)?)?),
                    'D' => a.list_interfaces = true,
                    'p' => a.no_promisc = true,
                    'U' => a.packet_buffered = true,
                    'w' => a.write = Some(arg_value(&mut i)?),
                    'C' => a.file_size_mb = Some(number("-C", &arg_value(&mut i)?)?),
                    'G' => a.rotate_seconds = Some(number("-G", &arg_value(&mut i)?)?),
                    'W' => a.max_files = Some(number("-W", &arg_value(&mut i)?)?),
                    'c' => a.max_packets = Some(number("-c", &arg_value(&mut i)?)?),
                    'y' => a.linktype = Some(arg_value(&mut i)?),
                    'F' => a.filter_file = Some(arg_value(&mut i)?),
                    's' => a.snaplen = Some(number("-s", &arg_value(&mut i)?)?),
                    'd' => a.dump = a.dump.saturating_add(1),
                    'q' => a.quiet = true,
                    'O' => a.no_optimize = true,
                    'h' => a.help = true,
                    c if IGNORED_FLAGS.contains(&c) => {}
                    c => return Err(ArgError(format!("unknown option '-{c}'"))),
                }
                j += 1;
            }
            i += 1;
            continue;
        }
        a.expr.push(arg.clone());
        i += 1;
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> Args {
        parse(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn clustered_flags_and_values() {
        let a = p(&["-nnr", "in.pcap", "-c5", "-w", "-", "tcp", "port", "80"]);
        assert_eq!(a.read.as_deref(), Some("in.pcap"));
        assert_eq!(a.write.as_deref(), Some("-"));
        assert_eq!(a.max_packets, Some(5));
        assert_eq!(a.expr, ["tcp", "port", "80"]);
    }

    #[test]
    fn dump_levels() {
        assert_eq!(p(&["-d", "ip"]).dump, 1);
        assert_eq!(p(&["-dd", "ip"]).dump, 2);
        assert_eq!(p(&["-ddd", "ip"]).dump, 3);
        assert_eq!(p(&["-d", "-d", "ip"]).dump, 2);
    }

    #[test]
    fn long_options() {
        let a = p(&["--engine=interp", "--count", "--bpf-file", "f.txt", "-y", "RAW"]);
        assert_eq!(a.engine.as_deref(), Some("interp"));
        assert!(a.count);
        assert_eq!(a.bpf_file.as_deref(), Some("f.txt"));
        assert_eq!(a.linktype.as_deref(), Some("RAW"));
    }

    #[test]
    fn double_dash_ends_options() {
        let a = p(&["-r", "x", "--", "-d"]);
        assert_eq!(a.expr, ["-d"]);
        assert_eq!(a.dump, 0);
    }

    #[test]
    fn live_capture_flags() {
        let a = p(&["-i", "eth0", "-pU", "-B", "4096", "--fanout", "2", "-w", "x.pcap", "udp"]);
        assert_eq!(a.interface.as_deref(), Some("eth0"));
        assert!(a.no_promisc && a.packet_buffered);
        assert_eq!(a.buffer_kib, Some(4096));
        assert_eq!(a.fanout, Some(2));
        assert!(p(&["-D"]).list_interfaces);
        let a = p(&["-i", "eth0", "-w", "out-%H", "-C", "10", "-G60", "-W", "5", "--pcapng"]);
        assert_eq!((a.file_size_mb, a.rotate_seconds, a.max_files, a.pcapng), (Some(10), Some(60), Some(5), true));
        let a = p(&["-i", "eth0", "--engine", "dynamic", "--updates", "-", "tcp"]);
        assert_eq!((a.engine.as_deref(), a.updates.as_deref()), (Some("dynamic"), Some("-")));
        assert_eq!(p(&["-i", "eth0", "--sched-slice", "0"]).sched_slice_us, Some(0));
        assert_eq!(p(&["-i", "eth0", "--sched-slice=250"]).sched_slice_us, Some(250));
        assert_eq!(p(&["-i", "eth0"]).sched_slice_us, None);
    }

    #[test]
    fn errors() {
        let e = |s: &[&str]| parse(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err();
        assert!(e(&["-r"]).0.contains("needs an argument"));
        assert!(e(&["-c", "x"]).0.contains("invalid number"));
        assert!(e(&["-Z"]).0.contains("unknown option"));
        assert!(e(&["--bogus"]).0.contains("unknown option"));
    }
}
