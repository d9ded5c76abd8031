// Paged attention whose tiles span pages (attn.online_attention with
// pages(...)) = the contiguous kernel over the same keys, through the
// micro-kernel (16 and 8 lanes: row tables per chunk) and through the
// linalg lowering (vector-lanes=0: a gather). Pages of 5 keys shuffled over
// a pool of 64 (page of key block s of sequence b: (30·b + s)·37 mod 64;
// the pool's 4 unused pages hold 100s); 150 keys per sequence (several
// chunks of 64 and a partial last page); causal; query lengths 1 and 3
// (the dot path: 2 and 6 rows per KV head) and 20 (the packed path), and
// a window of 37 keys (tiles starting mid-page).
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | FileCheck %s --implicit-check-not=BAD
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=8' | %mlir_runner | FileCheck %s --implicit-check-not=BAD
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=0' | %mlir_runner | FileCheck %s --implicit-check-not=BAD

// CHECK-COUNT-6: OK

func.func @wave(%n: index) -> f32 {
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f64
  %a = arith.constant 0.37 : f64
  %x = arith.mulf %nf, %a : f64
  %w = math.sin %x : f64
  %t = arith.truncf %w : f64 to f32
  return %t : f32
}
// Element (b, h, pos, d) of the logical K (c = 0) or V (c = 1).
func.func @kv(%b: index, %h: index, %pos: index, %d: index, %c: index) -> f32 {
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c150 = arith.constant 150 : index
  %x0 = arith.muli %c, %c2 : index
  %x1 = arith.addi %x0, %b : index
  %x2 = arith.muli %x1, %c2 : index
  %x3 = arith.addi %x2, %h : index
  %x4 = arith.muli %x3, %c150 : index
  %x5 = arith.addi %x4, %pos : index
  %x6 = arith.muli %x5, %c16 : index
  %n = arith.addi %x6, %d : index
  %v = func.call @wave(%n) : (index) -> f32
  return %v : f32
}
func.func @contiguous(%c: index) -> tensor<2x2x150x16xf32> {
  %t = tensor.generate {
  ^bb0(%b: index, %h: index, %p: index, %d: index):
    %v = func.call @kv(%b, %h, %p, %d, %c) : (index, index, index, index, index) -> f32
    tensor.yield %v : f32
  } : tensor<2x2x150x16xf32>
  return %t : tensor<2x2x150x16xf32>
}
func.func @pool(%c: index) -> tensor<64x2x5x16xf32> {
  %t = tensor.generate {
  ^bb0(%p: index, %h: index, %r: index, %d: index):
    // The inverse permutation: 45 = 37⁻¹ mod 64.
    %c45 = arith.constant 45 : index
    %c64 = arith.constant 64 : index
    %p45 = arith.muli %p, %c45 : index
    %i = arith.remsi %p45, %c64 : index
    %c60 = arith.constant 60 : index
    %used = arith.cmpi slt, %i, %c60 : index
    %v = scf.if %used -> (f32) {
      %c30 = arith.constant 30 : index
      %c5 = arith.constant 5 : index
      %b = arith.divsi %i, %c30 : index
      %s = arith.remsi %i, %c30 : index
      %s5 = arith.muli %s, %c5 : index
      %pos = arith.addi %s5, %r : index
      %x = func.call @kv(%b, %h, %pos, %d, %c) : (index, index, index, index, index) -> f32
      scf.yield %x : f32
    } else {
      %junk = arith.constant 100.0 : f32
      scf.yield %junk : f32
    }
    tensor.yield %v : f32
  } : tensor<64x2x5x16xf32>
  return %t : tensor<64x2x5x16xf32>
}
func.func @table() -> tensor<2x30xi32> {
  %t = tensor.generate {
  ^bb0(%b: index, %s: index):
    %c30 = arith.constant 30 : index
    %c37 = arith.constant 37 : index
    %c64 = arith.constant 64 : index
    %b30 = arith.muli %b, %c30 : index
    %bs = arith.addi %b30, %s : index
    %bs37 = arith.muli %bs, %c37 : index
    %p = arith.remsi %bs37, %c64 : index
    %pi = arith.index_cast %p : index to i32
    tensor.yield %pi : i32
  } : tensor<2x30xi32>
  return %t : tensor<2x30xi32>
}
func.func @query(%sq: index) -> tensor<2x4x?x16xf32> {
  %t = tensor.generate %sq {
  ^bb0(%b: index, %h: index, %i: index, %d: index):
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c31 = arith.constant 31 : index
    %y0 = arith.muli %b, %c4 : index
    %y1 = arith.addi %y0, %h : index
    %y2 = arith.muli %y1, %c31 : index
    %y3 = arith.addi %y2, %i : index
    %y4 = arith.muli %y3, %c16 : index
    %y5 = arith.addi %y4, %d : index
    %y6 = arith.muli %y5, %c3 : index
    %n = arith.addi %y6, %c3 : index
    %v = func.call @wave(%n) : (index) -> f32
    %two = arith.constant 2.0 : f32
    %x = arith.mulf %v, %two : f32
    tensor.yield %x : f32
  } : tensor<2x4x?x16xf32>
  return %t : tensor<2x4x?x16xf32>
}

