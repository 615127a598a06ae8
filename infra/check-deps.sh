#!/usr/bin/env bash
# Dependencies between the crates point one way:
#   pipeline -> workers -> sim (jobs/sim) -> jobs -> schemas
#   workers -> annotate (jobs/annotate) -> jobs
# A crate may depend only on crates to its right; inside a crate, sibling
# modules import each other without a loop (infra/check-modules.py).
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
check jobs/sim some-schemas some-jobs
check jobs/annotate some-schemas some-jobs
check workers some-schemas some-jobs some-sim some-annotate
check pipeline some-schemas some-jobs some-sim some-annotate some-workers
python3 infra/check-modules.py schemas/src jobs/src jobs/sim/src jobs/annotate/src workers/src pipeline/src || fail=1
[ $fail -eq 0 ] && echo "crate dependencies point one way; no module import loops"
exit $fail
