//! `sift`: filter capture files with pcap filter expressions, tcpdump style.
//!
//! ```text
//! sift -r in.pcap 'tcp port 80'              one line per matching packet
//! sift -r in.pcap -w out.pcap 'tcp port 80'  write the matching packets
//! sift -d|-dd|-ddd [-y LINKTYPE] EXPR        print the classic BPF program
//! sift explain [-y LINKTYPE] EXPR            print every compilation stage
//! ```

mod args;
mod summary;

use args::Args;
use sift::{CompileOptions, Engine, Filter, LinkType, DEFAULT_SNAPLEN};
use sift_capture::output::{FileFormat, Output, OutputSpec, Rotation};
use sift_pcap::{Capture, TsPrecision};
use std::collections::HashMap;
use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

const USAGE: &str = "\
usage: sift [-dDOpqU] [-B KiB] [-c count] [-C MB] [-F file] [-G secs] [-i iface] [-r file] [-s snaplen]
            [-w file] [-W count] [-y linktype] [--pcapng] [--count] [--engine NAME] [--updates FILE]
            [--bpf-file FILE] [--time-stamp-precision micro|nano]
            [expression]
       sift explain [-O] [-y linktype] [-s snaplen] expression
       sift gen KIND --count N -w FILE [--seed S]      (workloads: sift gen --help)
       sift bench [--workload KIND|FILE] [--filters ...] [--engines ...] [--json] [--svg FILE]
       sift bench --dynamic [--connections N,...] [--samples N] [--json]   (update latency)

  -r FILE      read packets from a pcap/pcapng file ('-' = stdin)
  -i IFACE     capture live from IFACE ('any' = all, cooked); needs root or CAP_NET_RAW
  -D           list interfaces for -i
  -p -U -B KiB no promiscuous mode / flush per packet / ring size (live capture)
  --fanout N   N capture threads (PACKET_FANOUT by flow), one output file each (-w out.pcap → out.N.pcap)
  --ring-block-size BYTES, --ring-timeout MS   TPACKET_V3 ring geometry and block retire timeout
               (default 50 ms; 1000 ms with -w FILE and no -U)
  --sched-slice US   scheduler time slice capture threads ask for (default 100 µs, the shortest Linux
               6.12+ grants: a woken capture thread preempts busy ones sooner; 0 = kernel default)
  --engine dynamic --updates FILE|-   (with -i) change the filter while capturing, one line per change:
               EXPR  a new filter  |  +EXPR  also capture EXPR  |  -EXPR  withdraw a +EXPR, or stop
               capturing EXPR  |  ?  show the filter  |  # comment. A bad line is reported with a caret
               and changes nothing; changes apply from the next ring block on
  -w FILE      write matching packets as pcap ('-' = stdout)
  --pcapng     write pcapng instead (SHB, one IDB with link type/snaplen/if_tsresol, EPBs)
  -C MB        with -w: new file when the current one exceeds MB x 1,000,000 bytes (FILE, FILE1, FILE2, ...)
  -G SECONDS   with -w: new file every SECONDS, FILE being a strftime template (-w 'dump-%H%M%S.pcap')
  -W N         with -C: N files reused in a ring (FILE0..FILE{N-1}); with -G alone: stop after N files
  -c N         stop after N matching packets
  -d/-dd/-ddd  print the compiled classic BPF program (tcpdump's three formats) and exit
  -y LINKTYPE  link type for -d and explain (default EN10MB); a file's own type wins with -r
  -F FILE      read the expression from FILE ('#' starts a comment)
  -s SNAPLEN   value an accepting program returns (default 262144)
  -O           do not run the optimizer (as tcpdump -O; verdicts are the same either way)
  -q           no per-packet lines
  --count      print only the number of matching packets
  --engine     meta (default: jit where available, else interp), jit, interp, dynamic (fails on what its
               instruction set cannot express), dynamic-or-jit (dynamic where it fits, else meta), reference
  --bpf-file   use a classic BPF program (-ddd, -dd or tc/iptables text) instead of an expression";

/// A failure to report: message for stderr, already formatted.
struct Fail(String);

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail(e.to_string())
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("explain") => args::parse(&argv[1..]).map_err(|e| Fail(format!("{e}\n{USAGE}"))).and_then(|a| explain(&a)),
        Some("gen") => sift_bench::gen_main(&argv[1..]).map(|()| ExitCode::SUCCESS).map_err(Fail),
        Some("bench") => sift_bench::bench_main(&argv[1..]).map(|()| ExitCode::SUCCESS).map_err(Fail),
        _ => {
            args::parse(&argv).map_err(|e| Fail(format!("{e}\n{USAGE}"))).and_then(|a| run(&a))
        }
    };
    match result {
        Ok(code) => code,
        Err(Fail(msg)) => {
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            if !msg.contains("Broken pipe") {
                eprintln!("sift: {msg}");
            }
            ExitCode::from(1)
        }
    }
}

