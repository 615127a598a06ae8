"""Compiles the CUDA kernels without a GPU: NVRTC to PTX, ptxas to SASS.

The sources are the files the binary embeds (jobs/src/kernels/cuda): each
`*.cu` file is compiled after `canonical.cuh` and `tensor.cuh`, with the
options listed in `nvrtc-options.txt`, as jobs/src/kernels/cuda.rs does at
run time. For each architecture the PTX is assembled with `ptxas -v`, whose
report gives the registers, spills and shared memory of every kernel.

    python cuda_check.py KERNEL_DIR LIBNVRTC PTXAS OUT_DIR

Exits 1 (naming the file and the compiler's log) on any error.
"""

import ctypes
import pathlib
import re
import subprocess
import sys

ARCHS = ["sm_80", "sm_90"]
# What every module starts with, in order (as jobs/src/kernels/cuda.rs compiles them).
PRELUDE = ["canonical.cuh", "tensor.cuh"]


def nvrtc_compile(lib, name, source, options):
    prog = ctypes.c_void_p()
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None), name)
    opts = [o.encode() for o in options]
    array = (ctypes.c_char_p * len(opts))(*opts)
    status = lib.nvrtcCompileProgram(prog, len(opts), array)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if status != 0:
        sys.exit(f"cuda-check: NVRTC failed on {name} ({' '.join(options)}):\n{log.value.decode(errors='replace')}")
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetPTX(prog, ptx), name)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ptx.value.decode()


def check(lib, status, name):
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        sys.exit(f"cuda-check: NVRTC error on {name}: {lib.nvrtcGetErrorString(status).decode()}")


def main():
    kernel_dir, libnvrtc, ptxas, out_dir = map(pathlib.Path, sys.argv[1:5])
    lib = ctypes.CDLL(str(libnvrtc))
    common = "\n".join((kernel_dir / name).read_text() for name in PRELUDE)
    options = (kernel_dir / "nvrtc-options.txt").read_text().split()
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = sorted(kernel_dir.glob("*.cu"))
    if not sources:
        sys.exit(f"cuda-check: no .cu files in {kernel_dir}")
    for path in sources:
        for arch in ARCHS:
            ptx = nvrtc_compile(lib, path.name, common + "\n" + path.read_text(), options + [f"--gpu-architecture={arch}"])
            ptx_path = out_dir / f"{path.stem}.{arch}.ptx"
            ptx_path.write_text(ptx)
            kernels = re.findall(r"\.entry\s+(\w+)", ptx)
            print(f"{path.name} {arch}: PTX for {len(kernels)} kernels")
            if arch != "sm_90":
                continue
            run = subprocess.run([str(ptxas), "-v", f"-arch={arch}", "-o", str(out_dir / f"{path.stem}.{arch}.cubin"), str(ptx_path)],
                                 capture_output=True, text=True)
            report = run.stdout + run.stderr
            if run.returncode != 0:
                sys.exit(f"cuda-check: ptxas failed on {ptx_path}:\n{report}")
            for line in summarise(report):
                print("  " + line)


def summarise(report):
    """One line per kernel: registers, spill bytes, shared memory."""
    name, stack, spills = None, None, None
    for line in report.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            name = m.group(1)
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            stack, spills = m.group(1), f"{m.group(2)}/{m.group(3)}"
        m = re.search(r"Used (\d+) registers(.*)", line)
        if m and name:
            smem = re.search(r"(\d+) bytes smem", m.group(2))
            yield f"{name}: {m.group(1)} registers, spill stores/loads {spills} bytes, stack {stack} bytes, static smem {smem.group(1) if smem else 0} bytes"
            name = None


if __name__ == "__main__":
    main()
