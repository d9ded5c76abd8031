//===- SanitizerDefaults.cpp - ASan defaults of the compiler tools --------===//
//
// Linked into attn-compile and attn-opt when they are built with
// AddressSanitizer (-DATTN_SANITIZE=address,...; tools/common/CMakeLists.txt,
// an object library so that the definition is not left in an archive). The
// tools then hold a 16 MB quarantine of freed
// memory instead of ASan's 256 MB: MLIR and LLVM free millions of small
// objects while compiling, and the large quarantine made every compile touch
// ~900 MB of cold memory (Qwen3-Next's test config as a shared library:
// 12.4-14.6 s against 7.7 s, 0.9 GB of RSS against 0.3 GB; 6.0-6.8 s with
// none). A use after free is still caught while fewer than 16 MB of other
// frees separate the free from the use, which covers an op erased and then
// used in the same rewrite. ASAN_OPTIONS=quarantine_size_mb=N overrides it;
// the executables and libraries the tools build keep ASan's default.
//
//===----------------------------------------------------------------------===//

extern "C" __attribute__((visibility("default"), used)) const char *
__asan_default_options() {
  return "quarantine_size_mb=16";
}
