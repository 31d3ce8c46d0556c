/*
 * fuzz_npy.c — fuzz target: bytes as a .npy file through the trainer's reader (runtime/vcc_io.h,
 * included the way tests/runtime/test_io.c does it).
 *
 * vcc_npy_load on the bytes (written to a scratch file: the reader takes a path). Checked:
 *   - a refusal returns nonzero with the result zeroed and a message "<path>: ..." fit for a terminal;
 *   - an accepted file has dtype f4 or i8, rank 0..8, non-negative dims, data != NULL and
 *     nbytes == prod(dims) * itemsize == the file's size minus its header;
 *   - it writes back (vcc_npy_save) and reads again to the same dtype, shape and bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include "../../runtime/vcc_io.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path(0, "in.npy");
    fuzz_write_file(path, data, size);
    VccNpy a;
    char err[512] = "";
    int rc = vcc_npy_load(path, &a, err, sizeof err);
    if (rc != 0) {
        fuzz_check_io_refusal(".npy file", path, &a, sizeof a, err);
        return 0;
    }
    /* the numeric .npy codes vcc reads (numpy's names: float32/64, int8-64, uint8-64, bool) */
    static const struct { const char *code; int size; } kinds[] = {
        {"f4", 4}, {"f8", 8}, {"i1", 1}, {"i2", 2}, {"i4", 4}, {"i8", 8},
        {"u1", 1}, {"u2", 2}, {"u4", 4}, {"u8", 8}, {"b1", 1}};
    int isz = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(a.dtype, kinds[k].code) == 0) isz = kinds[k].size;
    FUZZ_CHECK(isz != 0, "accepted dtype '%.8s'", a.dtype);
    FUZZ_CHECK(a.rank >= 0 && a.rank <= 8, "rank %d", a.rank);
    FUZZ_CHECK(a.data != NULL, "data is NULL");
    uint64_t nel = 1;
    for (int i = 0; i < a.rank; i++) {
        FUZZ_CHECK(a.dims[i] >= 0, "dim %d is %lld", i, (long long)a.dims[i]);
        FUZZ_CHECK(!vcc_io_mul_u64(nel, (uint64_t)a.dims[i], &nel), "shape overflows");
    }
    FUZZ_CHECK(nel * (uint64_t)isz == a.nbytes, "nbytes %zu for %llu elements", a.nbytes, (unsigned long long)nel);
    FUZZ_CHECK(a.nbytes <= size, "nbytes %zu from a file of %zu bytes", a.nbytes, size);
    FUZZ_CHECK(a.nbytes == 0 || memcmp(a.data, data + size - a.nbytes, a.nbytes) == 0,
               "the data is not the file's last nbytes bytes");

    /* write it back and read it again */
    const char *path2 = fuzz_path(1, "out.npy");
    rc = vcc_npy_save(path2, a.dtype, a.rank, a.dims, a.data, err, sizeof err);
    FUZZ_CHECK(rc == 0, "an accepted array does not write back: %s", err);
    VccNpy b;
    rc = vcc_npy_load(path2, &b, err, sizeof err);
    FUZZ_CHECK(rc == 0, "an array vcc_npy_save wrote does not load: %s", err);
    FUZZ_CHECK(strcmp(a.dtype, b.dtype) == 0 && a.rank == b.rank &&
                   memcmp(a.dims, b.dims, sizeof a.dims[0] * (size_t)a.rank) == 0 && a.nbytes == b.nbytes &&
                   (a.nbytes == 0 || memcmp(a.data, b.data, a.nbytes) == 0),
               "the array changed in a save/load round trip");
    vcc_npy_free(&b);
    vcc_npy_free(&a);
    unlink(path2);
    return 0;
}
