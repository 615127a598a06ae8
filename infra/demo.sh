#!/usr/bin/env bash
# The main command of the README: the embedded default, start to finish, on
# this machine (local-folder lake, in-process queue, CPU kernels, built-in
# models served over loopback HTTP).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
build_workspace
export SOME_LAKE="${SOME_LAKE:-$SOME_ROOT/some-lake}"
say "running some demo (about 4 min on 2 cores)"
exec "$CARGO_TARGET_DIR/debug/some" demo "$@"
