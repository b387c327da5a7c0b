#!/usr/bin/env bash
# bash scripts/mutation/stripped-copy.sh <dir>: copies the project (without .git, node_modules and reports;
# node_modules is linked) to <dir> with every `Stryker disable` / `Stryker restore` comment in lib/ made
# inert (the text changes, the line numbers do not), so a Stryker run there reports what each disabled
# mutant really does. scores.ts then applies the original comments to that report for the reported score.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=$1
rm -rf "$dest"
mkdir -p "$dest"
tar --exclude=./node_modules --exclude=./.git --exclude=./reports --exclude=./.stryker-tmp \
  --exclude=./dist --exclude=./cdk.out --exclude=./.local-aws -cf - . | tar -xf - -C "$dest"
ln -s "$PWD/node_modules" "$dest/node_modules"
find "$dest/lib" -name '*.ts' -exec sed -i -E 's/Stryker (disable|restore)/Stryker-inert \1/g' {} +
if grep -rqE 'Stryker (disable|restore)' "$dest/lib"; then
  echo "stripped-copy: a Stryker directive survived in $dest/lib" >&2
  exit 1
fi
