// RUN: attn-opt %s -attn-fence-streaming-stores | FileCheck %s

// A parallel loop calling a tile marked attn.streaming_stores (non-temporal
// stores, weakly ordered) is followed, in the parallel region, by an
// sfence; so is the loop over runs attn-dynamic-schedule makes of one
// (scf.while in the region); a marked call outside a loop by one after it;
// other loops and calls by none.
// CHECK-LABEL: func.func @loops
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK: func.call @tile(%{{.+}}) {attn.streaming_stores}
// CHECK-NEXT: omp.yield
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
// CHECK: omp.wsloop
// CHECK: func.call @tile(%{{.+}}) : (index) -> ()
// CHECK-NOT: sfence
// CHECK: omp.terminator
// CHECK: call @tile(%{{.+}}) {attn.streaming_stores}
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
// CHECK-NEXT: return
func.func private @tile(index)
func.func @loops(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        func.call @tile(%i) {attn.streaming_stores} : (index) -> ()
        omp.yield
      }
    }
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        func.call @tile(%i) : (index) -> ()
        omp.yield
      }
    }
    omp.terminator
  }
  func.call @tile(%c0) {attn.streaming_stores} : (index) -> ()
  return
}

// CHECK-LABEL: func.func @runs
// CHECK: omp.parallel
// CHECK: scf.while
// CHECK: func.call @tile(%{{.+}}) {attn.streaming_stores}
// CHECK-NOT: sfence
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
// CHECK-NEXT: omp.terminator
func.func @runs(%n: index, %counter: memref<i64>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  omp.parallel {
    scf.while : () -> () {
      %first = memref.atomic_rmw addi %one, %counter[] : (i64, memref<i64>) -> i64
      %start = arith.index_cast %first : i64 to index
      %more = arith.cmpi slt, %start, %n : index
      scf.condition(%more)
    } do {
      %start = arith.constant 0 : index
      func.call @tile(%start) {attn.streaming_stores} : (index) -> ()
      scf.yield
    }
    omp.terminator
  }
  return
}
