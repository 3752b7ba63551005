//! sift's link-type table against libpcap's: every name sift knows maps to
//! the DLT value libpcap gives it on this platform (a wrong number files a
//! link type's captures under another's semantics: DLT_JUNIPER_MFR was 137,
//! which is DLT_JUNIPER_ATM1).

use sift_ir::LinkType;
use sift_testkit::libpcap;

#[test]
fn every_link_type_name_has_libpcaps_number() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for lt in LinkType::all() {
        let name = lt.name().expect("table entries have names");
        let Some(v) = libpcap::datalink_value(name) else { continue };
        checked += 1;
        if v != lt.0 {
            wrong.push(format!("{name}: sift {}, libpcap {v}", lt.0));
        }
    }
    println!("{checked} link-type names checked against libpcap");
    assert!(checked >= 50, "only {checked} names known to libpcap");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The link types sift filters are all among them.
    let supported = sift_ir::lower::supported_linktypes();
    let known: Vec<_> =
        supported.iter().filter(|lt| libpcap::datalink_value(lt.name().unwrap_or("")).is_some()).collect();
    println!("{} of {} supported link types are in libpcap's name table", known.len(), supported.len());
    assert_eq!(known.len(), supported.len(), "{known:?}");
}
