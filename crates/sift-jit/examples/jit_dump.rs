//! Writes the machine code the JIT generates for an expression (Ethernet)
//! to two files, for a disassembler: `PREFIX.pred.bin` (straight from the
//! optimized predicate, the default engine's path) and `PREFIX.cbpf.bin`
//! (from the classic BPF program).
//!
//! `cargo run --release -p sift-jit --example jit_dump -- EXPR PREFIX`, then
//! `objdump -D -b binary -m i386:x86-64 PREFIX.pred.bin`.

use sift_ir::{LinkType, LowerOptions};
use sift_jit::JitFilter;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(expr), Some(prefix)) = (args.first(), args.get(1)) else {
        eprintln!("usage: jit_dump EXPR PREFIX");
        std::process::exit(2);
    };
    let ast = sift_syntax::parse(expr).unwrap_or_else(|e| panic!("{}", e.render(expr)));
    let opts = LowerOptions {
        linktype: LinkType::EN10MB,
        savefile: true,
        ..LowerOptions::default()
    };
    let pred = sift_ir::lower(&ast, &opts).unwrap_or_else(|e| panic!("{}", e.render(expr)));
    let optimized = sift_ir::optimize(&pred);
    let prog = sift_bpf::codegen::compile(&optimized, &sift_bpf::codegen::CodegenOptions::default())
        .expect("codegen");
    for (name, jit) in [
        ("pred", JitFilter::from_pred(&optimized).expect("jit")),
        ("cbpf", JitFilter::from_program(&prog).expect("jit")),
    ] {
        let code = jit.code_bytes();
        std::fs::write(format!("{prefix}.{name}.bin"), &code).expect("write");
        println!("{name}: {} bytes, {} cBPF insns", code.len(), jit.insn_count());
    }
}
