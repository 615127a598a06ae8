#!/usr/bin/env bash
# The test command of the README: sets up what the tests need, then runs them.
#   infra/test.sh            every test
#   infra/test.sh -p some-jobs synth   (arguments go to cargo test)
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
ensure_rabbitmq
ensure_openai_client
ensure_delta_readers
ensure_chromium
# The CUDA kernels compile (NVRTC + ptxas, no GPU needed), a broken kernel
# fails that check, and the `cuda` build's tests pass (the GPU parity test
# prints why it is skipped where there is no GPU).
"$SOME_ROOT/infra/cuda-check.sh" --self-test --rust
say "checking the direction of dependencies between crates and modules"
infra/check-deps.sh
# The end-to-end tests run the `some` binary as a user does; `cargo test`
# builds test harnesses, not that binary. The same build as infra/demo.sh,
# so after the demo this compiles nothing.
build_workspace
say "running the tests"
cargo test --workspace --locked --no-fail-fast "$@"
