// RUN: attn-opt %s -split-input-file -attn-dynamic-schedule | FileCheck %s

// Causal query blocks carry unequal work: the worksharing loop gets a dynamic
// schedule; an explicit schedule is kept; a loop whose body calls a tile
// with attn.schedule_chunk (alike iterations streaming memory: the
// gated-delta value heads) hands out runs of that many iterations, fewer
// when the module declares omp_get_num_threads (the micro-kernel pass does)
// and the loop has fewer iterations per thread: max(1, min(8, ceil(trip /
// threads))).
// CHECK-LABEL: func.func @loops
// CHECK: omp.wsloop schedule(dynamic) {
// CHECK: omp.wsloop schedule(static) {
// CHECK: %[[EIGHT:.+]] = arith.constant 8 : i64
// CHECK: omp.wsloop schedule(dynamic = %[[EIGHT]] : i64) {
func.func private @tile(index)
func.func @loops(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        func.call @tile(%i) : (index) -> ()
        omp.yield
      }
    }
    omp.wsloop schedule(static) {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        omp.yield
      }
    }
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        func.call @tile(%i) {attn.schedule_chunk = 8 : i64} : (index) -> ()
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// CHECK-LABEL: func.func @team
// CHECK: omp.parallel
// CHECK: %[[SPAN:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK: %[[N:.+]] = arith.ceildivsi %[[SPAN]], %{{.+}} : index
// CHECK: %[[T:.+]] = func.call @omp_get_num_threads() : () -> i32
// CHECK: %[[PER:.+]] = arith.ceildivsi %{{.+}}, %{{.+}} : index
// CHECK: %[[MIN:.+]] = arith.minsi %[[PER]], %c8
// CHECK: %[[LEN:.+]] = arith.maxsi %[[MIN]], %c1
// CHECK: %[[R64:.+]] = arith.index_cast %[[LEN]] : index to i64
// CHECK: omp.wsloop schedule(dynamic = %[[R64]] : i64) {
func.func private @tile(index)
func.func private @omp_get_num_threads() -> i32
func.func @team(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        func.call @tile(%i) {attn.schedule_chunk = 8 : i64} : (index) -> ()
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
