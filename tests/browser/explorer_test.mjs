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
async function open(browser, file) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 }, deviceScaleFactor: 1 });
  const errors = [], requests = [], url = pathToFileURL(file).href;
  page.on('console', (m) => {            // warnings are printed (the test's own pixel reads cause one)
    if (m.type() === 'error') errors.push(m.text());
    else if (m.type() === 'warning' && !/willReadFrequently/.test(m.text())) console.log('check-browser: warning: ' + m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (r.url() !== url) requests.push(r.url()); });
  await page.goto(url);
  await page.waitForSelector('body[data-step]');
  return { page, errors, requests };
}
const data = (page) => page.evaluate(() => JSON.parse(document.getElementById('kvscope-data').textContent));
const geo = (page) => page.$eval('#stair', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cell: +c.dataset.cell,
  rows: +c.dataset.rows, P: +c.dataset.positions }));
async function cellCentre(page, r, c) {
  const g = await geo(page), box = await (await page.$('#stair')).boundingBox();
  return [box.x + g.x0 + (c + 0.5) * g.cell, box.y + g.y0 + (r + 0.5) * g.cell];
}
// The pixel at the centre of staircase cell (r, c), read back from the canvas.
async function pixel(page, r, c) {
  const g = await geo(page);
  return page.$eval('#stair', (cv, [x, y]) => Array.from(cv.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3)),
    [Math.floor(g.x0 + (c + 0.5) * g.cell), Math.floor(g.y0 + (r + 0.5) * g.cell)]);
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
const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
try {
  await plainRun(browser, plain);
  await windowRun(browser, win);
  await bugRun(browser, bug);
  await noCacheRun(browser, nocache);
  await oddRun(browser, odd);
  for (const f of LESSON_PAGES) await lessonPage(browser, f);
} finally {
  await browser.close();
}
console.log(`check-browser: ${checks} checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${WORK}/`);
