// explorer_test.mjs — the explorer page in a real browser (Debian's Chromium, headless,
// driven by playwright-core). Run by `make check-browser`:
//   node tests/browser/explorer_test.mjs BIN WORKDIR [LESSON_PAGE...]
// It runs kvscope five times (a plain cache, a window with sinks and q8_0, the
// articles' forgetful cache, no cache, odd tokens), opens each page from the file system and checks what a
// learner sees against the run's own attention.csv: the rows shown at each step, the
// weight and score on hover, the colour of a cell, a head switch, hatched evicted
// cells, keyboard and play. Every lesson page given must load cleanly and stay under
// 2 MiB. Screenshots (1600×900, 16:9) go to WORKDIR/*.png. Exit 1 on the first failure.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const [BIN, WORK, ...LESSON_PAGES] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const PAGE_LIMIT = 2 * 1024 * 1024;
let checks = 0;
function ok(cond, what) {
  if (!cond) { console.error('check-browser: FAIL: ' + what); process.exit(1); }
  checks++;
}

// ---- runs and their CSVs ----
function run(name, args) {
  const out = resolve(WORK, name), html = out + '.html';
  execFileSync(resolve(BIN), ['run', ...args, '--record', 'attention,tokens', '--out', out, '--html', html, '--quiet'],
    { stdio: ['ignore', 'inherit', 'inherit'] });
  return { out, html, attn: readAttention(resolve(out, 'attention.csv')) };
}
function readAttention(path) {           // "step,layer,head,query,key" -> {score, weight}
  const m = new Map(), lines = readFileSync(path, 'utf8').trim().split('\n');
  for (const line of lines.slice(1)) {
    const [phase, step, layer, head, q, k, score, weight] = line.split(',');
    m.set([step, layer, head, q, k].join(','), { phase, score, weight });
  }
  return m;
}

// ---- the browser ----
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
async function open(browser, file, frag = '', size = [1600, 900]) {
  const page = await browser.newPage({ viewport: { width: size[0], height: size[1] }, deviceScaleFactor: 1 });
  const errors = [], requests = [], url = pathToFileURL(file).href;
  page.on('console', (m) => {            // warnings are printed (the test's own pixel reads cause one)
    if (m.type() === 'error') errors.push(m.text());
    else if (m.type() === 'warning' && !/willReadFrequently/.test(m.text())) console.log('check-browser: warning: ' + m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (r.url().split('#')[0] !== url) requests.push(r.url()); });
  await page.goto(url + frag);
  await page.waitForSelector('body[data-step]');
  return { page, errors, requests };
}
const data = (page) => page.evaluate(() => JSON.parse(document.getElementById('kvscope-data').textContent));
const geo = (page) => page.$eval('#stair', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cell: +c.dataset.cell,
  rows: +c.dataset.rows, P: +c.dataset.positions, r0: +c.dataset.r0, c0: +c.dataset.c0, n: +c.dataset.n }));
async function cellCentre(page, r, c) {   // (r0, c0): the corner of the zoom window
  const g = await geo(page), box = await (await page.$('#stair')).boundingBox();
  return [box.x + g.x0 + (c - g.c0 + 0.5) * g.cell, box.y + g.y0 + (r - g.r0 + 0.5) * g.cell];
}
// The pixel at the centre of staircase cell (r, c), read back from the canvas.
async function pixel(page, r, c) {
  const g = await geo(page);
  return page.$eval('#stair', (cv, [x, y]) => Array.from(cv.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3)),
    [Math.floor(g.x0 + (c - g.c0 + 0.5) * g.cell), Math.floor(g.y0 + (r - g.r0 + 0.5) * g.cell)]);
}
const stairHash = (page) => page.$eval('#stair', (cv) => {
  const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
  let h = 2166136261;
  for (let i = 0; i < d.length; i += 4) h = Math.imul(h ^ (d[i] | d[i + 1] << 8 | d[i + 2] << 16), 16777619) >>> 0;
  return h;
});
async function hover(page, r, c) {
  const [x, y] = await cellCentre(page, r, c);
  await page.mouse.move(x, y);
  return page.$eval('#tip', (t) => ({ hidden: t.hidden, text: t.textContent,
    exact: t.querySelector('.exact') ? { ...t.querySelector('.exact').dataset } : null }));
}
async function toStep(page, k) {          // by keyboard: Home, then → k times
  await page.mouse.move(2, 2);
  await page.keyboard.press('Home');
  for (let i = 0; i < k; i++) await page.keyboard.press('ArrowRight');
  ok(await page.$eval('body', (b) => +b.dataset.step) === k, 'keyboard reaches step ' + k);
}
const f32 = (s) => Math.fround(parseFloat(s));
const viridisIndex = (w) => Math.trunc(Math.fround(Math.fround(Math.min(1, Math.max(0, w)) * 255) + 0.5));
const rgb = (hex) => [0, 2, 4].map((i) => parseInt(hex.substr(i, 2), 16));
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const isWhite = (p) => same(p, [255, 255, 255]);

