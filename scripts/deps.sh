#!/usr/bin/env bash
# Installs what the project needs on a Debian 12 machine, only what is missing.
# Usage: scripts/deps.sh [run|test|bench]
set -euo pipefail
want=(postgresql-15 postgresql-client-15)
case "${1:-run}" in
  test)  want+=(pgbouncer haproxy python3-psycopg patroni etcd-server etcd-client libpam0g-dev gcc prometheus)
         # node-postgres tests need node and npm; the machine image brings
         # its own Node.js, Debian's is the fallback.
         command -v npm >/dev/null || want+=(nodejs npm) ;;
  bench) want+=(pgbouncer haproxy strace linux-perf) ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "Go is missing: install Go 1.26 (https://go.dev/dl) and retry" >&2; exit 1; }
