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
        let top = report
            .chains
            .chains
            .first()
            .unwrap_or_else(|| panic!("{}: no chain", scenario.name()));
        assert_eq!(
            top.cause.name(),
            scenario.expected_cause(),
            "{}: top chain was {}",
            scenario.name(),
            top.summary
        );
        assert!(!top.evidence.is_empty() && !top.fix.is_empty());
        // The chain's victim is the GPU-driving process.
        assert_eq!(top.victim_pid, report.processes.main_pid);
    }
}
