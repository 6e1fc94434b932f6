// kvscope explorer: reads the run's JSON block (schema: src/observe/html_out.h) and draws the
// staircase, the K/V cache, the bytes and the FLOPs of the chosen step. Plain DOM and
// canvas; no library, no network. Colours and index rules are colormap.h's.
'use strict';
(function () {
const D = JSON.parse(document.getElementById('kvscope-data').textContent);
const $ = (id) => document.getElementById(id);
const fr = Math.fround;
const P = D.rows.len.length;            // positions computed
const hs = D.model.hs;
const STEPS = D.steps;
const MODE = D.run.mode;

// ---- data: base64 float32 arrays, rows, slots ----
function f32(b64) {
  const bin = atob(b64), n = bin.length >> 2, dv = new DataView(new ArrayBuffer(bin.length));
  for (let i = 0; i < bin.length; i++) dv.setUint8(i, bin.charCodeAt(i));
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  return out;
}
const HEADS = D.heads.map((h) => ({
  layer: h.layer, head: h.head, raw: h, data: null,
  R: { scores: fr(h.range.scores), q: fr(h.range.q), k: fr(h.range.k), v: fr(h.range.v) },
}));
function headData(h) {
  if (!h.data) h.data = { w: f32(h.raw.weights), s: f32(h.raw.scores), q: f32(h.raw.q),
    k: f32(h.raw.k), v: f32(h.raw.v) };
  return h.data;
}
const stepAt = new Map(STEPS.map((s, i) => [s.step, i]));
function slotPositions(s) {               // positions held by slots 0 .. tokens-1
  if (!s.pos) { s.pos = []; for (const [a, b] of s.slots) for (let p = a; p <= b; p++) s.pos.push(p); }
  return s.pos;
}
const rowOff = new Array(P + 1).fill(0);
for (let r = 0; r < P; r++) rowOff[r + 1] = rowOff[r] + D.rows.len[r];
const rowIdx = [];
function rowIndex(r) {                    // key position -> index in row r, -1 if evicted
  if (!rowIdx[r]) {
    const a = new Int32Array(r + 1).fill(-1), sp = slotPositions(STEPS[stepAt.get(D.rows.step[r])]);
    for (let j = 0; j < D.rows.len[r]; j++) a[sp[j]] = j;
    rowIdx[r] = a;
  }
  return rowIdx[r];
}

// ---- token texts: UTF-8 characters over the positions they span ----
function tokenSpans() {
  const chars = [];
  let bytes = [], owner = [];
  const flush = () => {                     // the bytes gathered so far, as UTF-8 characters
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i], n = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3
        : b >= 0xf0 && b < 0xf5 ? 4 : 0;
      let cp = n === 1 ? b : b & (0x7f >> n), ok = n > 0 && i + n <= bytes.length;
      for (let j = 1; ok && j < n; j++) { ok = (bytes[i + j] & 0xc0) === 0x80; cp = cp << 6 | bytes[i + j] & 0x3f; }
      if (ok && (cp > 0x10ffff || cp >= 0xd800 && cp < 0xe000 || n === 3 && cp < 0x800 || n === 4 && cp < 0x10000)) ok = false;
      const len = ok ? n : 1, hex = bytes.slice(i, i + len).map((x) => x.toString(16).toUpperCase().padStart(2, '0')).join(' ');
      chars.push({ a: owner[i], b: owner[i + len - 1], hex, n: len, ch: ok ? String.fromCodePoint(cp) : null });
      i += len;
    }
    bytes = []; owner = [];
  };
  D.tokens.bytes.forEach((hex, p) => {
    if (!hex) { flush(); chars.push({ a: p, b: p, hex: '#' + D.tokens.id[p], n: 0, ch: null }); return; }
    for (let i = 0; i < hex.length; i += 2) { bytes.push(parseInt(hex.substr(i, 2), 16)); owner.push(p); }
  });
  flush();
  const show = (c) => c.ch === null ? c.hex : c.ch === ' ' ? '\u2423' : c.ch === '\n' ? '\u21b5'
    : c.ch === '\t' ? '\u21e5' : c.ch === '\r' ? '\u240d' : /[\u0000-\u001f\u007f-\u009f]/.test(c.ch) ? c.hex : c.ch;
  const spans = [];
  for (const c of chars) {
    const t = show(c), kind = t === c.hex ? 'hex' : /^[\u2423\u21b5\u21e5\u240d]$/.test(t) ? 'ws' : 'text';
    const last = spans[spans.length - 1];
    if (last && c.a <= last.b) { last.b = Math.max(last.b, c.b); last.text += t; last.kind = 'text'; last.chars.push(c); }
    else spans.push({ a: c.a, b: c.b, text: t, kind, chars: [c] });
  }
  const at = new Array(P);
  for (const s of spans) for (let p = s.a; p <= s.b && p < P; p++) at[p] = s;
  return { spans: spans.filter((s) => s.a < P), at };
}
const TOK = tokenSpans();
function tokenText(p) {                   // "'人' (byte 2 of 3: E4 BA BA)"
  const s = TOK.at[p];
  if (!s) return '?';
  if (!D.tokens.bytes[p]) return 'token id ' + D.tokens.id[p] + ' (no text)';
  const bytesOf = D.tokens.bytes[p].toUpperCase().match(/../g).join(' ');
  if (s.a === s.b) return s.kind === 'hex' ? 'byte ' + bytesOf + ' (not a whole character)' : '\u2018' + s.text + '\u2019';
  const unit = D.model.tokenizer === 'bytes' ? 'byte ' : 'token ';
  return '\u2018' + s.text + '\u2019 (' + unit + (p - s.a + 1) + ' of ' + (s.b - s.a + 1) + ': ' + bytesOf + ')';
}

// ---- colours: colormap.h's tables and index rules, in float arithmetic ----
const hex3 = (h) => [parseInt(h.substr(0, 2), 16), parseInt(h.substr(2, 2), 16), parseInt(h.substr(4, 2), 16)];
const VIR = D.colormaps.viridis.map(hex3), CW = D.colormaps.coolwarm.map(hex3);
const MASKED = hex3(D.colormaps.masked), NEWEST = '#' + D.colormaps.newest, WHITE = [255, 255, 255];
function viridis(w) {
  if (w !== w) return MASKED;
  w = w < 0 ? 0 : w > 1 ? 1 : w;
  return VIR[Math.trunc(fr(fr(w * 255) + 0.5))];
}
function coolwarm(x, R) {
  if (x !== x || R !== R) return MASKED;
  let u = R > 0 ? x / R : 0; /* in double, as colormap.c: x and -x mirror */
  u = u < -1 ? -1 : u > 1 ? 1 : u;
  const d = Math.trunc(127 * (u < 0 ? -u : u) + 0.5);
  return CW[u < 0 ? 127 - d : 127 + d];
}
const css = (c) => 'rgb(' + c[0] + ',' + c[1] + ',' + c[2] + ')';
let hatchTile = null;
function hatch(ctx) {                     // white, black diagonal lines 2 px wide every 8 px
  if (!hatchTile) {
    hatchTile = document.createElement('canvas'); hatchTile.width = hatchTile.height = 8;
    const t = hatchTile.getContext('2d'), im = t.createImageData(8, 8);
    for (let y = 0; y < 8; y++) for (let x = 0; x < 8; x++) {
      const v = (x + y) % 8 < 2 ? 0 : 255, i = 4 * (y * 8 + x);
      im.data[i] = im.data[i + 1] = im.data[i + 2] = v; im.data[i + 3] = 255;
    }
    t.putImageData(im, 0, 0);
  }
  return ctx.createPattern(hatchTile, 'repeat');
}

