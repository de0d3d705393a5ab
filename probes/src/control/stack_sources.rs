//! How each kind of stack was sampled, written at the stop as the rows of
//! `stack_sources`, so a reader of the file knows what the stacks cover
//! and what they cost.

use super::Control;
use crate::writer::WriterMsg;
use ingero_store::StackKind;

impl Control {
    /// Writes how each stack kind was sampled (`stack_sources`), with what
    /// the samplers counted.
    pub(super) fn record_stack_sources(&self) {
        if self.stack_hz == 0 {
            return;
        }
        let s = self
            .shared
            .stacks
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let ms = |ns: u64| ns as f64 / 1e6;
        self.send(WriterMsg::StackSource {
            kind: StackKind::OnCpu,
            hz: i64::from(self.stack_hz),
            note: format!(
                "CPU-clock perf event on {} CPUs; {} samples, {} user stacks not walkable; \
                 {} frames named, {} left as addresses; symboliser CPU {:.1} ms",
                s.cpus,
                s.on_cpu,
                s.user_unwalked,
                s.frames_resolved,
                s.frames_unresolved,
                ms(s.symbolize_cpu_ns)
            ),
        });
        if self.offcpu_stacks {
            self.send(WriterMsg::StackSource {
                kind: StackKind::OffCpu,
                hz: 0,
                note: format!(
                    "every switch-out of a CUDA-calling thread; {} samples",
                    s.off_cpu
                ),
            });
        }
        if self.threads.live_pids.is_some() {
            let mut note = format!(
                "py-spy (non-blocking reads) on {} processes; {} samples, {} failed rounds; \
                 sampler CPU {:.1} ms",
                s.python_processes,
                s.python,
                s.python_errors,
                ms(s.python_cpu_ns)
            );
            if !s.python_note.is_empty() {
                note.push_str("; ");
                note.push_str(&s.python_note);
            }
            self.send(WriterMsg::StackSource {
                kind: StackKind::Python,
                hz: i64::from(self.stack_hz),
                note,
            });
        }
    }
}
