//! A static SVG picture of a time window of the trace: CPU use, page
//! allocation rate, the GPU's own SM utilisation (NVML, device and per
//! process) where the capture has it, and per process the CUDA calls and
//! off-CPU intervals of each GPU-driving thread, with the causal chains
//! shaded behind. It is what
//! an assistant shows when asked "what happened at +62 s" (the MCP tool
//! `get_timeline_chart`), and needs no script to display.

use crate::data::{GpuPeriodRow, OffCpuRow, RatePoint, ReportData, SpanRow};
use crate::html::escape_html;
use ingero_tools::chains::chains_of;
use ingero_tools::dataset::Dataset;
use ingero_tools::processes::per_process_of;
use serde::Deserialize;
use std::fmt::Write;

/// Smallest chart width, pixels.
pub const MIN_WIDTH: u32 = 300;
/// Largest chart width, pixels.
pub const MAX_WIDTH: u32 = 8000;
/// Smallest chart height, pixels.
pub const MIN_HEIGHT: u32 = 120;
/// Largest chart height, pixels.
pub const MAX_HEIGHT: u32 = 8000;

const LABEL_W: f64 = 170.0;
const AXIS_H: f64 = 40.0;
const GAP: f64 = 3.0;

/// A time range to draw, in seconds after the capture start (the origin of
/// chain offsets and of the report's timeline).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, schemars::JsonSchema)]
pub struct ChartWindow {
    /// First second shown.
    pub start_offset_s: f64,
    /// Last second shown.
    pub end_offset_s: f64,
}

/// Draws `ds` (its causal chains computed on the way) as an SVG document of
/// `width` x `height` pixels; `window` narrows the time range, `None` shows
/// the dataset's whole window. Sizes are clamped to [`MIN_WIDTH`]..[`MAX_WIDTH`]
/// and [`MIN_HEIGHT`]..[`MAX_HEIGHT`].
pub fn timeline_svg(ds: &Dataset, window: Option<ChartWindow>, width: u32, height: u32) -> String {
    let chains = chains_of(ds);
    let processes = per_process_of(ds);
    let data = ReportData::build(ds, &chains, &processes, "");
    report_svg(&data, window, width, height)
}