// ---- numbers ----
function g9(x) {                          // C's %.9g, as attention.csv prints floats
  if (!isFinite(x)) return x !== x ? 'nan' : x > 0 ? 'inf' : '-inf';
  if (x === 0) return 1 / x < 0 ? '-0' : '0';
  const [m, e] = x.toExponential(8).split('e'), ex = parseInt(e, 10);
  if (ex < -4 || ex >= 9) return m.replace(/\.?0+$/, '') + 'e' + (ex < 0 ? '-' : '+') + String(Math.abs(ex)).padStart(2, '0');
  const f = x.toFixed(8 - ex);
  return f.indexOf('.') >= 0 ? f.replace(/\.?0+$/, '') : f;
}
const sig = (x, n) => Number(x.toPrecision(n)).toString();
const rtext = (R) => sig(R, 2);                // a colour range: two significant digits by construction
function bytesText(b) {
  const u = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < 4) { b /= 1024; i++; }
  return i === 0 ? b + ' bytes' : (b >= 100 ? b.toFixed(0) : b >= 10 ? b.toFixed(1) : b.toFixed(2)) + ' ' + u[i];
}
function flopsText(f) {
  const u = ['', 'k', 'M', 'G', 'T', 'P'];
  let i = 0;
  while (f >= 1000 && i < 5) { f /= 1000; i++; }
  return (f >= 100 ? f.toFixed(0) : f >= 10 ? f.toFixed(1) : f.toFixed(2)) + ' ' + u[i] + 'FLOP';
}
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

// ---- state ----
const layers = [...new Set(HEADS.map((h) => h.layer))];
const S = { step: 0, layer: layers[0], head: HEADS.length ? HEADS[0].head : 0, view: 'weights', timer: null,
  zoom: 1, present: false, sel: null, kvSel: null };   // sel: [query, key] of the staircase; kvSel: {p, m, j}
const ZOOMS = [1, 2, 4, 8];
const headsOf = (l) => HEADS.filter((h) => h.layer === l);
const cur = () => HEADS.find((h) => h.layer === S.layer && h.head === S.head);
const stepObj = () => STEPS[S.step];
const shownRows = (s) => s.pos0 + s.n;
const isNew = (s, p) => p >= s.pos0 && p < s.pos0 + s.n;

// ---- canvas helpers ----
const DPR = () => window.devicePixelRatio || 1;
function fit(cv, w, h) {
  const d = DPR();
  cv.width = Math.max(1, Math.round(w * d)); cv.height = Math.max(1, Math.round(h * d));
  cv.style.width = w + 'px'; cv.style.height = h + 'px';
  const ctx = cv.getContext('2d');
  ctx.setTransform(d, 0, 0, d, 0, 0);
  ctx.imageSmoothingEnabled = false;
  return ctx;
}
const FONT = getComputedStyle(document.documentElement).fontFamily;
const FS = () => (S.present ? 1.3 : 1);  // projector mode: every canvas label 30 % larger
const font = (px, bold) => (bold ? '600 ' : '') + Math.round(px * FS()) + 'px ' + FONT;
const mono = (px) => Math.round(px * FS()) + 'px "DejaVu Sans Mono", monospace';
function tickStep(cellPx) {               // label every k positions, at least 26 px apart
  for (const k of [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]) if (k * cellPx >= 26) return k;
  return 10000;
}

// The staircase of head h up to the rows of step s, one pixel per cell, in an
// offscreen canvas: rows not computed yet stay white.
function stairImage(h, s, view) {
  const cv = document.createElement('canvas');
  cv.width = cv.height = Math.max(P, 1);
  const ctx = cv.getContext('2d'), im = ctx.createImageData(cv.width, cv.height), px = im.data;
  px.fill(255);
  const d = headData(h), vals = view === 'scores' ? d.s : d.w, R = h.R.scores, rows = shownRows(s);
  for (let r = 0; r < rows; r++) {
    const idx = rowIndex(r), off = rowOff[r];
    for (let c = 0; c < P; c++) {
      const i = c <= r ? idx[c] : -2;
      const col = i === -2 ? MASKED : i < 0 ? WHITE : view === 'scores' ? coolwarm(vals[off + i], R) : viridis(vals[off + i]);
      const k = 4 * (r * P + c);
      px[k] = col[0]; px[k + 1] = col[1]; px[k + 2] = col[2];
    }
  }
  ctx.putImageData(im, 0, 0);
  return cv;
}

// Evicted runs of row r (key positions not in the cache when it was computed).
function evictedRuns(r) {
  const idx = rowIndex(r), runs = [];
  for (let c = 0; c <= r; c++) {
    if (idx[c] >= 0) continue;
    let e = c;
    while (e + 1 <= r && idx[e + 1] < 0) e++;
    runs.push([c, e]); c = e;
  }
  return runs;
}

// Token labels along one axis: spans [a, b] of positions < upto and in the window
// [off, end) (zoom), centred on their cells.
function axisLabels(ctx, cell, upto, place, off = 0, end = Infinity) {
  for (const sp of TOK.spans) {
    if (sp.a >= upto || sp.a >= end) break;
    if (sp.b < off) continue;
    const a = Math.max(sp.a, off), b = Math.min(sp.b, upto - 1, end - 1), w = (b - a + 1) * cell;
    const hex = sp.kind === 'hex';
    let px = Math.min(hex ? 12 : 19, (hex ? 0.42 : 0.78) * w / FS(), hex ? cell * 0.5 / FS() : 40);
    if (px < 8) continue;
    ctx.font = hex ? mono(px) : font(px, true);
    let t = sp.text;
    const room = Math.min(w + cell * 0.2, place.room || 1e9);
    while (t.length > 1 && ctx.measureText(t).width > room) t = t.slice(0, -1);
    if (t !== sp.text) t = t.slice(0, -1) + '\u2026';
    ctx.fillStyle = hex ? '#707070' : sp.kind === 'ws' ? '#6b6b6b' : '#111';
    place(t, (a - off) * cell + w / 2, (a - off) * cell, w, px);
  }
}

// ---- the staircase panel ----
const stairGeo = {};
// The zoom window: n positions from r0 (rows) and c0 (columns), centred on the selected
// cell, else on the step's newest row and its diagonal.
function stairWindow(rows) {
  const n = Math.max(1, Math.ceil(P / S.zoom)), at = S.sel || [rows - 1, rows - 1];
  const clamp = (x) => Math.max(0, Math.min(P - n, x));
  return { n, r0: clamp(at[0] - (n >> 1)), c0: clamp(at[1] - (n >> 1)) };
}
function drawStair() {
  const box = $('stair').parentElement, W = box.clientWidth, H = box.clientHeight;
  const ctx = fit($('stair'), W, H), h = cur(), s = stepObj();
  if (!h || !s) return;
  const left = Math.round(104 * FS()), top = Math.round(52 * FS()), right = Math.round(96 * FS()), bottom = 28;
  const rows = shownRows(s), { n, r0, c0 } = stairWindow(rows);
  const side = Math.max(40, Math.min(W - left - right, H - top - bottom));
  const cell = side / n >= 8 ? Math.floor(side / n) : side / n, M = cell * n;   // whole pixels when cells are large
  const strip = Math.max(3, Math.min(10, Math.round(cell / 2)));
  const x0 = left + Math.round((W - left - right - M) / 2), y0 = top;
  Object.assign(stairGeo, { x0, y0, cell, rows, M, n, r0, c0 });
  Object.assign($('stair').dataset, { x0, y0, cell, rows, positions: P, r0, c0, n });
  ctx.drawImage(stairImage(h, s, S.view), c0, r0, n, n, x0, y0, M, M);
  ctx.save();
  ctx.beginPath(); ctx.rect(x0 - strip - 4, y0 - 3, M + strip + 8, M + 6); ctx.clip();
  const X = (c) => x0 + (c - c0) * cell, Y = (r) => y0 + (r - r0) * cell;
  ctx.fillStyle = hatch(ctx);
  for (let r = r0; r < Math.min(rows, r0 + n); r++) for (const [a, b] of evictedRuns(r)) {
    const a1 = Math.max(a, c0), b1 = Math.min(b, c0 + n - 1);
    if (a1 <= b1) ctx.fillRect(X(a1), Y(r), (b1 - a1 + 1) * cell, cell);
  }
  ctx.strokeStyle = '#bbb'; ctx.lineWidth = 1; ctx.strokeRect(x0 - 0.5, y0 - 0.5, M + 1, M + 1);
  for (let r = Math.max(D.run.prompt_tokens, r0); r < Math.min(rows, r0 + n); r++) {   // marker strip: decode rows, this step's
    ctx.fillStyle = isNew(s, r) ? NEWEST : '#000';
    ctx.fillRect(x0 - strip - 2, Y(r), strip, cell);
  }
  const hy = Y(s.pos0), hh = s.n * cell, hw = Math.min((s.pos0 + s.n - c0) * cell, M);   // the step's rows, outlined
  if (hw > 0) {
    ctx.lineWidth = 3; ctx.strokeStyle = '#000'; ctx.strokeRect(x0 - 1.5, hy - 1.5, hw + 3, hh + 3);
    ctx.lineWidth = 2; ctx.strokeStyle = NEWEST; ctx.strokeRect(x0 - 1.5, hy - 1.5, hw + 3, hh + 3);
  }
  const mark = (rc, w) => {
    const [r, c] = rc;
    ctx.lineWidth = w; ctx.strokeStyle = '#fff'; ctx.strokeRect(X(c) - 1, Y(r) - 1, cell + 2, cell + 2);
    ctx.lineWidth = 1; ctx.strokeStyle = '#000'; ctx.strokeRect(X(c) - 1 - w / 2, Y(r) - 1 - w / 2, cell + 2 + w, cell + 2 + w);
  };
  if (S.sel) mark(S.sel, 3);
  if (stairGeo.hover) mark(stairGeo.hover, 2);
  ctx.restore();
  stairAxes(ctx, x0, y0, cell, rows, strip, r0, c0, n);
  colorBar(ctx, x0 + M + 22, y0, Math.max(60, Math.min(M, 260, H - y0 - 80 * FS())), h);
}

