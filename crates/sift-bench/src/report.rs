//! Output: a terminal table, JSON lines and an SVG bar chart.

use std::fmt::Write as _;

use crate::bench::{median, Measurement};

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number (non-finite values become `null`).
fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        "null".into()
    }
}

/// One measurement as a single-line JSON object.
pub fn json_line(m: &Measurement) -> String {
    format!(
        concat!(
            "{{\"workload\":{},\"run\":{},\"filter\":{},\"expression\":{},\"engine\":{},\"packets\":{},",
            "\"samples\":{},\"passes_per_sample\":{},\"median_mpps\":{},\"min_mpps\":{},\"max_mpps\":{},",
            "\"ns_per_packet\":{},\"min_ns_per_packet\":{},\"max_ns_per_packet\":{},",
            "\"compile_ns\":{},\"program_size\":{},\"matches\":{}}}"
        ),
        json_string(&m.workload),
        m.run,
        json_string(&m.filter),
        json_string(&m.expression),
        json_string(&m.engine),
        m.packets,
        m.samples,
        m.passes_per_sample,
        json_f64(m.median_mpps),
        json_f64(m.min_mpps),
        json_f64(m.max_mpps),
        json_f64(m.ns_per_packet),
        json_f64(m.min_ns_per_packet),
        json_f64(m.max_ns_per_packet),
        m.compile_ns,
        m.program_size.map_or_else(|| "null".to_string(), |s| s.to_string()),
        m.matches
    )
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:<10} {:<17} {:<12} {:>9} {:>19} {:>8} {:>11} {:>6} {:>9}",
        "workload",
        "filter",
        "engine",
        "Mpps",
        "(min–max)",
        "ns/pkt",
        "compile µs",
        "size",
        "matches"
    )
}

/// One measurement as a table row.
pub fn table_row(m: &Measurement) -> String {
    format!(
        "{:<10} {:<17} {:<12} {:>9.2} {:>19} {:>8.2} {:>11.1} {:>6} {:>9}",
        m.workload,
        m.filter,
        m.engine,
        m.median_mpps,
        format!("({:.2}–{:.2})", m.min_mpps, m.max_mpps),
        m.ns_per_packet,
        m.compile_ns as f64 / 1e3,
        m.program_size
            .map_or_else(|| "-".to_string(), |s| s.to_string()),
        m.matches
    )
}

