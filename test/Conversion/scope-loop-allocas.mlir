// attn-scope-loop-allocas: a loop body's allocas are freed per iteration
// (the stack pointer saved before the first, restored before the
// terminator). MLIR treats scf.for/scf.parallel bodies as allocation scopes
// but scf-to-cf lowers them to plain branches, so without this every
// iteration's allocas stayed on the stack: the loop below would take 40
// MiB of stack, past the main thread's 8 MiB.
// RUN: attn-opt %s -split-input-file -attn-scope-loop-allocas | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-pipeline='stop-after=llvm-dialect reference=false' | FileCheck %s --check-prefix=LLVM
// REQUIRES: mlir-runner
// RUN: split-file %s %t
// RUN: attn-opt %t/run.mlir -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | FileCheck %s --check-prefix=OUT

//--- run.mlir
// CHECK-LABEL: func.func @main(
// CHECK: scf.for
// CHECK: %[[SP:.+]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT: memref.alloca
// CHECK: llvm.intr.stackrestore %[[SP]]
// CHECK-NEXT: scf.yield
// LLVM-LABEL: llvm.func @main(
// LLVM: llvm.intr.stacksave
// LLVM: llvm.intr.stackrestore
// OUT: 2560
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 2560 : index
  %size = arith.constant 4096 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    // 16 KiB, sized at run time (not hoisted out of the loop).
    %len = arith.addi %size, %c0 : index
    %m = arith.minui %len, %size : index
    %buf = memref.alloca(%m) : memref<?xf32>
    memref.store %one, %buf[%i] : memref<?xf32>
    %v = memref.load %buf[%i] : memref<?xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  vector.print %sum : f32
  return
}

// -----

// A body that yields a memref defined after its first alloca (it may be
// that alloca) keeps its stack: nothing inserted.
// CHECK-LABEL: func.func @yields_memref(
// CHECK-NOT: llvm.intr.stacksave
// CHECK: return
func.func @yields_memref(%n: index, %init: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %init) -> (memref<?xf32>) {
    %buf = memref.alloca(%i) : memref<?xf32>
    scf.yield %buf : memref<?xf32>
  }
  return %r : memref<?xf32>
}