function stairAxes(ctx, x0, y0, cell, rows, strip, r0, c0, n) {
  const k = tickStep(cell / FS());
  ctx.textBaseline = 'middle';
  const lw = Math.round(42 * FS());
  const rowLabel = (t, mid, a, w) => {      // query tokens, left of the rows, at most 42 px wide
    ctx.textAlign = 'right'; ctx.fillText(t, x0 - strip - 7, y0 + mid);
    if (w > cell * 1.5) ctx.fillRect(x0 - strip - 5, y0 + a + 2, 1.5, w - 4);
  };
  rowLabel.room = lw;
  axisLabels(ctx, cell, rows, rowLabel, r0, r0 + n);
  axisLabels(ctx, cell, rows, (t, mid, a, w, px) => {     // key tokens, above the columns
    ctx.textAlign = 'center'; ctx.fillText(t, x0 + mid, y0 - 12 * FS());
    if (w > cell * 1.5) ctx.fillRect(x0 + a + 2, y0 - 4, w - 4, 1.5);
  }, c0, c0 + n);
  ctx.fillStyle = '#555'; ctx.font = font(12);
  for (let p = Math.ceil(r0 / k) * k; p < Math.min(rows, r0 + n); p += k) {
    ctx.textAlign = 'right'; ctx.fillText(p, x0 - strip - lw - 10, y0 + (p - r0 + 0.5) * cell);
  }
  for (let p = Math.ceil(c0 / k) * k; p < Math.min(rows, c0 + n); p += k) {
    ctx.textAlign = 'center'; ctx.fillText(p, x0 + (p - c0 + 0.5) * cell, y0 - 32 * FS());
  }
  ctx.font = font(13); ctx.fillStyle = '#333';
  ctx.textAlign = 'left'; ctx.fillText('key position \u2192' + (S.zoom > 1 ? '  (zoom \u00d7' + S.zoom + ': ' + c0 + '\u2013' + (c0 + n - 1) + ')' : ''), x0, y0 - 44 * FS());
  ctx.save(); ctx.translate(x0 - lw - 54 * FS(), y0); ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'right'; ctx.fillText('\u2190 query position' + (S.zoom > 1 ? ' (' + r0 + '\u2013' + (r0 + n - 1) + ')' : ''), 0, 0); ctx.restore();
}

// A vertical colour bar with its range, and the legend of the special cells.
function colorBar(ctx, x, y, hgt, h) {
  const sc = S.view === 'scores', R = h.R.scores;
  for (let i = 0; i < hgt; i++) {
    const u = 1 - i / (hgt - 1);
    ctx.fillStyle = css(sc ? coolwarm(fr((2 * u - 1) * R), R) : viridis(fr(u)));
    ctx.fillRect(x, y + i, 16, 1.5);
  }
  ctx.strokeStyle = '#888'; ctx.lineWidth = 1; ctx.strokeRect(x - 0.5, y - 0.5, 17, hgt + 1);
  ctx.font = font(12); ctx.fillStyle = '#222'; ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
  const ticks = sc ? [[R, '+' + rtext(R)], [0, '0'], [-R, '\u2212' + rtext(R)]] : [[1, '1'], [0.5, '0.5'], [0, '0']];
  for (const [v, t] of ticks) {
    const yy = y + (sc ? (R - v) / (2 * R) : 1 - v) * (hgt - 1);
    ctx.fillRect(x + 17, yy, 4, 1); ctx.fillText(t, x + 24, yy);
  }
  ctx.fillText(sc ? 'score' : 'weight', x - 2, y - 14);
  let ly = y + hgt + 22;
  const item = (draw, label) => { draw(x, ly); ctx.fillStyle = '#222'; ctx.fillText(label, x + 22, ly + 7); ly += 22; };
  item((a, b) => { ctx.fillStyle = css(MASKED); ctx.fillRect(a, b, 16, 14); }, 'future');
  if (HAS_EVICTED) item((a, b) => { ctx.fillStyle = hatch(ctx); ctx.fillRect(a, b, 16, 14); ctx.strokeRect(a, b, 16, 14); }, 'evicted');
  item((a, b) => { ctx.fillStyle = NEWEST; ctx.fillRect(a, b, 16, 14); }, 'this step');
}
const HAS_EVICTED = D.rows.len.some((n, r) => n < r + 1);