// The hover shows the CSV's weight and score for (step, layer, head, q, k), exactly as
// float32, and the cell has the colour of that weight in viridis.
async function checkCell(page, r, D, attn, step, layer, head, q, k) {
  const want = attn.get([step, layer, head, q, k].join(','));
  ok(want, `attention.csv has step ${step} head ${head} query ${q} key ${k}`);
  const t = await hover(page, q, k);
  ok(!t.hidden && t.exact, `tooltip on cell (${q}, ${k}) of head ${head}`);
  ok(f32(t.exact.weight) === f32(want.weight), `weight of (${q}, ${k}) head ${head}: page ${t.exact.weight}, csv ${want.weight}`);
  ok(f32(t.exact.score) === f32(want.score), `score of (${q}, ${k}) head ${head}: page ${t.exact.score}, csv ${want.score}`);
  ok(t.text.includes(Number(f32(want.weight).toPrecision(4)).toString()), `weight shown rounded on (${q}, ${k}): ${t.text}`);
  await page.mouse.move(2, 2);
  const px = await pixel(page, q, k), vir = rgb(D.colormaps.viridis[viridisIndex(f32(want.weight))]);
  ok(same(px, vir), `colour of (${q}, ${k}): ${px} is viridis(${want.weight}) = ${vir}`);
}

async function plainRun(browser, r) {
  const { page, errors, requests } = await open(browser, r.html);
  const D = await data(page), T = D.run.prompt_tokens, n = D.steps.length - 1;
  ok(n === 8 && T === 15, `the page holds the prefill of 15 tokens and 8 steps (got ${T}, ${n})`);
  for (const k of [0, 3, n]) {             // step k shows k + T rows, and no more
    await toStep(page, k);
    const g = await geo(page);
    ok(g.rows === T + k, `step ${k}: ${g.rows} rows drawn, expected ${T + k}`);
    for (let row = 0; row < g.P; row++) {
      const white = isWhite(await pixel(page, row, 0));
      ok(white === (row >= T + k), `step ${k}: row ${row} ${white ? 'empty' : 'drawn'}`);
    }
  }
  const last = T + n - 1;                  // hover: weights and scores equal attention.csv
  for (const [q, k] of [[last, 0], [last, 7], [last, last], [9, 4], [14, 14]]) {
    const step = q >= T ? q - T + 1 : 0;
    await checkCell(page, r, D, r.attn, step, 0, 0, q, k);
  }
  const before = await stairHash(page);     // switching head changes the picture
  await page.click('.thumb[data-head="1"]');
  ok(await page.$eval('body', (b) => b.dataset.head) === '1', 'clicking the thumbnail selects head 1');
  ok(await stairHash(page) !== before, 'head 1 draws a different staircase than head 0');
  await checkCell(page, r, D, r.attn, n, 0, 1, last, 3);
  await page.keyboard.press('ArrowDown');
  ok(await page.$eval('body', (b) => b.dataset.head) === '2', 'arrow down selects the next head');
  await page.keyboard.press('ArrowUp');
  await page.click('#view [data-view="scores"]');
  ok(await stairHash(page) !== before, 'the scores view draws another picture');
  await page.click('#view [data-view="weights"]');
  await page.keyboard.press('Home');        // space plays, space stops
  await page.keyboard.press(' ');
  await page.waitForFunction(() => +document.body.dataset.step >= 2, null, { timeout: 5000 });
  await page.keyboard.press(' ');
  const stopped = await page.$eval('body', (b) => +b.dataset.step);
  await page.waitForTimeout(1000);
  ok(await page.$eval('body', (b) => +b.dataset.step) === stopped, 'space stops the play');
  await toStep(page, n);
  await page.click('.thumb[data-head="0"]');
  await hover(page, last, 3);
  await page.screenshot({ path: resolve(WORK, 'explorer_1600x900.png') });
  ok(errors.length === 0, 'no console error: ' + errors.join(' | '));
  ok(requests.length === 0, 'no network request: ' + requests.join(' '));
  await page.close();
}

