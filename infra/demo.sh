#!/usr/bin/env bash
# The main command of the README: the embedded default, start to finish, on
# this machine (local-folder lake, in-process queue, CPU kernels).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
say "building some (release profile; the first build takes a while)"
cargo build --release --locked -p some
SOME="$CARGO_TARGET_DIR/release/some"
export SOME_LAKE="${SOME_LAKE:-$SOME_ROOT/some-lake}"
"$SOME" ingest queries
"$SOME" synth --scale small --replace
"$SOME" check --answers
"$SOME" sql "SELECT task, count(*) AS queries FROM queries GROUP BY task ORDER BY task"
