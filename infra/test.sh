#!/usr/bin/env bash
# The test command of the README: sets up what the tests need, then runs them.
#   infra/test.sh            every test
#   infra/test.sh -p some-jobs synth   (arguments go to cargo test)
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
ensure_build_tools
ensure_rabbitmq
ensure_openai_client
# The CUDA kernels compile (NVRTC + ptxas, no GPU needed), a broken kernel
# fails that check, and the `cuda` build's tests pass (the GPU parity test
# prints why it is skipped where there is no GPU).
"$SOME_ROOT/infra/cuda-check.sh" --self-test --rust
# The end-to-end tests run the `some` binary as a user does; `cargo test`
# builds test harnesses, not that binary. (The same targets as `cargo test
# --workspace`, so dependencies build once, with the same features.)
say "checking the direction of dependencies between crates and modules"
infra/check-deps.sh
say "building the some binary (target folder: $CARGO_TARGET_DIR)"
cargo build --workspace --bins --tests --locked
say "running the tests"
cargo test --workspace --locked --no-fail-fast "$@"
