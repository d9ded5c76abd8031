// The GEMM kernel of attn-cpu-micro-kernel (GemmKernel.cpp) on the
// projections' two layouts: linalg.matmul with transpose-B maps (B [N, K],
// nn.Linear weights; dot products below 8 rows, with 16 lanes the
// operand-swapped kernel up to 48, packed panels past that) and the
// default maps (B [K, N], GPT-2's Conv1D), C += A·B into a non-zero C,
// over shapes that leave partial register blocks, panels and K blocks (M 1,
// 3, 6, 7, 8, 13, 17, 20, 33, 40, 48, 64, 65, 70, 100; N 1, 13, 17, 64,
// 65, 130, 200, 300, 600, 601; K 1, 15, 16, 33, 65, 257, 300, 520). Each result is compared with a
// float64 triple loop in the same program: max |C - ref| <= 1e-5 ·
// (1 + max |ref|) prints OK.
// REQUIRES: mlir-runner
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' -o %t.ll.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.ll.mlir
// RUN: %mlir_runner %t.ll.mlir | FileCheck %s --implicit-check-not=BAD
// With 7 threads the operand-swapped kernel cuts N into at least 7 chunks
// (omp_get_max_threads), not ~256 columns each:
// RUN: env OMP_NUM_THREADS=7 %mlir_runner %t.ll.mlir | FileCheck %s --implicit-check-not=BAD
// On one thread (all panels on the main thread's stack):
// RUN: env OMP_NUM_THREADS=1 %mlir_runner %t.ll.mlir | FileCheck %s --implicit-check-not=BAD
// The AVX2 (8 lanes: 4x2 register blocks) and SSE (4 lanes) kernels:
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=8' | %mlir_runner | FileCheck %s --implicit-check-not=BAD
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=4' | %mlir_runner | FileCheck %s --implicit-check-not=BAD
// With amx=true the generic B [N, K] function calls the tile kernel
// (GemmAmx.cpp) from 128 rows and 320 columns where the OS grants the tile
// state; the JIT
// targets the host CPU, so the results are checked where it has AMX:
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false amx=true' -o %t.amx.mlir
// RUN: FileCheck %s --check-prefix=AMXIR < %t.amx.mlir
// RUN: %if amx %{ %mlir_runner %t.amx.mlir | FileCheck %s --implicit-check-not=BAD %}
// RUN: %if amx %{ env OMP_NUM_THREADS=3 %mlir_runner %t.amx.mlir | FileCheck %s --implicit-check-not=BAD %}
// AMXIR-DAG: llvm.func internal @attn_gemm_amx(
// AMXIR-DAG: llvm.func internal @attn_gemm_amx_chunk(
// AMXIR-DAG: llvm.func internal @attn_gemm_amx_chunk_partial(
// AMXIR-DAG: llvm.mlir.global private @attn_amx_state
// AMXIR-DAG: llvm.call @attn_gemm_amx(
// AMXIR-DAG: "llvm.x86.tdpbf16ps.internal"
// IR-DAG: llvm.func internal @nt_gemm(
// IR-DAG: llvm.func internal @nt_gemm_kdyn(
// IR-DAG: llvm.call @omp_get_max_threads()
// IR-DAG: llvm.func internal @nn_gemm(

// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK
// CHECK: OK

func.func @wave(%n: index, %a: f64, %c: f64) -> f32 {
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f64
  %x = arith.mulf %nf, %a : f64
  %y = arith.addf %x, %c : f64
  %w = math.sin %y : f64
  %t = arith.truncf %w : f64 to f32
  return %t : f32
}
func.func @gen(%rows: index, %cols: index, %a: f64, %c: f64) -> tensor<?x?xf32> {
  %t = tensor.generate %rows, %cols {
  ^bb0(%i0: index, %i1: index):
    %n = affine.apply affine_map<(d0, d1)[s0] -> (d0 * s0 + d1)>(%i0, %i1)[%cols]
    %v = func.call @wave(%n, %a, %c) : (index, f64, f64) -> f32
    tensor.yield %v : f32
  } : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}
