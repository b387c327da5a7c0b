#!/usr/bin/env bash
# bash scripts/mutation/file.sh <file to mutate> <test glob>...: mutation-tests ONE file against only the
# tests that exercise it (MUTATION_TESTS, read by vitest.mutation.config.mts), at nice 10, with 2 Stryker
# workers when the machine is quiet (1-minute load < 3) and 1 otherwise; prints the file's score. The
# report is reports/mutation/mutation.json, also copied to reports/mutation/<file's base name>.json.
# Survivors of a narrowed run may be killed by tests left out: its score is a lower bound.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 2 ]; then
  echo "usage: $0 <file to mutate> <test glob>..." >&2
  exit 2
fi
file=$1
shift
tests=$(IFS=,; echo "$*")
load=$(cut -d' ' -f1 /proc/loadavg)
concurrency=1
if awk -v l="$load" 'BEGIN { exit !(l < 3) }'; then concurrency=2; fi
echo "mutating $file against $tests (load $load: concurrency $concurrency)"
MUTATION_TESTS="$tests" nice -n 10 npx stryker run stryker.config.mjs --mutate "$file" --concurrency "$concurrency"
cp reports/mutation/mutation.json "reports/mutation/$(basename "$file" .ts).json"
npx tsx scripts/mutation/scores.ts reports/mutation/mutation.json
