//! Workload generator and side-by-side benchmark harness for sift's filter
//! engines (`sift gen`, `sift bench`).
//!
//! * [`gen`]: deterministic synthetic captures (`tcp5555`, `pingflood`,
//!   `web`, `mixed`, `ftp`).
//! * [`filters`]: the built-in standard filter set.
//! * [`engines`]: the engine table (`libpcap` via `dlopen`, `interp`,
//!   `reference`, `handwritten`, `accept-all`); one entry adds an engine.
//! * [`bench`](mod@bench): compile, warm up, sample whole passes, check that every
//!   engine's match count agrees.
//! * [`report`]: terminal table, JSON lines, SVG chart.
//! * [`dynamic`]: `sift bench --dynamic`, update latency of the dynamic
//!   engine beside full recompiles.
//! * [`ftpcap`]: the FTP experiment (replay a passive-mode FTP trace,
//!   follow the data ports, count the packets missed meanwhile).
//!
//! [`gen_main`] and [`bench_main`] are the command-line front ends.
#![warn(missing_docs)]
// Only the dlopen'ed libpcap and the thread CPU clock need unsafe code.
#![deny(unsafe_code)]

pub mod bench;
#[allow(unsafe_code)]
pub mod cputime;
pub mod dynamic;
pub mod engines;
pub mod filters;
pub mod ftpcap;
pub mod gen;
pub mod handwritten;
#[allow(unsafe_code)]
pub mod libpcap;
pub mod report;

use std::io::Write;
use std::path::Path;

pub use bench::{bench_filter, Measurement, SampleOptions, Workload};
pub use engines::{EngineSpec, Runner, Setup, ENGINES};
pub use filters::{standard_filters, FilterSpec};
pub use gen::{generate, Kind, Packet};

/// Usage of `sift gen`.
pub const GEN_USAGE: &str = "\
usage: sift gen KIND [--count N] [--seed S] -w FILE
  KIND: tcp5555 | pingflood | web | mixed | ftp
  --count N   packets to generate (default: 20000 for web, 1000000 otherwise; ftp: the whole trace)
  --seed S    random seed (default 1); the same seed gives the same file
  -w FILE     pcap file to write (Ethernet, microsecond timestamps)
  ftp: passive-mode FTP, 10 servers x 20 data connections opened one after another (one per ms,
       kept open, 1 segment/ms each), 227 replies, amid background traffic (0.22 s, 135600 packets);
       with --count N the background rate is scaled to make N packets
  --background-pps N  ftp without --count: background packets per second (default 500000)";

