# -*- Python -*-
# lit configuration for the attn compiler's regression suite.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".json", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

config.substitutions.append(("%attn_src_root", config.attn_src_root))
config.substitutions.append(("%attn_obj_root", config.attn_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"])
llvm_config.use_default_substitutions()
# FileCheck, not, count and split-file come from LLVM's tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
# attn-compile verifies the IR after every pass here (attn-opt always does),
# so that a pass that breaks the IR fails at that pass. Not in the sanitizer
# build: its suite runs attn-compile as users do (the result verified once).
if not config.attn_sanitize:
    config.environment["ATTN_COMPILE_OPTIONS"] = "--verify-each"
llvm_config.add_tool_substitutions(["attn-opt", "attn-compile"], tool_dirs)
# The attn-opt of this build, for scripts that take its path.
config.substitutions.append(("%attn_opt_path",
                             os.path.join(config.attn_tools_dir, "attn-opt")))
# attn-bench is built where OpenBLAS and OpenMP are installed.
if os.access(os.path.join(config.attn_tools_dir, "attn-bench"), os.X_OK):
    config.available_features.add("attn-bench")
    llvm_config.add_tool_substitutions(["attn-bench"], tool_dirs)
# CPU features, for tests whose expected output depends on them.
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l for l in f if l.startswith("flags")), "").split()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
        config.available_features.add("avx512")
    if {"amx_tile", "amx_bf16"} <= set(flags):
        config.available_features.add("amx")
except OSError:
    pass

# Compiled executables run on this host (x86-64) only.
import platform
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("native-exec")
import sys
# mlir-runner runs the LLVM-dialect output of attn-opt's pipelines (a @main
# printing with printMemrefF32), with MLIR's runner utilities and the LLVM
# OpenMP runtime the parallel loops call.
mlir_runner = os.path.join(config.llvm_tools_dir, "mlir-runner")
llvm_lib = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
runner_libs = [os.path.join(llvm_lib, n) for n in
               ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so",
                "libomp.so")]
if "native-exec" in config.available_features and all(
        os.access(p, os.R_OK) for p in [mlir_runner] + runner_libs):
    config.available_features.add("mlir-runner")
    config.substitutions.append(("%mlir_runner", "%s -e main "
        "-entry-point-result=void -shared-libs=%s" % (mlir_runner,
                                                      ",".join(runner_libs))))
config.substitutions.append(("%python", sys.executable))
# Context parallelism (attn-compile --distributed=mpi) where Open MPI and
# the runtime's MPI part are built; %mpirun takes the rank count next.
import shutil
mpirun = shutil.which("mpirun")
if mpirun and shutil.which("mpicc") and os.access(os.path.join(config.attn_obj_root, "lib",
                                     "libattn_mpi.a"), os.R_OK):
    config.available_features.add("mpi")
    root = " --allow-run-as-root" if os.geteuid() == 0 else ""
    config.substitutions.append(("%mpirun", mpirun + " --oversubscribe" +
                                 root + " -np"))
config.substitutions.append(("%sdpa_ref", sys.executable + " " +
    os.path.join(config.test_source_root, "Integration", "Inputs", "sdpa_ref.py")))
# A sanitizer build (ATTN_SANITIZE): its runtime library needs the
# sanitizers' runtimes wherever a test links it itself.
if config.attn_sanitize:
    config.available_features.add("sanitizers")
    # Debian's LLVM/MLIR libraries are uninstrumented: the poisoning their
    # allocators inline into instrumented code reads as false
    # use-after-poison (README "Sanitizers").
    opts = os.environ.get("ASAN_OPTIONS", "")
    config.environment["ASAN_OPTIONS"] = ":".join(
        o for o in ("allow_user_poisoning=0", opts) if o)
    if "address" in config.attn_sanitize:
        config.available_features.add("asan")
# Memory tests run the ASan build without its quarantine (freed memory
# held back to catch use after free would read as growth).
config.substitutions.append(("%asan_no_quarantine",
    "env ASAN_OPTIONS=" + config.environment["ASAN_OPTIONS"] +
    ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    if "asan" in config.available_features else ""))
config.substitutions.append(("%sanitize_flags",
    "-fsanitize=" + config.attn_sanitize if config.attn_sanitize else ""))
# The runtime's public headers, as a C/C++ user's -I flags (installed, they
# are all in PREFIX/include/attn).
config.substitutions.append(("%attn_runtime_includes", " ".join(
    "-I" + os.path.join(config.attn_src_root, "runtime", d)
    for d in ("abi", "io", "capi", "distributed"))))
config.substitutions.append(("%attn_io_lib",
    os.path.join(config.attn_obj_root, "lib", "libattn_io.a")))
config.substitutions.append(("%attn_runtime_lib",
    os.path.join(config.attn_obj_root, "lib", "libattn_runtime.a")))
config.substitutions.append(("%llvm_lib_dir",
    os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")))
config.substitutions.append(("%llvm_include_dir",
    os.path.join(os.path.dirname(config.llvm_tools_dir), "include")))
config.substitutions.append(("%mla_ref", sys.executable + " " +
    os.path.join(config.test_source_root, "Integration", "Inputs", "mla_ref.py")))
config.substitutions.append(("%layer_ref", sys.executable + " " +
    os.path.join(config.test_source_root, "Integration", "Inputs", "layer_ref.py")))
config.substitutions.append(("%block_ref", sys.executable + " " +
    os.path.join(config.test_source_root, "Integration", "Inputs", "block_ref.py")))

# The CUDA toolkit's PTX assembler checks the PTX of --target=cuda (no GPU
# needed): CUDA_HOME, else /usr/local/cuda.
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
ptxas = os.path.join(cuda_home, "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# A loadable CUDA driver (libcuda.so.1): the CUDA executables' commands run
# on the GPU instead of reporting that there is none.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
