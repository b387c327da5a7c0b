// Saves a PNG of a running local dashboard: `npx tsx scripts/browser/dashboard-screenshot.ts <url> <file.png>`
// (the README's picture: docs/images/dashboard.png, taken while `npm start -- --dashboard ...` runs).
import { writeFileSync } from 'node:fs';
import { launchChromium } from '../../test/browser/support/chromium.js';

const [url, file] = process.argv.slice(2);
if (url === undefined || file === undefined) {
  console.error('usage: tsx scripts/browser/dashboard-screenshot.ts <dashboard url> <file.png>');
  process.exit(2);
}
const browser = await launchChromium({ width: 1400, height: 1000 });
try {
  await browser.open(url);
  // Two snapshots drawn: the page has had one full update since it opened.
  const first = await browser.evaluate<string | undefined>('document.body.dataset.updated');
  while ((await browser.evaluate<string | undefined>('document.body.dataset.updated')) === first)
    await new Promise((resolve) => setTimeout(resolve, 200));
  writeFileSync(file, await browser.screenshot());
  console.log(`saved ${file}`);
} finally {
  await browser.close();
}
