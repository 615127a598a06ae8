#!/usr/bin/env bash
# The test command of the README: sets up what the tests need, then runs them.
#   infra/test.sh            every test
#   infra/test.sh -p some-jobs synth   (arguments go to cargo test)
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
ensure_build_tools
ensure_s3s_fs
ensure_rabbitmq
say "running the tests (target folder: $CARGO_TARGET_DIR)"
cargo test --workspace --locked "$@"