/// Usage of `sift bench`.
pub const BENCH_USAGE: &str = "\
usage: sift bench [options]
  --workload W[,W...]  pcap/pcapng file or generated kind (tcp5555, pingflood, web, mixed, ftp);
                       repeatable (default: web)
  --count N            packets for generated workloads (default per kind: web 20000, ftp 200000, else 1000000)
  --seed S             seed for generated workloads (default 1)
  --repeat N           run every workload N times, each loaded or generated afresh (its own memory),
                       and summarize the spread of the ratios over the runs (default 1; the JSON lines
                       carry \"run\"; --svg charts the first run)
  --filters F[,F...]   filter names or groups: all, pflua, swift, bpfperf, misc, ftp (default: all)
  --expr EXPR          also benchmark this expression (repeatable; named expr1, expr2, ...)
  --engines E[,E...]   engines (default: libpcap,jit,interp,handwritten,accept-all; 'all' adds jit-gather,
                       jit-verdicts, jit-single, jit-cbpf, dynamic, reference; --list describes them): jit
                       is sift's JIT of the optimized predicate (sift::Engine::Jit), jit-gather the same
                       through the generic batch entry point, jit-verdicts writing each packet's verdict,
                       jit-single one call per packet, jit-cbpf its JIT of the optimized classic BPF
                       program; every engine is handed the packets as one slice of sift::PacketRef
  --samples N          samples per filter × engine after one warm-up pass (default 20), taken
                       round-robin over the engines, each round starting one engine later
  --min-sample-ms MS   each sample repeats whole passes for at least MS ms (default 10)
  --cpu-time           time samples and compiles with the thread's CPU clock instead of the wall
                       clock (leaves out time spent waiting for a CPU on a loaded machine)
  --compile-samples N  compile each filter N times per engine, report the least time (default 21)
  --json               JSON lines on stdout (one per workload × filter × engine); table on stderr
                       (size / program_size: machine-code bytes for the jit engines, classic BPF
                       instructions for libpcap, interp and dynamic)
  --svg FILE           write a bar chart (median, min–max whiskers)
  --list               list filters and engines, then exit

usage: sift bench --dynamic [options]     update latency of the dynamic engine vs full recompiles
  --connections N[,N...]  filter sizes (default 1,10,50,200)
  --samples N             samples per operation for the dynamic engine (default 10000)
  --recompile-samples N   samples per operation for each recompile strategy (default 50)
  --strategies S[,S...]   dynamic, sift-recompile, libpcap-recompile, libpcap-recompile-noopt (default: all)
  --json                  JSON lines on stdout (operation, strategy, connections, samples, median_ns,
                          p99_ns, min_ns, max_ns); table on stderr";

/// Skips a leading subcommand word (`gen`/`bench`) if present, so both
/// `["gen", "web", ...]` and `["web", ...]` are accepted.
fn strip_subcommand<'a>(args: &'a [String], word: &str) -> &'a [String] {
    match args.first() {
        Some(a) if a == word => &args[1..],
        _ => args,
    }
}

/// Takes the value of option `name` at `args[*i]`.
fn value<'a>(args: &'a [String], i: &mut usize, name: &str) -> Result<&'a str, String> {
    *i += 1;
    args.get(*i)
        .map(String::as_str)
        .ok_or_else(|| format!("option {name} needs a value"))
}

fn parse_num<T: std::str::FromStr>(s: &str, name: &str) -> Result<T, String> {
    s.replace('_', "")
        .parse()
        .map_err(|_| format!("invalid value '{s}' for {name}"))
}

/// `sift gen KIND --count N [--seed S] -w FILE`. `args` are the words after
/// `gen` (a leading `gen` is skipped).
pub fn gen_main(args: &[String]) -> Result<(), String> {
    let args = strip_subcommand(args, "gen");
    let mut kind: Option<Kind> = None;
    let mut count: Option<usize> = None;
    let mut seed: u64 = 1;
    let mut out: Option<String> = None;
    let mut background_pps: Option<u64> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--count" | "-c" => count = Some(parse_num(value(args, &mut i, a)?, a)?),
            "--seed" => seed = parse_num(value(args, &mut i, a)?, a)?,
            "-w" | "--write" => out = Some(value(args, &mut i, a)?.to_string()),
            "--background-pps" => background_pps = Some(parse_num(value(args, &mut i, a)?, a)?),
            "-h" | "--help" => return Err(GEN_USAGE.to_string()),
            _ if a.starts_with('-') => return Err(format!("unknown option {a}\n{GEN_USAGE}")),
            _ if kind.is_none() => kind = Some(a.parse()?),
            _ => return Err(format!("unexpected argument {a}\n{GEN_USAGE}")),
        }
        i += 1;
    }
    let kind = kind.ok_or_else(|| format!("missing workload KIND\n{GEN_USAGE}"))?;
    let out = out.ok_or_else(|| format!("missing -w FILE\n{GEN_USAGE}"))?;
    if background_pps.is_some() && (kind != Kind::Ftp || count.is_some()) {
        return Err("--background-pps applies to ftp without --count".into());
    }
    let packets = match (kind, count) {
        (Kind::Ftp, None) => {
            let mut o = gen::FtpOptions { seed, ..Default::default() };
            if let Some(r) = background_pps {
                o.background_pps = r;
            }
            gen::ftp_trace(&o).packets
        }
        _ => generate(kind, count.unwrap_or_else(|| kind.default_count()), seed),
    };
    gen::write_pcap_file(Path::new(&out), &packets).map_err(|e| format!("{out}: {e}"))?;
    Ok(())
}

