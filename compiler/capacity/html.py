"""`capacity --html FILE`: one self-contained page (no network) with the frontier of cost
against waits, one point per candidate simulated, and the answer's tables.

The data travels as one JSON island; the page's own script draws the chart as SVG.
"""

from __future__ import annotations

import json
from pathlib import Path

from compiler.core.errors import EnvironmentFailure

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kueue-policy capacity: __TITLE__</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}svg text{font-size:11px}.miss{color:#b00}</style></head>
<body><h1>capacity: __TITLE__</h1><p id="summary"></p><svg id="frontier" width="760" height="420"></svg>
<p>Each point is one candidate, simulated: cost per hour (x) against the highest p95 wait of any team (y).
Green meets every target, red misses one, grey never started some job; a hollow red point at the top
was stopped once a miss was certain (no waits to draw). The ringed point is the answer.</p>
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
for (const p of pts) {
  const c = stopped(p) ? el('circle', {cx: X(p.cost), cy: TOP, r: 4, fill: 'none', stroke: '#c33'})
    : el('circle', {cx: X(p.cost), cy: Y(p.worstP95Wait), r: p.answer ? 7 : 4,
    fill: p.worstP95Wait === null ? '#999' : (p.meets ? '#2a2' : '#c33'), stroke: p.answer ? '#000' : 'none'});
  const t = document.createElementNS(ns, 'title'); t.textContent = p.candidate + ' | ' + p.cost + '/h' +
    (p.misses.length ? ' | ' + p.misses.join('; ') : ' | meets'); c.appendChild(t);
}
document.getElementById('summary').textContent = d.evaluated + ' candidates simulated; ' +
  (d.answer ? 'answer: ' + d.answer.candidate + ' at ' + d.answer.costPerHour + '/h' : 'no candidate meets the targets');
if (d.answer) {
  let h = '<h2>pools</h2><table><tr><th>pool</th><th>nodes</th><th>GPUs</th><th>cost/h</th><th>MIG</th><th>idle GPU-h</th></tr>';
  for (const p of d.answer.pools) h += `<tr><td>${p.pool}</td><td>${p.nodesBefore} &rarr; ${p.nodes}</td><td>${p.gpus}</td><td>${p.costPerHour}</td><td>${p.mig}</td><td>${p.idleGpuHours}</td></tr>`;
  h += '</table><h2>why not smaller</h2><ul>';
  for (const n of d.proof) h += `<li>${n.candidate}: <span class="miss">${n.misses.join('; ')}</span></li>`;
  document.getElementById('tables').innerHTML = h + '</ul>';
}
</script></body></html>
"""


def page(data: dict) -> str:
    # `</` cannot end the JSON island early; names are DNS labels, never HTML.
    island = json.dumps(data, sort_keys=True, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE.replace("__TITLE__", data["cluster"]).replace("__DATA__", island)


def write_page(path: Path, data: dict) -> None:
    try:
        Path(path).write_text(page(data), encoding="utf-8")
    except OSError as error:
        raise EnvironmentFailure(f"cannot write {path}: {error.strerror or error}") from None
