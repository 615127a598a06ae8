#!/usr/bin/env bash
# Compiles every CUDA kernel without a GPU, as CI does: NVRTC to PTX for
# sm_80 and sm_90, then ptxas to SASS for sm_90, printing registers and
# spills per kernel; fails on any compiler error.
#   infra/cuda-check.sh              the kernels the binary embeds
#   infra/cuda-check.sh DIR          the kernels in DIR (canonical.cuh,
#                                    tensor.cuh, nvrtc-options.txt and
#                                    *.cu files)
#   infra/cuda-check.sh --self-test  also shows that a broken kernel fails
#   infra/cuda-check.sh --rust       also builds some-jobs with `--features
#                                    cuda` and runs its kernel tests with the
#                                    wheel's libnvrtc (cudarc compiles the
#                                    kernels as the binary does) and the GPU
#                                    parity test (skipped without a GPU)
#   infra/cuda-check.sh --bench      also runs the GPU benchmark (skipped
#                                    without a GPU)
# NVRTC and ptxas come from NVIDIA's PyPI wheels (pinned), installed once
# into a venv under $SOME_CACHE.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

NVRTC_WHEEL="nvidia-cuda-nvrtc-cu12==12.9.86"
NVCC_WHEEL="nvidia-cuda-nvcc-cu12==12.9.86"

ensure_cuda_compilers() {
  local venv="$SOME_CACHE/cuda-venv"
  CUDA_PY="$venv/bin/python"
  if [ ! -x "$CUDA_PY" ]; then
    say "creating a Python venv in $venv"
    make_venv "$venv"
  fi
  local site
  site="$("$CUDA_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  LIBNVRTC="$site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
  PTXAS="$site/nvidia/cuda_nvcc/bin/ptxas"
  if [ -f "$LIBNVRTC" ] && [ -x "$PTXAS" ] && "$venv/bin/pip" show nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12 2>/dev/null | grep -c "^Version: 12.9.86$" | grep -q "^2$"; then
    return 0
  fi
  say "installing $NVRTC_WHEEL and $NVCC_WHEEL into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$NVRTC_WHEEL" "$NVCC_WHEEL"
}

# Fails if checking a copy of the kernels with one line broken succeeds.
self_test() {
  local broken
  broken="$(mktemp -d)"
  trap 'rm -rf "$broken"' RETURN
  cp "$SOME_ROOT/jobs/src/kernels/cuda/"* "$broken/"
  # An undeclared name in the top-k kernel: a compile error NVRTC must report.
  sed -i 's/const float rinv = row_inv\[row\];/const float rinv = row_inverse[row];/' "$broken/topk.cu"
  grep -q 'row_inverse\[row\]' "$broken/topk.cu" || { say "self-test: could not break topk.cu"; return 1; }
  if "$CUDA_PY" "$SOME_ROOT/infra/cuda_check.py" "$broken" "$LIBNVRTC" "$PTXAS" "$broken/out" >"$broken/log" 2>&1; then
    say "self-test FAILED: the check passed a broken kernel"
    return 1
  fi
  grep -q 'row_inverse' "$broken/log" || { say "self-test FAILED: the error does not name the broken line"; cat "$broken/log" >&2; return 1; }
  say "self-test passed: a broken kernel fails the check:"
  grep -m1 'error' "$broken/log" >&2
}

# The Rust side: cudarc's NVRTC path and the parity test's skip line.
rust_tests() {
  say "testing some-jobs --features cuda (libnvrtc from the wheel)"
  with_nvrtc cargo test -p some-jobs --features cuda --locked --lib --test cuda_parity -- kernels::cuda kernels::choice
}

with_nvrtc() {
  LD_LIBRARY_PATH="$(dirname "$LIBNVRTC")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}

ensure_cuda_compilers
dir="$SOME_ROOT/jobs/src/kernels/cuda"
test_broken=0
test_rust=0
bench=0
for arg in "$@"; do
  case "$arg" in
    --self-test) test_broken=1 ;;
    --rust) test_rust=1 ;;
    --bench) bench=1 ;;
    *) dir="$arg" ;;
  esac
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
say "compiling the CUDA kernels in $dir (NVRTC 12.9, sm_80 and sm_90; ptxas sm_90)"
"$CUDA_PY" "$SOME_ROOT/infra/cuda_check.py" "$dir" "$LIBNVRTC" "$PTXAS" "$out"
if [ "$test_broken" = 1 ]; then self_test; fi
if [ "$test_rust" = 1 ]; then rust_tests; fi
if [ "$bench" = 1 ]; then with_nvrtc cargo bench -p some-jobs --features cuda --locked --bench cuda; fi
