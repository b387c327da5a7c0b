#!/usr/bin/env bash
# Makes sure the browser `npm run test:browser` drives is installed: Debian's `chromium` (headless, over the
# DevTools protocol; no browser download). As root (CI, a fresh machine) it installs it from Debian's archive
# when missing; as anyone else it names the command to run and fails, so a developer's machine is never
# changed behind their back. CHROMIUM=/path/to/chrome skips the check and uses that binary.
set -euo pipefail

if [ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" -ne 0 ]; then
  echo "test:browser needs Chromium, which is not installed. Install it as root, then run it again:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends chromium" >&2
  echo "(or point CHROMIUM at a Chrome or Chromium binary)" >&2
  exit 1
fi

echo "test:browser: installing chromium (apt-get, about a minute)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "test:browser: installed $(chromium --version)" >&2
