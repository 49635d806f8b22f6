// speedscope's time-order view of the profile at URL, read as a user reads it: hovering the
// flame chart shows a tooltip naming the frame under the pointer. Finds the row below the frame
// named ROOT (the row of ROOT's callees), then hovers along it from left to right and prints,
// as JSON, the chart's width and the name under each of STEPS points: {"width", "names": [[x, name]]}.
//
// node time_order_row.js URL ROOT STEPS   (playwright-core from NODE_PATH; Chromium at CHROMIUM)
const { chromium } = require('playwright-core');

const [url, root, steps] = [process.argv[2], process.argv[3], Number(process.argv[4] || 200)];

// The tooltip's frame name: a line "603.26ms (>99%) main".
function tooltipName(text) {
  for (const line of text.split('\n')) {
    const m = line.match(/^\s*[\d.,]+\s*[a-zµ]+\s+\([^)]*\)\s+(.+)$/);
    if (m) return m[1].trim();
  }
  return null;
}

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(url);
    // The flame chart: the tallest canvas but the page-wide overlay.
    await page.waitForFunction(() => document.querySelectorAll('canvas').length >= 3, null, { timeout: 30000 });
    const boxes = await page.$$eval('canvas', cs => cs.map(c => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }));
    const [x0, y0, width, height] = boxes.filter(b => b[1] > 0).sort((a, b) => b[3] - a[3])[0];
    // The tooltip follows the pointer on the next frame drawn: on a busy machine, later.
    const nameAt = async (x, y) => {
      await page.mouse.move(x, y);
      for (let tries = 0; tries < 10; tries++) {
        await page.waitForTimeout(20);
        const name = tooltipName(await page.evaluate(() => document.body.innerText));
        if (name !== null) return name;
      }
      return null;
    };
    // Down a column, to the first point past ROOT's row; columns across the chart until one
    // has it (where the thread was not sampled, a column is empty).
    let below = null;
    for (let c = 0; c < 16 && below === null; c++) {
      let seenRoot = false;
      for (let y = y0 + 2; y < y0 + height; y += 3) {
        const name = await nameAt(x0 + (c * 7 % 16 + 0.5) * width / 16, y);
        if (name === root) seenRoot = true;
        else if (seenRoot) { below = y + 4; break; }
      }
    }
    if (below === null) throw new Error(`no row below ${root}`);
    const names = [];
    for (let i = 0; i < steps; i++) {
      const x = x0 + (i + 0.5) * width / steps;
      names.push([x - x0, await nameAt(x, below)]);
    }
    console.log(JSON.stringify({ width, names }));
  } finally {
    await browser.close();
  }
})().catch(e => { console.error(e.message); process.exit(1); });
