#!/usr/bin/env bash
# npm run test:mutation [-- module ...]: mutation-tests the named modules of stryker.config.mjs (all by
# default) in a copy of the project whose `Stryker disable` comments are inert (stripped-copy.sh), and
# prints each file's raw score (no disables) next to the reported one (the comments applied) from
# reports/mutation/mutation.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
modules=$(IFS=,; echo "$*")
copy=$(mktemp -d "${TMPDIR:-/tmp}/mutation-XXXXXX")
trap 'rm -rf "$copy"' EXIT
bash scripts/mutation/stripped-copy.sh "$copy"
(cd "$copy" && MUTATION_MODULES="$modules" npx stryker run stryker.config.mjs)
mkdir -p reports/mutation
cp "$copy/reports/mutation/mutation.json" reports/mutation/mutation.json
npx tsx scripts/mutation/scores.ts reports/mutation/mutation.json
