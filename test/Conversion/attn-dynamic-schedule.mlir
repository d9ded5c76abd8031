// RUN: attn-opt %s -split-input-file -attn-dynamic-schedule | FileCheck %s

// Causal query blocks carry unequal work: the worksharing loop gets a dynamic
// schedule, monotonic (libomp allocates nothing for it; its nonmonotonic
// default, static stealing, mallocs a lock per thread per loop); an explicit
// schedule is kept; a loop whose body calls a tile
// with attn.schedule_chunk (alike iterations streaming memory: the
// gated-delta value heads) hands out runs of that many iterations, fewer
// when the module declares omp_get_num_threads (the micro-kernel pass does)
// and the loop has fewer iterations per thread: max(1, min(8, ceil(trip /
// threads))).
// A dynamic loop that ends its parallel region becomes runs handed out by a
// counter the region shares (zeroed before it): each thread takes the next
// run with an atomic add until the trip count is passed; the flat
// iteration number is split back into the nest's induction variables,
// innermost fastest. (Debian's libomp, a KMP_DEBUG build, mallocs trace
// strings in every __kmpc_dispatch_next.) Other loops keep libomp's.
// CHECK-LABEL: func.func @loops
// CHECK: %[[COUNTER:.+]] = memref.alloca() : memref<i64>
// CHECK: memref.store %c0_i64, %[[COUNTER]][] : memref<i64>
// CHECK: omp.parallel
// CHECK: omp.wsloop schedule(dynamic, monotonic) {
// CHECK: omp.wsloop schedule(static) {
// CHECK: %[[EIGHT:.+]] = arith.constant 8 : i64
// CHECK-NOT: omp.wsloop
// CHECK: scf.while
// CHECK: %[[FIRST:.+]] = memref.atomic_rmw addi %[[EIGHT]], %[[COUNTER]][]
// CHECK: %[[START:.+]] = arith.index_cast %[[FIRST]] : i64 to index
// CHECK: %[[MORE:.+]] = arith.cmpi slt, %[[START]], %[[TRIP:.+]] : index
// CHECK: scf.condition(%[[MORE]]) %[[START]]
// CHECK: ^bb0(%[[AT:.+]]: index):
// CHECK: %[[TOP:.+]] = arith.addi %[[AT]], %{{.+}} : index
// CHECK: %[[END:.+]] = arith.minsi %[[TOP]], %[[TRIP]] : index
// CHECK: scf.for %[[I:.+]] = %[[AT]] to %[[END]] step
// CHECK: func.call @tile(%{{.+}}) {attn.schedule_chunk = 8 : i64}
// CHECK: omp.terminator
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
// CHECK: scf.while
// CHECK: memref.atomic_rmw addi %[[R64]], %{{.+}}[]
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

// -----

// A collapsed nest (lower bounds and steps other than 0 and 1): the run's
// iteration t is (i, j) = (2 + (t / nj) * 3, 1 + (t mod nj) * 2). A nowait
// loop keeps libomp's schedule.
// CHECK-LABEL: func.func @nest
// CHECK: omp.wsloop nowait schedule(dynamic, monotonic)
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[J:.+]] = arith.remui %[[T]], %[[NJ:.+]] : index
// CHECK: %[[REST:.+]] = arith.divui %[[T]], %[[NJ]] : index
// CHECK: %[[JS:.+]] = arith.muli %[[J]], %c2 : index
// CHECK: %[[JV:.+]] = arith.addi %c1, %[[JS]] : index
// CHECK: %[[IS:.+]] = arith.muli %[[REST]], %c3 : index
// CHECK: %[[IV:.+]] = arith.addi %c2, %[[IS]] : index
// CHECK: func.call @tile2(%[[IV]], %[[JV]])
func.func private @tile2(index, index)
func.func @nest(%n: index, %m: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  omp.parallel {
    omp.wsloop nowait {
      omp.loop_nest (%i) : index = (%c1) to (%n) step (%c1) {
        func.call @tile2(%i, %i) : (index, index) -> ()
        omp.yield
      }
    }
    omp.wsloop {
      omp.loop_nest (%i, %j) : index = (%c2, %c1) to (%n, %m) step (%c3, %c2) collapse(2) {
        func.call @tile2(%i, %j) : (index, index) -> ()
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// A parallel region inside a loop: the counter is on the function's frame
// (an alloca in the loop would grow the stack at every iteration), zeroed
// before each run of the region.
// CHECK-LABEL: func.func @in_loop
// CHECK-NEXT: %[[COUNTER:.+]] = memref.alloca() : memref<i64>
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[COUNTER]][] : memref<i64>
// CHECK-NEXT: omp.parallel
// CHECK: memref.atomic_rmw addi %{{.+}}, %[[COUNTER]][]
func.func private @tile(index)
func.func @in_loop(%n: index, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %s = %c0 to %steps step %c1 {
    omp.parallel {
      omp.wsloop {
        omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
          func.call @tile(%i) : (index) -> ()
          omp.yield
        }
      }
      omp.terminator
    }
  }
  return
}

// -----

// A region nested in a parallel region's loop: its counter is on the stack
// of the outer region's thread (its body is an allocation scope), not on
// the function's frame, which the outer threads' inner regions would share.
// CHECK-LABEL: func.func @nested
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT: omp.parallel {
// CHECK-NEXT: %[[COUNTER:.+]] = memref.alloca() : memref<i64>
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[COUNTER]][] : memref<i64>
// CHECK-NEXT: omp.parallel
// CHECK: memref.atomic_rmw addi %{{.+}}, %[[COUNTER]][]
// CHECK-NOT: memref.alloca
func.func private @inner(index, index)
func.func @nested(%n: index, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    scf.for %s = %c0 to %steps step %c1 {
      omp.parallel {
        omp.wsloop {
          omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
            func.call @inner(%s, %i) : (index, index) -> ()
            omp.yield
          }
        }
        omp.terminator
      }
    }
    omp.terminator
  }
  return
}