async function windowRun(browser, r) {
  const { page, errors, requests } = await open(browser, r.html);
  const D = await data(page), n = D.steps.length - 1, T = D.run.prompt_tokens, last = T + n - 1;
  await toStep(page, n);
  ok(D.run.window === 12 && D.run.sink === 2 && D.run.kv_dtype === 'q8_0', 'window run recorded in the page');
  let evicted = 0;
  for (let k = 0; k <= last; k++) {         // the last row: held keys as in the CSV, others hatched
    const inCsv = r.attn.has([n, 0, 0, last, k].join(','));
    const t = await hover(page, last, k);
    if (inCsv) await checkCell(page, r, D, r.attn, n, 0, 0, last, k);
    else {
      evicted++;
      ok(/evicted/.test(t.text), `key ${k} of row ${last} (not in attention.csv) says evicted: ${t.text}`);
      await page.mouse.move(2, 2);
      const px = await pixel(page, last, k);
      ok(isWhite(px) || same(px, [0, 0, 0]), `evicted cell (${last}, ${k}) is hatched white/black: ${px}`);
    }
  }
  ok(evicted === last + 1 - 12, `row ${last} has ${evicted} evicted keys, expected ${last + 1 - 12}`);
  ok((await page.textContent('#badges')).includes('q8_0'), 'the badge names the K/V type');
  const ov = await page.textContent('#ov-title');
  ok(ov.startsWith('2 of 12 heads of layer 0'), 'two heads of twelve in the page, said so: ' + ov);
  await page.screenshot({ path: resolve(WORK, 'explorer_window_1600x900.png') });
  ok(errors.length === 0 && requests.length === 0, 'window page: no error, no request: ' + errors.concat(requests).join(' | '));
  await page.close();
}

async function bugRun(browser, r) {
  const { page, errors, requests } = await open(browser, r.html);
  const D = await data(page), T = D.run.prompt_tokens;
  await toStep(page, 3);
  const q = T + 2;                          // step 3 reads only the last step's K/V and its own
  for (let k = 0; k <= q; k++) {
    const held = r.attn.has([3, 0, 0, q, k].join(','));
    ok(held === (k >= q - 1), `article bug: step 3 holds key ${k}: ${held}`);
    const t = await hover(page, q, k);
    ok(held ? !!t.exact : /evicted/.test(t.text), `article bug: hover on (${q}, ${k})`);
  }
  ok(/forgets/.test(await page.textContent('#story')), 'the story says the cache forgets');
  const note = await page.textContent('#flopnote');
  ok(!/saves/.test(note) && /forgot/.test(note), 'the forgetful cache claims no saving: ' + note);
  ok(/\b1 head, /.test(await page.textContent('#foot')), 'one head, in the singular: ' + await page.textContent('#foot'));
  await page.screenshot({ path: resolve(WORK, 'explorer_article_bug_1600x900.png') });
  ok(errors.length === 0 && requests.length === 0, 'bug page: no error, no request: ' + errors.concat(requests).join(' | '));
  await page.close();
}

