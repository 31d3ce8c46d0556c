"""Einsum (ir/ops/matmul.c), lowered by its canonical form into Transpose, Reshape, MatMul, ReduceSum and
Mul, against PyTorch float64 (torch.einsum) and finite differences.

    test_einsum.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Named cases for tests/ops/op_check.py: the forward (vcc --forward-only) against torch.einsum in float64,
the gradients of the inputs (a --loss mse trainer, where they are parameters) against float64 autograd and
central finite differences. The forms: MViT's relative-position products (bythwc,hkc->bythwk and
bythwc,wkc->bythwk: batched over a subscript both inputs keep that is not the leading one), batched and
plain matrix products, attention's q k^T, matrix-vector, inner and outer products, elementwise products,
transposes and sums of one input, a subscript of one input summed before the product, an output whose
order needs a transpose, implicit outputs (no "->": the subscripts that appear once, in ASCII order, so
upper case first), ellipses with broadcast batch dims, and a scalar.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402


def es(name, eq, *shapes, opset=12):
    names = ["A", "B"][:len(shapes)]
    return oc.Case(name, "Einsum", dict(zip(names, shapes)), lambda **t: torch.einsum(eq, *[t[n] for n in names]),
                   attrs={"equation": eq}, opset=opset)


CASES = [
    # MViT v2 (torchvision mvit_v2_s): r_q (B, heads, q_t, q_h, q_w, dim) with Rh (q_h, k_h, dim), Rw (q_w, k_w, dim)
    es("einsum_mvit_rel_h", "bythwc,hkc->bythwk", (2, 2, 2, 3, 4, 5), (3, 3, 5), opset=17),
    es("einsum_mvit_rel_w", "bythwc,wkc->bythwk", (2, 2, 2, 3, 4, 5), (4, 3, 5), opset=17),
    es("einsum_batch_matmul", "bij,bjk->bik", (3, 2, 4), (3, 4, 5)),
    es("einsum_matmul", "ij,jk->ik", (3, 4), (4, 5)),
    es("einsum_attention_qk", "bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5), opset=13),
    es("einsum_matvec", "ij,j->i", (3, 4), (4,)),
    es("einsum_inner", "i,i", (5,), (5,)),
    es("einsum_outer", "i,j->ij", (3,), (4,)),
    es("einsum_hadamard", "ij,ij->ij", (3, 4), (3, 4)),
    es("einsum_scale_rows", "bi,b->bi", (3, 4), (3,)),
    es("einsum_transpose", "ij->ji", (3, 4)),
    es("einsum_sum", "ij->i", (3, 4)),
    es("einsum_sum_all", "ijk->", (2, 3, 4)),
    es("einsum_permute_sum", "bcth->hbt", (2, 3, 4, 5)),
    es("einsum_presum", "ijk,jl->il", (2, 3, 4), (3, 5)),
    es("einsum_output_transposed", "bij,bjk->kib", (2, 3, 4), (2, 4, 5)),
    es("einsum_batch_last", "bij,bjk->ikb", (2, 3, 4), (2, 4, 5)),
    es("einsum_implicit_matmul", "ij,jk", (3, 4), (4, 5)),
    es("einsum_implicit_transpose", "ji", (3, 4)),
    es("einsum_implicit_upper_first", "ab,bC", (3, 4), (4, 2)),
    es("einsum_spaces", "bij, bjk -> bik", (2, 3, 4), (2, 4, 5)),
    es("einsum_ellipsis_matmul", "...ij,...jk->...ik", (2, 3, 4, 5), (3, 5, 2)),
    es("einsum_ellipsis_broadcast", "...ij,...jk->...ik", (2, 1, 4, 5), (3, 5, 2)),
    es("einsum_ellipsis_implicit", "...ij,...jk", (2, 4, 5), (5, 3)),
    es("einsum_ellipsis_sum", "i...->i", (3, 2, 4)),
    es("einsum_scalar", "->", ()),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
