// RUN: attn-opt %s -attn-approximate-math | FileCheck %s

// exp and tanh become inline polynomials (FMAs and the 2^n bit trick), so a
// vectorized loop never calls expf per element.
// CHECK-LABEL: func.func @exp_tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK: arith.shli
// CHECK: return
func.func @exp_tanh(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>) {
  %e = math.exp %x : vector<16xf32>
  %t = math.tanh %x : vector<16xf32>
  return %e, %t : vector<16xf32>, vector<16xf32>
}