func.func @paged(%q: tensor<2x4x?x16xf32>, %kc: tensor<64x2x5x16xf32>, %vc: tensor<64x2x5x16xf32>, %table: tensor<2x30xi32>, %lens: tensor<2xi64>, %init: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<2x4x?x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64} : (tensor<2x4x?x16xf32>, tensor<64x2x5x16xf32>, tensor<64x2x5x16xf32>, tensor<2x30xi32>, tensor<2xi64>) -> tensor<2x4x?x16xf32>
  return %0 : tensor<2x4x?x16xf32>
}
func.func @contig(%q: tensor<2x4x?x16xf32>, %k: tensor<2x2x150x16xf32>, %v: tensor<2x2x150x16xf32>, %init: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%init : tensor<2x4x?x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64} : (tensor<2x4x?x16xf32>, tensor<2x2x150x16xf32>, tensor<2x2x150x16xf32>) -> tensor<2x4x?x16xf32>
  return %0 : tensor<2x4x?x16xf32>
}
func.func @paged_window(%q: tensor<2x4x?x16xf32>, %kc: tensor<64x2x5x16xf32>, %vc: tensor<64x2x5x16xf32>, %table: tensor<2x30xi32>, %lens: tensor<2xi64>, %init: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<2x4x?x16xf32>) {mask = #attn.mask<sliding_window>, window = 37 : i64, scale = 0.25 : f64} : (tensor<2x4x?x16xf32>, tensor<64x2x5x16xf32>, tensor<64x2x5x16xf32>, tensor<2x30xi32>, tensor<2xi64>) -> tensor<2x4x?x16xf32>
  return %0 : tensor<2x4x?x16xf32>
}
func.func @contig_window(%q: tensor<2x4x?x16xf32>, %k: tensor<2x2x150x16xf32>, %v: tensor<2x2x150x16xf32>, %init: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%init : tensor<2x4x?x16xf32>) {mask = #attn.mask<sliding_window>, window = 37 : i64, scale = 0.25 : f64} : (tensor<2x4x?x16xf32>, tensor<2x2x150x16xf32>, tensor<2x2x150x16xf32>) -> tensor<2x4x?x16xf32>
  return %0 : tensor<2x4x?x16xf32>
}

