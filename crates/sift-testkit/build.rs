//! Links the installed libpcap (1.10.3), the oracle behind `sift_testkit::libpcap`.

fn main() {
    println!("cargo:rustc-link-lib=pcap");
    println!("cargo:rerun-if-changed=build.rs");
}
