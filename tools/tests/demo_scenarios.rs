//! Every demo scenario, generated from its simulation, is explained by its
//! own mechanism as the top causal chain.

use ingero_demo::{generate, DemoOptions, Scenario};
use ingero_store::TraceDb;
use ingero_tools::explain::explain;
use ingero_tools::Scope;

#[test]
fn each_scenario_names_its_own_mechanism_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in Scenario::ALL {
        let path = dir.path().join(format!("{}.db", scenario.name()));
        generate(scenario, &path, &DemoOptions::default()).expect("generate");
        let db = TraceDb::open(&path).expect("open");
        let report = explain(&db, &Scope::ALL).expect("explain");
        // The simulated engine's busy share, from the file's NVML-style
        // device samples: a run the construction keeps mostly busy is
        // GPU-bound first, with its scenario's mechanism right after.
        let busy: f64 = rusqlite::Connection::open(&path)
            .expect("open raw")
            .query_row("SELECT AVG(value) / 100.0 FROM gpu_util_samples", [], |r| {
                r.get(0)
            })
            .expect("device samples");
        let chains = &report.chains.chains;
        let first = chains
            .first()
            .unwrap_or_else(|| panic!("{}: no chain", scenario.name()));
        // Findings that name no mechanism (idle time read from the thread's
        // state or code alone) may rank above it only by explaining more
        // idle time than it does.
        let named: Vec<_> = chains
            .iter()
            .filter(|c| c.cause.name() != "idle_code")
            .collect();
        let top = if busy >= 0.85 && named.first().map(|c| c.cause.name()) == Some("gpu_bound") {
            named
                .get(1)
                .unwrap_or_else(|| panic!("{}: only the GPU-bound chain", scenario.name()))
        } else {
            named
                .first()
                .unwrap_or_else(|| panic!("{}: no mechanism named", scenario.name()))
        };
        for above in chains.iter().take_while(|c| c.id != top.id) {
            assert!(
                above.cause.name() == "gpu_bound" || above.explained_ns >= top.explained_ns,
                "{}: {} ranks above {} with less idle time",
                scenario.name(),
                above.summary,
                top.summary
            );
        }
        let _ = first;
        assert_eq!(
            top.cause.name(),
            scenario.expected_cause(),
            "{}: top chain was {} (simulated GPU busy {busy:.3})",
            scenario.name(),
            top.summary
        );
        assert!(!top.evidence.is_empty() && !top.fix.is_empty());
        // The chain's victim is the GPU-driving process.
        assert_eq!(top.victim_pid, report.processes.main_pid);
    }
}
