// attn-pipeline lowers vector.print in several functions: the print
// lowering declares printString and its string globals in the module, which
// the per-function conversion (on the context's threads) once did from
// several threads at a time ("redefinition of symbol named 'printString'").
// attn-convert-vector-to-llvm converts such a module whole.
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | FileCheck %s
// RUN: attn-opt %s -attn-convert-vector-to-llvm | FileCheck %s --check-prefix=PASS
// REQUIRES: mlir-runner
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | FileCheck %s --check-prefix=OUT
// CHECK-DAG: llvm.func @printString(
// CHECK-DAG: llvm.mlir.global private constant @vector_print_str
// CHECK-DAG: llvm.mlir.global private constant @vector_print_str_0
// PASS-COUNT-1: llvm.func @printString(
// OUT: a b c
func.func @f() {
  vector.print str "a "
  return
}
func.func @g() {
  vector.print str "b "
  return
}
func.func @h() {
  vector.print str "c\n"
  return
}
func.func @main() {
  func.call @f() : () -> ()
  func.call @g() : () -> ()
  func.call @h() : () -> ()
  return
}
