#!/usr/bin/env bash
# The main command of the README: the embedded default, start to finish, on
# this machine (local-folder lake, in-process queue, CPU kernels, built-in
# models served over loopback HTTP).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
ensure_build_tools
say "building some (release profile; the first build takes a while)"
cargo build --release --locked -p some
export SOME_LAKE="${SOME_LAKE:-$SOME_ROOT/some-lake}"
exec "$CARGO_TARGET_DIR/release/some" demo "$@"