// --no-cache: no bytes called a cache, K and V titled as recomputed (read from the
// canvas' drawing calls), every head of the four shown said to be 4 of 12.
async function noCacheRun(browser, r) {
  const { page, errors, requests } = await open(browser, r.html);
  await page.keyboard.press('End');
  ok((await page.textContent('#mem-title')).includes('not a cache'), 'no-cache memory panel title');
  const mem = await page.textContent('#memtext');
  ok(/No cache is kept/.test(mem) && !/ used \(/.test(mem), 'no-cache memory text says nothing is kept: ' + mem);
  ok((await page.textContent('#ov-title')).startsWith('4 of 12 heads'), 'no-cache overview: 4 of 12 heads');
  const texts = await page.evaluate(() => {  // what drawKV writes on its canvas, drawn again with fillText spied
    const seen = [], orig = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (t, ...a) { seen.push(String(t)); return orig.call(this, t, ...a); };
    window.dispatchEvent(new Event('resize'));
    return new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(() => {
      CanvasRenderingContext2D.prototype.fillText = orig; res(seen);
    })));
  });
  ok(texts.some((t) => /^K \(\d+\u00d764\), recomputed$/.test(t)) && !texts.some((t) => /cache \(/.test(t)),
    'no-cache K/V titles: ' + texts.filter((t) => /[KV] /.test(t)).join(' | '));
  await page.screenshot({ path: resolve(WORK, 'explorer_no_cache_1600x900.png') });
  ok(errors.length === 0 && requests.length === 0, 'no-cache page: no error, no request: ' + errors.concat(requests).join(' | '));
  await page.close();
}

// Tokens without text (id 300 of V = 1000), a newline, a space, a 3-byte character
// (E4 B8 AD, 中) and a control byte; three layers, first and last shown.
async function oddRun(browser, r) {
  const { page, errors, requests } = await open(browser, r.html);
  const text = await page.textContent('#text');
  ok(text.startsWith('#300\u21b5\u2423\u4e2d07'), 'token texts: id, newline, space, one character over three bytes, hex: ' + text);
  ok((await page.$$eval('#layer option', (o) => o.map((x) => x.value))).join() === '0,2', 'layers 0 and 2 to choose from');
  await page.selectOption('#layer', '2');
  ok(await page.$eval('body', (b) => b.dataset.layer) === '2', 'layer 2 chosen');
  await toStep(page, 3);
  const D = await data(page);
  await checkCell(page, r, D, r.attn, 3, 2, 0, 9, 4);
  ok(errors.length === 0 && requests.length === 0, 'odd page: no error, no request: ' + errors.concat(requests).join(' | '));
  await page.close();
}

// ---- the view in the URL, the page's default view, the value panel, zoom, the layout ----
const state = (page) => page.$eval('body', (b) => ({ step: +b.dataset.step, layer: +b.dataset.layer, head: +b.dataset.head,
  view: b.dataset.view, zoom: +b.dataset.zoom }));
const hashOf = (page) => page.evaluate(() => location.hash);
const noticeOf = (page) => page.$eval('#notice', (n) => (n.hidden ? null : n.textContent));
const boxOf = async (page, sel) => (await page.$(sel)).boundingBox();
const apart = (a, b) => a.x + a.width <= b.x + 0.5 || b.x + b.width <= a.x + 0.5 || a.y + a.height <= b.y + 0.5 || b.y + b.height <= a.y + 0.5;