/// Speed ratios per filter, per workload run: each engine's median Mpps
/// over `base`'s on the same filter, their median (the mean of the middle
/// two for an even count), min and max over the filters, and the median
/// without the empty expression (whose code does nothing in some engines).
/// With several runs of a workload (`--repeat`), a last line per workload
/// and engine gives the spread of those medians over the runs.
pub fn ratio_summary(results: &[Measurement], base: &str) -> String {
    let mut out = String::new();
    let mut engines: Vec<&str> = Vec::new();
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for r in results {
        if r.engine != base && !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
        if !runs.contains(&(r.workload.as_str(), r.run)) {
            runs.push((&r.workload, r.run));
        }
    }
    let several = |w: &str| runs.iter().filter(|r| r.0 == w).count() > 1;
    // (workload, engine) -> the median ratio of each run, without the empty expression.
    let mut per_run: Vec<((&str, &str), Vec<f64>)> = Vec::new();
    for &(w, run) in &runs {
        for &e in &engines {
            let mut ratios: Vec<(f64, &str, &str)> = Vec::new();
            for r in results.iter().filter(|r| r.engine == e && r.workload == w && r.run == run) {
                let b = results
                    .iter()
                    .find(|b| b.engine == base && b.workload == w && b.run == run && b.filter == r.filter);
                if let Some(b) = b.filter(|b| b.median_mpps > 0.0) {
                    ratios.push((r.median_mpps / b.median_mpps, &r.filter, &r.expression));
                }
            }
            if ratios.is_empty() {
                continue;
            }
            ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
            let all: Vec<f64> = ratios.iter().map(|r| r.0).collect();
            let nonempty: Vec<f64> = ratios.iter().filter(|r| !r.2.trim().is_empty()).map(|r| r.0).collect();
            let (lo, hi) = (ratios[0], ratios[ratios.len() - 1]);
            let label = if several(w) { format!("{w} run {run}") } else { w.to_string() };
            let _ = write!(
                out,
                "{label}: {e} / {base}: median {:.2}×, min {:.2}× ({}), max {:.2}× ({}) over {} filters",
                median(&all),
                lo.0,
                lo.1,
                hi.0,
                hi.1,
                all.len()
            );
            if !nonempty.is_empty() {
                let m = median(&nonempty);
                if nonempty.len() < all.len() {
                    let _ = write!(out, "; without the empty expression: median {m:.2}×");
                }
                match per_run.iter_mut().find(|p| p.0 == (w, e)) {
                    Some(p) => p.1.push(m),
                    None => per_run.push(((w, e), vec![m])),
                }
            }
            out.push('\n');
        }
    }
    for ((w, e), mut meds) in per_run {
        if meds.len() < 2 {
            continue;
        }
        let list = meds.iter().map(|m| format!("{m:.2}")).collect::<Vec<_>>().join(" ");
        meds.sort_by(f64::total_cmp);
        let _ = writeln!(
            out,
            "{w}, {} runs: {e} / {base} at the median filter (without the empty expression): {list}; median {:.2}×, range {:.2}–{:.2}×",
            meds.len(),
            median(&meds),
            meds[0],
            meds[meds.len() - 1]
        );
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// A grouped bar chart per workload: one group per filter, one bar per
/// engine (height = median Mpps), whiskers from the slowest to the fastest
/// sample. Written by hand; no dependencies.
pub fn svg_chart(results: &[Measurement]) -> String {
    let mut workloads: Vec<&str> = Vec::new();
    let mut engines: Vec<&str> = Vec::new();
    for r in results {
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
    }
    let bar_w = 12.0;
    let group_gap = 18.0;
    let (left, right, top, panel_h, label_h, title_h) = (70.0, 20.0, 40.0, 260.0, 120.0, 30.0);
    let mut panels = Vec::new();
    let mut width: f64 = 400.0;
    for w in &workloads {
        let mut filters: Vec<&str> = Vec::new();
        for r in results.iter().filter(|r| r.workload == *w) {
            if !filters.contains(&r.filter.as_str()) {
                filters.push(&r.filter);
            }
        }
        let group_w = bar_w * engines.len() as f64 + group_gap;
        width = width.max(left + right + group_w * filters.len() as f64);
        panels.push((*w, filters, group_w));
    }
    let panel_total = title_h + panel_h + label_h;
    let height = top + panel_total * panels.len() as f64 + 10.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
    );
    // Legend.
    for (i, e) in engines.iter().enumerate() {
        let x = left + 110.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="12" width="12" height="12" fill="{}"/>"#,
            PALETTE[i % PALETTE.len()]
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="22">{}</text>"#,
            x + 16.0,
            xml_escape(e)
        );
    }
    for (pi, (w, filters, group_w)) in panels.iter().enumerate() {
        let y0 = top + panel_total * pi as f64;
        let base_y = y0 + title_h + panel_h;
        // Logarithmic scale over whole decades: engines differ by orders
        // of magnitude (accept-all vs. a 200-connection filter).
        let finite = |v: f64| v.is_finite() && v > 0.0;
        let mine = || results.iter().filter(|r| r.workload == *w);
        let max = mine()
            .map(|r| r.max_mpps)
            .filter(|v| finite(*v))
            .fold(f64::MIN_POSITIVE, f64::max);
        let min = mine()
            .map(|r| r.min_mpps)
            .filter(|v| finite(*v))
            .fold(max, f64::min);
        let lo_dec = min.log10().floor();
        let hi_dec = max.log10().ceil().max(lo_dec + 1.0);
        let y_of = |v: f64| -> f64 {
            let l = if finite(v) {
                v.log10().clamp(lo_dec, hi_dec)
            } else {
                lo_dec
            };
            base_y - (l - lo_dec) / (hi_dec - lo_dec) * panel_h
        };
        let _ = writeln!(
            s,
            r#"<text x="{left:.1}" y="{:.1}" font-size="14" font-weight="bold">{} — Mpps, log scale (bar: median, whisker: min–max)</text>"#,
            y0 + 18.0,
            xml_escape(w)
        );
        // Axis and gridlines.
        let _ = writeln!(
            s,
            r#"<line x1="{left:.1}" y1="{:.1}" x2="{left:.1}" y2="{base_y:.1}" stroke="black"/>"#,
            y0 + title_h
        );
        let _ = writeln!(
            s,
            r#"<line x1="{left:.1}" y1="{base_y:.1}" x2="{:.1}" y2="{base_y:.1}" stroke="black"/>"#,
            width - right
        );
        let mut dec = lo_dec;
        while dec <= hi_dec {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powf(dec);
                if v.log10() > hi_dec + 1e-9 {
                    break;
                }
                let y = y_of(v);
                let _ = writeln!(
                    s,
                    r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}"/>"##,
                    width - right,
                    if m == 1.0 { "#bbb" } else { "#eee" }
                );
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{v}</text>"#,
                    left - 4.0,
                    y + 4.0
                );
            }
            dec += 1.0;
        }
        for (fi, f) in filters.iter().enumerate() {
            let gx = left + group_w * fi as f64 + group_gap / 2.0;
            for (ei, e) in engines.iter().enumerate() {
                let Some(r) = results
                    .iter()
                    .find(|r| r.workload == *w && r.filter == *f && r.engine == *e)
                else {
                    continue;
                };
                if !r.median_mpps.is_finite() {
                    continue;
                }
                let x = gx + bar_w * ei as f64;
                let top_y = y_of(r.median_mpps);
                let hgt = base_y - top_y;
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{hgt:.1}" fill="{}"><title>{} {} {}: {:.2} Mpps ({:.2}–{:.2})</title></rect>"#,
                    base_y - hgt,
                    bar_w - 2.0,
                    PALETTE[ei % PALETTE.len()],
                    xml_escape(w),
                    xml_escape(f),
                    xml_escape(e),
                    r.median_mpps,
                    r.min_mpps,
                    r.max_mpps
                );
                if r.min_mpps.is_finite() && r.max_mpps.is_finite() {
                    let cx = x + (bar_w - 2.0) / 2.0;
                    let (ylo, yhi) = (y_of(r.min_mpps), y_of(r.max_mpps));
                    let _ = writeln!(
                        s,
                        r#"<line x1="{cx:.1}" y1="{ylo:.1}" x2="{cx:.1}" y2="{yhi:.1}" stroke="black"/>"#
                    );
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.1}" y1="{yhi:.1}" x2="{:.1}" y2="{yhi:.1}" stroke="black"/>"#,
                        cx - 3.0,
                        cx + 3.0
                    );
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.1}" y1="{ylo:.1}" x2="{:.1}" y2="{ylo:.1}" stroke="black"/>"#,
                        cx - 3.0,
                        cx + 3.0
                    );
                }
            }
            let lx = gx + bar_w * engines.len() as f64 / 2.0;
            let _ = writeln!(
                s,
                r#"<text x="{lx:.1}" y="{:.1}" text-anchor="end" transform="rotate(-45 {lx:.1} {:.1})">{}</text>"#,
                base_y + 14.0,
                base_y + 14.0,
                xml_escape(f)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample_measurement(engine: &str, filter: &str, mpps: f64) -> Measurement {
        Measurement {
            workload: "web".into(),
            run: 1,
            filter: filter.into(),
            expression: "a \"quoted\" <expr>\n".into(),
            engine: engine.into(),
            packets: 10,
            samples: 3,
            passes_per_sample: 2,
            median_mpps: mpps,
            min_mpps: mpps * 0.9,
            max_mpps: mpps * 1.1,
            ns_per_packet: 1e3 / mpps,
            min_ns_per_packet: 1e3 / (mpps * 1.1),
            max_ns_per_packet: 1e3 / (mpps * 0.9),
            compile_ns: 1234,
            program_size: None,
            matches: 7,
        }
    }

    #[test]
    fn json_escapes() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        let line = json_line(&sample_measurement("interp", "ip", 50.0));
        assert!(line.contains(r#""program_size":null"#));
        assert!(!line.contains('\n'));
    }

    #[test]
    fn ratios() {
        let r = vec![
            sample_measurement("libpcap", "ip", 10.0),
            sample_measurement("interp", "ip", 20.0),
            sample_measurement("libpcap", "tcp", 10.0),
            sample_measurement("interp", "tcp", 40.0),
        ];
        let s = ratio_summary(&r, "libpcap");
        assert!(
            s.contains("web: interp / libpcap: median 3.00×, min 2.00× (ip), max 4.00× (tcp) over 2 filters"),
            "{s}"
        );
    }

    #[test]
    fn ratios_per_run_and_without_the_empty_expression() {
        let m = |engine: &str, filter: &str, mpps: f64, run: usize, expr: &str| Measurement {
            run,
            expression: expr.into(),
            ..sample_measurement(engine, filter, mpps)
        };
        let mut r = Vec::new();
        for (run, k) in [(1, 1.0), (2, 2.0), (3, 3.0)] {
            r.push(m("libpcap", "accept-all", 10.0, run, ""));
            r.push(m("jit", "accept-all", 1000.0, run, ""));
            r.push(m("libpcap", "ip", 10.0, run, "ip"));
            r.push(m("jit", "ip", 10.0 * k, run, "ip"));
            r.push(m("libpcap", "tcp", 10.0, run, "tcp"));
            r.push(m("jit", "tcp", 30.0 * k, run, "tcp"));
        }
        let s = ratio_summary(&r, "libpcap");
        assert!(
            s.contains("web run 2: jit / libpcap: median 6.00×, min 2.00× (ip), max 100.00× (accept-all) over 3 filters; without the empty expression: median 4.00×"),
            "{s}"
        );
        assert!(
            s.contains("web, 3 runs: jit / libpcap at the median filter (without the empty expression): 2.00 4.00 6.00; median 4.00×, range 2.00–6.00×"),
            "{s}"
        );
    }
}