// ---- the K/V panel: q of this step, K and V as the cache holds them ----
const kvGeo = {};
function drawKV() {
  const box = $('kv').parentElement, W = box.clientWidth, H = box.clientHeight;
  const ctx = fit($('kv'), W, H), h = cur(), s = stepObj();
  if (!h || !s) return;
  // zoomed: the cache's rows whose positions the staircase window shows
  const all = slotPositions(s), win = S.zoom > 1 ? stairWindow(shownRows(s)) : null, slot = [];
  for (let i = 0; i < all.length; i++) if (!win || (all[i] >= win.r0 && all[i] < win.r0 + win.n)) slot.push(i);
  const d = headData(h), pos = slot.map((i) => all[i]), t = pos.length;
  const gapRows = [];                     // slot i where a jump in positions (eviction) starts
  for (let i = 1; i < t; i++) if (pos[i] !== pos[i - 1] + 1) gapRows.push(i);
  if (t && pos[0] > 0 && slot[0] === 0 && !win) gapRows.unshift(0);
  const left = 86, top = 22, bottom = 34, gap = 16, gapH = 18, strip = 6;
  const rh = Math.max(1, Math.min(22, (H - top - bottom - gapH * gapRows.length) / Math.max(t, 1)));
  const cw = Math.max(1, (W - left - strip - 2 * gap - 4) / (3 * hs));
  const mats = [['q', d.q, h.R.q], ['K', d.k, h.R.k], ['V', d.v, h.R.v]];
  const mx = (m) => left + strip + m * (hs * cw + gap);
  const ys = []; let y = top;
  for (let i = 0; i < t; i++) { if (gapRows.includes(i)) y += gapH; ys.push(y); y += rh; }
  Object.assign(kvGeo, { left, strip, gap, cw, rh, ys, pos, slot, mx });
  Object.assign($('kv').dataset, { rows: t, rh, cw });
  for (let i = 0; i < t; i++) {
    const p = pos[i], nw = isNew(s, p);
    ctx.fillStyle = nw ? NEWEST : p >= D.run.prompt_tokens ? '#000' : '#fff';
    ctx.fillRect(left, ys[i], strip - 1, rh);
    mats.forEach(([name, arr, R], m) => {
      if (name === 'q' && !nw) return;      // a query exists for the new rows only
      const base = p * hs, x = mx(m);
      for (let j = 0; j < hs; j++) { ctx.fillStyle = css(coolwarm(arr[base + j], R)); ctx.fillRect(x + j * cw, ys[i], Math.ceil(cw), Math.ceil(rh)); }
    });
  }
  if (s.n < t) {                          // old rows of q: never needed again, so never cached
    ctx.save(); ctx.font = 'italic ' + font(13); ctx.fillStyle = '#777'; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
    const cx = mx(0) + hs * cw / 2, y0 = ys[0], y1 = ys[Math.max(0, t - s.n - 1)] + rh, cy = (y0 + y1) / 2;
    const long = 'earlier queries are not needed again';  // two lines where the old rows leave room
    if (y1 - y0 >= 44 && ctx.measureText(long).width <= hs * cw) { ctx.fillText('no Q cache:', cx, cy - 9); ctx.fillText(long, cx, cy + 9); }
    else if (y1 - y0 >= 16) ctx.fillText('no Q cache', cx, cy);
    ctx.restore();
  }
  ctx.fillStyle = hatch(ctx);
  for (const i of gapRows) ctx.fillRect(mx(1), ys[i] - gapH + 2, mx(2) + hs * cw - mx(1), gapH - 4);
  kvRowLabels(ctx, s, t, pos, ys, rh, left, gapRows, gapH);
  const nr = [];                          // outline the rows this step appended
  for (let i = 0; i < t; i++) if (isNew(s, pos[i])) nr.push(i);
  if (nr.length) {
    const y1 = ys[nr[0]], y2 = ys[nr[nr.length - 1]] + rh, x1 = mx(0) - 2, x2 = mx(2) + hs * cw + 2;
    ctx.lineWidth = 3; ctx.strokeStyle = '#000'; ctx.strokeRect(x1, y1 - 1.5, x2 - x1, y2 - y1 + 3);
    ctx.lineWidth = 2; ctx.strokeStyle = NEWEST; ctx.strokeRect(x1, y1 - 1.5, x2 - x1, y2 - y1 + 3);
  }
  const kvMark = (i, m, j, w) => {
    ctx.lineWidth = w; ctx.strokeStyle = '#000'; ctx.strokeRect(mx(m) + j * cw - 1, ys[i] - 1, cw + 2, rh + 2);
  };
  if (S.kvSel) { const i = pos.indexOf(S.kvSel.p); if (i >= 0) kvMark(i, S.kvSel.m, S.kvSel.j, 3); }
  if (kvGeo.hover) kvMark(...kvGeo.hover, 1.5);
  ctx.font = font(13, true); ctx.fillStyle = '#222'; ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
  const dt = D.run.kv_dtype;
  const kind = MODE === 'recompute' ? ', recomputed' : ' cache';  // no cache: K and V are made again each step
  const T = all.length;
  const titles = ['q (' + s.n + '\u00d7' + hs + ')', (kind === ' cache' ? 'K cache (' : 'K (') + T + '\u00d7' + hs + (dt !== 'fp32' ? ', ' + dt : '') + ')' + (kind === ' cache' ? '' : kind),
    (kind === ' cache' ? 'V cache (' : 'V (') + T + '\u00d7' + hs + (dt !== 'fp32' ? ', ' + dt : '') + ')' + (kind === ' cache' ? '' : kind)];
  titles.forEach((tt, m) => {                // a title wider than its matrix: its name only
    const room = m < 2 ? hs * cw + gap - 4 : W - mx(2);
    const fits = [tt, tt.replace(' cache', ''), tt.replace(/ .*$/, '')].find((x) => ctx.measureText(x).width <= room);
    ctx.fillText(fits || tt.replace(/ .*$/, ''), mx(m), top - 7);
  });
  mats.forEach(([name, , R], m) => hBar(ctx, mx(m), y + 8, Math.min(hs * cw, 200), R));
}

function kvRowLabels(ctx, s, t, pos, ys, rh, left, gapRows, gapH) {
  ctx.textBaseline = 'middle'; ctx.textAlign = 'right';
  const k = tickStep(rh / FS()), big = rh >= 11 * FS();   // labels on every row when rows are tall enough
  for (let i = 0; i < t; i++) {
    const p = pos[i], sp = TOK.at[p];
    if (big && sp) {
      const lab = sp.a === sp.b || p === sp.a ? sp.text : '';
      ctx.font = sp.kind === 'hex' ? mono(Math.min(11, rh * 0.7 / FS())) : font(Math.min(15, rh * 0.8 / FS()), true);
      ctx.fillStyle = sp.kind === 'hex' ? '#707070' : '#111';
      if (lab) ctx.fillText(lab.length > 6 ? lab.slice(0, 5) + '\u2026' : lab, left - 34, ys[i] + rh / 2);
    }
    if (p % k === 0 || big) { ctx.font = font(12); ctx.fillStyle = '#555'; ctx.fillText(p, left - 4, ys[i] + rh / 2); }
  }
  // the evicted positions, named on the hatched band between K and V rows (not over q)
  ctx.font = font(12); ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
  const kx0 = kvGeo.mx(1), kx1 = kvGeo.mx(2) + hs * kvGeo.cw;
  for (const i of gapRows) {
    const a = i === 0 ? 0 : pos[i - 1] + 1, b = pos[i] - 1, txt = 'positions ' + a + '\u2013' + b + ' evicted';
    const w = ctx.measureText(txt).width + 10, cx = (kx0 + kx1) / 2, cy = ys[i] - gapH / 2;
    ctx.fillStyle = '#fff'; ctx.fillRect(cx - w / 2, cy - 8, w, 16);
    ctx.fillStyle = '#8a2f00'; ctx.fillText(txt, cx, cy);
  }
}

function hBar(ctx, x, y, w, R) {          // a horizontal cool-warm bar, -R .. +R
  for (let i = 0; i < w; i++) { ctx.fillStyle = css(coolwarm(fr((2 * i / (w - 1) - 1) * R), R)); ctx.fillRect(x + i, y, 1.5, 9); }
  ctx.font = font(11); ctx.fillStyle = '#333'; ctx.textBaseline = 'top';
  ctx.textAlign = 'left'; ctx.fillText('\u2212' + rtext(R), x, y + 11);
  ctx.textAlign = 'center'; ctx.fillText('0', x + w / 2, y + 11);
  ctx.textAlign = 'right'; ctx.fillText('+' + rtext(R), x + w, y + 11);
}