/// Draws already gathered report data; see [`timeline_svg`].
pub fn report_svg(
    data: &ReportData,
    window: Option<ChartWindow>,
    width: u32,
    height: u32,
) -> String {
    let w = width.clamp(MIN_WIDTH, MAX_WIDTH) as f64;
    let h = height.clamp(MIN_HEIGHT, MAX_HEIGHT) as f64;
    let full = (
        data.window.start_offset_s,
        data.window.start_offset_s + data.window.duration_s.max(1e-6),
    );
    let (t0, t1) = match window {
        Some(cw)
            if cw.start_offset_s.is_finite()
                && cw.end_offset_s.is_finite()
                && cw.end_offset_s > cw.start_offset_s =>
        {
            (cw.start_offset_s, cw.end_offset_s)
        }
        _ => full,
    };
    let plot = Plot {
        t0,
        t1,
        x0: LABEL_W,
        x1: w - 8.0,
    };
    let lanes = lanes_of(data);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">"
    );
    let _ = write!(out, "<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>");
    let title = format!(
        "{} +{:.3} s to +{:.3} s ({} CUDA spans, {} chains)",
        if data.capture.source.is_empty() {
            "trace"
        } else {
            data.capture.source.as_str()
        },
        t0,
        t1,
        data.span_count(),
        data.chains.len()
    );
    let _ = write!(
        out,
        "<text x=\"6\" y=\"14\" font-weight=\"bold\">{}</text>",
        escape_html(&title)
    );
    out.push_str("<defs><clipPath id=\"plot\">");
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{h}\"/></clipPath></defs>",
        plot.x0,
        plot.x1 - plot.x0
    );

    // Lay out lanes top-down, stopping where the picture ends.
    let mut y = AXIS_H;
    let mut shown = Vec::new();
    for lane in &lanes {
        if y + lane.height() > h - 14.0 {
            break;
        }
        shown.push((y, lane));
        y += lane.height() + GAP;
    }
    let hidden = lanes.len() - shown.len();
    axis(&mut out, &plot, y);

    out.push_str("<g clip-path=\"url(#plot)\">");
    let mut label_rows: Vec<f64> = Vec::new();
    for c in &data.chains {
        let a = plot.x(c.start_offset_s);
        let b = plot.x(c.end_offset_s).max(a + 2.0);
        if b < plot.x0 || a > plot.x1 {
            continue;
        }
        let _ = write!(
            out,
            "<rect class=\"chain\" x=\"{a:.2}\" y=\"{}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"#ffca28\" \
             fill-opacity=\"0.18\" stroke=\"#f9a825\" stroke-width=\"0.8\"><title>{}</title></rect>",
            AXIS_H - 6.0,
            b - a,
            y - AXIS_H + 6.0,
            escape_html(&format!("{} [{}] {}", c.id, c.severity.label(), c.summary))
        );
        // Stack labels in rows so neighbouring chains stay readable.
        let lx = a.max(plot.x0) + 2.0;
        let row = match label_rows.iter().position(|end| *end < lx) {
            Some(r) => r,
            None => {
                label_rows.push(0.0);
                label_rows.len() - 1
            }
        };
        label_rows[row] = lx + 6.5 * c.id.len() as f64 + 6.0;
        let _ = write!(
            out,
            "<text x=\"{lx:.2}\" y=\"{:.1}\" fill=\"#8d6e00\" font-size=\"10\" font-weight=\"bold\">{}</text>",
            AXIS_H + 2.0 + 10.0 * row as f64,
            escape_html(&c.id)
        );
    }
    for (y, lane) in &shown {
        lane.draw(&mut out, data, &plot, *y);
    }
    out.push_str("</g>");
    for (y, lane) in &shown {
        let (label, bold, indent) = lane.label();
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\"{}>{}</text>",
            if indent { 14 } else { 4 },
            y + lane.height() / 2.0 + 4.0,
            if bold { " font-weight=\"bold\"" } else { "" },
            escape_html(&label)
        );
    }
    if hidden > 0 {
        let _ = write!(
            out,
            "<text x=\"4\" y=\"{:.1}\" fill=\"#5f6b7a\">{hidden} more lanes: enlarge the chart to see them</text>",
            h - 4.0
        );
    }
    out.push_str("</svg>");
    out
}

/// Maps time to x.
struct Plot {
    t0: f64,
    t1: f64,
    x0: f64,
    x1: f64,
}

impl Plot {
    fn x(&self, t: f64) -> f64 {
        self.x0 + (t - self.t0) / (self.t1 - self.t0) * (self.x1 - self.x0)
    }
}

/// Time ticks and grid lines down to `bottom`.
fn axis(out: &mut String, plot: &Plot, bottom: f64) {
    let span = plot.t1 - plot.t0;
    let raw = span / 10.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let digits = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    let mut t = (plot.t0 / step).ceil() * step;
    let mut n = 0;
    while t <= plot.t1 + step * 1e-9 && n < 100 {
        let x = plot.x(t);
        let _ = write!(
            out,
            "<line x1=\"{x:.2}\" x2=\"{x:.2}\" y1=\"{}\" y2=\"{bottom:.1}\" stroke=\"#e3e7ec\"/>",
            AXIS_H - 14.0
        );
        if x < plot.x1 - 40.0 {
            let _ = write!(
                out,
                "<text x=\"{:.2}\" y=\"{}\" fill=\"#5f6b7a\" font-size=\"10\">+{t:.digits$} s</text>",
                x + 2.0,
                AXIS_H - 16.0
            );
        }
        t += step;
        n += 1;
    }
}

