#!/usr/bin/env bash
# Dependencies between the crates point one way:
#   pipeline -> workers -> jobs -> schemas
# A crate may depend only on crates to its right.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
check() { # crate, allowed workspace dependencies...
  local crate=$1; shift
  local deps
  deps=$(grep -oE '^some-[a-z]+' "$crate/Cargo.toml" || true)
  for d in $deps; do
    if [[ " $* " != *" $d "* ]]; then
      echo "$crate must not depend on $d" >&2
      fail=1
    fi
  done
}
check schemas
check jobs some-schemas
check workers some-schemas some-jobs
check pipeline some-schemas some-jobs some-workers
[ $fail -eq 0 ] && echo "crate dependencies point one way"
exit $fail
