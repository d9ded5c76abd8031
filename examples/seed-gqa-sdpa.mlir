// The seed's model (../shared/seeds/transformer-and-attention.txt): 64 query
// heads sharing 4 key/value heads (GQA groups of 16), head_dim 256, causal.
// The eager chain as a framework runs it, and the fused op it computes.
func.func @eager(%q: tensor<?x64x?x256xf32>, %k: tensor<?x4x?x256xf32>,
                 %v: tensor<?x4x?x256xf32>) -> tensor<?x64x?x256xf32> {
  %s = attn.qk %q, %k : (tensor<?x64x?x256xf32>, tensor<?x4x?x256xf32>) -> tensor<?x64x?x?xf32>
  %ss = attn.scale %s {scale = 0.0625 : f64} : tensor<?x64x?x?xf32>
  %m = attn.mask %ss {kind = #attn.mask<causal>} : tensor<?x64x?x?xf32>
  %p = attn.softmax %m : tensor<?x64x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x64x?x?xf32>, tensor<?x4x?x256xf32>) -> tensor<?x64x?x256xf32>
  return %o : tensor<?x64x?x256xf32>
}

func.func @fused(%q: tensor<?x64x?x256xf32>, %k: tensor<?x4x?x256xf32>,
                 %v: tensor<?x4x?x256xf32>) -> tensor<?x64x?x256xf32> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x64x?x256xf32>) {mask = #attn.mask<causal>, scale = 0.0625 : f64}
      : (tensor<?x64x?x256xf32>, tensor<?x4x?x256xf32>, tensor<?x4x?x256xf32>) -> tensor<?x64x?x256xf32>
  return %o : tensor<?x64x?x256xf32>
}