// A fragment opens its view; one naming what does not exist opens the nearest and says so;
// moving writes the fragment back; editing it moves the page.
async function fragmentRun(browser, r) {
  const D = JSON.parse(readFileSync(r.html, 'utf8').match(/<script type="application\/json" id="kvscope-data">\n([^]*?)\n<\/script>/)[1]);
  const last = D.steps[D.steps.length - 1].step, layers = [...new Set(D.heads.map((h) => h.layer))];
  const headsOf = (l) => D.heads.filter((h) => h.layer === l).map((h) => h.head);
  let { page, errors } = await open(browser, r.html, '#step=3&layer=' + layers[0] + '&head=5&view=scores');
  let st = await state(page);
  ok(st.step === 3 && st.head === 5 && st.view === 'scores' && st.layer === layers[0], 'fragment opens step 3, head 5, scores: ' + JSON.stringify(st));
  ok(await noticeOf(page) === null, 'a valid fragment raises no notice');
  ok(await page.$eval('#view [data-view="scores"]', (b) => b.classList.contains('on')), 'the scores button is on');
  await page.keyboard.press('ArrowLeft');
  ok((await hashOf(page)).includes('step=2&'), 'stepping back writes step=2 into the fragment: ' + await hashOf(page));
  await page.keyboard.press('ArrowDown');
  ok((await hashOf(page)).includes('head=6&'), 'the next head is written into the fragment: ' + await hashOf(page));
  await page.evaluate(() => { location.hash = '#step=1&head=2&view=weights'; });
  await page.waitForFunction(() => document.body.dataset.step === '1' && document.body.dataset.head === '2');
  ok((await state(page)).view === 'weights', 'an edited fragment moves the page');
  await page.close();
  ({ page, errors } = await open(browser, r.html, '#step=99&layer=7&head=40&view=keys&zoom=3&bogus=1'));
  st = await state(page);
  const hs = headsOf(st.layer);
  ok(st.step === last && st.layer === layers[layers.length - 1] && st.head === hs[hs.length - 1] && st.view === 'weights' && st.zoom === 2,
    'an impossible fragment opens the nearest view: ' + JSON.stringify(st));
  const note = await noticeOf(page);
  for (const w of ['step 99', 'layer 7', 'head 40', 'keys', '\u00d73', 'bogus'])
    ok(note && note.includes(w), 'the notice names ' + w + ': ' + note);
  ok((await hashOf(page)).startsWith('#step=' + last + '&layer=' + st.layer + '&head=' + st.head + '&view=weights&zoom=2'),
    'the fragment names the view shown: ' + await hashOf(page));
  await page.keyboard.press('ArrowLeft');
  ok(await noticeOf(page) === null, 'the notice goes with the first key');
  await page.close();
  ({ page, errors } = await open(browser, r.html, '#step=-4&q=500&k=1'));
  st = await state(page);
  ok(st.step === 0 && /step -4/.test(await noticeOf(page)) && /query 500/.test(await noticeOf(page)), 'step -4 opens the prefill, a cell out of range is not selected: ' + await noticeOf(page));
  ok(errors.length === 0, 'fragment pages: no error: ' + errors.join(' | '));
  await page.close();
}

// kvscope run --html-view: the page opens on that view; a fragment overrides the keys it names.
async function defaultViewRun(browser, r) {
  let { page, errors } = await open(browser, r.html);
  let st = await state(page);
  ok(st.head === 3 && st.step === 2 && st.view === 'scores', 'the page opens on its --html-view: ' + JSON.stringify(st));
  ok(await noticeOf(page) === null, 'its own view raises no notice');
  await page.close();
  ({ page, errors } = await open(browser, r.html, '#head=1'));
  st = await state(page);
  ok(st.head === 1 && st.step === 2 && st.view === 'scores', 'a fragment overrides only what it names: ' + JSON.stringify(st));
  ok(errors.length === 0, 'default-view page: no error: ' + errors.join(' | '));
  await page.close();
}

