// ingero report renderer: reads the JSON embedded in the page and draws every
// section with plain DOM and SVG. No library, no network.
(function () {
  'use strict';

  const body = document.body;
  window.addEventListener('error', (e) => {
    body.setAttribute('data-error', String(e.message || e));
  });

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const CLASS_COLORS = {
    launch: '#1e88e5', copy: '#fb8c00', sync: '#e53935',
    alloc: '#8e24aa', free: '#78909c', other: '#00897b',
  };
  const OFF_CPU_COLORS = { '1': '#d32f2f', '0': '#90a4ae', '-1': '#ffb300' };
  const OFF_CPU_NAMES = { '1': 'preempted (runnable)', '0': 'blocked', '-1': 'off-CPU (reason unknown)' };
  const GPU_COLOR = '#2e7d32';
  const PROCESS_COLORS = ['#6a1b9a', '#00838f', '#ad1457', '#ef6c00', '#283593', '#558b2f'];
  function processColor(pid) { return PROCESS_COLORS[Math.abs(pid) % PROCESS_COLORS.length]; }
  const BUSY_SOURCE = {
    nvml_process: 'measured by NVML per-process samples',
    nvml_device: 'measured by NVML device samples',
    host_bound: 'not measured: host-side bound only (no GPU samples)',
  };
  const IDLE_PARTS = [
    ['busy', 'GPU busy', '#43a047'],
    ['before_first_call_ns', 'before first call', '#b0bec5'],
    ['in_launch_calls_ns', 'inside launch calls', '#1e88e5'],
    ['in_alloc_free_ns', 'inside alloc/free calls', '#8e24aa'],
    ['in_copies_ns', 'inside copies', '#fb8c00'],
    ['in_sync_ns', 'inside synchronisations', '#e53935'],
    ['in_other_cuda_ns', 'inside other CUDA calls', '#00897b'],
    ['between_calls_ns', 'between CUDA calls', '#80cbc4'],
    ['off_cpu_preempted_ns', 'off-CPU, preempted', '#d32f2f'],
    ['waiting_on_workers_ns', 'waiting on workers', '#f06292'],
    ['off_cpu_blocked_ns', 'off-CPU, blocked', '#90a4ae'],
    ['off_cpu_unknown_ns', 'off-CPU, reason unknown', '#ffb300'],
    ['page_alloc_storm_ns', 'page-allocation storm', '#6d4c41'],
    ['host_compute_ns', 'host compute (outside CUDA)', '#ffa726'],
    ['after_last_call_ns', 'after last call', '#cfd8dc'],
  ];

  // ---------- small helpers ----------
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    for (const c of children || []) if (c) e.appendChild(c);
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function tip(node, text) {
    node.appendChild(sv('title', {}, text));
    return node;
  }
  function fmtNs(ns) {
    if (ns === null || ns === undefined) return 'n/a';
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
    return Math.round(ns) + ' ns';
  }
  function fmtS(s) { return fmtNs(s * 1e9); }
  function fmtBytes(b) {
    const a = Math.abs(b);
    if (a >= 1073741824) return (b / 1073741824).toFixed(2) + ' GiB';
    if (a >= 1048576) return (b / 1048576).toFixed(1) + ' MiB';
    if (a >= 1024) return (b / 1024).toFixed(1) + ' KiB';
    return b + ' B';
  }
  function fmtCount(n) { return Math.round(n).toLocaleString('en-US'); }
  function fmtRate(r) {
    if (r >= 1e6) return (r / 1e6).toFixed(1) + 'M/s';
    if (r >= 1e3) return (r / 1e3).toFixed(1) + 'k/s';
    return r.toFixed(1) + '/s';
  }
  function fmtEvidence(v, unit) {
    switch (unit) {
      case 'ns': return fmtNs(v);
      case 'bytes': return fmtBytes(v);
      case 'bytes/s': return fmtBytes(v) + '/s';
      case 'percent': return v.toFixed(1) + '%';
      case 'ratio': return v.toFixed(2) + 'x';
      case 'count': return fmtCount(v);
      default: return String(v) + (unit ? ' ' + unit : '');
    }
  }
  function niceStep(span, target) {
    const raw = span / Math.max(1, target);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return m * mag;
    return 10 * mag;
  }

  const data = JSON.parse(document.getElementById('ingero-data').textContent);
  const app = document.getElementById('app');
  const ops = data.ops;
  let selectedChain = null;

  // ---------- header ----------
  function header() {
    const c = data.capture;
    const w = data.window;
    const parts = [c.source, (c.format.format === 'native' ? 'ingero' : 'Ingero ' + c.format.version) + ' database',
      fmtS(c.duration_s) + ' captured'];
    if (c.gpu_model) parts.push('GPU ' + c.gpu_model);
    if (c.cpu_cores) parts.push(c.cpu_cores + ' CPUs');
    app.appendChild(el('h1', { text: 'Why the GPU waited' }));
    app.appendChild(el('p', { class: 'meta', text: parts.join(' · ') }));
    app.appendChild(el('p', {
      class: 'meta',
      text: (w.whole_capture ? 'Whole capture' : 'Window +' + w.start_offset_s.toFixed(1) + ' s for ' + fmtS(w.duration_s)) +
        '. Times are seconds after the capture start. Made by ' + data.generator + '.',
    }));
    const top = data.chains[0];
    const v = el('div', { class: 'verdict' + (top ? '' : ' calm'), id: 'verdict' });
    if (top) {
      v.appendChild(el('strong', { text: '[' + top.severity + '] ' }));
      v.appendChild(document.createTextNode(top.root_cause));
    } else {
      v.textContent = data.notes[0] || 'No causal chain stands out in this window.';
    }
    app.appendChild(v);
  }

  // ---------- timeline ----------
  const T0 = data.window.start_offset_s;
  const T1 = data.window.start_offset_s + Math.max(data.window.duration_s, 1e-6);
  const view = { t0: T0, t1: T1 };
  const LABEL_W = 190;
  const AXIS_H = 24;
  let tl = null; // { svg, width, lanes }

  function buildLanes() {
    const lanes = [];
    lanes.push({ kind: 'cpu', label: 'CPU % (system)', h: 42 });
    lanes.push({ kind: 'rate', label: 'page allocs/s (all)', h: 30, points: data.page_alloc_total });
    // The GPU's own samples (NVML), on the same time axis as the host tracks.
    const gpus = data.gpus || [];
    if (!gpus.length) {
      lanes.push({ kind: 'gpunone', label: 'GPU (NVML)', h: 18, text: data.gpu_note || 'no NVML samples' });
    }
    for (const g of gpus) {
      const name = 'GPU ' + g.gpu + (g.name ? ' ' + g.name : '');
      lanes.push({
        kind: 'gpusm', label: 'GPU ' + g.gpu + ' SM % (NVML device)', h: 40, rows: g.sm, color: GPU_COLOR,
        what: name + ' SM busy (device)', overlay: g.processes,
      });
      if (g.mem_used.length) {
        lanes.push({ kind: 'gpumem', label: 'GPU ' + g.gpu + ' memory used', h: 24, points: g.mem_used, total: g.mem_total_bytes, what: name });
      }
    }
    for (const p of data.processes) {
      const pids = [p.pid];
      lanes.push({ kind: 'group', label: (p.comm || '?') + ' [' + p.pid + '] · ' + p.role.replace(/_/g, ' '), h: 20, pids });
      for (const g of gpus) {
        const own = g.processes.find((q) => q.pid === p.pid);
        if (own) {
          lanes.push({
            kind: 'gpusm', label: 'GPU ' + g.gpu + ' SM % (NVML, pid)', h: 26, rows: own.sm,
            color: processColor(own.pid), what: 'pid ' + own.pid + ' SM busy on GPU ' + g.gpu, pids,
          });
        }
      }
      const idle = data.gpu_idle.find((g) => g.pid === p.pid);
      if (idle && idle.longest_gaps.length) {
        lanes.push({ kind: 'gaps', label: 'GPU idle gaps', h: 10, gaps: idle.longest_gaps, pids });
      }
      for (const t of p.threads) {
        lanes.push({ kind: 'calls', label: 'tid ' + t.tid + ' CUDA calls', h: 20, rows: t.calls, pids });
        lanes.push({ kind: 'offcpu', label: 'tid ' + t.tid + ' off-CPU', h: 12, rows: t.off_cpu, pids });
      }
      if (p.page_alloc.length) {
        lanes.push({ kind: 'rate', label: 'page allocs/s', h: 22, points: p.page_alloc, pids });
      }
    }
    let y = AXIS_H + 4;
    for (const l of lanes) { l.y = y; y += l.h + 4; }
    return { lanes, height: y + 6 };
  }

  function timelineSection() {
    app.appendChild(el('h2', { text: 'Timeline' }));
    const reset = el('button', { type: 'button', id: 'reset-zoom', text: 'Whole window' });
    reset.addEventListener('click', () => { view.t0 = T0; view.t1 = T1; drawTimeline(); });
    const legend = el('span', { class: 'legend' });
    for (const [k, c] of Object.entries(CLASS_COLORS)) {
      legend.appendChild(el('span', {}, [el('i', { style: 'background:' + c }), document.createTextNode(k)]));
    }
    for (const k of ['1', '0', '-1']) {
      legend.appendChild(el('span', {}, [el('i', { style: 'background:' + OFF_CPU_COLORS[k] }), document.createTextNode(OFF_CPU_NAMES[k])]));
    }
    legend.appendChild(el('span', {}, [el('i', { style: 'background:' + GPU_COLOR }), document.createTextNode('GPU SM % (NVML)')]));
    legend.appendChild(el('span', {}, [el('i', { style: 'background:#ffca28;opacity:.6' }), document.createTextNode('causal chain')]));
    app.appendChild(el('div', { class: 'toolbar' }, [reset, el('span', { text: 'wheel: zoom · drag: pan · click a chain to focus it' }), legend]));
    const holder = el('div', { id: 'timeline' });
    app.appendChild(holder);
    const layout = buildLanes();
    const width = Math.max(800, holder.clientWidth || 1200);
    const svg = sv('svg', { width, height: layout.height, viewBox: '0 0 ' + width + ' ' + layout.height, id: 'timeline-svg' });
    holder.appendChild(svg);
    tl = { svg, width, lanes: layout.lanes, height: layout.height };
    installZoom(svg);
    drawTimeline();
  }

  function xOf(t) {
    return LABEL_W + (t - view.t0) / (view.t1 - view.t0) * (tl.width - LABEL_W - 8);
  }
  function tOf(x) {
    return view.t0 + (x - LABEL_W) / (tl.width - LABEL_W - 8) * (view.t1 - view.t0);
  }

  function drawTimeline() {
    const svg = tl.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const right = tl.width - 8;
    const clip = sv('clipPath', { id: 'plot-clip' });
    clip.appendChild(sv('rect', { x: LABEL_W, y: 0, width: right - LABEL_W, height: tl.height }));
    const defs = sv('defs');
    defs.appendChild(clip);
    svg.appendChild(defs);

    // axis
    const axis = sv('g', { class: 'axis' });
    const step = niceStep(view.t1 - view.t0, 10);
    const digits = Math.max(0, -Math.floor(Math.log10(step)));
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1 + 1e-12; t += step) {
      const x = xOf(t);
      axis.appendChild(sv('line', { x1: x, x2: x, y1: AXIS_H - 6, y2: tl.height }));
      axis.appendChild(sv('text', { x: x + 2, y: AXIS_H - 10 }, '+' + t.toFixed(Math.min(digits, 6)) + ' s'));
    }
    svg.appendChild(axis);

    const plot = sv('g', { 'clip-path': 'url(#plot-clip)' });
    svg.appendChild(plot);
    const labels = sv('g');
    svg.appendChild(labels);

    // chain bands behind the lanes
    let bands = 0;
    const involved = new Set();
    const rowsEnd = [];
    data.chains.forEach((c, i) => {
      const x0 = xOf(c.start_offset_s);
      const x1 = Math.max(xOf(c.end_offset_s), x0 + 2);
      if (x1 < LABEL_W || x0 > right) return;
      const sel = selectedChain === i;
      const band = sv('rect', {
        class: 'band' + (sel ? ' selected' : ''), x: x0, y: AXIS_H - 4, width: x1 - x0, height: tl.height - AXIS_H,
        'data-chain': c.id,
      });
      tip(band, c.id + ' [' + c.severity + '] ' + c.summary);
      band.addEventListener('click', () => selectChain(i, false));
      plot.appendChild(band);
      // Stack labels in rows so neighbouring chains do not overwrite each other.
      const lx = Math.max(x0, LABEL_W) + 2;
      let row = rowsEnd.findIndex((end) => end < lx);
      if (row < 0) { row = rowsEnd.length; rowsEnd.push(0); }
      rowsEnd[row] = lx + 7 * c.id.length + 6;
      plot.appendChild(sv('text', { class: 'band-label', x: lx, y: AXIS_H + 6 + 11 * row }, c.id));
      bands++;
      if (sel) {
        if (c.victim_pid) involved.add(c.victim_pid);
        for (const p of c.culprit_pids) involved.add(p);
      }
    });

    let spans = 0;
    let offcpu = 0;
    let gpuLanes = 0;
    let gpuPeriods = 0;
    for (const lane of tl.lanes) {
      const hot = lane.pids && lane.pids.some((p) => involved.has(p));
      labels.appendChild(sv('text', {
        class: 'lane-label' + (lane.kind === 'group' ? ' group' : '') + (hot ? ' involved' : ''),
        x: lane.kind === 'group' ? 6 : 16, y: lane.y + lane.h / 2 + 4,
      }, lane.label));
      if (lane.kind !== 'group') {
        plot.appendChild(sv('line', { x1: LABEL_W, x2: right, y1: lane.y + lane.h, y2: lane.y + lane.h, stroke: '#eef1f4' }));
      }
      if (lane.kind === 'cpu') drawCpu(plot, lane);
      else if (lane.kind === 'rate') drawRate(plot, lane);
      else if (lane.kind === 'gaps') drawGaps(plot, lane);
      else if (lane.kind === 'calls') spans += drawSpans(plot, lane, right, true);
      else if (lane.kind === 'offcpu') offcpu += drawSpans(plot, lane, right, false);
      else if (lane.kind === 'gpusm') { gpuLanes++; gpuPeriods += drawGpuSm(plot, lane, right); }
      else if (lane.kind === 'gpumem') { gpuLanes++; drawGpuMem(plot, lane); }
      else if (lane.kind === 'gpunone') {
        plot.appendChild(sv('text', { x: LABEL_W + 6, y: lane.y + lane.h / 2 + 4, class: 'lane-label gpu-none' }, lane.text));
      }
    }
    body.setAttribute('data-gpu-lanes', String(gpuLanes));
    body.setAttribute('data-gpu-periods', String(gpuPeriods));
    body.setAttribute('data-spans', String(spans));
    body.setAttribute('data-offcpu', String(offcpu));
    body.setAttribute('data-chain-bands', String(bands));
    body.setAttribute('data-lanes', String(tl.lanes.length));
    body.setAttribute('data-view', view.t0.toFixed(6) + ',' + view.t1.toFixed(6));
  }

  function drawCpu(g, lane) {
    const pts = data.cpu.filter((p) => p[0] >= view.t0 - 60 && p[0] <= view.t1 + 60);
    if (!pts.length) {
      g.appendChild(sv('text', { x: LABEL_W + 6, y: lane.y + lane.h / 2 + 4, class: 'lane-label' }, 'no CPU samples'));
      return;
    }
    const y = (v) => lane.y + lane.h - (Math.min(100, Math.max(0, v)) / 100) * lane.h;
    const d = pts.map((p, i) => (i ? 'L' : 'M') + xOf(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1)).join(' ');
    g.appendChild(sv('path', { d: d + ' L' + xOf(pts[pts.length - 1][0]).toFixed(1) + ' ' + (lane.y + lane.h) + ' L' + xOf(pts[0][0]).toFixed(1) + ' ' + (lane.y + lane.h) + ' Z', fill: '#90caf9', 'fill-opacity': 0.35 }));
    g.appendChild(sv('path', { d, fill: 'none', stroke: '#1565c0', 'stroke-width': 1.2 }));
    g.appendChild(sv('line', { x1: LABEL_W, x2: tl.width - 8, y1: y(90), y2: y(90), stroke: '#e57373', 'stroke-dasharray': '3 3' }));
    for (const p of pts) {
      const c = sv('circle', { cx: xOf(p[0]), cy: y(p[1]), r: 2, fill: '#1565c0' });
      tip(c, '+' + p[0].toFixed(1) + ' s: CPU ' + p[1].toFixed(1) + '%');
      g.appendChild(c);
    }
  }

  function drawRate(g, lane) {
    const pts = lane.points || [];
    const max = pts.reduce((m, p) => Math.max(m, p.per_s), 0);
    if (!pts.length || max <= 0) {
      g.appendChild(sv('text', { x: LABEL_W + 6, y: lane.y + lane.h / 2 + 4, class: 'lane-label' }, 'none'));
      return;
    }
    for (const p of pts) {
      const x0 = xOf(p.t);
      const x1 = xOf(p.t + p.d);
      const h = Math.max(1, p.per_s / max * lane.h);
      const r = sv('rect', { x: x0, y: lane.y + lane.h - h, width: Math.max(1, x1 - x0 - 0.5), height: h, fill: '#8d6e63', 'fill-opacity': 0.75 });
      tip(r, '+' + p.t.toFixed(1) + ' s for ' + fmtS(p.d) + ': ' + fmtRate(p.per_s) + ' page allocations, ' + fmtBytes(p.bytes_per_s) + '/s');
      g.appendChild(r);
    }
  }

  // Draws SM % per sample period as a filled step area; periods narrower
  // than a pixel are merged (time-weighted). Returns periods in view.
  function drawGpuSm(g, lane, right) {
    const y = (v) => lane.y + lane.h - (Math.min(100, Math.max(0, v)) / 100) * lane.h;
    let count = 0;
    let cur = null;
    const flush = () => {
      if (!cur) return;
      const v = cur.len > 0 ? cur.busy / cur.len : 0;
      const h = Math.max(0, lane.y + lane.h - y(v));
      const r = sv('rect', {
        x: cur.x0.toFixed(2), y: (lane.y + lane.h - h).toFixed(2), width: Math.max(0.5, cur.x1 - cur.x0).toFixed(2),
        height: h.toFixed(2), fill: lane.color, 'fill-opacity': 0.7, class: 'gpu-sm',
      });
      tip(r, lane.what + ' ' + v.toFixed(1) + '% from +' + cur.t0.toFixed(3) + ' s to +' + cur.t1.toFixed(3) + ' s' +
        (cur.n > 1 ? ' (' + cur.n + ' samples)' : ''));
      g.appendChild(r);
      cur = null;
    };
    for (const p of lane.rows) {
      const x0 = xOf(p[0]);
      const x1 = xOf(p[1]);
      if (x1 < LABEL_W || x0 > right) continue;
      count++;
      if (cur && x1 - cur.x0 < 2) {
        cur.x1 = x1; cur.t1 = p[1]; cur.busy += (p[1] - p[0]) * p[2]; cur.len += p[1] - p[0]; cur.n++;
        continue;
      }
      flush();
      cur = { x0, x1, t0: p[0], t1: p[1], busy: (p[1] - p[0]) * p[2], len: p[1] - p[0], n: 1 };
    }
    flush();
    // Per-process SM % over the device area, one line per process.
    for (const proc of lane.overlay || []) {
      const pts = [];
      for (const p of proc.sm) {
        if (xOf(p[1]) < LABEL_W || xOf(p[0]) > right) continue;
        pts.push(xOf(p[0]).toFixed(1) + ' ' + y(p[2]).toFixed(1), xOf(p[1]).toFixed(1) + ' ' + y(p[2]).toFixed(1));
      }
      if (!pts.length) continue;
      const path = sv('path', { d: 'M' + pts.join(' L'), fill: 'none', stroke: processColor(proc.pid), 'stroke-width': 1.2, class: 'gpu-proc' });
      tip(path, 'pid ' + proc.pid + (proc.comm ? ' ' + proc.comm : '') + ' SM % (NVML per-process samples)');
      g.appendChild(path);
    }
    return count;
  }

  function drawGpuMem(g, lane) {
    const pts = lane.points;
    const max = lane.total > 0 ? lane.total : pts.reduce((m, p) => Math.max(m, p[1]), 1);
    const y = (v) => lane.y + lane.h - Math.min(1, v / max) * lane.h;
    const d = pts.map((p, i) => (i ? 'L' : 'M') + xOf(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1)).join(' ');
    const path = sv('path', { d, fill: 'none', stroke: '#5d4037', 'stroke-width': 1.2, class: 'gpu-mem' });
    const peak = pts.reduce((m, p) => Math.max(m, p[1]), 0);
    tip(path, lane.what + ' memory used, peak ' + fmtBytes(peak) + (lane.total > 0 ? ' of ' + fmtBytes(lane.total) : ''));
    g.appendChild(path);
  }

  function drawGaps(g, lane) {
    for (const gap of lane.gaps) {
      const x0 = xOf(gap.start_offset_s);
      const x1 = xOf(gap.start_offset_s + gap.dur_ns / 1e9);
      const r = sv('rect', { x: x0, y: lane.y + 2, width: Math.max(1, x1 - x0), height: lane.h - 4, fill: '#bdbdbd' });
      tip(r, 'GPU idle ' + fmtNs(gap.dur_ns) + ' from +' + gap.start_offset_s.toFixed(2) + ' s');
      g.appendChild(r);
    }
  }

  // Draws spans; spans narrower than a pixel that touch are merged into one
  // rectangle so a million calls still draw quickly. Returns spans in view.
  function drawSpans(g, lane, right, isCall) {
    let count = 0;
    let cur = null;
    const flush = () => {
      if (!cur) return;
      const fill = isCall ? CLASS_COLORS[ops[cur.op] ? ops[cur.op].class : 'other'] : OFF_CPU_COLORS[String(cur.op)];
      const r = sv('rect', {
        x: cur.x0.toFixed(2), y: lane.y + (isCall ? 1 : 2), width: Math.max(1, cur.x1 - cur.x0).toFixed(2),
        height: lane.h - (isCall ? 2 : 4), fill, class: isCall ? 'span' : 'offcpu',
      });
      if (cur.n === 1) {
        const s = cur.first;
        tip(r, isCall
          ? (ops[s[2]] ? ops[s[2]].name : 'op') + ' ' + fmtS(s[1]) + ' at +' + s[0].toFixed(6) + ' s' + (s[3] ? ', ' + fmtBytes(s[3]) : '')
          : OFF_CPU_NAMES[String(s[2])] + ' ' + fmtS(s[1]) + ' at +' + s[0].toFixed(6) + ' s');
      } else {
        tip(r, cur.n + (isCall ? ' CUDA calls' : ' off-CPU intervals') + ', longest ' + fmtS(cur.longest));
      }
      g.appendChild(r);
      cur = null;
    };
    for (const s of lane.rows) {
      const x0 = xOf(s[0]);
      const x1 = xOf(s[0] + s[1]);
      if (x1 < LABEL_W || x0 > right) continue;
      count++;
      const cls = s[2];
      if (cur && x0 <= cur.x1 + 1 && (x1 - x0 < 2 || cur.x1 - cur.x0 < 2)) {
        cur.x1 = Math.max(cur.x1, x1);
        cur.n++;
        if (s[1] > cur.longest) { cur.longest = s[1]; cur.op = cls; }
        continue;
      }
      flush();
      cur = { x0, x1, n: 1, first: s, longest: s[1], op: cls };
    }
    flush();
    return count;
  }

  function installZoom(svg) {
    svg.addEventListener('wheel', (e) => {
      e.preventDefault();
      const rect = svg.getBoundingClientRect();
      const x = e.clientX - rect.left;
      if (x < LABEL_W) return;
      const t = tOf(x);
      const k = e.deltaY > 0 ? 1.25 : 0.8;
      zoomTo(t - (t - view.t0) * k, t + (view.t1 - t) * k);
    }, { passive: false });
    let drag = null;
    svg.addEventListener('mousedown', (e) => {
      drag = { x: e.clientX, t0: view.t0, t1: view.t1 };
      svg.classList.add('dragging');
    });
    window.addEventListener('mouseup', () => { drag = null; svg.classList.remove('dragging'); });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const dt = (e.clientX - drag.x) / (tl.width - LABEL_W - 8) * (drag.t1 - drag.t0);
      zoomTo(drag.t0 - dt, drag.t1 - dt);
    });
  }

  function zoomTo(a, b) {
    const span = Math.min(Math.max(b - a, 1e-6), T1 - T0);
    let t0 = a;
    if (t0 < T0) t0 = T0;
    if (t0 + span > T1) t0 = T1 - span;
    view.t0 = t0;
    view.t1 = t0 + span;
    drawTimeline();
  }

  // ---------- chains ----------
  function selectChain(i, zoom) {
    selectedChain = selectedChain === i && !zoom ? null : i;
    document.querySelectorAll('.chain').forEach((n, j) => n.classList.toggle('selected', j === selectedChain));
    body.setAttribute('data-selected-chain', selectedChain === null ? '' : data.chains[selectedChain].id);
    if (zoom && selectedChain !== null) {
      const c = data.chains[i];
      const pad = Math.max((c.end_offset_s - c.start_offset_s) * 0.1, 0.05);
      zoomTo(c.start_offset_s - pad, c.end_offset_s + pad);
    } else {
      drawTimeline();
    }
  }

  function chainsSection() {
    app.appendChild(el('h2', { text: 'Causal chains' }));
    const list = el('div', { class: 'chains', id: 'chains' });
    if (!data.chains.length) list.appendChild(el('p', { class: 'empty', text: 'No causal chain in this window.' }));
    data.chains.forEach((c, i) => {
      const card = el('div', { class: 'chain', 'data-chain': c.id });
      card.appendChild(el('h3', {}, [el('span', { class: 'sev ' + c.severity, text: c.severity }), document.createTextNode(c.summary)]));
      card.appendChild(el('div', {
        class: 'when',
        text: c.id + ' · ' + c.cause.replace(/_/g, ' ') + ' · score ' + c.score + ' · +' + c.start_offset_s.toFixed(1) + ' s to +' + c.end_offset_s.toFixed(1) + ' s' +
          (c.victim_pid ? ' · victim ' + c.victim_pid : '') + (c.culprit_pids.length ? ' · culprits ' + c.culprit_pids.join(', ') : ''),
      }));
      const steps = el('ul', { class: 'steps' });
      for (const s of c.steps) steps.appendChild(el('li', {}, [el('span', { class: 'layer', text: s.layer }), document.createTextNode(s.detail)]));
      card.appendChild(steps);
      card.appendChild(el('p', { text: c.root_cause }));
      if (c.evidence.length) {
        const t = el('table', { class: 'evidence' }, [el('tr', {}, [el('th', { class: 'l', text: 'evidence' }), el('th', { text: 'value' }), el('th', { class: 'l', text: 'from' })])]);
        for (const ev of c.evidence) {
          t.appendChild(el('tr', {}, [el('td', { class: 'l', text: ev.label }), el('td', { text: fmtEvidence(ev.value, ev.unit) }), el('td', { class: 'l', text: ev.source })]));
        }
        card.appendChild(t);
      }
      card.appendChild(el('p', { class: 'fix', text: 'Fix: ' + c.fix }));
      card.addEventListener('click', () => {
        selectChain(i, true);
        const holder = document.getElementById('timeline');
        if (holder && holder.scrollIntoView) holder.scrollIntoView({ block: 'nearest' });
      });
      list.appendChild(card);
    });
    app.appendChild(list);
    body.setAttribute('data-chains', String(data.chains.length));
  }

  // ---------- GPU idle ----------
  // The busy figure and where it comes from, in words.
  function busySourceText(p) {
    const share = (p.busy_ns / Math.max(1, p.span_ns) * 100).toFixed(1) + '%';
    let s = 'GPU busy ' + (p.busy_is_upper_bound ? 'at most ' : '') + share + ' (' + fmtNs(p.busy_ns) + ' of ' + fmtNs(p.span_ns) + '), ' +
      (BUSY_SOURCE[p.busy_source] || p.busy_source);
    if (p.busy_source === 'nvml_process' || p.busy_source === 'nvml_device') {
      s += ' of GPU ' + p.gpu;
      if (p.sampled_ns < p.span_ns) s += ', covering ' + fmtNs(p.sampled_ns) + ' of the lifetime (the rest a host-side bound)';
      if (p.others_on_gpu.length) s += '; the device samples also count pids ' + p.others_on_gpu.join(', ');
      s += '; the host-side bound alone would say at most ' + (p.host_bound_busy_ns / Math.max(1, p.span_ns) * 100).toFixed(1) + '%';
    } else {
      s += ', so the idle share is a lower bound';
    }
    return s + '.';
  }

  function idleSection() {
    app.appendChild(el('h2', { text: 'GPU idle breakdown' }));
    if (!data.gpu_idle.length) {
      app.appendChild(el('p', { class: 'empty', text: 'No GPU-driving process in this window.' }));
      return;
    }
    for (const p of data.gpu_idle) {
      const box = el('div', { class: 'idle', 'data-pid': String(p.pid), 'data-busy-source': p.busy_source });
      box.appendChild(el('h3', {
        text: (p.comm || '?') + ' [' + p.pid + '], GPU thread ' + p.gpu_thread + ': GPU idle ' + (p.busy_is_upper_bound ? 'at least ' : '') +
          (p.idle_share * 100).toFixed(1) + '% of ' + fmtNs(p.span_ns),
      }));
      box.appendChild(el('p', { class: 'busy-source', text: busySourceText(p) }));
      const stack = el('div', { class: 'stack' });
      const legend = el('div', { class: 'legend' });
      const total = Math.max(1, p.span_ns);
      let drawn = 0;
      for (const [key, label, color] of IDLE_PARTS) {
        const v = key === 'busy' ? p.busy_ns : p.causes[key];
        const name = key !== 'busy' ? label : (p.busy_is_upper_bound ? 'GPU busy at most (host-side bound)' : 'GPU busy (NVML)');
        if (!v) continue;
        drawn += v;
        const part = el('div', { style: 'width:' + (v / total * 100).toFixed(3) + '%;background:' + color, title: name + ': ' + fmtNs(v) });
        stack.appendChild(part);
        legend.appendChild(el('span', {}, [el('i', { style: 'background:' + color }), document.createTextNode(name + ' ' + fmtNs(v) + ' (' + (v / total * 100).toFixed(1) + '%)')]));
      }
      // The parts are shares of the lifetime: busy plus every idle part.
      stack.setAttribute('data-stack-ns', String(drawn));
      box.appendChild(stack);
      box.appendChild(legend);
      const facts = [
        p.long_gaps + ' gaps >= 500 ms (' + fmtNs(p.long_gaps_ns) + ')',
        p.launches.launches + ' launches (' + p.launches.launches_per_s.toFixed(1) + '/s)',
        p.sync.syncs + ' syncs',
        p.utilization.low_chunks + '/' + p.utilization.chunks + ' chunks under 50% busy',
      ];
      if (p.step_period_ns) facts.push('step period ' + fmtNs(p.step_period_ns));
      box.appendChild(el('p', { class: 'meta', text: facts.join(' · ') }));
      const rules = el('ul', { class: 'rules' });
      for (const r of p.rules) rules.appendChild(el('li', { class: r.triggered ? 'on' : 'off', text: (r.triggered ? '✖ ' : '✓ ') + (r.title || r.rule) + ': ' + r.detail }));
      box.appendChild(rules);
      app.appendChild(box);
    }
  }

  // ---------- per-process table ----------
  function processSection() {
    app.appendChild(el('h2', { text: 'Per process' }));
    const cols = [['pid', 0], ['ppid', 0], ['comm', 1], ['role', 1], ['CUDA calls', 0], ['CUDA time', 0], ['switches', 0],
      ['off-CPU', 0], ['max off-CPU', 0], ['page allocs', 0], ['page bytes', 0], ['forks', 0]];
    const t = el('table', { id: 'process-table' }, [el('tr', {}, cols.map(([n, l]) => el('th', { class: l ? 'l' : '', text: n })))]);
    for (const r of data.process_table) {
      // Off-CPU time of the GPU thread where the table gives it per thread.
      const offCpu = r.gpu_thread ? r.gpu_thread.off_cpu_ns : r.off_cpu_total_ns;
      const offMax = r.gpu_thread ? r.gpu_thread.off_cpu_max_ns : r.off_cpu_max_ns;
      const cells = [r.pid, r.ppid || '', r.comm, r.role.replace(/_/g, ' '), fmtCount(r.cuda_calls), fmtNs(r.cuda_time_ns), fmtCount(r.context_switches),
        fmtNs(offCpu), fmtNs(offMax), fmtCount(r.page_allocs), fmtBytes(r.page_alloc_bytes), fmtCount(r.forks)];
      t.appendChild(el('tr', { title: r.role_reason }, cells.map((v, i) => el('td', { class: cols[i][1] ? 'l' : '', text: String(v) }))));
    }
    app.appendChild(t);
    body.setAttribute('data-process-rows', String(data.process_table.length));
  }

  // ---------- histograms ----------
  function histogramSection() {
    app.appendChild(el('h2', { text: 'CUDA op latency (raw calls, log-scale buckets)' }));
    const grid = el('div', { class: 'hists', id: 'histograms' });
    if (!data.histograms.length) grid.appendChild(el('p', { class: 'empty', text: 'No raw CUDA calls in this window.' }));
    for (const h of data.histograms) {
      const box = el('div', { class: 'hist', 'data-op': h.op });
      box.appendChild(el('h3', { text: h.op }));
      const basis = h.samples < h.total_calls ? h.samples + ' raw of ' + fmtCount(h.total_calls) + ' calls' : h.samples + ' calls';
      box.appendChild(el('div', { class: 'sub', text: h.class + ' · ' + basis + ' · p50 ' + fmtNs(h.p50_ns) + ' · p99 ' + fmtNs(h.p99_ns) + ' · max ' + fmtNs(h.max_ns) }));
      const W = 320;
      const H = 110;
      const pad = 18;
      const svg = sv('svg', { width: W, height: H + pad, viewBox: '0 0 ' + W + ' ' + (H + pad) });
      const n = h.buckets.length;
      const bw = (W - 10) / Math.max(n, 1);
      const max = h.buckets.reduce((m, b) => Math.max(m, b.count), 1);
      h.buckets.forEach((b, i) => {
        const bh = b.count ? Math.max(2, b.count / max * (H - 14)) : 0;
        const r = sv('rect', { x: 5 + i * bw + 1, y: H - bh, width: Math.max(1, bw - 2), height: bh, fill: CLASS_COLORS[h.class] || CLASS_COLORS.other, class: 'bar' });
        tip(r, fmtNs(b.lo_ns) + ' to ' + fmtNs(b.hi_ns) + ': ' + b.count + ' calls');
        svg.appendChild(r);
        if (b.count) svg.appendChild(sv('text', { x: 5 + i * bw + bw / 2, y: H - bh - 2, 'text-anchor': 'middle' }, String(b.count)));
        const every = Math.max(1, Math.ceil(n / 6));
        if (i % every === 0) svg.appendChild(sv('text', { x: 5 + i * bw, y: H + 12 }, fmtNs(b.lo_ns)));
      });
      svg.appendChild(sv('line', { x1: 5, x2: W - 5, y1: H, y2: H, stroke: '#9e9e9e' }));
      box.appendChild(svg);
      grid.appendChild(box);
    }
    app.appendChild(grid);
    body.setAttribute('data-histograms', String(data.histograms.length));
  }

  function notesSection() {
    if (!data.notes.length) return;
    app.appendChild(el('h2', { text: 'Notes' }));
    app.appendChild(el('ul', { class: 'notes' }, data.notes.map((n) => el('li', { text: n }))));
  }

  header();
  // A comparison with a baseline run is static HTML before #app (readable
  // without this script); it belongs under the header.
  const comparison = document.getElementById('comparison');
  if (comparison) {
    app.appendChild(comparison);
    body.setAttribute('data-comparison', comparison.getAttribute('data-outcome') || '');
  }
  timelineSection();
  chainsSection();
  idleSection();
  processSection();
  histogramSection();
  notesSection();
  // Deep link: report.html#chain=chain-2 opens focused on that chain.
  const link = /chain=([\w-]+)/.exec(window.location.hash || '');
  if (link) {
    const i = data.chains.findIndex((c) => c.id === link[1]);
    if (i >= 0) selectChain(i, true);
  }
  body.setAttribute('data-rendered', 'true');
})();
