//! What a report carries: every raw CUDA call and GPU-thread off-CPU interval,
//! histograms that account for every raw call, and an embedded copy of the
//! data the page script reads back unchanged.

mod common;

use ingero_report::histogram::histograms_of;
use ingero_report::{html, perfetto, ReportData};
use ingero_store::{HostKind, TraceDb};
use ingero_tools::chains::chains_of;
use ingero_tools::dataset::Dataset;
use ingero_tools::Scope;

#[test]
fn report_data_carries_every_raw_call_and_off_cpu_interval() {
    let (ds, chains) = common::seed_dataset();
    let data = ReportData::load(&common::seed_db(), &Scope::ALL).expect("data");
    assert_eq!(data.span_count(), ds.calls.len());
    let off_cpu = ds
        .gpu_thread_switches
        .iter()
        .filter(|h| h.kind == HostKind::SchedSwitch && h.dur_ns > 0)
        .count();
    assert_eq!(data.off_cpu_count(), off_cpu);
    assert_eq!(data.chains, chains.chains);
    assert!(!data.cpu.is_empty() && !data.page_alloc_total.is_empty());
    let main = &data.processes[0];
    assert_eq!(main.pid, 2233, "the GPU-driving process leads");
    assert!(!main.threads.is_empty() && !main.page_alloc.is_empty());
    for t in data.processes.iter().flat_map(|p| &p.threads) {
        assert!(
            t.calls.windows(2).all(|w| w[0].0 <= w[1].0),
            "calls in time order"
        );
        assert!(t.calls.iter().all(|s| (s.2 as usize) < data.ops.len()));
    }
}

#[test]
fn histograms_account_for_every_raw_call() {
    let (ds, _) = common::seed_dataset();
    let hists = histograms_of(&ds);
    let total: u64 = hists.iter().map(|h| h.samples).sum();
    assert_eq!(total as usize, ds.calls.len());
    for h in &hists {
        assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), h.samples);
        assert!(
            h.buckets.windows(2).all(|w| w[0].hi_ns == w[1].lo_ns),
            "contiguous"
        );
        assert!(h.buckets.iter().all(|b| b.hi_ns == 2 * b.lo_ns));
        assert!(h.buckets.first().is_some_and(|b| b.count > 0));
        assert!(h
            .buckets
            .last()
            .is_some_and(|b| b.count > 0 && b.hi_ns > h.max_ns));
        assert!(h.total_calls >= h.samples as i64);
    }
    let launch = hists
        .iter()
        .find(|h| h.op == "cudaLaunchKernel")
        .expect("launch histogram");
    assert!(
        launch.buckets.len() >= 8,
        "the 352x cold-start tail spans many buckets"
    );
}

#[test]
fn the_page_embeds_the_data_it_was_given() {
    let data = ReportData::load(&common::seed_db(), &Scope::ALL).expect("data");
    let page = html::report_html(&data).expect("page");
    let open = "<script type=\"application/json\" id=\"ingero-data\">";
    let start = page.find(open).expect("data element") + open.len();
    let end = start + page[start..].find("</script>").expect("end of data");
    let embedded: serde_json::Value = serde_json::from_str(&page[start..end]).expect("JSON");
    // Both sides go through the same text parser, so only the escaping differs.
    let direct: serde_json::Value =
        serde_json::from_str(&serde_json::to_string(&data).expect("json")).expect("parse");
    assert!(
        embedded == direct,
        "the embedded data differs from the report data"
    );
    // The SVG namespace is a name, not a fetch; nothing else may look like a URL.
    let rest = page.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !rest.contains("http://") && !rest.contains("https://"),
        "no URLs at all"
    );
}

#[test]
fn a_trace_with_no_chains_still_reports_and_exports() {
    let db = TraceDb::open(&common::cluster_path()).expect("cluster trace");
    let ds = Dataset::load(&db, &Scope::ALL).expect("load");
    let chains = chains_of(&ds);
    let data = ReportData::load(&db, &Scope::ALL).expect("data");
    html::report_html(&data).expect("page");
    let trace = perfetto::trace_of(&ds, &chains);
    let cuda = trace
        .trace_events
        .iter()
        .filter(|e| e.cat.as_deref().is_some_and(|c| c.starts_with("cuda")))
        .count();
    assert_eq!(cuda, ds.calls.len());
}
