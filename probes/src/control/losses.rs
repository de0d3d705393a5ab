//! Records lost on the way, written once a second as the rows of
//! `capture_losses` (what was lost since the last write, by cause) and
//! mirrored into the live counters.

use super::Control;
use crate::status::LossBreakdown;
use crate::writer::WriterMsg;
use ingero_store::catalog::loss_source;

/// Loss counters as last written to the database.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Recorded {
    losses: LossBreakdown,
    unfinished: u64,
}

impl Control {
    /// Writes what was lost since `last` into `capture_losses` (one row per
    /// cause, stamped `ts`) and refreshes the live counters from the kernel's.
    pub(super) fn record_losses(&self, last: Recorded, ts: i64) -> Recorded {
        let kernel = self.tables.losses.read();
        let user = match self.shared.stats.lock() {
            Ok(mut s) => {
                s.losses.ring_full = kernel.ring_full;
                s.losses.call_table_full = kernel.call_table_full;
                s.losses
            }
            Err(_) => LossBreakdown::default(),
        };
        let now = Recorded {
            losses: user,
            unfinished: kernel.unfinished,
        };
        let rows = [
            (
                loss_source::RINGBUF,
                now.losses.ring_full,
                last.losses.ring_full,
            ),
            (
                loss_source::CALL_TABLE,
                now.losses.call_table_full,
                last.losses.call_table_full,
            ),
            (
                loss_source::UNDECODABLE,
                now.losses.undecodable,
                last.losses.undecodable,
            ),
            (
                loss_source::NOTICE_QUEUE,
                now.losses.notices_dropped,
                last.losses.notices_dropped,
            ),
            (
                loss_source::UNFINISHED_CALL,
                now.unfinished,
                last.unfinished,
            ),
        ];
        for (source, total, before) in rows {
            let lost = total.saturating_sub(before);
            if lost > 0 {
                self.send(WriterMsg::Loss {
                    ts_ns: ts,
                    source,
                    lost: lost as i64,
                });
            }
        }
        now
    }
}
