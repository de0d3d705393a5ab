//! Writing the measured-GPU rows ([`crate::gpu`]) through the capture's one
//! [`TraceWriter`], so NVML samples land in the same file and transaction
//! style as the CUDA and host events (no second connection).

use crate::error::Result;
use crate::gpu::{GpuDevice, GpuSamples};
use crate::writer::TraceWriter;
use rusqlite::params;

impl TraceWriter {
    /// Records the GPUs NVML saw at the start of the capture, in one
    /// transaction; a device written again (same index) is refreshed.
    pub fn write_gpu_devices(&mut self, devices: &[GpuDevice]) -> Result<()> {
        let session = self.session_id();
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO gpu_devices(session_id, gpu, name, uuid, pci_bus_id, mem_total_bytes) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT(session_id, gpu) DO UPDATE SET name = excluded.name, \
                 uuid = excluded.uuid, pci_bus_id = excluded.pci_bus_id, \
                 mem_total_bytes = excluded.mem_total_bytes",
            )?;
            for d in devices {
                insert.execute(params![
                    session,
                    d.gpu,
                    d.name,
                    d.uuid,
                    d.pci_bus_id,
                    d.mem_total_bytes
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores one round of GPU samples in one transaction and returns how
    /// many rows were new. A sample the driver returned twice (same gpu,
    /// kind and timestamp; same gpu, pid and timestamp; same gpu and poll
    /// time) is stored once, whether the copy is in this round or an
    /// earlier one.
    pub fn write_gpu_samples(&mut self, rows: &GpuSamples) -> Result<usize> {
        let session = self.session_id();
        let mut inserted = 0;
        let tx = self.conn.transaction()?;
        {
            // gpu_util_samples has no unique key (older files share its
            // DDL); the (gpu, kind, ts_ns) index makes the check a lookup.
            let mut util = tx.prepare_cached(
                "INSERT INTO gpu_util_samples(session_id, ts_ns, gpu, kind, value) \
                 SELECT ?1, ?2, ?3, ?4, ?5 WHERE NOT EXISTS (SELECT 1 FROM gpu_util_samples \
                 WHERE gpu = ?3 AND kind = ?4 AND ts_ns = ?2 AND session_id = ?1)",
            )?;
            for s in &rows.util {
                inserted += util.execute(params![session, s.ts_ns, s.gpu, s.kind.id(), s.value])?;
            }
            let mut process = tx.prepare_cached(
                "INSERT INTO gpu_process_samples(session_id, ts_ns, gpu, pid, sm_pct, mem_pct) \
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE NOT EXISTS (SELECT 1 FROM gpu_process_samples \
                 WHERE pid = ?4 AND ts_ns = ?2 AND gpu = ?3 AND session_id = ?1)",
            )?;
            for s in &rows.process {
                inserted += process
                    .execute(params![session, s.ts_ns, s.gpu, s.pid, s.sm_pct, s.mem_pct])?;
            }
            let mut status = tx.prepare_cached(
                "INSERT OR IGNORE INTO gpu_status(session_id, ts_ns, gpu, mem_used_bytes, \
                 pcie_rx_kbps, pcie_tx_kbps, sm_clock_mhz, power_mw, throttle_reasons) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for s in &rows.status {
                inserted += status.execute(params![
                    session,
                    s.ts_ns,
                    s.gpu,
                    s.mem_used_bytes,
                    s.pcie_rx_kbps,
                    s.pcie_tx_kbps,
                    s.sm_clock_mhz,
                    s.power_mw,
                    s.throttle_reasons
                ])?;
            }
        }
        tx.commit()?;
        Ok(inserted)
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::{GpuDevice, GpuProcessSample, GpuSamples, GpuStatus, GpuUtilKind};
    use crate::gpu::{GpuUtilSample, NOT_AVAILABLE};
    use crate::model::SessionInfo;
    use crate::writer::{RawPolicy, TraceWriter};
    use rusqlite::Connection;

    fn util(ts_ns: i64, kind: GpuUtilKind, value: i64) -> GpuUtilSample {
        GpuUtilSample {
            ts_ns,
            gpu: 0,
            kind,
            value,
        }
    }

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap_or(-99)
    }

    #[test]
    fn samples_returned_twice_are_stored_once() -> crate::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("gpu.db");
        let info = SessionInfo {
            started_ns: 1,
            ..SessionInfo::default()
        };
        let mut w = TraceWriter::create(&path, &info, RawPolicy::All)?;
        let device = GpuDevice {
            gpu: 0,
            name: "stand-in".into(),
            uuid: "GPU-0".into(),
            pci_bus_id: "00000000:01:00.0".into(),
            mem_total_bytes: 1 << 30,
        };
        w.write_gpu_devices(std::slice::from_ref(&device))?;
        w.write_gpu_devices(&[GpuDevice {
            name: "renamed".into(),
            ..device
        }])?;
        let proc_sample = GpuProcessSample {
            ts_ns: 100,
            gpu: 0,
            pid: 42,
            sm_pct: 70,
            mem_pct: 5,
        };
        let mut status = GpuStatus::unknown(100, 0);
        status.sm_clock_mhz = 1980;
        let first = GpuSamples {
            util: vec![
                util(100, GpuUtilKind::Sm, 10),
                util(100, GpuUtilKind::Sm, 10),
                util(100, GpuUtilKind::Memory, 3),
                util(300, GpuUtilKind::Sm, 20),
            ],
            process: vec![proc_sample, proc_sample],
            status: vec![status, status],
        };
        assert_eq!(w.write_gpu_samples(&first)?, 3 + 1 + 1);
        // The next round overlaps the first one (the driver's buffer was
        // read from an older timestamp).
        let second = GpuSamples {
            util: vec![
                util(300, GpuUtilKind::Sm, 20),
                util(500, GpuUtilKind::Sm, 30),
            ],
            process: vec![
                proc_sample,
                GpuProcessSample {
                    pid: 43,
                    ..proc_sample
                },
            ],
            status: vec![status],
        };
        assert_eq!(w.write_gpu_samples(&second)?, 2);
        w.finish(2)?;
        let conn = Connection::open(&path)?;
        let sm: String = conn.query_row(
            "SELECT group_concat(value) FROM (SELECT value FROM gpu_util_samples \
             WHERE kind = 1 ORDER BY ts_ns)",
            [],
            |r| r.get(0),
        )?;
        assert_eq!(sm, "10,20,30");
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM gpu_util_samples WHERE kind = 2"
            ),
            1
        );
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM gpu_process_samples"), 2);
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM gpu_status"), 1);
        assert_eq!(count(&conn, "SELECT sm_clock_mhz FROM gpu_status"), 1980);
        assert_eq!(
            count(&conn, "SELECT power_mw FROM gpu_status"),
            NOT_AVAILABLE
        );
        let name: String = conn.query_row("SELECT name FROM gpu_devices", [], |r| r.get(0))?;
        assert_eq!(name, "renamed");
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM gpu_devices"), 1);
        Ok(())
    }
}
