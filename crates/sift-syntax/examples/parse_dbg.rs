fn main() {
    for a in std::env::args().skip(1) {
        match sift_syntax::parse(&a) {
            Ok(f) => println!("OK  {a}\n    => {f}\n    {:?}", f.expr),
            Err(e) => println!("ERR {}", e.render(&a)),
        }
    }
}
