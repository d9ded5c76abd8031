// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg | FileCheck %s --check-prefix=KEEP
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUFFER
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel | FileCheck %s --check-prefix=DECODE
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels=lanes=8 -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel=lanes=8 | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel | FileCheck %s --check-prefix=SLIDE
// RUN: not attn-opt %s -split-input-file -attn-cpu-select-kernels=lanes=12 -convert-attn-to-linalg 2>&1 | FileCheck %s --check-prefix=LANES

// The micro-kernel takes f32 tiles with static head dims: the op stays for
// it; bufferization gives its buffer form (the state updated in place, no
// results), which attn-cpu-micro-kernel turns into register-tiled code.
// KEEP-LABEL: func.func @step(
// KEEP: attn.online_attention {{.*}} {attn.kernel = #attn.cpu_kernel<lanes = 16>, mask = #attn.mask<causal>
// KEEP-NOT: linalg.generic
// BUFFER-LABEL: func.func @step(
// BUFFER: attn.online_attention {{.*}} : (memref<4x?x64xf32{{.*}}>, memref<?x64xf32{{.*}}>, memref<?x64xf32{{.*}}>, memref<4x?x64xf32{{.*}}>, memref<4x?xf32{{.*}}>, memref<4x?xf32{{.*}}>){{$}}
// KEEP-LABEL: func.func @t5(
// KEEP-NOT: attn.online_attention
// KEEP: linalg.generic

