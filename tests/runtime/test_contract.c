/*
 * test_contract.c - the draws the C and CUDA runtimes promise bit for bit (runtime/elem/dropout.h:
 * RandomUniformLike's vcc_random_value and Dropout's keep decision and scaling) do not depend on whether
 * the compiler fuses a multiply and an add. nvcc contracts a * b + c into an FMA by default and C compilers
 * do not (or do, at -ffp-contract=fast), so this file is built twice, with -ffp-contract=off and with
 * -ffp-contract=fast plus FMA instructions, and runtime_fp_contract compares the two outputs:
 *
 *   test_contract draws      the promised values, as hex: must be the same in both builds
 *   test_contract witness    the same uniform draws by the naive float formula low + (high - low) * u: must
 *                            differ between the builds somewhere, or the fused build fused nothing and the
 *                            comparison above proves nothing
 *
 * (An H200 run of the CUDA numeric test found the naive formula one float32 ulp from the C runtime's.)
 */
#include <stdio.h>
#include <string.h>
#include "../../runtime/vcc_elem.h"

int main(int argc, char **argv)
{
    /* low, high - low pairs of RandomUniformLike nodes; normal draws go through libm (log, cos) and are
     * held to 1e-6 between targets, not bits */
    static const float ab[][2] = {{-2.0f, 5.0f}, {0.1f, 0.7f}, {-1.0f, 3.3f}, {1e-3f, 1.7e3f}};
    const int witness = argc > 1 && strcmp(argv[1], "witness") == 0;
    int64_t i;
    unsigned k;
    for (k = 0; k < sizeof ab / sizeof ab[0]; k++) {
        VccRandomDesc d;
        memset(&d, 0, sizeof d);
        d.stream = 3 + k;
        d.a = ab[k][0];
        d.b = ab[k][1];
        for (i = 0; i < 4096; i++) {
            float v;
            if (witness) {
                volatile float u = (float)(vcc_dropout_draw(7, d.stream, 1, (uint64_t)i) >> 8) * 5.9604644775390625e-8f;
                float uu = u;
                v = d.a + d.b * uu;
            } else {
                v = vcc_random_value(&d, 7, 1, i);
            }
            uint32_t bits;
            memcpy(&bits, &v, sizeof bits);
            printf("%08x\n", (unsigned)bits);
        }
    }
    if (!witness) { /* Dropout: ratio 0.3, the keep decision and x * scale */
        const uint32_t threshold = (uint32_t)(0.3 * 4294967296.0);
        const float scale = 1.0f / 0.7f;
        for (i = 0; i < 4096; i++) {
            int keep = 0;
            float x = (float)(i - 2048) * 0.013f; /* one rounding: nothing here to fuse */
            float y = vcc_dropout_fwd(x, vcc_dropout_draw(11, 2, 3, (uint64_t)i), threshold, scale, &keep);
            uint32_t bits;
            memcpy(&bits, &y, sizeof bits);
            printf("%08x %d\n", (unsigned)bits, keep);
        }
    }
    return 0;
}
