# kda-recurrent.mlir over 70 tokens instead of 7 (kda_chunked.test): the
# inputs' shapes and row strides, the prefill of 69 tokens before the
# decode step, and the batch's lengths 0 and 30.
s/d0 \* 112 + d1 \* 112 + d2 \* 16/d0 * 1120 + d1 * 1120 + d2 * 16/
s/d0 \* 504 + d1 \* 252 + d2 \* 36/d0 * 5040 + d1 * 2520 + d2 * 36/
s/d0 \* 224 + d1 \* 112 + d2 \* 16/d0 * 2240 + d1 * 1120 + d2 * 16/
s/d0 \* 14 + d1 \* 7 + d2/d0 * 140 + d1 * 70 + d2/
s/x7x/x70x/g
s/x7xf32/x70xf32/g
s/x6x/x69x/g
s/x6xf32/x69xf32/g
s/\[2, 1, 7, 16\]/[2, 1, 70, 16]/g
s/\[2, 2, 7, 36\]/[2, 2, 70, 36]/g
s/\[2, 2, 7, 16\]/[2, 2, 70, 16]/g
s/\[2, 2, 7\]/[2, 2, 70]/g
s/\[2, 1, 6, 16\]/[2, 1, 69, 16]/g
s/\[2, 2, 6, 36\]/[2, 2, 69, 36]/g
s/\[2, 2, 6, 16\]/[2, 2, 69, 16]/g
s/\[2, 2, 6\]/[2, 2, 69]/g
s/\[0, 0, 6, 0\]/[0, 0, 69, 0]/g
s/\[0, 0, 6\]/[0, 0, 69]/g
s/dense<\[0, 3\]>/dense<[0, 30]>/