// Prefill (more than 16 rows) has the query rows in the lanes. The rows are
// packed once per parallel iteration (a tag in scratch, the query buffer's
// address and row count, set to -1 where the scratch is allocated, skips
// the pack for the iteration's next tiles): 16×16 transposes as 64
// shuffles (32-bit and 64-bit interleaves, then 128-bit lanes), times the
// scale, into Qᵀ by blocks of 32 rows ([256 rows / 32 · d 64, 32]: a
// block's d steps 128 bytes apart). Per chunk of 64 keys, an f32 K is read
// in place when the chunk is full (copied otherwise) and the V rows are
// copied; per block of
// 32 rows (2 vectors of 16 lanes), up to the block's last visible key (the
// causal mask hides the keys after its last row's position: one integer
// max over the rows' positions), Q·Kᵀ in 2 × 8 register tiles (per d
// step 2 loads of Qᵀ, 8 broadcasts of K, 16 FMAs), the causal mask as lane
// compares of the rows' positions against the key's, the scores stored
// key-major with the running max; the new max and alpha as vectors; then
// e^(s - max) (a polynomial for arguments ≤ 0: clamped at -150, rounded to
// n, scaled by 2^n with vscalefps) and the row sums, 4 keys per iteration,
// with no horizontal reduction; then acc·alpha + P·V in 4×4 tiles.
// Scratch is allocated outside the key loop.
// CHECK-LABEL: func.func @step(
// CHECK-NOT: attn.online_attention
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<512x32xf32>
// CHECK: %[[TAG:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2xindex>
// CHECK: memref.store %c-1, %[[TAG]][%c0] : memref<2xindex>
// CHECK: call @step_tile(
// CHECK: func.func private @step_tile(
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: scf.if
// CHECK: vector.shuffle {{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
// CHECK: scf.for {{.*}} step %c64
// CHECK: memref.subview %arg1
// CHECK: arith.select {{.*}} : memref<?x64xf32, strided<[64, 1], offset: ?>>
// CHECK: scf.for {{.*}} step %c32
// CHECK: vector.from_elements
// CHECK: %[[LAST:.*]] = vector.reduction <maxsi>, {{.*}} : vector<16xi32> into i32
// CHECK: arith.subi %[[LAST]]
// CHECK: %[[SEEN:.*]] = arith.minsi
// CHECK: %[[GEND:.*]] = arith.muli {{.*}}, %c8
// CHECK: scf.for {{.*}} to %[[GEND]] step %c8
// CHECK: scf.for
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK: arith.cmpi sle, {{.*}} : vector<16xi32>
// CHECK: vector.store {{.*}} : memref<64x32xf32>, vector<16xf32>
// CHECK-NOT: vector.reduction {{.*}}f32
// CHECK-NOT: math.exp
// CHECK: arith.cmpf oeq, {{.*}} : vector<16xf32>
// CHECK: arith.constant -1.500000e+02 : f32
// CHECK: arith.maximumf {{.*}} fastmath<nnan,nsz> : vector<16xf32>
// CHECK: math.roundeven {{.*}} : vector<16xf32>
// CHECK-COUNT-7: vector.fma {{.*}} : vector<16xf32>
// CHECK: x86vector.avx512.mask.scalef {{.*}} : vector<16xf32>
// CHECK: scf.for {{.*}} step %c4
// CHECK: x86vector.avx512.mask.scalef {{.*}} : vector<16xf32>
// CHECK: vector.store {{.*}} : memref<64x32xf32>, vector<16xf32>
// CHECK-NOT: vector.reduction {{.*}}f32
// CHECK: scf.for {{.*}} step %c4
// CHECK: scf.for
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.reduction {{.*}}f32
// CHECK: return
// Fewer than 16 rows (decode): per 4 keys a 4 rows x 4 keys tile of
// dot products (16 FMAs per d step, each K vector shared by the 4 rows) up
// to the chunk's last key (rounded up to 4, not the chunk's 64 lanes: a
// page of 16 keys computes 16), the K rows of the next chunk prefetched to
// L2, the 16 accumulators folded by a shuffle tree and stored 4 lanes per
// row; then P·V prefetching V.
// DECODE-LABEL: func.func @step(
// DECODE: scf.if
// DECODE: scf.for {{.*}} step %c4
// DECODE: %[[NC4:.*]] = arith.ceildivsi %{{.*}}, %c4
// DECODE: %[[END:.*]] = arith.muli %[[NC4]], %c4
// DECODE: scf.for %[[J0:.*]] = %c0{{.*}} to %[[END]] step %c4
// The next chunk's K rows: a loop over the 4 keys, one prefetch per 64-byte
// line of a row in its body (unrolled, 4 x 4 of them).
// DECODE: scf.for {{.*}} = %[[J0]] to %{{.*}} step %c1
// DECODE-COUNT-4: memref.prefetch %arg1[{{.*}}], read, locality<2>, data : memref<?x64xf32>
// DECODE-NEXT: }
// DECODE: scf.for {{.*}} step %c16
// DECODE-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// DECODE: vector.shuffle
// DECODE: vector.extract_strided_slice {{.*}} {offsets = [12], sizes = [4], strides = [1]} : vector<16xf32> to vector<4xf32>
// DECODE: vector.reduction <maximumf>
// The row's rescale, a scalar: 2^n built in the exponent bits.
// DECODE: arith.constant -8.800000e+01 : f32
// DECODE: math.roundeven {{.*}} : f32
// DECODE: arith.shli {{.*}} : i32
// DECODE: arith.bitcast {{.*}} : i32 to f32
// DECODE: memref.prefetch %arg2[{{.*}}], read, locality<2>, data : memref<?x64xf32>
// DECODE-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// Eight lanes (16 registers): decode's blocks of 2 rows; prefill's blocks
// of 16 rows (2 vectors of 8 lanes) × 4 keys, the 2 × 4 accumulators fed by
// 2 loads of Qᵀ and 4 broadcasts per d step.
// AVX2-LABEL: func.func @step(
// AVX2: memref.alloc() {alignment = 64 : i64} : memref<32x16xf32>
// AVX2: scf.for {{.*}} step %c2
// AVX2-COUNT-8: vector.fma {{.*}} : vector<8xf32>
// AVX2: memref.extract_aligned_pointer_as_index %arg0
// AVX2: scf.for {{.*}} step %c16
// AVX2: scf.for {{.*}} step %c4
// AVX2: scf.for
// AVX2-COUNT-2: vector.load {{.*}} : memref<1024x16xf32>, vector<8xf32>
// AVX2-COUNT-8: vector.fma {{.*}} : vector<8xf32>
// Eight lanes: 2^n in the exponent bits (no vscalefps before AVX-512).
// AVX2-NOT: x86vector
// AVX2: arith.constant -8.800000e+01 : f32
// AVX2: math.roundeven {{.*}} : vector<8xf32>
// AVX2-COUNT-7: vector.fma {{.*}} : vector<8xf32>
// AVX2: arith.shli {{.*}} : vector<8xi32>
// AVX2: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// LANES: error: attn-cpu-select-kernels: lanes must be 4, 8 or 16 (SSE, AVX2, AVX-512 f32 lanes), not 12
func.func @step(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
                %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>,
                %qp: index, %kp: index)
    -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
        -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %mx, %s : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// A relative bias table (T5) is not the micro-kernel's: linalg it is.
