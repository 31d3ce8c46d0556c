/*
 * fuzz_safetensors.c — fuzz target: bytes as a .safetensors file through the trainer's reader
 * (runtime/vcc_io.h, included the way tests/runtime/test_io.c does it).
 *
 * vcc_st_load on the bytes (written to a scratch file: the reader takes a path). Checked:
 *   - a refusal returns nonzero with the result zeroed and a message "<path>: ..." fit for a terminal
 *     (tensor names and dtypes from the header reach it escaped; VCC_FUZZ_TEXT_CHECK=0 skips that);
 *   - an accepted file: buf holds the file's bytes; every entry has a name, a known dtype, rank 0..8,
 *     a range [begin, end) inside the data section of prod(dims) * itemsize bytes; vcc_st_find finds
 *     each entry by name; the ranges tile the data section;
 *   - it writes back (vcc_st_save, header order) and reads again to the same names, dtypes, shapes and
 *     bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include "../../runtime/vcc_io.h"
#include "fuzz_util.h"

/* qsort order on (begin, end) pairs */
static int cmp_range(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void check_entries(const VccSafetensors *st, const uint8_t *data, size_t size) {
    FUZZ_CHECK(st->size == size && st->buf != NULL && memcmp(st->buf, data, size) == 0, "buf is not the file");
    FUZZ_CHECK(st->n >= 0 && (st->n == 0 || st->entries != NULL), "n = %d", st->n);
    uint64_t hsize = 0;
    for (int k = 0; k < 8; k++) hsize |= (uint64_t)data[k] << (8 * k);
    uint64_t dstart = 8 + hsize;
    FUZZ_CHECK(dstart <= size, "header past the end of an accepted file");
    uint64_t *ranges = malloc(2 * sizeof *ranges * (size_t)(st->n + 1));
    FUZZ_CHECK(ranges != NULL, "out of memory");
    for (int i = 0; i < st->n; i++) {
        const VccStEntry *e = &st->entries[i];
        FUZZ_CHECK(e->name != NULL, "entry %d has no name", i);
        int isz = vcc_st_dtype_size(e->dtype);
        FUZZ_CHECK(isz > 0, "entry %d has dtype '%.8s'", i, e->dtype);
        FUZZ_CHECK(e->rank >= 0 && e->rank <= 8, "entry %d has rank %d", i, e->rank);
        uint64_t nb = (uint64_t)isz;
        for (int k = 0; k < e->rank; k++) {
            FUZZ_CHECK(e->dims[k] >= 0, "entry %d: negative dim", i);
            FUZZ_CHECK(!vcc_io_mul_u64(nb, (uint64_t)e->dims[k], &nb), "entry %d: size overflows", i);
        }
        FUZZ_CHECK(e->begin >= dstart && e->begin <= e->end && e->end <= size, "entry %d: range outside the data", i);
        FUZZ_CHECK(e->end - e->begin == nb, "entry %d: range of %llu bytes for %llu", i,
                   (unsigned long long)(e->end - e->begin), (unsigned long long)nb);
        FUZZ_CHECK(vcc_st_find(st, e->name) == e, "vcc_st_find does not find entry %d", i);
        ranges[2 * i] = e->begin;
        ranges[2 * i + 1] = e->end;
    }
    /* sorted by (begin, end), each range starts where the previous one ended */
    qsort(ranges, (size_t)st->n, 2 * sizeof *ranges, cmp_range);
    uint64_t pos = dstart;
    for (int i = 0; i < st->n; i++) {
        FUZZ_CHECK(ranges[2 * i] == pos, "the entries do not tile the data section");
        pos = ranges[2 * i + 1];
    }
    FUZZ_CHECK(pos == size, "the entries leave %llu bytes of the data section uncovered",
               (unsigned long long)(size - pos));
    free(ranges);
}

static void check_roundtrip(const VccSafetensors *st) {
    VccStWrite *w = calloc((size_t)st->n + 1, sizeof *w);
    FUZZ_CHECK(w != NULL, "out of memory");
    for (int i = 0; i < st->n; i++) {
        const VccStEntry *e = &st->entries[i];
        w[i] = (VccStWrite){e->name, e->dtype, e->rank, e->dims, st->buf + e->begin, e->end - e->begin};
    }
    const char *path = fuzz_path(1, "out.safetensors");
    char err[512] = "";
    int rc = vcc_st_save(path, w, st->n, err, sizeof err);
    FUZZ_CHECK(rc == 0, "an accepted file does not write back: %s", err);
    VccSafetensors b;
    rc = vcc_st_load(path, &b, err, sizeof err);
    FUZZ_CHECK(rc == 0, "a file vcc_st_save wrote does not load: %s", err);
    FUZZ_CHECK(b.n == st->n, "%d tensors written, %d read", st->n, b.n);
    for (int i = 0; i < st->n; i++) {
        const VccStEntry *x = &st->entries[i], *y = &b.entries[i];
        FUZZ_CHECK(strcmp(x->name, y->name) == 0 && strcmp(x->dtype, y->dtype) == 0 && x->rank == y->rank &&
                       memcmp(x->dims, y->dims, sizeof x->dims[0] * (size_t)x->rank) == 0 &&
                       x->end - x->begin == y->end - y->begin &&
                       memcmp(st->buf + x->begin, b.buf + y->begin, (size_t)(x->end - x->begin)) == 0,
                   "tensor %d changed in a save/load round trip", i);
    }
    vcc_st_free(&b);
    free(w);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path(0, "in.safetensors");
    fuzz_write_file(path, data, size);
    VccSafetensors st;
    char err[512] = "";
    int rc = vcc_st_load(path, &st, err, sizeof err);
    if (rc != 0) {
        fuzz_check_io_refusal(".safetensors file", path, &st, sizeof st, err);
        return 0;
    }
    check_entries(&st, data, size);
    check_roundtrip(&st);
    vcc_st_free(&st);
    return 0;
}