/// One horizontal lane of the chart.
enum Lane<'a> {
    Cpu,
    Rate(&'a str, &'a [RatePoint]),
    GpuSm(String, &'a [GpuPeriodRow], &'static str),
    GpuNone(&'a str),
    Group(String),
    Calls(i32, &'a [SpanRow]),
    OffCpu(i32, &'a [OffCpuRow]),
}

fn lanes_of(data: &ReportData) -> Vec<Lane<'_>> {
    let mut lanes = vec![
        Lane::Cpu,
        Lane::Rate("page allocs/s (all)", &data.page_alloc_total),
    ];
    if data.gpus.is_empty() {
        lanes.push(Lane::GpuNone(
            data.gpu_note.as_deref().unwrap_or("no NVML samples"),
        ));
    }
    for g in &data.gpus {
        lanes.push(Lane::GpuSm(
            format!("GPU {} SM % (NVML)", g.gpu),
            &g.sm,
            GPU_COLOR,
        ));
    }
    for p in &data.processes {
        lanes.push(Lane::Group(format!(
            "{} [{}]",
            if p.comm.is_empty() {
                "?"
            } else {
                p.comm.as_str()
            },
            p.pid
        )));
        for g in &data.gpus {
            if let Some(own) = g.processes.iter().find(|q| q.pid == p.pid) {
                lanes.push(Lane::GpuSm(
                    format!("GPU {} SM % (this pid)", g.gpu),
                    &own.sm,
                    PROCESS_GPU_COLOR,
                ));
            }
        }
        for t in &p.threads {
            lanes.push(Lane::Calls(t.tid, &t.calls));
            lanes.push(Lane::OffCpu(t.tid, &t.off_cpu));
        }
        if !p.page_alloc.is_empty() {
            lanes.push(Lane::Rate("page allocs/s", &p.page_alloc));
        }
    }
    lanes
}

impl Lane<'_> {
    fn height(&self) -> f64 {
        match self {
            Lane::Cpu => 36.0,
            Lane::Rate(..) => 22.0,
            Lane::GpuSm(..) => 30.0,
            Lane::GpuNone(_) => 16.0,
            Lane::Group(_) => 16.0,
            Lane::Calls(..) => 16.0,
            Lane::OffCpu(..) => 10.0,
        }
    }

    fn label(&self) -> (String, bool, bool) {
        match self {
            Lane::Cpu => ("CPU % (system)".into(), false, false),
            Lane::Rate(name, _) => ((*name).into(), false, true),
            Lane::GpuSm(name, ..) => (name.clone(), false, true),
            Lane::GpuNone(_) => ("GPU (NVML)".into(), false, false),
            Lane::Group(name) => (name.clone(), true, false),
            Lane::Calls(tid, _) => (format!("tid {tid} CUDA calls"), false, true),
            Lane::OffCpu(tid, _) => (format!("tid {tid} off-CPU"), false, true),
        }
    }

    fn draw(&self, out: &mut String, data: &ReportData, plot: &Plot, y: f64) {
        let h = self.height();
        match self {
            Lane::Cpu => {
                let mut d = String::new();
                for (i, p) in data.cpu.iter().enumerate() {
                    let py = y + h - p.1.clamp(0.0, 100.0) / 100.0 * h;
                    let _ = write!(
                        d,
                        "{}{:.2} {py:.2} ",
                        if i == 0 { 'M' } else { 'L' },
                        plot.x(p.0)
                    );
                }
                if !d.is_empty() {
                    let _ = write!(
                        out,
                        "<path d=\"{}\" fill=\"none\" stroke=\"#1565c0\" stroke-width=\"1.2\"/>",
                        d.trim_end()
                    );
                }
            }
            Lane::Rate(_, points) => {
                let max = points.iter().map(|p| p.per_s).fold(0.0, f64::max);
                if max <= 0.0 {
                    return;
                }
                for p in points.iter() {
                    let a = plot.x(p.t);
                    let b = plot.x(p.t + p.d);
                    let bh = (p.per_s / max * h).max(1.0);
                    let _ = write!(
                        out,
                        "<rect x=\"{a:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" fill=\"#8d6e63\" fill-opacity=\"0.75\"/>",
                        y + h - bh,
                        (b - a - 0.5).max(1.0)
                    );
                }
            }
            Lane::GpuSm(_, rows, color) => gpu_periods(out, plot, y, h, rows, color),
            Lane::GpuNone(text) => {
                let _ = write!(
                    out,
                    "<text class=\"gpu-none\" x=\"{:.1}\" y=\"{:.1}\" fill=\"#5f6b7a\">{}</text>",
                    plot.x0 + 6.0,
                    y + h / 2.0 + 4.0,
                    escape_html(text)
                );
            }
            Lane::Group(_) => {}
            Lane::Calls(_, rows) => {
                let items = rows.iter().map(|s| (s.0, s.1, class_color(data, s.2)));
                spans(out, plot, y + 1.0, h - 2.0, items, "span");
            }
            Lane::OffCpu(_, rows) => {
                let items = rows.iter().map(|s| (s.0, s.1, off_cpu_color(s.2)));
                spans(out, plot, y + 1.0, h - 2.0, items, "offcpu");
            }
        }
    }
}

