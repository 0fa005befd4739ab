"""`capacity --html FILE`: one self-contained page (no network) with the frontier of cost
against waits, one point per candidate simulated, and the answer's tables.

The data travels as one JSON island; the page's own script draws the chart as SVG.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from compiler.core.errors import EnvironmentFailure

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kueue-policy capacity: __TITLE__</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}svg text{font-size:11px}.miss{color:#b00}</style></head>
<body><h1>capacity: __TITLE__</h1><p id="summary"></p><svg id="frontier" width="760" height="420"></svg>
<p>Each point is one candidate, simulated: cost per hour (x) against the highest p95 wait of any team (y).
Green meets every target, red misses one, grey never started some job; a hollow red point at the top
was stopped once a miss was certain (no waits to draw); a grey cross at the top does not compile
(or could not be simulated: nothing ran, its reason is in its tooltip). The ringed point is the answer.</p>
<div id="tables"></div>
<script type="application/json" id="data">__DATA__</script>
<script>
const d = JSON.parse(document.getElementById('data').textContent);
const svg = document.getElementById('frontier'), W = 760, H = 420, L = 70, B = 40;
const pts = d.candidates, ys = pts.map(p => p.worstP95Wait).filter(v => v !== null);
const stopped = p => p.stoppedAt !== null && p.stoppedAt !== undefined;
const xmin = Math.min(...pts.map(p => p.cost)), xmax = Math.max(...pts.map(p => p.cost));
const ymax = Math.max(1, ...ys) * 1.1;
const X = c => L + (xmax > xmin ? (c - xmin) / (xmax - xmin) : 0.5) * (W - L - 20);
const Y = w => H - B - (w === null ? 1 : w / ymax) * (H - B - 20), TOP = 20;
const ns = 'http://www.w3.org/2000/svg';
function el(n, a, t) { const e = document.createElementNS(ns, n); for (const k in a) e.setAttribute(k, a[k]);
  if (t) e.textContent = t; svg.appendChild(e); return e; }
el('line', {x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#444'});
el('line', {x1: L, y1: 10, x2: L, y2: H - B, stroke: '#444'});
el('text', {x: W / 2, y: H - 8}, 'cost per hour');
el('text', {x: 4, y: 16}, 'worst p95 wait (min)');
for (let i = 0; i <= 4; i++) { const w = ymax * i / 4; el('text', {x: 8, y: Y(w) + 4}, (w / 60).toFixed(1)); }
for (let i = 0; i <= 4; i++) { const c = xmin + (xmax - xmin) * i / 4; el('text', {x: X(c) - 10, y: H - B + 16}, c.toFixed(1)); }
// A candidate simulated to the end has a figure for every target (there is always one); one
// neither stopped nor measured never ran: it does not compile (or could not be simulated).
const state = p => stopped(p) ? 'stopped' : Object.keys(p.measured || {}).length === 0 ? 'does-not-compile'
  : p.worstP95Wait === null ? 'never-started' : (p.meets ? 'meets' : 'misses');
function point(p, s) {
  const x = X(p.cost);
  if (s === 'stopped') return el('circle', {cx: x, cy: TOP, r: 4, fill: 'none', stroke: '#c33', 'data-state': s});
  if (s === 'does-not-compile') return el('path', {d: `M${x - 4},${TOP - 4}L${x + 4},${TOP + 4}M${x - 4},${TOP + 4}L${x + 4},${TOP - 4}`,
    stroke: '#777', 'stroke-width': 2, fill: 'none', 'data-state': s});
  return el('circle', {cx: x, cy: Y(p.worstP95Wait), r: p.answer ? 7 : 4, 'data-state': s,
    fill: {'never-started': '#999', meets: '#2a2', misses: '#c33'}[s], stroke: p.answer ? '#000' : 'none'});
}
for (const p of pts) {
  const c = point(p, state(p));
  const t = document.createElementNS(ns, 'title'); t.textContent = p.candidate + ' | ' + p.cost + '/h' +
    (p.misses.length ? ' | ' + p.misses.join('; ') : ' | meets'); c.appendChild(t);
}
document.getElementById('summary').textContent = d.evaluated + ' candidates simulated; ' +
  (d.answer ? 'answer: ' + d.answer.candidate + ' at ' + d.answer.costPerHour + '/h' : 'no candidate meets the targets');
// Names and compile messages are the user's text: the tables are built as nodes holding text,
// never as HTML, so a folder named with markup shows as those characters.
function add(parent, tag, text, cls) {
  const e = parent.appendChild(document.createElement(tag));
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
if (d.answer) {
  const box = document.getElementById('tables');
  add(box, 'h2', 'pools');
  const table = add(box, 'table');
  const row = (tag, cells) => { const tr = add(table, 'tr'); for (const c of cells) add(tr, tag, c); };
  row('th', ['pool', 'nodes', 'GPUs', 'cost/h', 'MIG', 'idle GPU-h']);
  for (const p of d.answer.pools) row('td', [p.pool, p.nodesBefore + ' \u2192 ' + p.nodes, p.gpus, p.costPerHour, p.mig, p.idleGpuHours]);
  add(box, 'h2', 'why not smaller');
  const list = add(box, 'ul');
  for (const n of d.proof) add(add(list, 'li', n.candidate + ': '), 'span', n.misses.join('; '), 'miss');
  const across = d.proofAcrossPools;
  add(box, 'p', across.everyCheaper
    ? 'No cheaper candidate within the bounds meets the targets: every one was simulated (' + across.checked + ').'
    : across.proved
    ? 'No cheaper node counts within the bounds meet the targets (' + across.checked + ' simulated across pools).'
    : across.left === null ? 'Not proved across pools: too many pools move to list every cheaper candidate.'
    : 'Not proved across pools: ' + across.left + ' cheaper candidates not simulated (raise --proof-budget).');
}
</script></body></html>
"""


def page(data: dict) -> str:
    # No `<` in the JSON island (it can only stand inside a string, where \u003c reads the same),
    # so no `</script>` or `<!--` in the user's text ends or bends it; the title is escaped HTML.
    island = json.dumps(data, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")
    slots = {"__TITLE__": html.escape(data["cluster"] or ""), "__DATA__": island}
    # One pass: a value holding `__DATA__` is not substituted again.
    return re.sub("__TITLE__|__DATA__", lambda match: slots[match.group(0)], _PAGE)


def write_page(path: Path, data: dict) -> None:
    try:
        Path(path).write_text(page(data), encoding="utf-8")
    except OSError as error:
        raise EnvironmentFailure(f"cannot write {path}: {error.strerror or error}") from None
