#!/usr/bin/env bash
# Runs every Fuzz* target of the module for a short time each.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //' | sort -u); do
    echo "== $pkg $f"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
  done
done
