// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel 2>&1 | FileCheck %s --implicit-check-not=error
// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel=lanes=8 2>&1 | FileCheck %s --check-prefix=AVX2 --implicit-check-not=error

// The operand-swapped GEMM (B [N, K], 8 to 48 rows, 16 lanes) sizes its
// chunks of columns by the threads OpenMP runs: omp_get_max_threads is
// declared in the module and called by the kernel.
// CHECK-LABEL: func.func private @omp_get_max_threads() -> i32
// CHECK: func.func private @nt_gemm(
// The generic kernel's packed panels (past 48 rows): blocks of 6 rows of
// A, 6 × 4 vectors of accumulators (24 FMAs per k).
// CHECK: scf.for {{.*}} step %c6
// CHECK-COUNT-24: vector.fma
// CHECK: func.func private @nt_gemm_k64(
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

// -----

// One function of the packed and dot-product kernels for every GEMM, its
// operands' sizes, strides and offsets dynamic; with 16 lanes and B [N, K],
// one function per depth K (A's and B's K and row strides kept) holds the
// operand-swapped kernel for 8 to 48 rows and calls the generic one for
// other row counts (a function per shape was 8,600 lines of LLVM IR each).
// CHECK-LABEL: func.func @two_shapes(
// CHECK: %[[A:.+]] = memref.cast %{{.+}} : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
// CHECK: %[[B:.+]] = memref.cast %{{.+}} : memref<128x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
// CHECK: %[[C:.+]] = memref.cast %{{.+}} : memref<?x128xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: call @two_shapes_gemm_k64(%[[A]], %[[B]], %[[C]])
// CHECK: call @two_shapes_gemm_k64(
// CHECK: call @two_shapes_gemm_k96(
// CHECK-NOT: call
// CHECK: func.func private @two_shapes_gemm(%{{.+}}: memref<?x?xf32, strided<[?, 1], offset: ?>>, %{{.+}}: memref<?x?xf32, strided<[?, 1], offset: ?>>, %{{.+}}: memref<?x?xf32, strided<[?, 1], offset: ?>>)
// CHECK-NOT: func.func
// CHECK: scf.parallel
// The packed panels split the rows too when there are fewer than two
// panels per thread:
// CHECK: call @omp_get_max_threads
// CHECK: arith.muli
// CHECK: scf.parallel
// CHECK: func.func private @two_shapes_gemm_k64(%{{.+}}: memref<?x64xf32, strided<[64, 1], offset: ?>>, %{{.+}}: memref<?x64xf32, strided<[64, 1], offset: ?>>, %{{.+}}: memref<?x?xf32, strided<[?, 1], offset: ?>>)
// CHECK: %[[M:.+]] = memref.dim %{{.+}}, %c0
// CHECK-DAG: %[[MANY:.+]] = arith.cmpi uge, %[[M]], %c8
// CHECK-DAG: %[[FEW:.+]] = arith.cmpi ule, %[[M]], %c48
// CHECK: %[[SWAP:.+]] = arith.andi %[[MANY]], %[[FEW]]
// CHECK: scf.if %[[SWAP]]
// CHECK: call @omp_get_max_threads
// CHECK: call @attn_gemm_swap_pack_16(%{{.+}}, %{{.+}}) : (memref<?x?xf32, strided<[?, 1], offset: ?>>, memref<?x16xf32>) -> ()
// CHECK: vector.fma
// CHECK: call @attn_gemm_swap_add_16(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (memref<16x16xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>, index, index) -> ()
// CHECK: } else {
// CHECK: func.call @two_shapes_gemm(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<?x?xf32, strided<[?, 1], offset: ?>>
// The swapped kernel's pack of Aᵀ and its epilogue (the accumulators'
// transposes added into C) do not depend on K: one function each per
// vectors of rows (16, 32, 48), shared by every depth's function, which
// keeps only its product loop.
// CHECK: func.func private @attn_gemm_swap_pack_16(
// CHECK: vector.shuffle
// CHECK: func.func private @attn_gemm_swap_add_16(
// CHECK: vector.shuffle
// CHECK: vector.maskedstore
// CHECK: func.func private @attn_gemm_swap_pack_48(
// CHECK: func.func private @attn_gemm_swap_add_48(
// CHECK: func.func private @two_shapes_gemm_k96(%{{.+}}: memref<?x96xf32, strided<[96, 1], offset: ?>>,
// CHECK-NOT: func.func private @attn_gemm_swap
// CHECK: call @attn_gemm_swap_pack_16(
// CHECK-NOT: func.func private @attn_gemm_swap
// CHECK: func.call @two_shapes_gemm(
func.func @two_shapes(%a: memref<?x64xf32>, %b: memref<128x64xf32>, %c: memref<?x128xf32>,
                      %b2: memref<32x64xf32>, %c2: memref<?x32xf32>,
                      %d: memref<?x96xf32>, %e: memref<32x96xf32>, %f: memref<?x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<?x64xf32>, memref<128x64xf32>) outs(%c : memref<?x128xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b2 : memref<?x64xf32>, memref<32x64xf32>) outs(%c2 : memref<?x32xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%d, %e : memref<?x96xf32>, memref<32x96xf32>) outs(%f : memref<?x32xf32>)
  return
}

// -----

// With 8 lanes (AVX2) there is no operand-swapped kernel: the GEMMs of one
// form (B [N, K] or [K, N]) call one function, whatever their depth.
// AVX2-LABEL: func.func @avx2(
// AVX2: call @avx2_gemm(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<?x?xf32, strided<[?, 1], offset: ?>>
// AVX2: call @avx2_gemm(
// AVX2: call @avx2_gemm_0(
// AVX2-NOT: call
// AVX2: func.func private @avx2_gemm(
// AVX2: func.func private @avx2_gemm_0(
// AVX2-NOT: func.func
func.func @avx2(%a: memref<?x64xf32>, %b: memref<128x64xf32>, %c: memref<?x128xf32>,
                %d: memref<?x96xf32>, %e: memref<32x96xf32>, %f: memref<?x32xf32>,
                %g: memref<96x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<?x64xf32>, memref<128x64xf32>) outs(%c : memref<?x128xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%d, %e : memref<?x96xf32>, memref<32x96xf32>) outs(%f : memref<?x32xf32>)
  linalg.matmul ins(%d, %g : memref<?x96xf32>, memref<96x32xf32>) outs(%f : memref<?x32xf32>)
  return
}