// The value panel: a clicked cell's values stay after the mouse leaves, exactly the CSV's;
// a K cell's value is the page's own K (decoded here, apart from the page's code).
async function panelRun(browser, r) {
  const { page, errors } = await open(browser, r.html);
  const D = await data(page), T = D.run.prompt_tokens, n = D.steps.length - 1, q = T + n - 1, k = 4;
  await toStep(page, n);
  const [x, y] = await cellCentre(page, q, k);
  await page.mouse.click(x, y);
  await page.mouse.move(2, 2);
  const want = r.attn.get([n, 0, 0, q, k].join(','));
  const t = await page.$eval('#tip', (e) => ({ hidden: e.hidden, exact: e.querySelector('.exact') ? { ...e.querySelector('.exact').dataset } : null }));
  ok(!t.hidden && t.exact && f32(t.exact.weight) === f32(want.weight) && f32(t.exact.score) === f32(want.score),
    `the clicked cell (${q}, ${k}) stays in the panel with the CSV's values: ${JSON.stringify(t)}`);
  ok((await hashOf(page)).includes('&q=' + q + '&k=' + k), 'the selected cell is in the fragment: ' + await hashOf(page));
  for (const other of ['#mem', '#flops', '#kv', '#stair'])
    ok(apart(await boxOf(page, '#cell'), await boxOf(page, other)), 'the value panel does not cover ' + other);
  const kv = await page.$eval('#kv', (c) => ({ rows: +c.dataset.rows, rh: +c.dataset.rh, cw: +c.dataset.cw }));
  const kbox = await boxOf(page, '#kv'), hs = D.model.hs;   // K of the first cached row, dimension 3
  await page.mouse.click(kbox.x + 86 + 6 + hs * kv.cw + 16 + 3.5 * kv.cw, kbox.y + 22 + 0.5 * kv.rh);
  await page.mouse.move(2, 2);
  const kval = await page.$eval('#tip .exact', (e) => e.dataset.value).catch(() => null);
  const bin = Buffer.from(D.heads[0].k, 'base64'), wantK = bin.readFloatLE(4 * (0 * hs + 3));
  ok(kval !== null && f32(kval) === wantK, `a clicked K cell shows K[0][3] = ${wantK}: ${kval}`);
  await page.keyboard.press('Escape');
  ok(await page.$eval('#tip', (e) => e.hidden), 'Escape clears the selection');
  ok(errors.length === 0, 'panel page: no error: ' + errors.join(' | '));
  await page.close();
}

// Zoom: × 2 shows half the positions around the selected cell, at twice the cell size, and
// a cell in the window still has its CSV weight and its colour.
async function zoomRun(browser, r) {
  const { page, errors } = await open(browser, r.html);
  const D = await data(page), T = D.run.prompt_tokens, n = D.steps.length - 1, q = T + n - 1;
  await toStep(page, n);
  const g1 = await geo(page);
  await page.keyboard.press('+');
  const g2 = await geo(page);
  ok((await state(page)).zoom === 2 && g2.n === Math.ceil(g1.P / 2), 'zoom ×2 shows ' + g2.n + ' positions');
  ok(g2.cell >= 1.9 * g1.cell, `zoomed cells are twice as large (${g1.cell} -> ${g2.cell})`);
  ok((await hashOf(page)).includes('&zoom=2'), 'zoom is in the fragment');
  await checkCell(page, r, D, r.attn, n, 0, 0, q, q - 2);
  await page.keyboard.press('-');
  ok((await state(page)).zoom === 1 && (await geo(page)).n === g1.P, 'zoom out shows every position again');
  ok(errors.length === 0, 'zoom page: no error: ' + errors.join(' | '));
  await page.close();
}