const GPU_COLOR: &str = "#2e7d32";
const PROCESS_GPU_COLOR: &str = "#6a1b9a";

/// Draws SM % per sample period as bars from the lane's floor; periods
/// narrower than a pixel are merged, time-weighted.
fn gpu_periods(out: &mut String, plot: &Plot, y: f64, h: f64, rows: &[GpuPeriodRow], color: &str) {
    // (x0, x1, busy-seconds, seconds)
    let mut cur: Option<(f64, f64, f64, f64)> = None;
    let flush = |c: Option<(f64, f64, f64, f64)>, out: &mut String| {
        if let Some((a, b, busy, len)) = c {
            let pct = if len > 0.0 { busy / len } else { 0.0 };
            let bh = pct.clamp(0.0, 100.0) / 100.0 * h;
            let _ = write!(
                out,
                "<rect class=\"gpu-sm\" x=\"{a:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" fill=\"{color}\" fill-opacity=\"0.75\"/>",
                y + h - bh,
                (b - a).max(0.5)
            );
        }
    };
    for r in rows {
        let (a, b) = (plot.x(r.0), plot.x(r.1));
        if b < plot.x0 || a > plot.x1 {
            continue;
        }
        let len = r.1 - r.0;
        match cur.as_mut() {
            Some(c) if b - c.0 < 2.0 => {
                c.1 = b;
                c.2 += len * r.2;
                c.3 += len;
            }
            _ => {
                flush(cur.take(), out);
                cur = Some((a, b, len * r.2, len));
            }
        }
    }
    flush(cur, out);
}

/// Draws intervals, merging neighbours narrower than a pixel so dense lanes
/// stay small.
fn spans<'a>(
    out: &mut String,
    plot: &Plot,
    y: f64,
    h: f64,
    items: impl Iterator<Item = (f64, f64, &'a str)>,
    class: &str,
) {
    let mut cur: Option<(f64, f64, &str)> = None;
    let flush = |c: Option<(f64, f64, &str)>, out: &mut String| {
        if let Some((a, b, color)) = c {
            let _ = write!(
                out,
                "<rect class=\"{class}\" x=\"{a:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{h:.2}\" fill=\"{color}\"/>",
                (b - a).max(1.0)
            );
        }
    };
    for (t, d, color) in items {
        let a = plot.x(t);
        let b = plot.x(t + d);
        if b < plot.x0 || a > plot.x1 {
            continue;
        }
        match cur.as_mut() {
            Some(c) if a <= c.1 + 1.0 && (b - a < 2.0 || c.1 - c.0 < 2.0) => {
                c.1 = c.1.max(b);
            }
            _ => {
                flush(cur.take(), out);
                cur = Some((a, b, color));
            }
        }
    }
    flush(cur, out);
}

fn class_color(data: &ReportData, op: u32) -> &'static str {
    match data.ops.get(op as usize).map(|o| o.class.as_str()) {
        Some("launch") => "#1e88e5",
        Some("copy") => "#fb8c00",
        Some("sync") => "#e53935",
        Some("alloc") => "#8e24aa",
        Some("free") => "#78909c",
        _ => "#00897b",
    }
}

fn off_cpu_color(reason: i8) -> &'static str {
    match reason {
        1 => "#d32f2f",
        0 => "#90a4ae",
        _ => "#ffb300",
    }
}
