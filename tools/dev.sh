#!/usr/bin/env bash
# Set-up, build and run entry point used by the README's two commands and CI.
#
#   tools/dev.sh run    install missing packages, build, compile the bundled
#                       default config and run the result
#   tools/dev.sh test   install missing packages, build, run the whole suite
#   tools/dev.sh build  install missing packages and build only
#   tools/dev.sh packages  install missing packages only
#   tools/dev.sh asan-test  build with AddressSanitizer and UBSan (build-asan/:
#                       tools, runtime and the executables they compile) and
#                       run the whole suite with it (CI runs it)
#   tools/dev.sh asan-build [TARGET...]  build (all of) build-asan/ only
#   tools/dev.sh gcc-check  also build attn-compile with g++ (build-gcc/) and
#                       check that it generates the same IR as the clang
#                       build for every config of the suite (CI runs it)
#
# Idempotent: packages already present are not touched, and the build is
# incremental (Ninja). BUILD_DIR overrides the build directory (default build/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
LLVM_PREFIX=/usr/lib/llvm-22
JOBS="${JOBS:-2}"
# ccache caches sources compiled with the precompiled header (ATTN_PCH) only
# with this sloppiness.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"

PACKAGES=(cmake ninja-build ccache clang-22 lld-22 libomp-22-dev libopenblas-dev llvm-22-dev llvm-22-tools
          libmlir-22-dev mlir-22-tools nlohmann-json3-dev python3-numpy libclang-rt-22-dev
          libopenmpi-dev openmpi-bin)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing missing packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

configure() {
  if [ -f "$BUILD_DIR/build.ninja" ]; then
    return 0 # Ninja re-runs CMake by itself when a CMakeLists.txt changes.
  fi
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "$@" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_DIR="$LLVM_PREFIX/lib/cmake/llvm" >/dev/null
}

# The sanitizer build: AddressSanitizer and UBSan on the tools, the runtime
# and the executables attn-compile links, and the libFuzzer targets
# (tools/fuzz.sh) in the same tree, so one build serves both.
ASAN_DIR="${ASAN_BUILD_DIR:-$ROOT/build-asan}"
configure_asan() {
  configure -DATTN_SANITIZE=address,undefined -DATTN_BUILD_FUZZERS=ON
}

build() {
  install_missing
  configure
  ninja -C "$BUILD_DIR" -j "$JOBS" "$@"
}

# Runs check-attn in $BUILD_DIR; prints lit's summary, then the plain
# "LABEL: N passed, N failed" line CI reads. Exits with lit's status.
run_suite() {
  local label="$1" log="$BUILD_DIR/check-attn.log" status=0
  ninja -C "$BUILD_DIR" -j "$JOBS" check-attn 2>&1 | tee "$log" || status=$?
  passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  failed=$({ grep -E '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:' "$log" || true; } |
           sed 's/.*: *\([0-9]*\).*/\1/' | awk '{s += $1} END {print s + 0}')
  echo "$label: ${passed:-0} passed, ${failed} failed"
  exit "$status"
}

cmd="${1:-run}"
case "$cmd" in
  packages)
    install_missing
    ;;
  build)
    build
    ;;
  gcc-check)
    build
    GCC_DIR="${GCC_BUILD_DIR:-$ROOT/build-gcc}"
    if [ ! -f "$GCC_DIR/build.ninja" ]; then
      # -O1: the order g++ evaluates arguments in (what the check is for)
      # does not depend on the optimization level, and -O3 took a third
      # longer to build. A unity build (each target's sources compiled a
      # batch at a time) instantiates MLIR's templates once per batch: 4 min
      # 42 s instead of 9 min 30 s cold on 2 cores. It needs distinct names
      # across a target's files, anonymous namespaces included.
      cmake -S "$ROOT" -B "$GCC_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
        -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
        -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
        -DLLVM_DIR="$LLVM_PREFIX/lib/cmake/llvm" >/dev/null
    fi
    ninja -C "$GCC_DIR" -j "$JOBS" attn-compile
    "$ROOT/tools/check-host-compiler.sh" "$BUILD_DIR" "$GCC_DIR"
    # The g++ build's runtime libraries (attn-compile depends on them) link
    # the executables it compiles: MPI ones (runtime/distributed/ and
    # runtime/run/mpi_*.cpp, built by g++) included.
    if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
      ninja -C "$GCC_DIR" -j "$JOBS" attn-opt
      PATH="$LLVM_PREFIX/bin:$PATH" lit -q "$GCC_DIR/test/Integration/mpi.test"
    fi
    ;;
  test)
    build
    run_suite lit
    ;;
  asan-build)
    # The sanitizer build (also tools/fuzz.sh's): targets given, or all.
    shift
    install_missing
    BUILD_DIR="$ASAN_DIR"
    configure_asan
    ninja -C "$BUILD_DIR" -j "$JOBS" "$@"
    ;;
  asan-test)
    install_missing
    BUILD_DIR="$ASAN_DIR"
    configure_asan
    # Under the sanitizers attn-compile instruments every kernel it emits
    # and LLVM takes twice as long on them: the whole suite took 28 min on
    # 2 cores. Unless ATTN_ASAN_ALL=1, it leaves out (lit counts them
    # "Excluded") tests whose sanitizer coverage others repeat: the float64
    # comparisons of every family (families: the layer kernels and `block`
    # run instrumented in block, qwen3-next-block, block-errors and
    # layer-errors), of Gated DeltaNet's shapes (gdn-kernel: its kernels
    # run in qwen3-next-block), of the latent-attention families (mla-families:
    # mla runs their kernels, blocks and decode), of the bf16/f16 contiguous kernels
    # (kv-dtype-sdpa: c-api runs bf16/f16 paged caches), bench's output
    # (bench-flops and exe-errors run `bench`), the output kinds that
    # parse no input of their own (install, emit, output-targets, ptx), and
    # the stage dumps whose work is upstream code the sanitizers do not
    # instrument (parse-stages: print and parse back every pass's IR;
    # cpu-stages: LLVM's -O levels and assembly; 148 s and 131 s of the
    # suite's 1497 s on 2 cores, 2026-12-04).
    if [ "${ATTN_ASAN_ALL:-0}" != 1 ]; then
      export LIT_FILTER_OUT="${LIT_FILTER_OUT:-(Integration/(families|mla-families|gdn-kernel|kv-dtype-sdpa|bench|install|emit|output-targets|parse-stages)\.test|GPU/ptx\.test|Driver/cpu-stages\.test)\$}"
    fi
    run_suite "lit (ASan+UBSan)"
    ;;
  run)
    build
    "$ROOT/tools/run-default.sh" "$BUILD_DIR"
    ;;
  *)
    echo "usage: tools/dev.sh [run|test|build|packages|gcc-check|asan-test|asan-build]" >&2
    exit 2
    ;;
esac
