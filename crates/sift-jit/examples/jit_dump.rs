//! Writes the machine code the JIT generates for an expression (Ethernet,
//! or the link type given by name as a third argument) to four files, for
//! a disassembler: `PREFIX.pred.bin` (straight from the optimized
//! predicate), `PREFIX.pred-count.bin` (its count function),
//! `PREFIX.cbpf.bin` (from the classic BPF program) and `PREFIX.count.bin`
//! (the count function of the latter).
//!
//! `cargo run --release -p sift-jit --example jit_dump -- EXPR PREFIX [LINKTYPE]`, then
//! `objdump -D -b binary -m i386:x86-64 PREFIX.pred.bin`.
//!
//! `jit_dump --corpus FILE` reads lines `DLT<TAB>EXPRESSION` and prints, for
//! each that compiles, the code of every path (optimized and unoptimized
//! predicate, each straight and through classic BPF, each with its count
//! function after a `|`) in hex, one line each: to compare the generated
//! code before and after a change of the JIT (`diff` of two outputs).

use sift_ir::{LinkType, LowerOptions, Pred};
use sift_jit::JitFilter;

fn lower(expr: &str, linktype: LinkType) -> Result<Pred, String> {
    let ast = sift_syntax::parse(expr).map_err(|e| e.render(expr))?;
    let opts = LowerOptions {
        linktype,
        savefile: true,
        ..LowerOptions::default()
    };
    sift_ir::lower(&ast, &opts).map_err(|e| e.render(expr))
}

fn cbpf(pred: &Pred) -> Option<JitFilter> {
    let prog =
        sift_bpf::codegen::compile(pred, &sift_bpf::codegen::CodegenOptions::default()).ok()?;
    JitFilter::from_program(&prog).ok()
}

fn hex(code: &[u8]) -> String {
    code.iter().map(|b| format!("{b:02x}")).collect()
}

fn corpus(path: &str) {
    let text = std::fs::read_to_string(path).expect("read the corpus");
    for line in text.lines() {
        let Some((dlt, expr)) = line.split_once('\t') else {
            continue;
        };
        let Some(linktype) = LinkType::from_name(dlt) else {
            continue;
        };
        let Ok(pred) = lower(expr, linktype) else {
            continue;
        };
        let optimized = sift_ir::optimize(&pred);
        for (name, p) in [("unopt", &pred), ("opt", &optimized)] {
            let direct = JitFilter::from_pred(p).map(|j| hex(&j.code_bytes()) + "|" + &hex(&j.count_code_bytes()));
            let via = cbpf(p).map(|j| hex(&j.code_bytes()) + "|" + &hex(&j.count_code_bytes()));
            println!(
                "{dlt}\t{expr}\t{name}.pred\t{}",
                direct.unwrap_or_else(|e| e.to_string())
            );
            println!(
                "{dlt}\t{expr}\t{name}.cbpf\t{}",
                via.unwrap_or_else(|| "-".into())
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, path] = &args[..] {
        if flag == "--corpus" {
            return corpus(path);
        }
    }
    let usage = || -> ! {
        eprintln!("usage: jit_dump EXPR PREFIX [LINKTYPE] | jit_dump --corpus FILE");
        std::process::exit(2);
    };
    let (Some(expr), Some(prefix)) = (args.first(), args.get(1)) else { usage() };
    let linktype = match args.get(2) {
        None => LinkType::EN10MB,
        Some(name) => LinkType::from_name(name).unwrap_or_else(|| {
            eprintln!("jit_dump: unknown link type {name}");
            usage()
        }),
    };
    let pred = lower(expr, linktype).unwrap_or_else(|e| {
        eprintln!("jit_dump: {e}");
        std::process::exit(1)
    });
    let optimized = sift_ir::optimize(&pred);
    let direct = JitFilter::from_pred(&optimized).expect("jit");
    let via = cbpf(&optimized).expect("jit");
    for (name, code, insns) in [
        ("pred", direct.code_bytes(), 0),
        ("pred-count", direct.count_code_bytes(), 0),
        ("cbpf", via.code_bytes(), via.insn_count()),
        ("count", via.count_code_bytes(), via.insn_count()),
    ] {
        std::fs::write(format!("{prefix}.{name}.bin"), &code).expect("write");
        println!("{name}: {} bytes, {insns} cBPF insns", code.len());
    }
}