// ---- memory and FLOPs ----
function drawMem() {
  const svg = $('memchart'), W = svg.clientWidth || 400, H = svg.clientHeight || 100, s = stepObj();
  const cap = D.run.kv_cap_bytes, top = Math.max(cap, ...STEPS.map((x) => x.kv_reserved), 1);
  const L = 62, R = 8, T = 8, B = 22, n = Math.max(STEPS.length - 1, 1);
  const X = (i) => L + (W - L - R) * i / n, Y = (b) => T + (H - T - B) * (1 - b / top);
  const line = (key) => STEPS.map((x, i) => (i ? 'L' : 'M') + X(i).toFixed(1) + ' ' + Y(x[key]).toFixed(1)).join(' ');
  const stepLine = (key) => STEPS.map((x, i) => (i ? 'H' + X(i).toFixed(1) + ' V' : 'M' + X(0).toFixed(1) + ' ') + Y(x[key]).toFixed(1)).join(' ');
  let g = '<line x1="' + L + '" y1="' + Y(0) + '" x2="' + (W - R) + '" y2="' + Y(0) + '" stroke="#999"/>';
  for (const f of [0.5, 1]) {
    const yy = Y(top * f);
    g += '<line x1="' + L + '" y1="' + yy + '" x2="' + (W - R) + '" y2="' + yy + '" stroke="#e4e4e4"/>' +
      '<text x="' + (L - 5) + '" y="' + (yy + 4) + '" text-anchor="end" font-size="' + Math.round(11 * FS()) + '" fill="#555">' + bytesText(top * f) + '</text>';
  }
  if (cap) g += '<line x1="' + L + '" y1="' + Y(cap) + '" x2="' + (W - R) + '" y2="' + Y(cap) + '" stroke="#000" stroke-dasharray="5 4"/>' +
    '<text x="' + (L + 4) + '" y="' + (Y(cap) + 13) + '" font-size="' + Math.round(11 * FS()) + '">cap ' + bytesText(cap) + '</text>';
  g += '<path d="' + stepLine('kv_reserved') + '" fill="none" stroke="#d55e00" stroke-width="2" stroke-dasharray="6 3"/>';
  g += '<path d="' + line('kv_bytes') + '" fill="none" stroke="#0072b2" stroke-width="2.5"/>';
  const cx = X(S.step);
  g += '<line x1="' + cx + '" y1="' + T + '" x2="' + cx + '" y2="' + Y(0) + '" stroke="' + NEWEST + '" stroke-width="2"/>' +
    '<circle cx="' + cx + '" cy="' + Y(s.kv_bytes) + '" r="4.5" fill="#0072b2" stroke="#fff"/>' +
    '<circle cx="' + cx + '" cy="' + Y(s.kv_reserved) + '" r="4.5" fill="#d55e00" stroke="#fff"/>';
  g += '<text x="' + L + '" y="' + (H - 5) + '" font-size="' + Math.round(11 * FS()) + '" fill="#555">prefill</text>' +
    (STEPS.length > 1 ? '<text x="' + (W - R) + '" y="' + (H - 5) + '" font-size="' + Math.round(11 * FS()) + '" fill="#555" text-anchor="end">step ' + STEPS[STEPS.length - 1].step + '</text>' : '') +
    '<text x="' + ((L + W - R) / 2) + '" y="' + (H - 5) + '" font-size="' + Math.round(11 * FS()) + '" fill="#555" text-anchor="middle">' +
    '<tspan fill="#0072b2">\u2501 used</tspan>  <tspan fill="#d55e00">\u2505 reserved</tspan></text>';
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.innerHTML = g;
  const bpt = D.run.kv_bytes_per_token, fp32 = 2 * D.model.L * D.model.C * 4, pc = (b) => (100 * b / top).toFixed(2) + '%';
  let t = '<span class="kvbar" title="this step: used (filled) and reserved (dashed)"><i class="res" style="width:' + pc(s.kv_reserved) +
    '"></i><i class="used" style="width:' + pc(s.kv_bytes) + '"></i>' + (cap ? '<i class="cap" style="left:' + pc(cap) + '"></i>' : '') + '</span><b>' + bytesText(s.kv_bytes) + '</b> used (' + s.tokens + ' tokens \u00d7 ' + bytesText(bpt) +
    ' = 2 \u00b7 L \u00b7 ' + (D.run.kv_dtype === 'fp32' ? 'C \u00b7 4 bytes' : 'row bytes') + '), <b>' + bytesText(s.kv_reserved) + '</b> reserved';
  if (D.run.kv_dtype !== 'fp32') t += '; ' + D.run.kv_dtype + ': ' + sig(100 * bpt / fp32, 3) + ' % of fp32';
  if (s.evicted[1]) t += '; ' + s.evicted[1] + ' evicted before this step';
  if (MODE === 'recompute')                 // nothing is kept between steps: say what the bytes are
    t = '<span class="kvbar" title="this step: K/V built (filled) and reserved (dashed)"><i class="res" style="width:' + pc(s.kv_reserved) +
      '"></i><i class="used" style="width:' + pc(s.kv_bytes) + '"></i></span><b>No cache is kept.</b> This step builds K and V of all ' +
      s.tokens + ' tokens again in a scratch buffer (' + bytesText(s.kv_bytes) + ' filled, ' + bytesText(s.kv_reserved) +
      ' reserved) and drops them after it; a cache would keep them, ' + bytesText(bpt) + ' per token.';
  $('memtext').innerHTML = t;
}

const OPS = [['qkv', 'c_attn (q, k, v)', '#0072b2'], ['attn', 'attention', '#e69f00'],
  ['attn_proj', 'attn c_proj', '#009e73'], ['mlp', 'MLP', '#cc79a7']];
function drawFlops() {
  const s = stepObj(), f = s.flops, counted = f.qkv + f.attn + f.attn_proj + f.mlp;
  const pre = s.phase === 'prefill', bars = [];
  if (pre) bars.push(['prefill: every prompt token once', counted, true, 'counted']);
  else if (MODE === 'recompute') bars.push(['with a KV cache', s.formula.cache, false, 'closed form'], ['this run: no cache', counted, true, 'counted']);
  else if (MODE === 'article-bug') bars.push(['this run: forgetful cache', counted, true, 'counted'], ['a correct KV cache', s.formula.cache, false, 'closed form'], ['without a cache', s.formula.recompute, false, 'closed form']);
  else bars.push(['with the KV cache', counted, true, 'counted'], ['without: all ' + (s.pos0 + s.n) + ' tokens again', s.formula.recompute, false, 'closed form']);
  const top = Math.max(...bars.map((b) => b[1]), 1);
  let html = '';
  for (const [label, v, split, how] of bars) {
    let segs = '', x = 0;
    if (split) for (const [k, , c] of OPS) { const w = 100 * f[k] / top; segs += '<i class="seg" style="left:' + x + '%;width:' + w + '%;background:' + c + '"></i>'; x += w; }
    else segs = '<i class="seg" style="left:0;width:' + (100 * v / top) + '%;background:#9a9a9a"></i>';
    html += '<div class="fbar"><span class="lab">' + esc(label) + ' <small>' + how + '</small></span><span class="track">' + segs + '</span><span class="num">' + flopsText(v) + '</span></div>';
  }
  html += '<div class="legend">' + OPS.map(([, n, c]) => '<span><i style="background:' + c + '"></i>' + n + '</span>').join('') +
    '<span><i style="background:#9a9a9a"></i>closed form</span></div>';
  let note = '+ lm_head ' + flopsText(f.lm_head) + ' either way.';
  if (!pre && MODE === 'cache') note = 'The cache saves <b>' + sig(s.formula.recompute / Math.max(counted, 1), 3) + '\u00d7</b>: one new row instead of ' + (s.pos0 + s.n) + '. ' + note;
  if (!pre && MODE === 'article-bug')       // cheap because it forgot: no saving to claim
    note = 'This cache is cheap only because it forgot: its query reads ' + s.tokens + ' of ' + (s.pos0 + s.n) +
      ' positions, so what it computes is not the model\u2019s attention. A correct cache costs ' + flopsText(s.formula.cache) + '. ' + note;
  if (!pre && MODE === 'recompute') note = 'Without a cache this step costs <b>' + sig(counted / Math.max(s.formula.cache, 1), 3) + '\u00d7</b> what a cached step does. ' + note;
  $('flopbars').innerHTML = html + '<p id="flopnote">' + note + '</p>';
}