/// Parsed `sift bench` options.
#[derive(Clone, Debug, Default)]
pub struct BenchArgs {
    /// Files or kinds.
    pub workloads: Vec<String>,
    /// Packets for generated workloads (`None` = per-kind default).
    pub count: Option<usize>,
    /// Seed for generated workloads.
    pub seed: u64,
    /// `--repeat`: runs of every workload.
    pub repeat: usize,
    /// Filter selection (names/groups), `None` = all.
    pub filters: Option<String>,
    /// Extra expressions.
    pub exprs: Vec<String>,
    /// Engine selection, `None` = defaults.
    pub engines: Option<String>,
    /// Sampling.
    pub samples: usize,
    /// Minimum sample duration in ms.
    pub min_sample_ms: u64,
    /// `--cpu-time`: time with the thread's CPU clock.
    pub cpu_time: bool,
    /// `--compile-samples`: builds per engine × filter (least time reported).
    pub compile_samples: usize,
    /// JSON lines on stdout.
    pub json: bool,
    /// SVG output file.
    pub svg: Option<String>,
    /// List and exit.
    pub list: bool,
    /// `--dynamic`: update latency instead of filtering speed.
    pub dynamic: bool,
    /// `--samples` was given.
    pub samples_set: bool,
    /// `--connections` (dynamic).
    pub connections: Option<Vec<usize>>,
    /// `--recompile-samples` (dynamic).
    pub recompile_samples: Option<usize>,
    /// `--strategies` (dynamic).
    pub strategies: Option<String>,
}

/// Parses `sift bench` arguments (a leading `bench` is skipped).
pub fn parse_bench_args(args: &[String]) -> Result<BenchArgs, String> {
    let args = strip_subcommand(args, "bench");
    let mut b = BenchArgs {
        seed: 1,
        repeat: 1,
        samples: 20,
        min_sample_ms: 10,
        compile_samples: 21,
        ..Default::default()
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--workload" | "--workloads" | "-r" => b.workloads.extend(
                value(args, &mut i, a)?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            ),
            "--count" | "-c" => b.count = Some(parse_num(value(args, &mut i, a)?, a)?),
            "--seed" => b.seed = parse_num(value(args, &mut i, a)?, a)?,
            "--repeat" => b.repeat = parse_num(value(args, &mut i, a)?, a)?,
            "--filters" | "--filter" => b.filters = Some(value(args, &mut i, a)?.to_string()),
            "--expr" => b.exprs.push(value(args, &mut i, a)?.to_string()),
            "--engines" | "--engine" => b.engines = Some(value(args, &mut i, a)?.to_string()),
            "--samples" => {
                b.samples = parse_num(value(args, &mut i, a)?, a)?;
                b.samples_set = true;
            }
            "--dynamic" => b.dynamic = true,
            "--connections" => {
                let v = value(args, &mut i, a)?;
                b.connections = Some(
                    v.split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| parse_num(s, a))
                        .collect::<Result<_, _>>()?,
                );
            }
            "--recompile-samples" => b.recompile_samples = Some(parse_num(value(args, &mut i, a)?, a)?),
            "--strategies" | "--strategy" => b.strategies = Some(value(args, &mut i, a)?.to_string()),
            "--min-sample-ms" => b.min_sample_ms = parse_num(value(args, &mut i, a)?, a)?,
            "--cpu-time" => b.cpu_time = true,
            "--compile-samples" => b.compile_samples = parse_num(value(args, &mut i, a)?, a)?,
            "--json" => b.json = true,
            "--svg" => b.svg = Some(value(args, &mut i, a)?.to_string()),
            "--list" => b.list = true,
            "-h" | "--help" => return Err(BENCH_USAGE.to_string()),
            _ => return Err(format!("unknown argument {a}\n{BENCH_USAGE}")),
        }
        i += 1;
    }
    if b.samples == 0 {
        return Err("--samples must be at least 1".into());
    }
    if b.compile_samples == 0 {
        return Err("--compile-samples must be at least 1".into());
    }
    if b.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    if b.cpu_time && !bench::Clock::ThreadCpu.available() {
        return Err("--cpu-time: the thread CPU clock cannot be read here".into());
    }
    if b.workloads.is_empty() {
        b.workloads.push("web".into());
    }
    Ok(b)
}

