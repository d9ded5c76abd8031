// RUN: attn-opt %s -split-input-file -attn-lower-io-conversions | FileCheck %s

// The output rounding of a --qo-dtype=bf16 entry: fp32 -> bf16 as integer
// operations (round to nearest even: + 0x7fff + the kept lowest bit, NaN
// kept quiet), scalar and vector; no arith.truncf to bf16 is left for LLVM
// to lower to a __truncsfbf2 call. The widening from bf16 (a K/V load) and
// a rounding to f16 stay as they are.
// CHECK-LABEL: func.func @round
// CHECK-NOT: arith.truncf {{.*}} to bf16
// CHECK: %[[NAN:.*]] = arith.cmpf une, %arg0, %arg0 : f32
// CHECK-DAG: %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK-DAG: %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK: %[[TIE:.*]] = arith.addi %{{.*}}, %[[HALF]] : i32
// CHECK: arith.addi %[[BITS]], %[[TIE]] : i32
// CHECK: %[[R:.*]] = arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.select %[[NAN]], %{{.*}}, %[[R]] : i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: arith.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK: arith.bitcast %{{.*}} : vector<8xi16> to vector<8xbf16>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @round(%x: f32, %v: vector<8xf32>, %k: bf16) -> (bf16, vector<8xbf16>, f32, f16) {
  %r = arith.truncf %x : f32 to bf16
  %rv = arith.truncf %v : vector<8xf32> to vector<8xbf16>
  %w = arith.extf %k : bf16 to f32
  %h = arith.truncf %x : f32 to f16
  return %r, %rv, %w, %h : bf16, vector<8xbf16>, f32, f16
}

// -----

// The entry's conversions on whole tensors become linalg.generic (the bf16
// rounding inside expanded as above); another elementwise op on tensors
// (longrope's choice of a table) is left as it is.
// CHECK-LABEL: func.func @entry
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<?x4xbf16>) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.select %arg2, %arg3, %arg3 : tensor<48xf64>
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<?x4xf32>) outs(%{{.*}} : tensor<?x4xbf16>)
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK-NOT: arith.truncf
func.func @entry(%q: tensor<?x4xbf16>, %o: tensor<?x4xf32>, %c: i1, %t: tensor<48xf64>) -> (tensor<?x4xf32>, tensor<48xf64>, tensor<?x4xbf16>) {
  %q32 = arith.extf %q : tensor<?x4xbf16> to tensor<?x4xf32>
  %sel = arith.select %c, %t, %t : tensor<48xf64>
  %o16 = arith.truncf %o : tensor<?x4xf32> to tensor<?x4xbf16>
  return %q32, %sel, %o16 : tensor<?x4xf32>, tensor<48xf64>, tensor<?x4xbf16>
}