// max |paged - contiguous| / (1 + max |contiguous|) <= 1e-6.
func.func @compare(%a: tensor<2x4x?x16xf32>, %b: tensor<2x4x?x16xf32>) {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %i4 = arith.constant 4 : index
  %i16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  %sq = tensor.dim %a, %i2 : tensor<2x4x?x16xf32>
  %r:2 = scf.for %x = %i0 to %i2 step %i1 iter_args(%d0 = %z, %m0 = %z) -> (f32, f32) {
    %r1:2 = scf.for %h = %i0 to %i4 step %i1 iter_args(%d1 = %d0, %m1 = %m0) -> (f32, f32) {
      %r2:2 = scf.for %i = %i0 to %sq step %i1 iter_args(%d2 = %d1, %m2 = %m1) -> (f32, f32) {
        %r3:2 = scf.for %d = %i0 to %i16 step %i1 iter_args(%d3 = %d2, %m3 = %m2) -> (f32, f32) {
          %u = tensor.extract %a[%x, %h, %i, %d] : tensor<2x4x?x16xf32>
          %w = tensor.extract %b[%x, %h, %i, %d] : tensor<2x4x?x16xf32>
          %df = arith.subf %u, %w : f32
          %ad = math.absf %df : f32
          %aw = math.absf %w : f32
          %dn = arith.maximumf %d3, %ad : f32
          %mn = arith.maximumf %m3, %aw : f32
          scf.yield %dn, %mn : f32, f32
        }
        scf.yield %r3#0, %r3#1 : f32, f32
      }
      scf.yield %r2#0, %r2#1 : f32, f32
    }
    scf.yield %r1#0, %r1#1 : f32, f32
  }
  %one = arith.constant 1.0 : f32
  %den = arith.addf %one, %r#1 : f32
  %err = arith.divf %r#0, %den : f32
  %tol = arith.constant 1.0e-6 : f32
  %ok = arith.cmpf ole, %err, %tol : f32
  // A result of zeros would compare equal: the outputs must not be.
  %nz = arith.cmpf ogt, %r#1, %z : f32
  %good = arith.andi %ok, %nz : i1
  scf.if %good {
    vector.print str "OK\n"
  } else {
    vector.print %err : f32
    vector.print str "BAD\n"
  }
  return
}

func.func @case(%sq: index, %window: i1) {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %q = func.call @query(%sq) : (index) -> tensor<2x4x?x16xf32>
  %k = func.call @contiguous(%i0) : (index) -> tensor<2x2x150x16xf32>
  %v = func.call @contiguous(%i1) : (index) -> tensor<2x2x150x16xf32>
  %kc = func.call @pool(%i0) : (index) -> tensor<64x2x5x16xf32>
  %vc = func.call @pool(%i1) : (index) -> tensor<64x2x5x16xf32>
  %table = func.call @table() : () -> tensor<2x30xi32>
  %lens = arith.constant dense<150> : tensor<2xi64>
  %init = tensor.empty(%sq) : tensor<2x4x?x16xf32>
  scf.if %window {
    %p = func.call @paged_window(%q, %kc, %vc, %table, %lens, %init) : (tensor<2x4x?x16xf32>, tensor<64x2x5x16xf32>, tensor<64x2x5x16xf32>, tensor<2x30xi32>, tensor<2xi64>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32>
    %c = func.call @contig_window(%q, %k, %v, %init) : (tensor<2x4x?x16xf32>, tensor<2x2x150x16xf32>, tensor<2x2x150x16xf32>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32>
    func.call @compare(%p, %c) : (tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>) -> ()
  } else {
    %p = func.call @paged(%q, %kc, %vc, %table, %lens, %init) : (tensor<2x4x?x16xf32>, tensor<64x2x5x16xf32>, tensor<64x2x5x16xf32>, tensor<2x30xi32>, tensor<2xi64>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32>
    %c = func.call @contig(%q, %k, %v, %init) : (tensor<2x4x?x16xf32>, tensor<2x2x150x16xf32>, tensor<2x2x150x16xf32>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32>
    func.call @compare(%p, %c) : (tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>) -> ()
  }
  return
}

func.func @main() {
  %t = arith.constant true
  %f = arith.constant false
  %s1 = arith.constant 1 : index
  %s3 = arith.constant 3 : index
  %s20 = arith.constant 20 : index
  func.call @case(%s1, %f) : (index, i1) -> ()
  func.call @case(%s3, %f) : (index, i1) -> ()
  func.call @case(%s20, %f) : (index, i1) -> ()
  func.call @case(%s1, %t) : (index, i1) -> ()
  func.call @case(%s3, %t) : (index, i1) -> ()
  func.call @case(%s20, %t) : (index, i1) -> ()
  return
}
