//! A world-size-1 NCCL job recorded on the H200
//! (investigations/scripts/nccl/ws1_collectives.py, traced by
//! nccl_h200.sh into investigations/nccl-ws1-h200.db). The job made one
//! warm-up all-reduce, then 200 all-reduces, 20 broadcasts and 20
//! all-gathers of 4 MiB (float32): those counts, not the analysis, are the
//! expected values.

use ingero_store::TraceDb;
use ingero_tools::explain::explain;
use ingero_tools::Scope;
use std::path::PathBuf;

fn open() -> TraceDb {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../investigations/nccl-ws1-h200.db");
    TraceDb::open(&path).expect("open the H200 NCCL capture")
}

fn one(db: &TraceDb, sql: &str) -> i64 {
    db.conn()
        .query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn every_collective_of_the_job_is_recorded_with_its_size() {
    let db = open();
    let n = |name: &str| {
        one(
            &db,
            &format!(
                "SELECT COUNT(*) FROM nccl_calls n JOIN cuda_ops o ON o.id = n.op_id \
                 WHERE o.name = '{name}' AND n.bytes = 4194304 AND n.count = 1048576 \
                 AND n.datatype = 7"
            ),
        )
    };
    assert_eq!(n("ncclAllReduce"), 201);
    assert_eq!(n("ncclAllGather"), 20);
    // PyTorch's broadcast calls ncclBcast, which calls ncclBroadcast: the
    // inner call is flagged nested in cuda_calls.
    assert_eq!(n("ncclBcast"), 20);
    assert_eq!(n("ncclBroadcast"), 20);
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.name = 'ncclBroadcast' AND c.nested = 1"
        ),
        20
    );
    // The all-reduces, made first, are numbered 0..200 on their
    // communicator, each once.
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(DISTINCT seq) * 1000 + MAX(seq) FROM nccl_calls WHERE op_id = 201"
        ),
        201 * 1000 + 200
    );
    // The inner ncclBroadcast is not numbered again: 241 numbered
    // collectives, the job's own.
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) * 1000 + COUNT(DISTINCT seq) FROM nccl_calls WHERE seq >= 0"
        ),
        241 * 1000 + 241
    );
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM nccl_calls WHERE op_id = 202 AND seq = -1"
        ),
        20
    );
    // The rank of the process, from its communicator (the script set RANK
    // after start, so the environment the kernel shows did not have it).
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM processes WHERE rank = 0 AND world_size = 1"
        ),
        1
    );
    // One communicator of one rank, made and destroyed.
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM nccl_comms WHERE comm_rank = 0 AND nranks = 1 \
             AND comm_key != 0 AND destroy_ts_ns > init_ts_ns"
        ),
        1
    );
}

#[test]
fn a_single_rank_job_has_no_rank_report_and_its_calls_are_in_the_statistics() {
    let db = open();
    let r = explain(&db, &Scope::ALL).expect("explain");
    assert!(r.ranks.is_none(), "{:?}", r.ranks);
    let all_reduce = r
        .stats
        .ops
        .iter()
        .find(|o| o.op == "ncclAllReduce")
        .expect("ncclAllReduce in the statistics");
    assert_eq!(all_reduce.count, 201);
}
