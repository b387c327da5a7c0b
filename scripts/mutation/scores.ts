/**
 * Prints each mutated file's score from a Stryker JSON report (mutation-testing-elements schema), the way
 * the README reports them: killed + timeout over all mutants that ran (static mutants are not generated;
 * ignored mutants carry a reason in the source and are not counted). Exits 1 when a file is under 85 %.
 */
import { readFileSync } from 'node:fs';

interface Mutant {
  readonly status: string;
}
interface Report {
  readonly files: Record<string, { readonly mutants: readonly Mutant[] }>;
}

const TARGET_PERCENT = 85;
const path = process.argv[2] ?? 'reports/mutation/mutation.json';
const report = JSON.parse(readFileSync(path, 'utf8')) as Report;

const rows = Object.entries(report.files).map(([file, { mutants }]) => {
  const count = (status: string): number => mutants.filter((m) => m.status === status).length;
  const detected = count('Killed') + count('Timeout');
  const undetected = count('Survived') + count('NoCoverage');
  const valid = detected + undetected;
  const score = valid === 0 ? 100 : (100 * detected) / valid;
  return {
    file,
    score,
    detected,
    survived: count('Survived'),
    noCoverage: count('NoCoverage'),
    ignored: count('Ignored'),
  };
});

console.log('| file | score | killed+timeout | survived | no coverage | ignored |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.file} | ${r.score.toFixed(1)} % | ${r.detected} | ${r.survived} | ${r.noCoverage} | ${r.ignored} |`,
  );
}
const under = rows.filter((r) => r.score < TARGET_PERCENT);
if (under.length > 0) {
  console.error(`under ${TARGET_PERCENT} %: ${under.map((r) => r.file).join(', ')}`);
  process.exitCode = 1;
}