// ---- text: the sequence so far, badges, the story of the step ----
function drawText() {
  const s = stepObj(), rows = shownRows(s);
  let html = '';
  const shown = TOK.spans.filter((sp) => sp.a < rows), T0 = D.run.prompt_tokens;
  const prompt = shown.filter((sp) => sp.a < T0), gen = shown.filter((sp) => sp.a >= T0);
  const keep = gen.length > 36 ? prompt.slice(0, 24).concat([null], gen.slice(-30))      // long runs: the
    : prompt.length > 48 ? prompt.slice(0, 24).concat([null], prompt.slice(-16), gen) : shown;  // start and the end
  for (const sp of keep) {
    if (!sp) { html += '<span class="cut">\u2026</span>'; continue; }
    const cls = (sp.kind === 'hex' ? 'hex' : sp.kind === 'ws' ? 'ws' : '') + (sp.a >= D.run.prompt_tokens ? ' gen' : '') +
      (s.phase === 'decode' && sp.a <= rows - 1 && rows - 1 <= sp.b ? ' now' : '');    // the newest token
    html += '<span class="' + cls + '">' + esc(sp.kind === 'hex' ? sp.text.replace(/ /g, '') : sp.text) + '</span>';
  }
  const h1 = $('text');
  h1.innerHTML = html;
  const line = h1.parentElement, over = () => line.scrollWidth > line.clientWidth;
  let cut = h1.querySelector('.cut');        // drop the oldest generated tokens until the newest fits
  if (!cut && over() && h1.querySelector('.gen')) {
    cut = document.createElement('span'); cut.className = 'cut'; cut.textContent = '\u2026';
    h1.insertBefore(cut, h1.querySelector('.gen'));
  }
  while (cut && cut.nextSibling && cut.nextSibling.nextSibling && over()) cut.nextSibling.remove();
  const t = D.run.prompt_tokens, last = STEPS[STEPS.length - 1].step;
  $('steplabel').textContent = s.phase === 'prefill' ? 'prefill: ' + t + ' tokens at once'
    : 'decode step ' + s.step + ' of ' + last + ': position ' + (s.pos0 + s.n - 1) + ', t = ' + (s.pos0 + s.n);
  const q = s.pos0 + s.n - 1;
  let st;
  if (s.phase === 'prefill') st = 'All <b>' + t + '</b> prompt tokens run at once: a ' + t + '\u00d7' + t + ' causal square of attention; their K and V fill the cache.';
  else if (MODE === 'recompute') st = 'No cache: step ' + s.step + ' runs all <b>' + (q + 1) + '</b> tokens again (every row outlined), to get one new row.';
  else {
    st = 'The new token ' + esc(tokenText(q)) + ' at position ' + q + ' computes one row of q, k, v; k and v are <b>appended</b> to the cache (orange); its query reads all <b>' + s.tokens + '</b> cached keys.';
    if (MODE === 'article-bug') st += ' <b>This cache forgets:</b> it kept only the last step\u2019s K/V, so positions ' + (s.tokens > 1 ? '0\u2013' + (slotPositions(s)[0] - 1) : '') + ' are gone (hatched).';
    else if (s.tokens < q + 1) st += ' The window holds ' + s.tokens + ' of ' + (q + 1) + ' positions: the rest are evicted (hatched).';
  }
  const lastStep = S.step === STEPS.length - 1;
  if (lastStep && D.run.kv_cap_bytes && s.step < D.run.steps_asked)
    st += ' <b>The run stops here:</b> step ' + (s.step + 1) + ' would take the cache past its cap of ' + bytesText(D.run.kv_cap_bytes) + '.';
  $('story').innerHTML = st;
}

function badges() {
  const m = D.model, r = D.run, b = [];
  b.push(esc(m.name) + ' \u00b7 L=' + m.L + ' \u00b7 NH=' + m.NH + ' \u00d7 hs=' + m.hs + ' \u00b7 ' + (m.tokenizer === 'bytes' ? 'byte tokens' : 'GPT-2 BPE'));
  const mode = { cache: ['KV cache', ''], recompute: ['no cache: recompute every step', 'warn'], 'article-bug': ['the article\u2019s cache: keeps only the newest K/V', 'warn'] }[r.mode];
  b.push('<span class="badge ' + mode[1] + '">' + mode[0] + '</span>');
  b.push('<span class="badge' + (r.kv_dtype !== 'fp32' ? ' warn' : '') + '">K/V stored as ' + esc(r.kv_dtype) + '</span>');
  if (r.window) b.push('<span class="badge warn">window ' + r.window + ', ' + r.sink + ' sink' + (r.sink === 1 ? '' : 's') + '</span>');
  if (r.kv_cap_bytes) b.push('<span class="badge">cap ' + bytesText(r.kv_cap_bytes) + '</span>');
  $('badges').innerHTML = b.map((x) => x.startsWith('<span') ? x : '<span class="badge">' + x + '</span>').join('');
  const perHead = HEADS.length ? D.heads[0].weights.length + D.heads[0].scores.length + D.heads[0].q.length * 3 : 0;
  const page = new Blob([document.documentElement.outerHTML]).size;
  $('foot').innerHTML = '<span>This page: ' + bytesText(page) + ' \u00b7 ' + HEADS.length + (HEADS.length === 1 ? ' head, ' : ' heads, ') + bytesText(perHead) +
    ' each \u00b7 a decode step at t tokens adds 8t + 12\u00b7hs = 8t + ' + 12 * hs + ' bytes per head (float32; \u00d74/3 in base64) \u00b7 kvscope ' + esc(D.kvscope) + '</span>' +
    '<span><kbd>\u2190</kbd> <kbd>\u2192</kbd> step \u00b7 <kbd>space</kbd> play \u00b7 <kbd>\u2191</kbd> <kbd>\u2193</kbd> head \u00b7 click a cell \u00b7 <kbd>+</kbd> <kbd>\u2212</kbd> zoom \u00b7 <kbd>P</kbd> projector</span>';
}

function titles() {
  const s = stepObj();
  $('stair-title').textContent = 'Attention ' + S.view + ', layer ' + S.layer + ' head ' + S.head + ' \u2014 ' + shownRows(s) + ' rows (' +
    D.run.prompt_tokens + ' prefill + ' + (shownRows(s) - D.run.prompt_tokens) + ' decode)';
  $('kv-title').textContent = MODE === 'recompute' ? 'K and V, all recomputed this step (no cache), head ' + S.head
    : 'The cache this step reads: K and V of head ' + S.head + ', ' + s.tokens + ' rows, ' + (s.n > 1 ? 'the ' + s.n + ' new ones' : 'the new one') + ' outlined';
  if (S.zoom > 1) {                         // zoomed: K and V show the staircase window's positions
    const w = stairWindow(shownRows(s));
    $('kv-title').textContent += ' \u2014 zoom \u00d7' + S.zoom + ': positions ' + w.r0 + '\u2013' + (w.r0 + w.n - 1);
  }
  const shown = headsOf(S.layer).length, NH = D.model.NH;  // "All heads" only when all are in the page
  $('ov-title').textContent = (shown === NH ? 'All ' + NH + ' heads' : shown + ' of ' + NH + ' heads') + ' of layer ' + S.layer +
    ' at this step' + (shown > 1 ? ' \u2014 click one (or \u2191 \u2193)' : shown < NH ? ' (the run chose which: --heads-shown)' : '');
  $('mem-title').textContent = MODE === 'recompute' ? 'K/V memory: a scratch buffer, not a cache' : 'KV cache memory';
}

// ---- the all-heads overview ----
function buildThumbs() {
  const box = $('thumbs');
  box.innerHTML = '';
  for (const h of headsOf(S.layer)) {
    const b = document.createElement('button');
    b.className = 'thumb'; b.dataset.head = h.head; b.title = 'head ' + h.head;
    b.innerHTML = '<canvas></canvas><span>head ' + h.head + '</span>';
    b.addEventListener('click', () => { S.head = h.head; render(); });
    box.appendChild(b);
  }
}
function drawThumbs() {
  const list = headsOf(S.layer), s = stepObj();
  const most = window.innerHeight < 860 ? 60 : 118;  // a short window (a projector's 720 rows): small thumbnails
  const W = $('overview').clientWidth, side = Math.max(40, Math.min(most, Math.floor((W - 8 * list.length) / Math.max(list.length, 1)) - 8));
  for (const b of $('thumbs').children) {
    const h = list.find((x) => x.head === +b.dataset.head), cv = b.querySelector('canvas');
    b.classList.toggle('on', h.head === S.head);
    const ctx = fit(cv, side, side);
    ctx.drawImage(stairImage(h, s, S.view), 0, 0, P, P, 0, 0, side, side);
  }
}