/// The expression text: from -F (with `#` comments blanked, as tcpdump does)
/// or the remaining words joined by spaces.
fn expression(a: &Args) -> Result<String, Fail> {
    match &a.filter_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Fail(format!("{path}: {e}")))?;
            Ok(text.lines().map(|l| l.split('#').next().unwrap_or("")).collect::<Vec<_>>().join("\n"))
        }
        None => Ok(a.expr.join(" ")),
    }
}

fn linktype_arg(a: &Args) -> Result<Option<LinkType>, Fail> {
    a.linktype
        .as_deref()
        .map(|n| LinkType::from_name(n).ok_or_else(|| Fail(format!("invalid data link type {n}"))))
        .transpose()
}

fn snaplen(a: &Args) -> u32 {
    match a.snaplen {
        Some(0) | None => DEFAULT_SNAPLEN,
        Some(n) => n,
    }
}

/// `sift: <message>` then the expression with a caret line under the
/// offending text, both indented alike so the caret lines up.
fn compile_error(e: sift::Error) -> Fail {
    match &e {
        sift::Error::Expression { source, error } => {
            let rendered = error.render(source);
            let mut lines = rendered.lines();
            let (text, caret) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
            Fail(format!("{}\n  {text}\n  {caret}", error.message))
        }
        _ => Fail(e.to_string()),
    }
}

fn explain(a: &Args) -> Result<ExitCode, Fail> {
    let expr = expression(a)?;
    let opts = CompileOptions {
        linktype: linktype_arg(a)?.unwrap_or(LinkType::EN10MB),
        snaplen: snaplen(a),
        netmask: Some(0),
        optimize: !a.no_optimize,
        ..Default::default()
    };
    let c = sift::compile(&expr, &opts).map_err(compile_error)?;
    let mut out = io::stdout().lock();
    writeln!(out, "== expression ({})", opts.linktype)?;
    writeln!(out, "{expr}")?;
    writeln!(out, "\n== AST (fully parenthesized)")?;
    writeln!(out, "{}", c.ast)?;
    writeln!(out, "\n== predicate IR")?;
    write!(out, "{}", c.pred)?;
    if opts.optimize {
        writeln!(out, "\n== optimized predicate IR")?;
        write!(out, "{}", c.optimized)?;
    }
    writeln!(out, "\n== classic BPF ({} instructions)", c.program.len())?;
    write!(out, "{}", sift_bpf::text::dump_d(&c.program))?;
    // The engines' own forms: the dynamic engine's passes (or what does not
    // fit them), and the JIT's machine code.
    writeln!(out, "\n== dynamic engine passes")?;
    match Filter::with_engine(&expr, &opts, Engine::Dynamic) {
        Ok(f) => write!(out, "{}", f.dynamic_listing().unwrap_or_default())?,
        Err(e) => writeln!(out, "none: {e}")?,
    }
    match Filter::with_engine(&expr, &opts, Engine::Jit) {
        Ok(f) => writeln!(
            out,
            "\n== JIT: {} bytes of x86-64 machine code per packet \
             (to disassemble: cargo run --release -p sift-jit --example jit_dump -- EXPR PREFIX {})",
            f.code_size().unwrap_or(0),
            opts.linktype
        )?,
        Err(e) => writeln!(out, "\n== JIT: {e}")?,
    }
    Ok(ExitCode::SUCCESS)
}

