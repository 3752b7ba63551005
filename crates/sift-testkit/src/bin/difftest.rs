//! `difftest`: run a differential campaign (libpcap 1.10.3 vs sift vs the
//! kernel) from the command line and print the report.
//!
//! ```text
//! difftest --seed N --count M [--packets P] [--no-kernel] [--linktype NAME]
//!          [--threads T] [--details D] [--errors] [--oracle] [--print-exprs]
//! ```
//!
//! Exit status: 0 when there is no disagreement, 1 when there is one, 2 on
//! a usage error.

use sift_ir::LinkType;
use sift_testkit::diff::{self, Campaign};
use std::io::Write as _;
use std::process::ExitCode;

/// Writes to stdout, ignoring errors (a closed pipe just ends the output).
macro_rules! out {
    ($($t:tt)*) => {{
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

const USAGE: &str = "usage: difftest --seed N --count M [--packets P] [--no-kernel] [--linktype NAME]
                [--threads T] [--details D] [--errors] [--oracle] [--print-exprs]

  --seed N        seed of the campaign (default 1)
  --count M       number of expressions (default 1000)
  --packets P     packets per accepted expression (default 100)
  --no-kernel     do not run sift's programs in the kernel
  --linktype NAME only this link type (default: rotate over EN10MB, RAW, IPV4, IPV6, NULL,
                  LOOP, LINUX_SLL, LINUX_SLL2, IEEE802_11, IEEE802_11_RADIO, PPI,
                  PRISM_HEADER, IEEE802_11_RADIO_AVS; any DLT name sift knows)
  --threads T     worker threads (default: all cores)
  --details D     disagreements shown in full (default 50)
  --errors        also list libpcap's compile errors by frequency
  --oracle        instead: run libpcap's own programs in the kernel vs libpcap
  --print-exprs   instead: print the generated expressions, one per line";

struct Args {
    campaign: Campaign,
    errors: bool,
    oracle: bool,
    print_exprs: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut c = Campaign::new(1, 1000, 100, true);
    let (mut errors, mut oracle, mut print_exprs) = (false, false, false);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name}: not a number: {v}"));
        match a.as_str() {
            "--seed" => c.seed = number("--seed", value("--seed")?)?,
            "--count" => c.n_exprs = number("--count", value("--count")?)? as usize,
            "--packets" => c.packets_per_expr = number("--packets", value("--packets")?)? as usize,
            "--threads" => c.threads = number("--threads", value("--threads")?)? as usize,
            "--details" => c.max_details = number("--details", value("--details")?)? as usize,
            "--no-kernel" => c.with_kernel = false,
            "--linktype" => {
                let v = value("--linktype")?;
                c.linktype = Some(LinkType::from_name(&v).ok_or_else(|| format!("unknown link type {v}"))?);
            }
            "--errors" => errors = true,
            "--oracle" => oracle = true,
            "--print-exprs" => print_exprs = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args { campaign: c, errors, oracle, print_exprs })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("difftest: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let c = &args.campaign;
    if args.print_exprs {
        for i in 0..c.n_exprs {
            let (lt, mask, expr) = diff::case(c.seed, i, c.linktype);
            let mask = mask.map_or("-".to_string(), |m| format!("{m:#010x}"));
            out!("{lt}\t{mask}\t{}\n", expr.replace('\\', "\\\\").replace('\n', "\\n").replace('\t', "\\t"));
        }
        return ExitCode::SUCCESS;
    }
    if args.oracle {
        let r = diff::oracle_check(c.seed, c.n_exprs, c.packets_per_expr);
        out!("{r}");
        return if r.unexplained == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    let start = std::time::Instant::now();
    let report = diff::run(c, &diff::SiftEngines);
    let secs = start.elapsed().as_secs_f64();
    out!("{report}");
    if args.errors {
        let mut errs: Vec<_> = report.libpcap_errors.iter().collect();
        errs.sort_by(|a, b| b.1.cmp(a.1));
        out!("libpcap compile errors:\n");
        for (e, n) in errs.iter().take(40) {
            out!("  {n:6}  {e}\n");
        }
    }
    eprintln!("{:.2} s, {:.0} expressions/s", secs, report.generated as f64 / secs.max(1e-9));
    if report.total_disagreements() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
