// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel 2>&1 | FileCheck %s --implicit-check-not=error

// The operand-swapped GEMM (B [N, K], 8 to 48 rows, 16 lanes) sizes its
// chunks of columns by the threads OpenMP runs: omp_get_max_threads is
// declared in the module and called by the kernel.
// CHECK-LABEL: func.func private @omp_get_max_threads() -> i32
// CHECK: func.func private @nt_gemm(
// CHECK: call @omp_get_max_threads() : () -> i32
// CHECK: vector.fma
func.func @nt(%a: memref<?x64xf32>, %b: memref<128x64xf32>, %c: memref<?x128xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<?x64xf32>, memref<128x64xf32>) outs(%c : memref<?x128xf32>)
  return
}

// -----

// A function of that name with another signature is left alone: the
// kernel assumes one thread (chunks by columns only) and still compiles.
// CHECK-LABEL: func.func private @omp_get_max_threads() -> i64
// CHECK-NOT: call @omp_get_max_threads
// CHECK: vector.fma
func.func private @omp_get_max_threads() -> i64
func.func @nt(%a: memref<?x64xf32>, %b: memref<128x64xf32>, %c: memref<?x128xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<?x64xf32>, memref<128x64xf32>) outs(%c : memref<?x128xf32>)
  return
}