fn print_program(level: u8, program: &[sift::Insn]) -> Result<(), Fail> {
    let text = match level {
        1 => sift_bpf::text::dump_d(program),
        2 => sift_bpf::text::dump_dd(program),
        _ => sift_bpf::text::dump_ddd(program),
    };
    io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// How tcpdump compiles for a savefile: its link type and snaplen, netmask 0,
/// savefile rules and the file's byte order.
fn file_options(c: &Capture) -> CompileOptions {
    CompileOptions {
        linktype: LinkType::from_linktype(c.linktype()),
        snaplen: c.snaplen(),
        netmask: Some(0),
        savefile: true,
        swapped: c.swapped(),
        optimize: true,
        ..Default::default()
    }
}

fn open_capture(path: &str) -> Result<Capture, Fail> {
    let r = if path == "-" {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf)?;
        Capture::from_bytes(buf)
    } else {
        Capture::open(std::path::Path::new(path))
    };
    r.map_err(|e| Fail(format!("{path}: {e}")))
}

/// Builds the filter for one link type (the filter text or `--bpf-file`).
fn build_filter(a: &Args, expr: &str, opts: &CompileOptions, engine: Engine) -> Result<Filter, Fail> {
    match &a.bpf_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Fail(format!("{path}: {e}")))?;
            let program = sift_bpf::text::parse_program(&text).map_err(|e| Fail(format!("{path}: {e}")))?;
            Filter::from_program(program).map_err(|e| Fail(format!("{path}: {e}")))
        }
        None => Filter::with_engine(expr, opts, engine).map_err(compile_error),
    }
}