func.func @nt(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @nn(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
// max |c - ref| / (1 + max |ref|), ref = c0 + a·B in float64 (B [n, k]
// when %nt, else [k, n]).
func.func @error(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c0: tensor<?x?xf32>, %c: tensor<?x?xf32>, %nt: i1) -> f64 {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %m = tensor.dim %c, %i0 : tensor<?x?xf32>
  %n = tensor.dim %c, %i1 : tensor<?x?xf32>
  %k = tensor.dim %a, %i1 : tensor<?x?xf32>
  %res:2 = scf.for %i = %i0 to %m step %i1 iter_args(%d0 = %z, %r0 = %z) -> (f64, f64) {
    %row:2 = scf.for %j = %i0 to %n step %i1 iter_args(%d1 = %d0, %r1 = %r0) -> (f64, f64) {
      %init32 = tensor.extract %c0[%i, %j] : tensor<?x?xf32>
      %init = arith.extf %init32 : f32 to f64
      %sum = scf.for %l = %i0 to %k step %i1 iter_args(%s = %init) -> (f64) {
        %x32 = tensor.extract %a[%i, %l] : tensor<?x?xf32>
        %y32 = scf.if %nt -> (f32) {
          %e = tensor.extract %b[%j, %l] : tensor<?x?xf32>
          scf.yield %e : f32
        } else {
          %e = tensor.extract %b[%l, %j] : tensor<?x?xf32>
          scf.yield %e : f32
        }
        %x = arith.extf %x32 : f32 to f64
        %y = arith.extf %y32 : f32 to f64
        %p = arith.mulf %x, %y : f64
        %s2 = arith.addf %s, %p : f64
        scf.yield %s2 : f64
      }
      %got32 = tensor.extract %c[%i, %j] : tensor<?x?xf32>
      %got = arith.extf %got32 : f32 to f64
      %diff = arith.subf %got, %sum : f64
      %ad = math.absf %diff : f64
      %ar = math.absf %sum : f64
      %d2 = arith.maximumf %d1, %ad : f64
      %r2 = arith.maximumf %r1, %ar : f64
      scf.yield %d2, %r2 : f64, f64
    }
    scf.yield %row#0, %row#1 : f64, f64
  }
  %den = arith.addf %one, %res#1 : f64
  %err = arith.divf %res#0, %den : f64
  return %err : f64
}
func.func @case(%m: index, %n: index, %k: index, %nt: i1) {
  %a1 = arith.constant 0.71 : f64
  %a2 = arith.constant 0.37 : f64
  %a3 = arith.constant 0.23 : f64
  %c1 = arith.constant 0.1 : f64
  %c2 = arith.constant 0.2 : f64
  %c3 = arith.constant 0.5 : f64
  %a = func.call @gen(%m, %k, %a1, %c1) : (index, index, f64, f64) -> tensor<?x?xf32>
  %c0 = func.call @gen(%m, %n, %a3, %c3) : (index, index, f64, f64) -> tensor<?x?xf32>
  %err = scf.if %nt -> (f64) {
    %b = func.call @gen(%n, %k, %a2, %c2) : (index, index, f64, f64) -> tensor<?x?xf32>
    %r = func.call @nt(%a, %b, %c0) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %e = func.call @error(%a, %b, %c0, %r, %nt) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1) -> f64
    scf.yield %e : f64
  } else {
    %b = func.call @gen(%k, %n, %a2, %c2) : (index, index, f64, f64) -> tensor<?x?xf32>
    %r = func.call @nn(%a, %b, %c0) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %e = func.call @error(%a, %b, %c0, %r, %nt) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1) -> f64
    scf.yield %e : f64
  }
  vector.print %err : f64
  %tol = arith.constant 1.0e-5 : f64
  %ok = arith.cmpf ole, %err, %tol : f64
  scf.if %ok {
    vector.print str "OK\n"
  } else {
    vector.print str "BAD\n"
  }
  return
}
func.func @main() {
  %t = arith.constant true
  %f = arith.constant false
  %i1 = arith.constant 1 : index
  %i3 = arith.constant 3 : index
  %i6 = arith.constant 6 : index
  %i7 = arith.constant 7 : index
  %i8 = arith.constant 8 : index
  %i13 = arith.constant 13 : index
  %i15 = arith.constant 15 : index
  %i16 = arith.constant 16 : index
  %i17 = arith.constant 17 : index
  %i33 = arith.constant 33 : index
  %i20 = arith.constant 20 : index
  %i40 = arith.constant 40 : index
  %i48 = arith.constant 48 : index
  %i64 = arith.constant 64 : index
  %i65 = arith.constant 65 : index
  %i70 = arith.constant 70 : index
  %i100 = arith.constant 100 : index
  %i130 = arith.constant 130 : index
  %i200 = arith.constant 200 : index
  %i257 = arith.constant 257 : index
  %i300 = arith.constant 300 : index
  %i520 = arith.constant 520 : index
  %i600 = arith.constant 600 : index
  %i601 = arith.constant 601 : index
  %i32 = arith.constant 32 : index
  %i320 = arith.constant 320 : index
  %i330 = arith.constant 330 : index
  %i128 = arith.constant 128 : index
  %i160 = arith.constant 160 : index
  %i129 = arith.constant 129 : index
  %i1000 = arith.constant 1000 : index
  %i1537 = arith.constant 1537 : index
  %i50 = arith.constant 50 : index
  %i20000 = arith.constant 20000 : index
  func.call @case(%i1, %i1, %i1, %t) : (index, index, index, i1) -> ()
  func.call @case(%i1, %i130, %i300, %t) : (index, index, index, i1) -> ()
  func.call @case(%i3, %i17, %i15, %t) : (index, index, index, i1) -> ()
  func.call @case(%i7, %i65, %i257, %t) : (index, index, index, i1) -> ()
  func.call @case(%i8, %i64, %i16, %t) : (index, index, index, i1) -> ()
  func.call @case(%i13, %i65, %i257, %t) : (index, index, index, i1) -> ()
  func.call @case(%i70, %i130, %i300, %t) : (index, index, index, i1) -> ()
  func.call @case(%i6, %i1, %i33, %t) : (index, index, index, i1) -> ()
  func.call @case(%i100, %i200, %i520, %t) : (index, index, index, i1) -> ()
  // Transpose-B from 8 to 48 rows with 16 lanes: the operand-swapped
  // kernel, one to three vectors of rows, tiles of 12/12/8 rows of B and
  // a partial last tile; 49 rows and more: the packed panels.
  func.call @case(%i17, %i65, %i257, %t) : (index, index, index, i1) -> ()
  func.call @case(%i33, %i17, %i15, %t) : (index, index, index, i1) -> ()
  func.call @case(%i48, %i130, %i65, %t) : (index, index, index, i1) -> ()
  func.call @case(%i64, %i130, %i65, %t) : (index, index, index, i1) -> ()
  func.call @case(%i65, %i13, %i33, %t) : (index, index, index, i1) -> ()
  // Several parallel chunks of columns (256 for tiles of 8 rows of B, 288
  // for 12), each packing Aᵀ itself; a last chunk of partial tiles and
  // single columns; K past whole lines of 16 and W×W pack blocks.
  func.call @case(%i40, %i600, %i300, %t) : (index, index, index, i1) -> ()
  func.call @case(%i20, %i601, %i33, %t) : (index, index, index, i1) -> ()
  func.call @case(%i8, %i300, %i520, %t) : (index, index, index, i1) -> ()
  // With AMX (128 rows and 320 columns or more): whole blocks of 32 rows
  // and 32 columns, several chunks of columns with a partial last panel,
  // a last block of one row, K in whole and partial blocks of 512 (padded
  // to 128), a K of 32 (one partial block).
  func.call @case(%i160, %i601, %i1000, %t) : (index, index, index, i1) -> ()
  func.call @case(%i129, %i330, %i1537, %t) : (index, index, index, i1) -> ()
  func.call @case(%i128, %i320, %i32, %t) : (index, index, index, i1) -> ()
  // 313 panels of 64 columns (105 groups of 3, the last one partial): each
  // group's pack scratch (3 x 128 KiB) must be freed after it (an alloca
  // once took 32 KiB of stack per panel: on one thread 10 MiB, past the
  // main thread's 8 MiB; unpopped, 105 groups would take 39 MiB).
  func.call @case(%i50, %i20000, %i3, %t) : (index, index, index, i1) -> ()
  func.call @case(%i1, %i1, %i1, %f) : (index, index, index, i1) -> ()
  func.call @case(%i3, %i17, %i15, %f) : (index, index, index, i1) -> ()
  func.call @case(%i7, %i65, %i257, %f) : (index, index, index, i1) -> ()
  func.call @case(%i13, %i130, %i300, %f) : (index, index, index, i1) -> ()
  func.call @case(%i70, %i64, %i16, %f) : (index, index, index, i1) -> ()
  func.call @case(%i100, %i200, %i520, %f) : (index, index, index, i1) -> ()
  return
}
