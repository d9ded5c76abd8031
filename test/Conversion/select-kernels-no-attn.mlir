// A module without attn ops (no attn dialect loaded by the parser): the
// CPU's kernel choice and tile choice leave it as it is (the kernel choice
// crashed creating #attn.cpu_kernel in a context without the dialect).
// RUN: attn-opt %s -attn-cpu-select-kernels | FileCheck %s
// RUN: attn-opt %s -attn-cpu-select-tiles -attn-cpu-select-kernels=lanes=8 | FileCheck %s
// CHECK-LABEL: func.func @f(
// CHECK-NEXT: return
func.func @f(%a: memref<4xf32>) {
  return
}
