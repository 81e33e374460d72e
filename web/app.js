// The gcpstream dashboard: polls the job's REST API (docs/dashboard.md) once per refresh
// interval and redraws. Text from the job (names, exception messages) is only ever inserted
// as text, never as markup.
'use strict';

const state = { jid: null, interval: 1000, cy: null, graphKey: '', throughput: null, durations: null };

async function getJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  if (!response.ok) throw new Error(path + ' answered ' + response.status);
  return response.json();
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text === null || text === undefined ? '' : String(text);
  if (className) td.className = className;
  return td;
}

function fillTable(id, rows) {
  const body = document.querySelector('#' + id + ' tbody');
  const fresh = document.createElement('tbody');
  for (const cells of rows) {
    const tr = document.createElement('tr');
    for (const c of cells) tr.appendChild(c instanceof Node ? c : cell(c));
    fresh.appendChild(tr);
  }
  body.replaceWith(fresh);
}

const percent = (r) => (100 * r).toFixed(0) + ' %';
const rate = (r) => r >= 100 ? r.toFixed(0) : r.toFixed(1);
const time = (ms) => ms > 0 ? new Date(ms).toISOString().replace('T', ' ').replace('Z', '') : '';
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}
function watermark(w) {
  if (w === null || w === undefined) return 'none yet';
  if (w >= 9.2e18) return 'end of input';
  return time(w);
}
const levelColor = { ok: '#2e8b57', low: '#e0962d', high: '#c93c3c' };

function renderHeader(job) {
  document.getElementById('job-name').textContent = job.name;
  const badge = document.getElementById('job-state');
  badge.textContent = job.state;
  badge.className = 'badge ' + job.state;
  document.body.dataset.state = job.state;
  document.title = job.name + ' — ' + job.state;
  const facts = [['id', job.jid], ['started', time(job['start-time'])],
                 ['running for', Math.round(job.duration / 1000) + ' s'],
                 ['restarts', job.restarts], ['parallelism', job.parallelism]];
  const dl = document.createElement('dl');
  dl.id = 'job-facts';
  for (const [k, v] of facts) {
    const div = document.createElement('div');
    const dt = document.createElement('dt'); dt.textContent = k;
    const dd = document.createElement('dd'); dd.textContent = String(v);
    div.append(dt, dd);
    dl.appendChild(div);
  }
  document.getElementById('job-facts').replaceWith(dl);
}

function renderGraph(job) {
  const nodes = job.plan.nodes;
  const key = JSON.stringify(nodes.map((n) => [n.id, n.description, n.parallelism, n.inputs]));
  if (!state.cy || key !== state.graphKey) {
    const elements = [];
    for (const n of nodes) {
      elements.push({ data: { id: 'v' + n.id, label: n.description } });
      for (const input of n.inputs) {
        elements.push({ data: { id: 'e' + input.id + '-' + n.id, source: 'v' + input.id, target: 'v' + n.id,
                                label: input.ship_strategy } });
      }
    }
    if (state.cy) state.cy.destroy();
    state.cy = cytoscape({
      container: document.getElementById('graph'),
      elements,
      userZoomingEnabled: false,
      maxZoom: 1.2,
      style: [
        { selector: 'node', style: { shape: 'round-rectangle', 'background-color': '#2e8b57', label: 'data(label)',
                                     color: '#fff', 'text-valign': 'center', 'text-halign': 'center',
                                     'text-wrap': 'wrap', 'text-max-width': 260, 'font-size': 12,
                                     width: 280, height: 64, padding: 6 } },
        { selector: 'edge', style: { width: 2, 'line-color': '#99a', 'target-arrow-color': '#99a',
                                     'target-arrow-shape': 'triangle', 'curve-style': 'bezier',
                                     label: 'data(label)', 'font-size': 10, 'text-background-color': '#fff',
                                     'text-background-opacity': 1 } },
      ],
      layout: { name: 'dagre', rankDir: 'LR', nodeSep: 30, rankSep: 80 },
    });
    state.graphKey = key;
  }
  for (const v of job.vertices) {
    const node = state.cy.getElementById('v' + v.id);
    if (node.empty()) continue;
    node.data('label', v.name + '\n×' + v.parallelism + ' · back pressure ' + percent(v['backpressure-ratio']) +
                       '\n' + rate(v.metrics['read-records-per-second']) + ' in/s · ' +
                       rate(v.metrics['write-records-per-second']) + ' out/s');
    node.style('background-color', levelColor[v['backpressure-level']] || '#556');
  }
  document.body.dataset.graphNodes = String(state.cy.nodes().length);
}

function renderSubtasks(job) {
  const rows = [];
  for (const v of job.vertices) {
    for (const s of v.subtasks) {
      const bp = cell(percent(s['backpressure-ratio']),
                      'level-' + (s['backpressure-ratio'] > 0.5 ? 'high' : s['backpressure-ratio'] > 0.1 ? 'low' : 'ok'));
      rows.push([v.name, s.subtask, s['read-records'], rate(s['read-records-per-second']), s['write-records'],
                 rate(s['write-records-per-second']), bp, percent(s['idle-ratio']), percent(s['busy-ratio']),
                 watermark(s.watermark)]);
    }
  }
  fillTable('subtasks', rows);
}