fn run(a: &Args) -> Result<ExitCode, Fail> {
    if a.help {
        println!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    if a.version {
        println!("sift {}", env!("CARGO_PKG_VERSION"));
        return Ok(ExitCode::SUCCESS);
    }
    if a.bpf_file.is_some() && !expression(a)?.trim().is_empty() {
        return Err(Fail("give either an expression or --bpf-file, not both".into()));
    }
    let engine: Engine = match &a.engine {
        Some(name) => name.parse().map_err(Fail)?,
        None => Engine::default(),
    };
    if a.list_interfaces {
        let listing = sift_capture::interface_listing().map_err(|e| Fail(format!("listing interfaces: {e}")))?;
        io::stdout().lock().write_all(listing.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let expr = expression(a)?;
    if a.write.is_none() && (a.pcapng || a.file_size_mb.is_some() || a.rotate_seconds.is_some() || a.max_files.is_some()) {
        return Err(Fail("--pcapng, -C, -G and -W need -w FILE".into()));
    }
    if a.updates.is_some() && a.interface.is_none() {
        return Err(Fail("--updates changes the filter of a live capture: it needs -i".into()));
    }
    if let Some(iface) = &a.interface {
        if a.read.is_some() {
            return Err(Fail("give either -i (live capture) or -r (a file), not both".into()));
        }
        if a.dump == 0 {
            return live_capture(a, iface, &expr);
        }
    }
    let capture = a.read.as_deref().map(open_capture).transpose()?;

    if a.dump > 0 {
        let opts = match &capture {
            Some(c) => CompileOptions { optimize: !a.no_optimize, ..file_options(c) },
            None => {
                let linktype = match (linktype_arg(a)?, &a.interface) {
                    (Some(lt), _) => lt,
                    // `-i IFACE -d`: the program the capture would attach,
                    // for the interface's link type (as tcpdump).
                    (None, Some(iface)) => {
                        let i = sift_capture::Interface::by_name(iface).map_err(|e| Fail(e.to_string()))?;
                        let lt = LinkType(i.link().0);
                        eprintln!("sift: data link type {lt}");
                        lt
                    }
                    (None, None) => {
                        eprintln!("Warning: assuming Ethernet");
                        LinkType::EN10MB
                    }
                };
                CompileOptions {
                    linktype,
                    snaplen: snaplen(a),
                    netmask: Some(0),
                    optimize: !a.no_optimize,
                    ..Default::default()
                }
            }
        };
        let filter = build_filter(a, &expr, &opts, engine)?;
        print_program(a.dump, filter.program().map_err(compile_error)?)?;
        return Ok(ExitCode::SUCCESS);
    }

    let Some(capture) = capture else {
        return Err(Fail(format!("nothing to do: give -r FILE to filter a capture, or -d to print the program\n{USAGE}")));
    };
    filter_capture(a, &expr, engine, &capture)
}

/// `sift -i IFACE`: live capture through sift-capture's TPACKET_V3 ring.
fn live_capture(a: &Args, iface: &str, expr: &str) -> Result<ExitCode, Fail> {
    let dynamic = match a.engine.as_deref() {
        None | Some("meta") => a.updates.is_some(),
        Some("dynamic") => true,
        Some(_) => return Err(Fail("with -i, --engine takes meta (kernel where exact, else JIT) or dynamic".into())),
    };
    if a.bpf_file.is_some() {
        return Err(Fail("--bpf-file is not available with -i yet".into()));
    }
    let mut c = sift_capture::CaptureArgs::new(iface);
    c.expression = expr.to_string();
    c.snaplen = a.snaplen.unwrap_or(0);
    c.promisc = !a.no_promisc;
    c.count = a.max_packets;
    c.write = a.write.as_ref().map(std::path::PathBuf::from);
    c.packet_buffered = a.packet_buffered;
    c.nano = a.nano;
    c.quiet = a.quiet;
    match (a.buffer_kib, a.ring_block_size) {
        (Some(kib), None) => c.ring = sift_capture::RingConfig::for_buffer(u64::from(kib) * 1024, c.ring.block_timeout_ms),
        (kib, Some(size)) => {
            c.ring.block_size = size;
            if let Some(kib) = kib {
                let bytes = u64::from(kib) * 1024;
                c.ring.block_count = u32::try_from((bytes / u64::from(size)).max(1)).unwrap_or(u32::MAX);
            }
        }
        (None, None) => {}
    }
    match a.ring_timeout_ms {
        Some(ms) => c.ring.block_timeout_ms = ms,
        // Writing a file without -U, latency does not matter: blocks are
        // handed over when full or after 1 s (libpcap's default timeout as
        // tcpdump uses it), which means fewer wakeups at low rates.
        None if a.write.is_some() && !a.packet_buffered => c.ring.block_timeout_ms = 1000,
        None => {}
    }
    if let Some(n) = a.fanout {
        c.fanout = n;
    }
    if let Some(us) = a.sched_slice_us {
        c.sched_slice_us = us;
    }
    c.format = output_format(a);
    c.rotation = rotation(a);
    c.dynamic = dynamic;
    c.updates = a.updates.as_ref().map(std::path::PathBuf::from);
    c.optimize = !a.no_optimize;
    sift_capture::capture_main(&c).map_err(Fail)?;
    Ok(ExitCode::SUCCESS)
}

/// `--pcapng` or pcap.
fn output_format(a: &Args) -> FileFormat {
    if a.pcapng {
        FileFormat::Pcapng
    } else {
        FileFormat::Pcap
    }
}

/// `-C` (millions of bytes, as tcpdump), `-G`, `-W`.
fn rotation(a: &Args) -> Rotation {
    Rotation {
        file_size: a.file_size_mb.map(|mb| mb.saturating_mul(1_000_000)),
        seconds: a.rotate_seconds,
        max_files: a.max_files,
    }
}

fn filter_capture(a: &Args, expr: &str, engine: Engine, capture: &Capture) -> Result<ExitCode, Fail> {
    let file_linktype = capture.linktype();
    let name = a.read.as_deref().unwrap_or("-");
    eprintln!(
        "reading from file {name}, link-type {}, snapshot length {}",
        LinkType::from_linktype(file_linktype),
        capture.snaplen()
    );
    // Compile for the file's link type before opening the output, as tcpdump
    // does: a bad expression fails even on an empty capture and writes nothing.
    let mut filters: HashMap<u32, Filter> = HashMap::new();
    let file_opts = CompileOptions { optimize: !a.no_optimize, ..file_options(capture) };
    filters.insert(file_linktype, build_filter(a, expr, &file_opts, engine)?);
    let to_stdout = a.write.as_deref() == Some("-");
    let precision = if a.nano { TsPrecision::Nano } else { TsPrecision::Micro };
    let mut writer = match a.write.as_deref() {
        None => None,
        Some(_) if !sift_pcap::linktype::is_writable(file_linktype) => {
            return Err(Fail(format!("link type {file_linktype} can't be written to a pcap file (libpcap has no LINKTYPE for it)")));
        }
        // The header tcpdump writes: the input's link type (with its FCS bits) and snaplen.
        Some(path) => Some(
            Output::create(OutputSpec {
                path: path.into(),
                format: output_format(a),
                linktype: capture.header_linktype(),
                snaplen: capture.snaplen(),
                precision,
                rotation: rotation(a),
                packet_buffered: a.packet_buffered,
            })
            .map_err(Fail)?,
        ),
    };
    let print_lines = writer.is_none() && !a.count && !a.quiet;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut matched: u64 = 0;
    let mut damage = None;

    for (index, packet) in capture.packets().enumerate() {
        let p = match packet {
            Ok(p) => p,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        let filter = match filters.get(&p.linktype) {
            Some(f) => f,
            None => {
                let opts = CompileOptions { linktype: LinkType::from_linktype(p.linktype), ..file_opts.clone() };
                let f = build_filter(a, expr, &opts, engine)?;
                filters.entry(p.linktype).or_insert(f)
            }
        };
        if !filter.matches(p.data, p.wire_len) {
            continue;
        }
        matched += 1;
        if let Some(w) = writer.as_mut() {
            if p.linktype != file_linktype {
                return Err(Fail(format!(
                    "packet {} has link type {} but the pcap output is {}: a pcap file holds one link type",
                    index + 1,
                    LinkType::from_linktype(p.linktype),
                    LinkType::from_linktype(file_linktype)
                )));
            }
            let (secs, frac) = p.ts.pcap_fields(precision);
            w.write(secs, frac, p.wire_len, p.data)?;
        } else if print_lines {
            let (secs, frac) = if a.nano { p.ts.nanos() } else { p.ts.micros() };
            let stamp = format_time(secs, frac, a.nano);
            writeln!(
                out,
                "{} {stamp} {}/{} {}",
                index + 1,
                p.data.len(),
                p.wire_len,
                summary::summarize(p.linktype, p.data)
            )?;
        }
        if a.max_packets.is_some_and(|n| matched >= n) {
            break;
        }
    }
    if let Some(mut w) = writer {
        w.close()?;
    }
    if a.count {
        let line = format!("{matched} packet{}", if matched == 1 { "" } else { "s" });
        if to_stdout {
            eprintln!("{line}");
        } else {
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    match damage {
        Some(e) => Err(Fail(format!("{name}: {e}"))),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `YYYY-MM-DD HH:MM:SS.ffffff` (UTC), or 9 fraction digits with `nano`.
fn format_time(secs: u32, frac: u32, nano: bool) -> String {
    let days = i64::from(secs / 86_400);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss) = (rem / 3600, rem / 60 % 60, rem % 60);
    if nano {
        format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}.{frac:09}")
    } else {
        format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}.{frac:06}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn time_format() {
        assert_eq!(super::format_time(0, 0, false), "1970-01-01 00:00:00.000000");
        assert_eq!(super::format_time(1_259_670_896, 123_456, false), "2009-12-01 12:34:56.123456");
        assert_eq!(super::format_time(951_782_400, 5, true), "2000-02-29 00:00:00.000000005");
    }
}