// ---- the selected cell: hovered, else clicked (S.sel, S.kvSel), in the panel #cell ----
const row = (k, v) => '<tr><td>' + k + '</td><td>' + v + '</td></tr>';
function stairCellHtml(r, c) {
  const h = cur();
  let html = row('query', 'pos ' + r + ' ' + esc(tokenText(r))) + row('key', 'pos ' + c + ' ' + esc(tokenText(c)));
  if (c > r) html += row('', 'masked: the future (pos ' + c + ' comes after ' + r + ')');
  else if (rowIndex(r)[c] < 0) html += row('', '<b>evicted</b>: pos ' + c + ' was not in the cache when row ' + r + ' was computed');
  else {
    const i = rowOff[r] + rowIndex(r)[c], d = headData(h), w = d.w[i], sc = d.s[i];
    html += row('weight', '<span class="big">' + sig(w, 4) + '</span> ' + sig(100 * w, 3) + ' % of the row') +
      row('score', '<span class="big">' + sig(sc, 4) + '</span> q\u00b7k/\u221a' + hs) +
      row('float32', '<span class="exact" data-score="' + g9(sc) + '" data-weight="' + g9(w) + '">score ' + g9(sc) + ' \u00b7 weight ' + g9(w) + '</span>') +
      row('', 'layer ' + h.layer + ' head ' + h.head + ' \u00b7 ' + (D.rows.step[r] ? 'decode step ' + D.rows.step[r] : 'prefill') + ' \u00b7 cache slot ' + rowIndex(r)[c]);
  }
  return '<table>' + html + '</table>';
}
function kvCellHtml(i, m, j) {           // i: the cache slot
  const h = cur(), s = stepObj(), p = slotPositions(s)[i], name = ['q', 'K', 'V'][m], v = headData(h)[name.toLowerCase()][p * hs + j];
  return '<table>' + row(name, '<span class="big">' + sig(v, 4) + '</span> <span class="exact" data-value="' + g9(v) + '">' + g9(v) + '</span>') +
    row('token', 'pos ' + p + ' ' + esc(tokenText(p))) + row('where', 'cache slot ' + i + ', dimension ' + j + ' of ' + hs + ', head ' + h.head) +
    (isNew(s, p) ? row('', '<b>new</b>: appended by this step') : '') + '</table>';
}
// A selection that no longer exists at this step (a row not computed yet, a key evicted
// from the cache) is dropped.
function selectionValid() {
  const s = stepObj();
  if (S.sel && !(S.sel[0] < shownRows(s) && S.sel[1] < P)) S.sel = null;
  if (S.kvSel && (slotPositions(s).indexOf(S.kvSel.p) < 0 || (S.kvSel.m === 0 && !isNew(s, S.kvSel.p)))) S.kvSel = null;
}
function drawCell() {
  const t = $('tip');
  let html = null;
  if (stairGeo.hover) html = stairCellHtml(...stairGeo.hover);
  else if (kvGeo.hover) html = kvCellHtml(kvGeo.slot[kvGeo.hover[0]], kvGeo.hover[1], kvGeo.hover[2]);
  else if (S.sel) html = stairCellHtml(...S.sel);
  else if (S.kvSel) { const i = slotPositions(stepObj()).indexOf(S.kvSel.p); if (i >= 0) html = kvCellHtml(i, S.kvSel.m, S.kvSel.j); }
  t.hidden = !html; $('cellhint').hidden = !!html;
  if (html) t.innerHTML = html;
}
function stairCellAt(ev) {
  const g = stairGeo, b = $('stair').getBoundingClientRect();
  const r = g.r0 + Math.floor((ev.clientY - b.top - g.y0) / g.cell), c = g.c0 + Math.floor((ev.clientX - b.left - g.x0) / g.cell);
  return r >= g.r0 && c >= g.c0 && r < g.rows && r < g.r0 + g.n && c < g.c0 + g.n && c < P ? [r, c] : null;
}
function stairHover(ev) {
  const old = stairGeo.hover;
  stairGeo.hover = stairCellAt(ev);
  if (String(old) !== String(stairGeo.hover)) drawStair();
  drawCell();
}
function kvCellAt(ev) {
  const g = kvGeo, b = $('kv').getBoundingClientRect(), s = stepObj();
  const x = ev.clientX - b.left, y = ev.clientY - b.top;
  let i = g.ys ? g.ys.findIndex((yy) => y >= yy && y < yy + g.rh) : -1, m = -1, j = -1;
  for (let k = 0; k < 3 && i >= 0; k++) if (x >= g.mx(k) && x < g.mx(k) + hs * g.cw) { m = k; j = Math.floor((x - g.mx(k)) / g.cw); }
  if (m === 0 && !isNew(s, g.pos[i])) m = -1;
  return i >= 0 && m >= 0 ? [i, m, j] : null;
}
function kvHover(ev) {
  const old = kvGeo.hover;
  kvGeo.hover = kvCellAt(ev);
  if (String(old) !== String(kvGeo.hover)) drawKV();
  drawCell();
}
function stairClick(ev) {
  const rc = stairCellAt(ev);
  S.sel = rc && String(rc) !== String(S.sel) ? rc : null; S.kvSel = null;
  render();
}
function kvClick(ev) {
  const c = kvCellAt(ev), p = c ? kvGeo.pos[c[0]] : -1;
  const same = c && S.kvSel && S.kvSel.p === p && S.kvSel.m === c[1] && S.kvSel.j === c[2];
  S.kvSel = c && !same ? { p, m: c[1], j: c[2] } : null; S.sel = null;
  render();
}

// ---- the view in the URL: #step=8&layer=1&head=4&view=weights&zoom=2&present=1&q=67&k=14
// The page opens on its own default view (kvscope run --html-view, D.run.view), then on the
// fragment's; a step, layer, head or zoom that does not exist opens the nearest that does,
// and the notice says so. Every move writes the fragment back (replacing, not adding, a
// history entry), so the address bar is a link to what is on screen.
const nearest = (list, x) => list.reduce((b, v) => (Math.abs(v - x) < Math.abs(b - x) ? v : b), list[0]);
const range = (list) => list.length > 1 && list[list.length - 1] - list[0] === list.length - 1
  ? list[0] + '\u2013' + list[list.length - 1] : list.join(', ');
