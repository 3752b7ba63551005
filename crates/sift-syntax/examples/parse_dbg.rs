//! Parses each argument and prints the tree, its printed form, or the error:
//! `cargo run -p sift-syntax --example parse_dbg -- 'tcp port 80 or 443'`.

fn main() {
    for a in std::env::args().skip(1) {
        match sift_syntax::parse(&a) {
            Ok(f) => println!("OK  {a}\n    => {f}\n    {:?}", f.expr),
            Err(e) => println!("ERR {}", e.render(&a)),
        }
    }
}
