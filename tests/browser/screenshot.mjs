// screenshot.mjs — a picture of an explorer page as a learner sees it, in the same
// headless Chromium the browser tests use (1600×900, 16:9; SHOT_SIZE=1280x720 for another):
//   node tests/browser/screenshot.mjs PAGE[#FRAGMENT] OUT.png [STEP [QUERY KEY]]
// A #fragment opens that view (#step=8&layer=1&head=4&view=weights&zoom=2&present=1);
// STEP "here" keeps the step the page opened on.
// opens PAGE from the file system, goes to decode step STEP (default or "last": the last), and
// hovers staircase cell (QUERY, KEY) when given (QUERY -1: the step's own row; KEY max:
// the key of the heaviest weight in that row, read from the page's own value panel). Run
// through tests/browser/run.sh, which installs what it needs: `make explorer-png`.
import { chromium } from 'playwright-core';
import { renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [PAGE_ARG, OUT, STEP, QUERY, KEY] = process.argv.slice(2);
const [PAGE, FRAG] = (PAGE_ARG || '').split('#');
const [VW, VH] = (process.env.SHOT_SIZE || '1600x900').split('x').map(Number);
if (!PAGE || !OUT) {
  console.error('usage: node tests/browser/screenshot.mjs PAGE OUT.png [STEP [QUERY KEY]]');
  process.exit(2);
}
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
try {
  const page = await browser.newPage({ viewport: { width: VW, height: VH }, deviceScaleFactor: 1 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(pathToFileURL(resolve(PAGE)).href + (FRAG ? '#' + FRAG : ''));
  await page.waitForSelector('body[data-step]');
  const n = await page.evaluate(() => JSON.parse(document.getElementById('kvscope-data').textContent).steps.length - 1);
  const here = await page.$eval('body', (b) => +b.dataset.step);
  const want = STEP === 'here' ? here : STEP === undefined || STEP === 'last' ? n : parseInt(STEP, 10);
  if (!(want >= 0 && want <= n)) throw Object.assign(new Error('step ' + STEP + ': the page has steps 0 to ' + n), { bad: true });
  const step = want;
  if (step !== here) {
    await page.keyboard.press('Home');
    for (let i = 0; i < step; i++) await page.keyboard.press('ArrowRight');
  }
  if (+(await page.$eval('body', (b) => b.dataset.step)) !== step) throw new Error('cannot reach step ' + step);
  if (QUERY !== undefined && KEY !== undefined) {
    const g = await page.$eval('#stair', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cell: +c.dataset.cell, rows: +c.dataset.rows,
      r0: +c.dataset.r0, c0: +c.dataset.c0 }));
    const box = await (await page.$('#stair')).boundingBox();
    const q = +QUERY < 0 ? g.rows - 1 : +QUERY;
    if (!(q >= 0 && q < g.rows) || !(KEY === 'max' || (+KEY >= 0 && +KEY <= q)))
      throw Object.assign(new Error('cell (' + QUERY + ', ' + KEY + '): not a cell of the ' + g.rows + ' rows shown'), { bad: true });
    const at = (k) => page.mouse.move(box.x + g.x0 + (k - g.c0 + 0.5) * g.cell, box.y + g.y0 + (q - g.r0 + 0.5) * g.cell);
    let key = +KEY;
    if (KEY === 'max') {
      let best = -1;
      for (let k = 0; k <= q; k++) {
        await at(k);
        const w = await page.$eval('#tip', (t) => (t.querySelector('.exact') ? +t.querySelector('.exact').dataset.weight : -1));
        if (w > best) best = w, key = k;
      }
    }
    await at(key);
  }
  if (errors.length) throw new Error(errors.join(' | '));
  const tmp = OUT + '.tmp.png';             // written beside OUT and renamed: never half a file
  try {
    await page.screenshot({ path: tmp });
    renameSync(tmp, OUT);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  console.log(`screenshot: ${OUT} (${PAGE}, step ${step})`);
} catch (e) {
  console.error('screenshot: ' + PAGE + ': ' + e.message);
  process.exitCode = e.bad ? 2 : 1;
} finally {
  await browser.close();
}
