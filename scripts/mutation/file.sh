#!/usr/bin/env bash
# bash scripts/mutation/file.sh <file to mutate> <test glob>...: mutation-tests ONE file against only the
# tests that exercise it (MUTATION_TESTS, read by vitest.mutation.config.mts), at nice 15, with 2 Stryker
# workers when the machine is quiet (1-minute load < 3) and 1 otherwise. The run happens in a copy of the
# project whose `Stryker disable` comments are made inert (stripped-copy.sh), so every mutant runs; scores.ts
# prints the file's raw score (no disables) next to the reported one (the comments applied). The report is
# reports/mutation/mutation.json, also copied to reports/mutation/<file's base name>.json.
# MUTATION_CONCURRENCY sets the workers; MUTATION_TIMEOUT_MS Stryker's timeoutMS (the config's 20 s makes
# every mutant that loops cost 20 s; 5000 suits the pool's fake-timer tests).
# Survivors of a narrowed run may be killed by tests left out: its scores are lower bounds.
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
concurrency=${MUTATION_CONCURRENCY:-1}
if [ -z "${MUTATION_CONCURRENCY:-}" ] && awk -v l="$load" 'BEGIN { exit !(l < 3) }'; then concurrency=2; fi
copy=$(mktemp -d "${TMPDIR:-/tmp}/mutation-XXXXXX")
trap 'rm -rf "$copy"' EXIT
bash scripts/mutation/stripped-copy.sh "$copy"
echo "mutating $file against $tests (load $load: concurrency $concurrency; disables inert in $copy)"
(cd "$copy" && MUTATION_TESTS="$tests" nice -n 15 npx stryker run stryker.config.mjs --mutate "$file" \
  --concurrency "$concurrency" ${MUTATION_TIMEOUT_MS:+--timeoutMS "$MUTATION_TIMEOUT_MS"})
mkdir -p reports/mutation
cp "$copy/reports/mutation/mutation.json" reports/mutation/mutation.json
cp reports/mutation/mutation.json "reports/mutation/$(basename "$file" .ts).json"
npx tsx scripts/mutation/scores.ts reports/mutation/mutation.json
