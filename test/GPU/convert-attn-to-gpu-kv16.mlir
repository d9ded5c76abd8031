// A 16-bit K/V cache at the pass level: the fp32 kernel takes a bf16 cache
// (widened as it stages its f32 tiles), the bf16 tensor-core kernel copies
// it as it is into its bf16 ring by cp.async (16 bytes, zero-filled past the
// block's keys), the f16 one refuses it rather than round it to f16; the
// tensor-core kernel refuses a block of more than 128 rows.
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu | FileCheck %s --check-prefix=FP32
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu="precision=bf16 wgmma=true" | FileCheck %s --check-prefix=WGMMA
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu="precision=bf16 wgmma=true tma=true" | FileCheck %s --check-prefix=TMA
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu="precision=bf16 wgmma=true tma=true overlap=true" | FileCheck %s --check-prefix=OVERLAP
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu="precision=bf16 wgmma=true tma=true warp-specialized=true" | FileCheck %s --check-prefix=WARPSPEC
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=f16 2>&1 | FileCheck %s --check-prefix=F16
// FP32: gpu.launch
// FP32: memref.load %{{.*}}[{{.*}}] : memref<?x2x?x64xbf16>
// FP32-NEXT: arith.extf %{{.*}} : bf16 to f32
// Q tile 128 x (64 + 8) and two-slot K and V rings 2 x 64 x 72, bf16:
// 18432 + 18432 + 18432 bytes.
// BF16: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) dynamic_shared_memory_size %c55296_i32
// BF16: %[[SMEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// BF16: memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x72xbf16, #gpu.address_space<workgroup>>
// BF16: %[[K:.*]] = memref.view %[[SMEM]][%c18432][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: %[[V:.*]] = memref.view %[[SMEM]][%c36864][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<128x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// BF16: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[K]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x?x64xbf16> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[V]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x?x64xbf16> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: nvgpu.device_async_create_group
// BF16: scf.for
// BF16: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// BF16: gpu.barrier
// BF16: nvgpu.ldmatrix %[[K]]{{.*}}transpose = false
// BF16: nvvm.mma.sync
// BF16: nvgpu.ldmatrix %[[V]]{{.*}}transpose = true
// BF16: nvvm.mma.sync
// BF16: gpu.barrier
// wgmma (sm_90a): two warpgroups of 64 rows; Q 128 x 64 and the rings 2 x
// 64 x 64 unpadded in 128-byte swizzled rows (16384 bytes each), plus 1024
// to align the base at run time and 128 past the static .shared variables
// (the TMA mbarriers, declared after the dynamic memory's symbol); the copies land at swizzled indices (the
// 16-byte chunk XOR the row mod 8) and are fenced for the async proxy; S
// and P·V as wgmma m64n64k16 (A by descriptor, then from 4 registers).
// WGMMA: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) dynamic_shared_memory_size %c50304_i32
// WGMMA: %[[SMEM:.*]] = gpu.dynamic_shared_memory
// WGMMA: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[SMEM]]
// WGMMA-NEXT: %[[C128:.*]] = arith.constant 128 : index
// WGMMA-NEXT: arith.addi %[[ADDR]], %[[C128]]
// WGMMA: %[[Q:.*]] = memref.view %[[SMEM]]{{.*}} to memref<8192xbf16, #gpu.address_space<workgroup>>
// WGMMA: %[[K:.*]] = memref.view %[[SMEM]]{{.*}} to memref<8192xbf16, #gpu.address_space<workgroup>>
// WGMMA: %[[V:.*]] = memref.view %[[SMEM]]{{.*}} to memref<8192xbf16, #gpu.address_space<workgroup>>
// WGMMA: arith.xori
// WGMMA: memref.store %{{.*}}, %[[Q]][%{{.*}}] : memref<8192xbf16
// WGMMA: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA: gpu.barrier
// WGMMA: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[K]][%{{.*}}], 8
// WGMMA: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[V]][%{{.*}}], 8
// WGMMA: scf.for
// WGMMA: nvgpu.device_async_wait
// WGMMA: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA-NEXT: gpu.barrier
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, $64, $65, p, 1, 1, 0, 0;
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NOT: nvgpu.ldmatrix
// tma=true: K's and V's tensor maps made on the host (boxes of 1 x 1 x 64
// keys x 64 columns, 128-byte swizzle, zeros out of bounds), into the
// kernel as addresses; one mbarrier per ring slot, armed by thread 0 with
// the tile's 64 x (64 + 64) x 2 bytes; boxes at (column, key, KV head,
// batch); a wait by parity; V's rows past the keys zeroed in masked tiles.
// TMA: %[[KC:.*]] = memref.cast %{{.*}} : memref<?x2x?x64xbf16> to memref<*xbf16>
// TMA: %[[KM:.*]] = nvgpu.tma.create.descriptor %[[KC]] box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_128b, oob = zero, interleave = none>
// TMA: %[[KP:.*]] = builtin.unrealized_conversion_cast %[[KM]]
// TMA: %[[KA:.*]] = llvm.ptrtoint %[[KP]] : !llvm.ptr to i64
// TMA: nvgpu.tma.create.descriptor
// TMA: gpu.launch
// TMA: llvm.inttoptr %[[KA]] : i64 to !llvm.ptr
// TMA: %[[MB:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// TMA: nvgpu.mbarrier.init %[[MB]][%{{.*}}], %{{.*}}, predicate = %{{.*}}
// TMA: nvgpu.mbarrier.init %[[MB]][%{{.*}}], %{{.*}}, predicate = %{{.*}}
// TMA-NEXT: nvvm.fence.mbarrier.init
// TMA-NEXT: nvgpu.tma.fence.descriptor
// TMA-NEXT: nvgpu.tma.fence.descriptor
// TMA: nvgpu.mbarrier.arrive.expect_tx %[[MB]][%{{.*}}], %c16384
// TMA: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %[[MB]][%{{.*}}] to %{{.*}} : {{.*}} -> memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>
// TMA: nvgpu.tma.async.load
// TMA: scf.for
// TMA: nvgpu.mbarrier.try_wait.parity %[[MB]]
// TMA: nvvm.wgmma.fence.aligned
// TMA: scf.for
// TMA: nvgpu.mbarrier.try_wait.parity %[[MB]]
// TMA: arith.cmpi sge
// TMA: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<8192xbf16, #gpu.address_space<workgroup>>
// TMA-NOT: nvgpu.device_async_copy
// overlap=true: K and V on barriers of their own; V's slot 1 zeroed (the
// first tile's P·V step reads it with P = 0); per tile, K of the next tile
// issued, this tile's K waited, the previous tile's V waited after the
// first, S and the previous P·V committed as two groups, the softmax after
// wait_group 1, O scaled after wait_group 0, the next tile's V issued after
// the barrier; the last tile's P·V after the loops.
// OVERLAP: %[[KB:.*]] = nvgpu.mbarrier.create
// OVERLAP: %[[VB:.*]] = nvgpu.mbarrier.create
// OVERLAP: scf.for
// OVERLAP: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<8192xbf16, #gpu.address_space<workgroup>>
// OVERLAP: nvgpu.mbarrier.arrive.expect_tx %[[KB]]
// OVERLAP: nvgpu.mbarrier.arrive.expect_tx %[[VB]]
// OVERLAP: scf.for
// OVERLAP: nvgpu.mbarrier.arrive.expect_tx %[[KB]]
// OVERLAP: nvgpu.mbarrier.try_wait.parity %[[KB]]
// OVERLAP: nvgpu.mbarrier.try_wait.parity %[[VB]]
// OVERLAP: nvvm.wgmma.fence.aligned
// OVERLAP: nvvm.wgmma.commit.group.sync.aligned
// OVERLAP: {$64, $65, $66, $67}
// OVERLAP: nvvm.wgmma.commit.group.sync.aligned
// OVERLAP-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// OVERLAP: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP: gpu.barrier
// OVERLAP: nvgpu.mbarrier.arrive.expect_tx %[[VB]]
// OVERLAP: scf.yield
// OVERLAP: scf.for
// OVERLAP: scf.if
// OVERLAP: nvgpu.mbarrier.try_wait.parity %[[VB]]
// OVERLAP: {$64, $65, $66, $67}
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// warp-specialized=true: a third warpgroup (384 threads) produces. Two more
// barrier pairs (K and V of each slot released: 8 arrivals, lane 0 of each
// consumer warp); after the Q tile and slot 1's zeros (the whole block's last
// barrier), the producer warpgroup lowers its registers to 24 and one of its
// threads loops over the tiles: K_t once tile t - 2 released the slot, V_t
// once tile t - 1 did (from t = 1: slot 1's zeros are read by tile 0). The
// consumers raise theirs to 240 and run the overlapped loops without issuing
// loads or the block's barrier: K_j's slot released after wait_group 1 (S
// done), V_{j-1}'s after wait_group 0; the last tile's zeroed rows fenced by
// named barrier 1 over the 256 consumer threads.
// WARPSPEC: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c384, {{.*}}) dynamic_shared_memory_size %c50304_i32
// WARPSPEC: %[[KB:.*]] = nvgpu.mbarrier.create
// WARPSPEC: %[[VB:.*]] = nvgpu.mbarrier.create
// WARPSPEC: %[[KE:.*]] = nvgpu.mbarrier.create
// WARPSPEC: nvgpu.mbarrier.init %[[KE]][%{{.*}}], %c8
// WARPSPEC: %[[VE:.*]] = nvgpu.mbarrier.create
// WARPSPEC: nvgpu.mbarrier.init %[[VE]][%{{.*}}], %c8
// WARPSPEC: scf.for %{{.*}} = %{{.*}} to %c8192 step %c384
// WARPSPEC: gpu.barrier
// WARPSPEC: scf.for %{{.*}} = %{{.*}} to %c4096{{.*}} step %c384
// WARPSPEC: gpu.barrier
// WARPSPEC-NEXT: %[[C8:.*]] = arith.constant 8 : index
// WARPSPEC-NEXT: %[[WARP:.*]] = arith.cmpi uge, %{{.*}}, %[[C8]]
// WARPSPEC-NEXT: scf.if %[[WARP]] {
// WARPSPEC-NEXT: nvvm.setmaxregister decrease 24
// WARPSPEC: scf.for
// WARPSPEC: nvgpu.mbarrier.try_wait.parity %[[KE]]
// WARPSPEC: nvgpu.mbarrier.arrive.expect_tx %[[KB]]
// WARPSPEC: nvgpu.tma.async.load
// WARPSPEC: nvgpu.mbarrier.try_wait.parity %[[VE]]
// WARPSPEC: nvgpu.mbarrier.arrive.expect_tx %[[VB]]
// WARPSPEC: } else {
// WARPSPEC-NEXT: nvvm.setmaxregister increase 240
// WARPSPEC-NOT: gpu.barrier
// WARPSPEC-NOT: nvgpu.tma.async.load
// WARPSPEC: scf.for
// WARPSPEC: nvgpu.mbarrier.try_wait.parity %[[KB]]
// WARPSPEC: nvgpu.mbarrier.try_wait.parity %[[VB]]
// WARPSPEC: nvvm.wgmma.wait.group.sync.aligned 1
// WARPSPEC: %[[LEAD:.*]] = arith.cmpi eq, %{{.*}}, %c0
// WARPSPEC-NEXT: scf.if %[[LEAD]] {
// WARPSPEC-NEXT: nvgpu.mbarrier.arrive %[[KE]]
// WARPSPEC: nvvm.wgmma.wait.group.sync.aligned 0
// WARPSPEC: nvgpu.mbarrier.arrive %[[VE]]
// WARPSPEC: scf.for
// WARPSPEC: nvgpu.mbarrier.arrive %[[KE]]
// WARPSPEC: nvgpu.mbarrier.arrive %[[VE]]
// WARPSPEC: nvgpu.mbarrier.try_wait.parity %[[VB]]
// WARPSPEC: nvvm.barrier id = %c1_i32 number_of_threads = %c256_i32
// WARPSPEC-NOT: gpu.barrier
// ROWS: error: 'attn.online_attention' op the bf16 tensor-core kernel holds at most 128 rows per thread block, got 4 heads x q-block 128 = 512: use a q-block of at most 32
// F16: error: 'attn.online_attention' op the f16 tensor-core kernel would round a bf16 K/V cache to f16: compile with precision=bf16 or fp32
func.func @entry(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>,
                 %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