/// The filters a run uses: the selection plus `--expr` expressions.
pub fn filters_for(b: &BenchArgs) -> Result<Vec<FilterSpec>, String> {
    let mut fs = match &b.filters {
        Some(list) => filters::select_filters(list)?,
        None if b.exprs.is_empty() => standard_filters(),
        None => Vec::new(),
    };
    for (i, e) in b.exprs.iter().enumerate() {
        fs.push(FilterSpec {
            name: format!("expr{}", i + 1),
            expr: e.clone(),
            groups: &[],
        });
    }
    Ok(fs)
}

/// Loads (file) or generates (kind) a workload.
pub fn workload_for(w: &str, count: Option<usize>, seed: u64) -> Result<Workload, String> {
    if Path::new(w).exists() {
        return Workload::load(Path::new(w));
    }
    match w.parse::<Kind>() {
        Ok(kind) => Ok(Workload::generated(
            kind,
            count.unwrap_or_else(|| kind.default_count()),
            seed,
        )),
        Err(e) => Err(format!("{w}: no such file, and {e}")),
    }
}

/// Runs a whole benchmark: every workload × filter × engine. Results go
/// to `on_result` as they are measured. Stops at the first failure
/// (compile error, disagreeing match counts).
pub fn run(
    b: &BenchArgs,
    on_result: &mut dyn FnMut(&Measurement),
) -> Result<Vec<Measurement>, String> {
    let filters = filters_for(b)?;
    let engines = match &b.engines {
        Some(list) => engines::select_engines(list)?,
        None => engines::default_engines(),
    };
    let opts = SampleOptions {
        samples: b.samples,
        min_sample_ns: b.min_sample_ms.saturating_mul(1_000_000),
        clock: if b.cpu_time { bench::Clock::ThreadCpu } else { bench::Clock::Wall },
        compile_samples: b.compile_samples,
    };
    let mut all = Vec::new();
    // The workload measured last, kept until the next one is made.
    let mut last: Option<Workload> = None;
    for w in &b.workloads {
        for run in 1..=b.repeat {
            // Each run loads or generates the workload afresh, into memory
            // of its own: the previous workload is dropped only once this
            // one is made. Dropped first, its packets' heap blocks would be
            // handed out again, scattered, to the new packets, which the
            // first workload of a process gets one after another in the
            // order they are made (see "How much the layout matters" in
            // docs/performance-history.md, session 14).
            let mut workload = workload_for(w, b.count, b.seed)?;
            drop(last.take());
            workload.run = run;
            if b.repeat > 1 {
                eprintln!("{} (run {run} of {})", workload.summary(), b.repeat);
            } else {
                eprintln!("{}", workload.summary());
            }
            for f in &filters {
                all.extend(bench_filter(&workload, f, &engines, &opts, on_result)?);
            }
            last = Some(workload);
        }
    }
    Ok(all)
}

