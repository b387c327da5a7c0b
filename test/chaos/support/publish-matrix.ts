// `npm run chaos:publish`: takes the last full fault-matrix run (results/fault-matrix.latest.json, written
// by `npm run test:chaos`, ignored by git) into the tracked results/fault-matrix.json and the tables of
// test/chaos/README.md. A person runs it and commits the two files.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { publishMatrix, readMatrixResults } from './matrix-report.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const latest = here('../results/fault-matrix.latest.json');
if (!existsSync(latest)) {
  console.error(`chaos:publish: ${latest} not found; run \`npm run test:chaos\` first`);
  process.exit(1);
}
publishMatrix(readMatrixResults(latest), {
  json: here('../results/fault-matrix.json'),
  chaosReadme: here('../README.md'),
});
console.log(
  'chaos:publish: wrote test/chaos/results/fault-matrix.json and the tables of test/chaos/README.md',
);