function chart(id, title, series, data, previous) {
  const el = document.getElementById(id);
  const width = Math.max(320, el.clientWidth || 600);
  if (previous && previous.series.length === series.length + 1) {
    previous.setData(data);
    return previous;
  }
  if (previous) previous.destroy();
  return new uPlot({ width, height: 220, title, series: [{}].concat(series), axes: [{}, { size: 60 }] }, data, el);
}

function renderThroughput(history) {
  const xs = [], ins = [], outs = [];
  for (const s of history.samples) {
    xs.push(s.timestamp / 1000);
    ins.push(s['records-in-per-second']);
    outs.push(s['records-out-per-second']);
  }
  state.throughput = chart('throughput-chart', '', [
    { label: 'read by sources', stroke: '#2b6cb0', width: 2 },
    { label: 'received by sinks', stroke: '#2e8b57', width: 2 },
  ], [xs, ins, outs], state.throughput);
}

function renderCheckpoints(cps) {
  const c = cps.counts;
  document.getElementById('checkpoint-counts').textContent =
      c.completed + ' completed, ' + c.failed + ' failed, ' + c.in_progress + ' in progress';
  const restored = cps.latest.restored;
  document.getElementById('restored-from').textContent = restored
      ? 'Restored from ' + (restored.is_savepoint ? 'savepoint ' : 'checkpoint ') + restored.id + ' (' +
        restored.external_path + ') at ' + time(restored.restore_timestamp)
      : 'Started without restoring state.';
  fillTable('checkpoints', cps.history.map((h) => [
    h.id + (h.is_savepoint ? ' (savepoint)' : ''), cell(h.status, 'status-' + h.status), time(h.trigger_timestamp),
    h.status === 'IN_PROGRESS' ? '' : h.end_to_end_duration + ' ms', h.alignment_duration + ' ms', bytes(h.state_size),
    h.num_acknowledged_subtasks + '/' + h.num_subtasks, cell(h.failure_message || '', 'message')]));
  const done = cps.history.filter((h) => h.status === 'COMPLETED').reverse();
  document.body.dataset.completedCheckpoints = String(c.completed);
  state.durations = chart('checkpoint-chart', '', [
    { label: 'end to end', stroke: '#6b46c1', width: 2, points: { show: true } },
    { label: 'alignment', stroke: '#e0962d', width: 1, points: { show: true } },
  ], [done.map((h) => h.trigger_timestamp / 1000), done.map((h) => h.end_to_end_duration),
      done.map((h) => h.alignment_duration)], state.durations);
}

function renderWatermarks(wm) {
  fillTable('alignment', wm.alignment.map((g) => [
    g.group, g['max-drift'] + ' ms', watermark(g['max-allowed-watermark']),
    Object.entries(g.readers).map(([r, w]) => r + ': ' + watermark(w)).join(', ')]));
}

const inFlightMetric = /^(inFlight|parked|pending|outstanding)/;
function renderInFlight(metrics) {
  const rows = [];
  for (const op of metrics.operators) {
    for (const m of op.metrics) {
      if (!inFlightMetric.test(m.id)) continue;
      for (const [subtask, value] of Object.entries(m.subtasks)) {
        if (typeof value !== 'number') continue;
        const meter = document.createElement('meter');
        meter.min = 0;
        meter.max = Math.max(1, value);
        meter.value = value;
        const td = cell(String(value) + ' ');
        td.appendChild(meter);
        rows.push([op.operator, m.id, subtask, td]);
      }
    }
  }
  fillTable('in-flight', rows);
}

function renderExceptions(ex) {
  fillTable('exceptions', ex.exceptionHistory.entries.map((e) => [
    time(e.timestamp), e.attempt, e.taskName, e.exceptionName, cell(e.stacktrace, 'message')]));
}

async function load() {
  if (!state.jid) {
    const config = await getJson('/config');
    state.interval = config['refresh-interval'] || 1000;
    const overview = await getJson('/jobs/overview');
    state.jid = overview.jobs[0].jid;
  }
  const base = '/jobs/' + encodeURIComponent(state.jid);
  const [job, cps, history, ex, wm, metrics] = await Promise.all([
    getJson(base), getJson(base + '/checkpoints'), getJson(base + '/history'), getJson(base + '/exceptions'),
    getJson(base + '/watermarks'), getJson(base + '/metrics')]);
  return { job, cps, history, ex, wm, metrics };
}

async function refresh() {
  const connection = document.getElementById('connection');
  let data = null;
  try {
    data = await load();
  } catch (e) {
    // The job process ended or is unreachable: say so, keep the last picture, keep trying.
    connection.textContent = 'not connected: ' + e.message;
  }
  if (data) {
    try {
      renderHeader(data.job);
      renderGraph(data.job);
      renderSubtasks(data.job);
      renderThroughput(data.history);
      renderCheckpoints(data.cps);
      renderWatermarks(data.wm);
      renderInFlight(data.metrics);
      renderExceptions(data.ex);
      connection.textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      window.recordPageError('rendering failed: ' + (e && e.stack ? e.stack : e));
    }
  }
  setTimeout(refresh, state.interval);
}

refresh();