func.func @t5(%q: tensor<2x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
              %acc: tensor<2x?x64xf32>, %m: tensor<2x?xf32>, %l: tensor<2x?xf32>,
              %qp: index, %kp: index, %tab: tensor<32x8xf32>, %h: index)
    -> (tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      bias_table(%tab : tensor<32x8xf32>, %h)
      {relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>,
       scale = 1.0 : f64}
      : (tensor<2x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
        -> (tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
  return %a, %mx, %s : tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}

// -----

// A tile of a bf16 cache: the K and V rows are loaded as bf16 vectors and
// widened in registers (arith.extf; no f32 copy); the decode path
// prefetches the next chunk's bf16 rows (up to the tile's last row).
// KEEP-LABEL: func.func @tile_bf16(
// KEEP: attn.online_attention
// DECODE-LABEL: func.func @tile_bf16(
// DECODE: scf.if
// DECODE: arith.cmpi slt
// DECODE: memref.prefetch {{.*}} : memref<?x64xbf16{{.*}}>
// DECODE: vector.load {{.*}} : memref<?x64xbf16{{.*}}>, vector<16xbf16>
// DECODE: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// DECODE: vector.fma {{.*}} : vector<16xf32>
func.func @tile_bf16(%q: tensor<4x?x64xf32>, %k: tensor<?x64xbf16>, %v: tensor<?x64xbf16>,
                     %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>,
                     %qp: index, %kp: index)
    -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xbf16>, tensor<?x64xbf16>,
         tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
        -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %mx, %s : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// A group of 16 query heads per KV head over a bf16 cache (the seed's 64/4
// decode): decode's blocks are 8 rows (P [8, 64], alphas [8]): scores of 8
// rows × 2 keys, 2 K vectors widened per d step for 16 FMAs; P·V of 8 rows
// × 3 vectors (24 FMAs per key for 3 widened V vectors), the last vector of
// dv = 64 a group of one. 12 rows (a remainder of 4) would take a block of
// 4 after the blocks of 8.
// DECODE-LABEL: func.func @group16_bf16(
// DECODE: memref.alloc() {alignment = 64 : i64} : memref<8x64xf32>
// DECODE: memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// DECODE-LABEL: func.func private @group16_bf16_tile(
// DECODE: scf.for {{.*}} step %c8
// DECODE: scf.for {{.*}} step %c2
// DECODE: scf.for {{.*}} step %c16
// DECODE-COUNT-2: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// DECODE-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// DECODE: vector.shuffle
// DECODE: scf.for {{.*}} step %c4
// DECODE: scf.for {{.*}} step %c1
// DECODE-COUNT-3: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// DECODE-COUNT-24: vector.fma {{.*}} : vector<16xf32>
func.func @group16_bf16(%q: tensor<16x?x64xf32>, %k: tensor<?x64xbf16>, %v: tensor<?x64xbf16>,
                        %acc: tensor<16x?x64xf32>, %m: tensor<16x?xf32>, %l: tensor<16x?xf32>,
                        %qp: index, %kp: index)
    -> (tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<16x?x64xf32>, tensor<?x64xbf16>, tensor<?x64xbf16>,
         tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
        -> (tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
  return %a, %mx, %s : tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>
}

// -----

// Under a sliding window a block of rows starts its scores at the first key
// its first row's window holds (the min of the rows' positions - 127),
// rounded down to the register tile's 8 keys, and stops after its last
// row's position (the max).
// SLIDE-LABEL: func.func private @sliding_tile(
// SLIDE: vector.reduction <maxsi>
// SLIDE: %[[LOW:.*]] = vector.reduction <minsi>, {{.*}} : vector<16xi32> into i32
// SLIDE: arith.subi %[[LOW]], %c127_i32
// SLIDE: %[[GROUPS:.*]] = arith.divsi %{{.*}}, %[[C8:c8[_0-9]*]] : index
// SLIDE: %[[FIRST:.*]] = arith.muli %[[GROUPS]], %[[C8]] : index
// SLIDE: scf.for %{{.*}} = %[[FIRST]] to %{{.*}} step %c8
func.func @sliding(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
                   %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>,
                   %qp: index, %kp: index)
    -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {mask = #attn.mask<sliding_window>, window = 128 : i64, scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
        -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %mx, %s : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}
