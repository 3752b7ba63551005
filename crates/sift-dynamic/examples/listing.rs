//! Prints the passes an expression translates into:
//! `cargo run --release -p sift-dynamic --example listing -- 'tcp port 80'`.

use sift_dynamic::{DynamicFilter, LinkType};

fn main() {
    let expr = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    match DynamicFilter::from_expr(&expr, LinkType::EN10MB) {
        Ok(f) => print!("{}", f.program()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
