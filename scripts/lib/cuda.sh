# Sourced by scripts/check-cuda-build and scripts/build-gpu: NVIDIA's CUDA toolkit as pinned
# PyPI wheels, the environment candle's and cudarc's build scripts read, and a stub driver
# library to link against on a machine without the NVIDIA driver.
#
# The toolkit is CUDA 13.0, the oldest of the 13 series, on purpose: candle's kernels ship as
# PTX, which the driver compiles when the model loads, and a driver rejects PTX from a newer
# toolkit than its own CUDA version (nvidia-smi's "CUDA Version"). 13.0 PTX loads on every
# CUDA 13 driver (580 and later). For the same reason cudarc binds the 13.0 API
# (CUDARC_CUDA_VERSION=13000): a binary that links a newer driver function does not start
# under an older driver.
#
# Two things stand in for what only a GPU host has:
# - CUDA_COMPUTE_CAP (default 80): the kernels' PTX targets compute capability 8.0, the first
#   with bf16 arithmetic (A100, RTX 30 series); the driver compiles it for newer GPUs (H100:
#   9.0) at the first load and caches the result.
# - A stub libcuda.so (the driver library, which ships with the NVIDIA driver, not the
#   toolkit), in the toolkit's lib/stubs as real toolkits have it: every driver function
#   the build refers to, each returning CUDA_ERROR_UNKNOWN. It is only linked against; on a
#   GPU host the driver's own libcuda.so.1 is loaded instead.

cuda_dir="${MEMORIA_CUDA_DIR:-$HOME/.cache/memoria/cuda-13.0}"
cuda_wheels=(
    nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-cccl==13.0.85
    nvidia-cublas==13.0.2.14 nvidia-curand==10.4.0.35
)

# Installs the wheels (once) and exports PATH, CUDA_ROOT and the rest for cargo.
cuda_toolkit() {
    [ -x "$cuda_dir/venv/bin/python" ] || python3 -m venv "$cuda_dir/venv"
    "$cuda_dir/venv/bin/pip" install --quiet --disable-pip-version-check "${cuda_wheels[@]}"
    cuda="$("$cuda_dir/venv/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')"
    echo "CUDA toolkit (wheels): $cuda"
    "$cuda/bin/nvcc" --version | tail -n 2
    export PATH="$cuda/bin:$PATH" CUDA_ROOT="$cuda" CUDA_PATH="$cuda" CUDA_HOME="$cuda"
    export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-80}" CUDARC_CUDA_VERSION=13000
    export LD_LIBRARY_PATH="$cuda/lib/stubs:$cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # The link directory exists before the first build: cudarc's build script adds only the
    # library directories that exist when it runs (and is not run again), so on a fresh
    # toolkit a later-made lib/stubs was never searched and the binary failed to link.
    mkdir -p "$cuda/lib/stubs"
    for lib in nvrtc curand cublas cublasLt cudart; do
        ln -sf "$(ls "$cuda/lib/lib$lib.so."* | head -n 1)" "$cuda/lib/stubs/lib$lib.so"
    done
}

# Writes the stub libcuda.so from the driver functions that the compiled libraries of
# target/$1 (debug or release) refer to: build the library first (no linking), then this,
# then the binary.
cuda_stub_driver() {
    local stubs="$cuda/lib/stubs"
    local deps="${CARGO_TARGET_DIR:-target}/$1/deps"
    nm -u "$deps"/libcudarc-*.rlib "$deps"/libcandle_core-*.rlib 2>/dev/null \
        | awk '$2 ~ /^cu[A-Z]/ {print "int " $2 "(void) { return 999; }"}' | sort -u > "$stubs/libcuda-stub.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stubs/libcuda.so" "$stubs/libcuda-stub.c"
    ln -sf libcuda.so "$stubs/libcuda.so.1"
    echo "stub libcuda.so: $(wc -l < "$stubs/libcuda-stub.c") driver functions"
}