// At a projector's 1280×720 the K/V panel keeps its height, the page needs no scrolling, and
// the value panel covers nothing; projector mode makes the type larger and keeps all that.
async function layoutRun(browser, r) {
  for (const [w, h, present, frag] of [[1280, 720, false, '#step=8'], [1280, 720, true, '#step=8&present=1'],
    [1280, 720, false, '#step=99&head=77'], [1400, 1000, false, '#step=8']]) {
    const { page, errors } = await open(browser, r.html, frag, [w, h]);
    const at = `${w}\u00d7${h} ${frag}`;
    // the staircase fills the box it was drawn for: drawn after the layout settled
    const g = await geo(page), fs = present ? 1.3 : 1;
    const [bw, bh] = await page.$eval('#stair', (c) => [c.parentElement.clientWidth, c.parentElement.clientHeight]);
    const side = Math.min(bw - Math.round(104 * fs) - Math.round(96 * fs), bh - Math.round(52 * fs) - 28);
    ok(g.cell * g.n >= side - (g.cell >= 8 ? g.n : 1), `${at}: the staircase is ${Math.round(g.cell * g.n)} px in a box that holds ${side}`);
    const kvb = await boxOf(page, '#kv'), stb = await boxOf(page, '#stair');
    ok(kvb.height >= 0.4 * h && kvb.width >= 380, `${at}: the K/V panel is ${Math.round(kvb.width)}\u00d7${Math.round(kvb.height)} (at least 380 \u00d7 40 % of the height)`);
    const kv = await page.$eval('#kv', (c) => ({ rows: +c.dataset.rows, rh: +c.dataset.rh }));
    ok(kv.rows * kv.rh >= 0.3 * h, `${at}: the cache's ${kv.rows} rows take ${Math.round(kv.rows * kv.rh)} px`);
    ok(stb.height >= 0.35 * h, `${at}: the staircase panel is ${Math.round(stb.height)} px high`);
    ok(await page.evaluate(() => document.scrollingElement.scrollHeight <= innerHeight + 1 && document.scrollingElement.scrollWidth <= innerWidth + 1),
      `${at}: the page fits without scrolling`);
    const [x, y] = await cellCentre(page, 20, 3);
    await page.mouse.click(x, y);
    await page.mouse.move(2, 2);
    for (const other of ['#mem', '#kv', '#stair', '#overview'])
      if (await page.$eval(other, (e) => e.offsetParent !== null)) ok(apart(await boxOf(page, '#cell'), await boxOf(page, other)), `${at}: the value panel does not cover ${other}`);
    const px = await page.$eval('#story', (e) => parseFloat(getComputedStyle(e).fontSize));
    ok(present ? px >= 18 : px >= 14, `${at}: the story's type is ${px} px`);
    if (present) ok(await page.$eval('body', (b) => b.classList.contains('present')), 'present=1 opens projector mode');
    await page.screenshot({ path: resolve(WORK, `explorer_${w}x${h}${present ? '_projector' : ''}.png`) });
    ok(errors.length === 0, at + ': no error: ' + errors.join(' | '));
    await page.close();
  }
}

async function lessonPage(browser, file) {
  const size = statSync(file).size;
  ok(size < PAGE_LIMIT, `${file}: ${size} bytes, under 2 MiB`);
  const { page, errors, requests } = await open(browser, file);
  await page.keyboard.press('End');
  ok(errors.length === 0 && requests.length === 0, file + ': no error, no request: ' + errors.concat(requests).join(' | '));
  console.log(`check-browser: ${file}: ${(size / 1024).toFixed(0)} KiB, loads cleanly`);
  await page.close();
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
const t0 = Date.now();
const plain = run('plain', ['--prompt', '人工智能是', '--steps', '8']);
const win = run('window', ['--prompt', 'The KV cache', '--steps', '20', '--window', '12', '--sink', '2', '--kv-dtype', 'q8_0', '--heads-shown', '0,1']);
const bug = run('bug', ['--prompt', '人工智能是', '--steps', '4', '--article-bug', '--heads-shown', '0']);
const nocache = run('nocache', ['--no-cache', '--prompt', '人工智能是', '--steps', '3', '--heads-shown', '0-3']);
const odd = run('odd', ['--vocab', '1000', '--layers', '3', '--prompt-ids', '300,10,32,228,184,173,7', '--steps', '3']);
const viewed = run('viewed', ['--prompt', 'The KV cache', '--steps', '4', '--heads-shown', '0-5', '--html-view', 'head=3,step=2,view=scores']);
const long = run('long', ['--prompt', 'And Jacob set up a pillar of stone in Bethel. And Jacob set', '--steps', '8', '--heads-shown', '0-5']);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
try {
  await plainRun(browser, plain);
  await windowRun(browser, win);
  await bugRun(browser, bug);
  await noCacheRun(browser, nocache);
  await oddRun(browser, odd);
  await fragmentRun(browser, plain);
  await defaultViewRun(browser, viewed);
  await panelRun(browser, plain);
  await zoomRun(browser, plain);
  await layoutRun(browser, long);
  for (const f of LESSON_PAGES) await lessonPage(browser, f);
} finally {
  await browser.close();
}
console.log(`check-browser: ${checks} checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${WORK}/`);
