#!/usr/bin/env bash
# npm run test:mutation [-- module ...]: mutation-tests the named modules of stryker.config.mjs (all by
# default) and prints each file's score from reports/mutation/mutation.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
modules=$(IFS=,; echo "$*")
MUTATION_MODULES="$modules" npx stryker run stryker.config.mjs
npx tsx scripts/mutation/scores.ts reports/mutation/mutation.json