/// `sift bench ...`: `args` are the words after `bench` (a leading
/// `bench` is skipped). Prints a table (stdout, or stderr with `--json`),
/// JSON lines with `--json`, writes `--svg`. Returns an error — the caller
/// should exit non-zero — when a filter fails to compile or the engines'
/// match counts disagree.
pub fn bench_main(args: &[String]) -> Result<(), String> {
    let b = parse_bench_args(args)?;
    if b.dynamic {
        return dynamic_bench_main(&b);
    }
    if b.list {
        println!("filters:");
        for f in standard_filters() {
            let e = if f.expr.len() > 90 {
                format!(
                    "{}… ({} chars)",
                    f.expr.chars().take(90).collect::<String>(),
                    f.expr.len()
                )
            } else {
                f.expr.clone()
            };
            println!(
                "  {:<17} [{}] {}",
                f.name,
                f.groups.join(","),
                if e.is_empty() { "(empty)".into() } else { e }
            );
        }
        println!("engines:");
        for e in ENGINES {
            println!(
                "  {:<12} {}{}",
                e.name,
                e.about,
                if e.default { " (default)" } else { "" }
            );
        }
        match libpcap::Libpcap::get() {
            Some(l) => println!("libpcap: {}", l.version()),
            None => println!("libpcap: not found (engine libpcap skipped)"),
        }
        return Ok(());
    }
    let json = b.json;
    let mut table_out: Box<dyn Write> = if json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let _ = writeln!(table_out, "{}", report::table_header());
    let wants_libpcap = b.engines.as_deref().is_none_or(|l| {
        l.split(',')
            .any(|e| e.trim() == "libpcap" || e.trim() == "all")
    });
    if wants_libpcap && libpcap::Libpcap::get().is_none() {
        eprintln!("note: libpcap not found; engine libpcap skipped");
    }
    let mut stdout = std::io::stdout();
    let result = run(&b, &mut |m| {
        let _ = writeln!(table_out, "{}", report::table_row(m));
        if json {
            let _ = writeln!(stdout, "{}", report::json_line(m));
        }
    });
    let results = result?;
    let summary = report::ratio_summary(&results, "libpcap");
    if !summary.is_empty() {
        let _ = write!(table_out, "\n{summary}");
    }
    if let Some(path) = &b.svg {
        let first: Vec<Measurement> = results.iter().filter(|m| m.run == 1).cloned().collect();
        std::fs::write(path, report::svg_chart(&first)).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// The `--dynamic` options of parsed `sift bench` arguments.
pub fn dynamic_options(b: &BenchArgs) -> dynamic::DynamicBenchOptions {
    let mut o = dynamic::DynamicBenchOptions::default();
    if let Some(c) = &b.connections {
        o.connections = c.clone();
    }
    if b.samples_set {
        o.samples = b.samples;
    }
    if let Some(r) = b.recompile_samples {
        o.recompile_samples = r.max(1);
    }
    if let Some(s) = &b.strategies {
        o.strategies = s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    }
    o
}

/// `sift bench --dynamic`: the update-latency table (stdout, or stderr with
/// `--json`), JSON lines with `--json`.
fn dynamic_bench_main(b: &BenchArgs) -> Result<(), String> {
    let o = dynamic_options(b);
    let mut table_out: Box<dyn Write> = if b.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    if let Some(l) = ftpcap::load_average() {
        eprintln!("load average: {l}");
    }
    let _ = writeln!(table_out, "{}", dynamic::table_header());
    if o.strategies.iter().any(|s| s.starts_with("libpcap")) && libpcap::Libpcap::get().is_none() {
        eprintln!("note: libpcap not found; its strategies skipped");
    }
    let mut stdout = std::io::stdout();
    let mut dyn_medians: Vec<(String, usize, u64)> = Vec::new();
    let results = dynamic::run_dynamic_bench(&o, &mut |m| {
        if m.strategy == "dynamic" {
            dyn_medians.push((m.operation.clone(), m.connections, m.median_ns));
        }
        let d = dyn_medians
            .iter()
            .find(|d| d.0 == m.operation && d.1 == m.connections)
            .map(|d| d.2);
        let _ = writeln!(table_out, "{}", dynamic::table_row(m, d));
        if b.json {
            let _ = writeln!(stdout, "{}", m.json_line());
        }
    })?;
    let _ = write!(table_out, "\n{}", dynamic::summary(&results));
    Ok(())
}
