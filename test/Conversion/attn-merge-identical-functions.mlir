// RUN: attn-opt %s -split-input-file -attn-merge-identical-functions | FileCheck %s

// Two kinds' entries that differ only by name, each with its own copy of a
// helper: the helpers merge first (the internal copy is gone, its caller
// calls the first), then the entries, the second kept as an alias of the
// first under its own name. A function with a different body, a different
// constant or different attributes stays.
// CHECK-LABEL: llvm.func internal @helper_a(
// CHECK-NOT: @helper_b
// CHECK: llvm.func internal @helper_c(
// CHECK-NOT: @helper_b
// CHECK: llvm.func @kind_a(
// CHECK: llvm.call @helper_a(
// CHECK: llvm.mlir.alias external @kind_b : !llvm.func<f32 (f32)> {
// CHECK-NEXT: %[[A:.+]] = llvm.mlir.addressof @kind_a : !llvm.ptr
// CHECK-NEXT: llvm.return %[[A]] : !llvm.ptr
// CHECK-NOT: llvm.func @kind_b
// CHECK: llvm.func @kind_c(
// CHECK: llvm.call @helper_c(
// CHECK: llvm.func @kind_d(
// CHECK: llvm.func @kind_e(
// CHECK-SAME: no_inline
// CHECK-NOT: llvm.mlir.alias
llvm.func internal @helper_a(%x: f32) -> f32 {
  %0 = llvm.fmul %x, %x : f32
  llvm.return %0 : f32
}
llvm.func internal @helper_b(%x: f32) -> f32 {
  %0 = llvm.fmul %x, %x : f32
  llvm.return %0 : f32
}
llvm.func internal @helper_c(%x: f32) -> f32 {
  %0 = llvm.fadd %x, %x : f32
  llvm.return %0 : f32
}
llvm.func @kind_a(%x: f32) -> f32 {
  %0 = llvm.call @helper_a(%x) : (f32) -> f32
  %1 = llvm.mlir.constant(2.0 : f32) : f32
  %2 = llvm.fadd %0, %1 : f32
  llvm.return %2 : f32
}
llvm.func @kind_b(%x: f32) -> f32 {
  %0 = llvm.call @helper_b(%x) : (f32) -> f32
  %1 = llvm.mlir.constant(2.0 : f32) : f32
  %2 = llvm.fadd %0, %1 : f32
  llvm.return %2 : f32
}
llvm.func @kind_c(%x: f32) -> f32 {
  %0 = llvm.call @helper_c(%x) : (f32) -> f32
  %1 = llvm.mlir.constant(2.0 : f32) : f32
  %2 = llvm.fadd %0, %1 : f32
  llvm.return %2 : f32
}
llvm.func @kind_d(%x: f32) -> f32 {
  %0 = llvm.call @helper_a(%x) : (f32) -> f32
  %1 = llvm.mlir.constant(3.0 : f32) : f32
  %2 = llvm.fadd %0, %1 : f32
  llvm.return %2 : f32
}
llvm.func @kind_e(%x: f32) -> f32 attributes {no_inline} {
  %0 = llvm.call @helper_a(%x) : (f32) -> f32
  %1 = llvm.mlir.constant(2.0 : f32) : f32
  %2 = llvm.fadd %0, %1 : f32
  llvm.return %2 : f32
}

// -----

// Branches and block arguments: equal up to the names of values and
// blocks; a copy referenced by address is redirected too.
// CHECK-LABEL: llvm.func @pick_a(
// CHECK: llvm.mlir.alias external @pick_b
// CHECK: llvm.func @take(
// CHECK: llvm.mlir.addressof @pick_a
llvm.func @pick_a(%c: i1, %x: i32, %y: i32) -> i32 {
  llvm.cond_br %c, ^bb1(%x : i32), ^bb1(%y : i32)
^bb1(%v: i32):
  llvm.return %v : i32
}
llvm.func @pick_b(%c: i1, %a: i32, %b: i32) -> i32 {
  llvm.cond_br %c, ^then(%a : i32), ^then(%b : i32)
^then(%w: i32):
  llvm.return %w : i32
}
llvm.func @take() -> !llvm.ptr {
  %0 = llvm.mlir.addressof @pick_b : !llvm.ptr
  llvm.return %0 : !llvm.ptr
}