function applyView(frag, notes) {
  const kv = new Map();
  for (const part of frag.replace(/^#/, '').split(/[&,;]/)) {
    if (!part) continue;
    const k = part.indexOf('=');
    kv.set(decodeURIComponent(k < 0 ? part : part.slice(0, k)).trim(), decodeURIComponent(k < 0 ? '' : part.slice(k + 1)).trim());
  }
  const num = (v) => (/^-?\d+$/.test(v) ? parseInt(v, 10) : NaN);
  const known = ['step', 'layer', 'head', 'view', 'zoom', 'present', 'q', 'k'];
  for (const k of kv.keys()) if (!known.includes(k)) notes.push('\u201c' + esc(k) + '\u201d is not a setting of this page (' + known.join(', ') + '): ignored.');
  if (kv.has('layer')) {
    const want = num(kv.get('layer')), l = isNaN(want) ? layers[0] : nearest(layers, want);
    if (l !== want) notes.push('There is no layer ' + esc(kv.get('layer')) + ' in this page (layers ' + range(layers) + '): showing layer ' + l + '.');
    S.layer = l;
  }
  const heads = headsOf(S.layer).map((h) => h.head);
  if (kv.has('head')) {
    const want = num(kv.get('head')), hd = isNaN(want) ? heads[0] : nearest(heads, want);
    if (hd !== want) notes.push('There is no head ' + esc(kv.get('head')) + ' of layer ' + S.layer + ' in this page (heads ' + range(heads) + '): showing head ' + hd + '.');
    S.head = hd;
  } else if (!heads.includes(S.head)) S.head = heads[0];
  if (kv.has('step')) {
    const v = kv.get('step'), nums = STEPS.map((x) => x.step), last = nums[nums.length - 1];
    const want = v === 'last' ? last : num(v), st = isNaN(want) ? 0 : nearest(nums, want);
    if (st !== want) notes.push('There is no step ' + esc(v) + ' in this run (' + (nums.length > 1 ? 'steps ' + range(nums) + ', 0 is the prefill' : 'it has only the prefill, step 0') +
      '): showing ' + (st ? 'step ' + st : 'the prefill') + '.');
    S.step = stepAt.get(st);
  }
  if (kv.has('view')) {
    const v = kv.get('view');
    if (v !== 'weights' && v !== 'scores') notes.push('There is no view \u201c' + esc(v) + '\u201d (weights or scores): showing ' + S.view + '.');
    else S.view = v;
  }
  if (kv.has('zoom')) {
    const want = parseFloat(kv.get('zoom')), z = isNaN(want) ? 1 : nearest(ZOOMS, want);
    if (z !== want) notes.push('There is no zoom \u00d7' + esc(kv.get('zoom')) + ' (1, 2, 4 or 8): showing \u00d7' + z + '.');
    S.zoom = z;
  }
  if (kv.has('present')) S.present = kv.get('present') === '1';
  if (kv.has('q') || kv.has('k')) {
    const q = num(kv.get('q') || ''), k = num(kv.get('k') || ''), rows = shownRows(stepObj());
    if (q >= 0 && k >= 0 && q < rows && k < P) { S.sel = [q, k]; S.kvSel = null; }
    else notes.push('There is no cell (query ' + esc(kv.get('q')) + ', key ' + esc(kv.get('k')) + ') at this step (queries 0\u2013' + (rows - 1) + '): none selected.');
  }
}
function fragment() {
  let f = 'step=' + STEPS[S.step].step + '&layer=' + S.layer + '&head=' + S.head + '&view=' + S.view;
  if (S.zoom > 1) f += '&zoom=' + S.zoom;
  if (S.present) f += '&present=1';
  if (S.sel) f += '&q=' + S.sel[0] + '&k=' + S.sel[1];
  return f;
}
let written = null;
function writeFragment() {
  const f = fragment();
  if (f === written) return;
  written = f;
  try { history.replaceState(null, '', '#' + f); } catch (e) { location.replace('#' + f); }
}
function notice(notes) {
  $('notice').hidden = !notes.length;
  $('notice').innerHTML = notes.join(' ');
}
function openView(frag) {
  const notes = [];
  applyView(frag, notes);
  notice(notes);
}

// ---- controls ----
const ICONS = { first: 'M3 2h2v12H3zM14 2v12L6 8z', prev: 'M12 2v12L4 8z', next: 'M4 2v12l8-6z',
  last: 'M11 2h2v12h-2zM2 2v12l8-6z', play: 'M4 2v12l10-6z', pause: 'M3 2h4v12H3zm6 0h4v12H9z' };
const icon = (k) => '<svg viewBox="0 0 16 16"><path d="' + ICONS[k] + '"/></svg>';
function go(i) { S.step = Math.max(0, Math.min(STEPS.length - 1, i)); render(); }
function zoom(delta) {
  S.zoom = ZOOMS[Math.max(0, Math.min(ZOOMS.length - 1, ZOOMS.indexOf(S.zoom) + delta))]; render();
}
function present(on) { S.present = on; render(); }
function play(on) {
  if (S.timer) { clearInterval(S.timer); S.timer = null; }
  if (on) {
    if (S.step === STEPS.length - 1) go(0);
    S.timer = setInterval(() => { if (S.step >= STEPS.length - 1) play(false); else go(S.step + 1); }, 800);
  }
  $('play').innerHTML = icon(S.timer ? 'pause' : 'play');
  $('play').classList.toggle('on', !!S.timer);
}
function setHead(delta) {
  const list = headsOf(S.layer), i = list.findIndex((h) => h.head === S.head);
  S.head = list[(i + delta + list.length) % list.length].head; render();
}
function controls() {
  for (const k of ['first', 'prev', 'next', 'last']) $(k).innerHTML = icon(k);
  play(false);
  $('first').onclick = () => go(0); $('last').onclick = () => go(STEPS.length - 1);
  $('prev').onclick = () => go(S.step - 1); $('next').onclick = () => go(S.step + 1);
  $('play').onclick = () => play(!S.timer);
  $('step').max = STEPS.length - 1;
  $('step').oninput = () => go(+$('step').value);
  $('layer').innerHTML = layers.map((l) => '<option value="' + l + '">' + l + '</option>').join('');
  $('layer').disabled = layers.length < 2;
  $('layer').onchange = () => {
    S.layer = +$('layer').value;
    if (!cur()) S.head = headsOf(S.layer)[0].head;
    buildThumbs(); render();
  };
  for (const b of $('view').children) b.onclick = () => { S.view = b.dataset.view; render(); };
  $('zoomin').onclick = () => zoom(1); $('zoomout').onclick = () => zoom(-1);
  $('present').onclick = () => present(!S.present);
  document.addEventListener('keydown', (e) => {
    const tag = e.target.tagName;
    if (tag === 'SELECT' || (tag === 'INPUT' && e.key !== ' ')) return;
    const k = { ArrowRight: () => go(S.step + 1), ArrowLeft: () => go(S.step - 1), Home: () => go(0),
      End: () => go(STEPS.length - 1), ' ': () => play(!S.timer), ArrowUp: () => setHead(-1), ArrowDown: () => setHead(1),
      '+': () => zoom(1), '=': () => zoom(1), '-': () => zoom(-1), p: () => present(!S.present), P: () => present(!S.present), Escape: () => { S.sel = S.kvSel = null; render(); } }[e.key];
    if (k) { e.preventDefault(); k(); }
  });
  document.addEventListener('keyup', (e) => { if (e.key === ' ' && e.target.tagName === 'BUTTON') e.preventDefault(); });
  $('stair').addEventListener('mousemove', stairHover);
  $('stair').addEventListener('mouseleave', () => { stairGeo.hover = null; drawStair(); drawCell(); });
  $('stair').addEventListener('click', stairClick);
  $('kv').addEventListener('mousemove', kvHover);
  $('kv').addEventListener('mouseleave', () => { kvGeo.hover = null; drawKV(); drawCell(); });
  $('kv').addEventListener('click', kvClick);
  window.addEventListener('resize', render);
  window.addEventListener('hashchange', () => {     // the address bar edited by hand
    if (location.hash.slice(1) === written) return;
    openView(location.hash); buildThumbs(); render();
  });
  // a notice about the opening view goes with the first thing the user does
  for (const ev of ['keydown', 'click']) document.addEventListener(ev, () => {
    if ($('notice').hidden) return;
    notice([]); requestAnimationFrame(render);   // the space it took goes back to the panels
  }, true);
}

// Where the selected cell's panel sits: under the staircase, or, in a short wide window
// (the CSS's three columns), on top of the right-hand column.
const COMPACT = window.matchMedia('(max-height: 860px) and (min-width: 1000px)');
function placeCell() {
  const home = COMPACT.matches ? $('costs') : $('stair-panel');
  if ($('cell').parentElement !== home) home.insertBefore($('cell'), COMPACT.matches ? home.firstChild : null);
}
function render() {
  selectionValid();
  placeCell();
  document.body.classList.toggle('present', S.present);
  $('present').classList.toggle('on', S.present);
  $('zoomlabel').textContent = '\u00d7' + S.zoom;
  $('step').value = S.step;
  for (const b of $('view').children) b.classList.toggle('on', b.dataset.view === S.view);
  $('layer').value = S.layer;
  document.body.dataset.step = STEPS[S.step].step;
  document.body.dataset.head = S.head;
  document.body.dataset.layer = S.layer;
  document.body.dataset.view = S.view;
  document.body.dataset.zoom = S.zoom;
  // everything that sets the layout's sizes first, then the canvases that fill it
  drawText(); titles(); drawCell(); drawMem(); drawFlops(); drawThumbs(); drawStair(); drawKV();
  writeFragment();
}

if (!STEPS.length || !HEADS.length) {
  document.querySelector('main').innerHTML = '<p class="empty">' + (STEPS.length ? 'No layer or head was chosen for this page (--layers-shown, --heads-shown).'
    : 'The run stopped before its prefill (a memory cap?): there is nothing to show.') + '</p>';
  return;
}
controls();
applyView(D.run.view || '', []);            // the page's own default view (its maker chose it)
openView(location.hash);
buildThumbs(); badges(); render();
})();
