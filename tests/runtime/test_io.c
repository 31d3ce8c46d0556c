/*
 * test_io.c - runtime/vcc_io.h: .npy loading and .safetensors load/save.
 *
 *   vcc_rt_test_io DIR [--st]
 *
 * DIR holds the files tests/runtime/io_check.py wrote with numpy (and, with
 * --st, py.safetensors written by the safetensors package). Checks:
 *   - numpy-written .npy files (f4 / i8, format 1.0 / 2.0 / 3.0, 0-d, empty,
 *     rank 5) load with the right dtype, shape and values;
 *   - every malformed or unsupported file (numpy-written and crafted here:
 *     truncated, bad magic, header length past EOF, overflowing dims,
 *     fortran_order True, big-endian, wrong dtype, bad dicts ...) is rejected
 *     with a nonzero return, a zeroed result and a message "<path>: ...";
 *   - random mutations / truncations of valid files never crash (run this
 *     under -fsanitize=address,undefined or valgrind to make that meaningful);
 *   - vcc_st_save / vcc_st_load round trip, the py.safetensors file, and
 *     malformed .safetensors files (header size past EOF, bad JSON, offsets
 *     out of range, overlaps, gaps, nbytes vs shape ...) rejected.
 *   - 200,000 tensors: loading, looking every one up by name, refusing a
 *     duplicate name, saving: each within 5 s of CPU time (n log n);
 *   - built with _POSIX_C_SOURCE (vcc_rt_test_io_posix, as the generated
 *     programs are): symlinks planted at <out>.tmp are not followed, writers
 *     refuse FIFOs, folders and symlinks to them, readers refuse a FIFO at
 *     once and a folder, vcc_io_check_output, the umask applies to outputs.
 * Writes DIR/c.safetensors and DIR/c_empty.safetensors for io_check.py to
 * read back with the safetensors package.
 */
#include "../../runtime/vcc_elem.h"
#include "../../runtime/vcc_io.h"

#include <math.h>
#include <time.h>
#if VCC_IO_FSYNC
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

static const char *g_dir;
static int g_fail, g_checks;
#if VCC_IO_FSYNC
static int count_prefix(const char *prefix);
#endif

static void ok(int cond, const char *fmt, ...) VCC_IO_PRINTF(2, 3);
static void ok(int cond, const char *fmt, ...)
{
    va_list ap;
    g_checks++;
    if (!cond) g_fail++;
    printf("%s ", cond ? "ok  " : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static int read_all(const char *name, unsigned char **buf, size_t *len)
{
    char path[1024];
    FILE *f;
    long n;
    path_of(path, sizeof path, name);
    f = fopen(path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = (unsigned char *)malloc((size_t)n + 1);
    *len = (size_t)n;
    if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) { fclose(f); return 1; }
    fclose(f);
    return 0;
}

static void write_all(const char *name, const void *buf, size_t len)
{
    char path[1024];
    FILE *f;
    path_of(path, sizeof path, name);
    f = fopen(path, "wb");
    if (!f || (len && fwrite(buf, 1, len, f) != len)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

static float f4v(int64_t i) { return (float)(i % 17) * 0.25f - 1.5f; }
static int64_t i8v(int64_t i) { return i * 1000000007LL - 3; }

/* ------------------------------------------------------------------------ */
/* .npy                                                                      */
/* ------------------------------------------------------------------------ */

static void npy_good(const char *name, const char *dtype, int rank, const int64_t *dims)
{
    char path[1024], err[512];
    VccNpy a;
    int64_t n = 1, i;
    int good;
    path_of(path, sizeof path, name);
    if (vcc_npy_load(path, &a, err, sizeof err)) {
        ok(0, "npy load %s: %s", name, err);
        return;
    }
    good = strcmp(a.dtype, dtype) == 0 && a.rank == rank && a.data != NULL;
    for (i = 0; good && i < rank; i++) {
        good = a.dims[i] == dims[i];
        n *= dims[i];
    }
    good = good && a.nbytes == (size_t)n * (dtype[1] == '4' ? 4u : 8u);
    for (i = 0; good && i < n; i++) {
        if (dtype[0] == 'f') good = ((const float *)a.data)[i] == f4v(i);
        else good = ((const int64_t *)a.data)[i] == i8v(i);
    }
    ok(good, "npy load %-16s dtype %s rank %d, %lld values exact", name, a.dtype, a.rank, (long long)n);
    vcc_npy_free(&a);
}

/* t_<code>.npy (io_check.py): (2, 3), element k = k * step + base in its type (wrapping as numpy does),
 * bool: k % 3 == 0. */
static void npy_typed(const char *code)
{
    static const struct { const char *code; double step, base; } f[] = {
        {"f8", 0.25, -1.5}, {"i1", 37, -100}, {"i2", 1000, -3000}, {"i4", 100000, -7}, {"u1", 50, 0},
        {"u2", 13000, 1}, {"u4", 800000000, 3}, {"u8", 0, 5}};
    char path[1024], name[32], err[512];
    VccNpy a;
    int good, k, j;
    snprintf(name, sizeof name, "t_%s.npy", code);
    path_of(path, sizeof path, name);
    if (vcc_npy_load(path, &a, err, sizeof err)) {
        ok(0, "npy load %s: %s", name, err);
        return;
    }
    good = strcmp(a.dtype, code) == 0 && a.rank == 2 && a.dims[0] == 2 && a.dims[1] == 3 &&
           a.nbytes == 6u * (size_t)(code[1] - '0');
    for (j = 0; j < (int)(sizeof f / sizeof f[0]) && strcmp(f[j].code, code); j++) {}
    for (k = 0; good && k < 6; k++) {
        const unsigned char *p = (const unsigned char *)a.data;
        double want = k * f[j < 8 ? j : 0].step + f[j < 8 ? j : 0].base;
        if (!strcmp(code, "f8")) good = ((const double *)a.data)[k] == want;
        else if (!strcmp(code, "i1")) good = ((const int8_t *)p)[k] == (int8_t)(int)want;
        else if (!strcmp(code, "i2")) good = ((const int16_t *)a.data)[k] == (int16_t)want;
        else if (!strcmp(code, "i4")) good = ((const int32_t *)a.data)[k] == (int32_t)want;
        else if (!strcmp(code, "u1")) good = p[k] == (uint8_t)want;
        else if (!strcmp(code, "u2")) good = ((const uint16_t *)a.data)[k] == (uint16_t)want;
        else if (!strcmp(code, "u4")) good = ((const uint32_t *)a.data)[k] == (uint32_t)want;
        else if (!strcmp(code, "u8")) good = ((const uint64_t *)a.data)[k] == (uint64_t)k * 3000000000000000000u + 5u;
        else good = p[k] == (k % 3 == 0);
    }
    ok(good, "npy load %-16s dtype %s, 6 values exact", name, a.dtype);
    vcc_npy_free(&a);
}

/* Expect rejection; `want` (may be NULL) must occur in the message. */
static void npy_bad_path(const char *path, const char *label, const char *want)
{
    char err[512];
    VccNpy a;
    size_t pl = strlen(path);
    int rc;
    memset(&a, 0x5A, sizeof a);
    err[0] = '\0';
    rc = vcc_npy_load(path, &a, err, sizeof err);
    ok(rc != 0 && a.data == NULL && a.rank == 0 && strncmp(err, path, pl) == 0 && err[pl] == ':' &&
           (!want || strstr(err, want) != NULL),
       "npy reject %-26s -> %s", label, err);
    if (rc == 0) vcc_npy_free(&a);
}

static void npy_bad(const char *name, const char *want)
{
    char path[1024];
    path_of(path, sizeof path, name);
    npy_bad_path(path, name, want);
}

/* Craft a v1 .npy with the given header dict text (padded, '\n'-terminated) and data. */
static void craft_npy(const char *name, const char *dict, size_t data_len)
{
    size_t dl = strlen(dict), hl = dl + 1, total;
    unsigned char *b;
    while ((10 + hl) % 64) hl++;
    total = 10 + hl + data_len;
    b = (unsigned char *)calloc(total, 1);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hl & 0xFF);
    b[9] = (unsigned char)(hl >> 8);
    memcpy(b + 10, dict, dl);
    memset(b + 10 + dl, ' ', hl - dl - 1);
    b[10 + hl - 1] = '\n';
    write_all(name, b, total);
    free(b);
}

static void test_npy(void)
{
    static const int64_t d234[3] = {2, 3, 4}, d5[1] = {5}, d35[2] = {3, 5}, d22[2] = {2, 2}, d4[1] = {4};
    static const int64_t d03[2] = {0, 3}, d5r[5] = {1, 2, 3, 2, 2}, d5d[5] = {2, 3, 2, 2, 2};
    unsigned char *base;
    size_t blen;
    char path[1024];

    npy_good("f4_v1.npy", "f4", 3, d234);
    npy_good("i8_v1.npy", "i8", 1, d5);
    npy_good("f4_v2.npy", "f4", 2, d35);
    npy_good("i8_v2.npy", "i8", 2, d22);
    npy_good("f4_v3.npy", "f4", 1, d4);
    npy_good("f4_scalar.npy", "f4", 0, d4);
    npy_good("f4_empty.npy", "f4", 2, d03);
    npy_good("f4_rank5.npy", "f4", 5, d5r);
    npy_good("f4_default.npy", "f4", 5, d5d);

    /* numpy-written files with unsupported dtypes / layouts */
    npy_typed("f8");
    npy_typed("i1");
    npy_typed("i2");
    npy_typed("i4");
    npy_typed("u1");
    npy_typed("u2");
    npy_typed("u4");
    npy_typed("u8");
    npy_typed("b1");
    npy_bad("bad_f2.npy", "unsupported .npy dtype '<f2'");
    npy_bad("bad_c8.npy", "unsupported .npy dtype '<c8'");
    npy_bad("bad_be_f4.npy", "big-endian dtype '>f4'");
    npy_bad("bad_be_i8.npy", "big-endian dtype '>i8'");
    npy_bad("bad_fortran.npy", "fortran_order True");
    npy_bad("bad_struct.npy", "dtype");
    npy_bad("bad_object.npy", "unsupported .npy dtype '|O'");

    /* byte-level damage to a valid file */
    if (read_all("f4_v1.npy", &base, &blen)) { ok(0, "read f4_v1.npy"); return; }
    write_all("m_empty.npy", base, 0);
    npy_bad("m_empty.npy", "too short");
    write_all("m_short.npy", base, 5);
    npy_bad("m_short.npy", "too short");
    write_all("m_hlen_only.npy", base, 9);
    npy_bad("m_hlen_only.npy", "end of file");
    write_all("m_in_header.npy", base, 40);
    npy_bad("m_in_header.npy", "past the end");
    write_all("m_trunc_data.npy", base, blen - 4);
    npy_bad("m_trunc_data.npy", "truncated");
    write_all("m_trunc_1.npy", base, blen - 1);
    npy_bad("m_trunc_1.npy", "truncated");
    {
        unsigned char *t = (unsigned char *)malloc(blen + 3);
        memcpy(t, base, blen);
        memset(t + blen, 0, 3);
        write_all("m_trailing.npy", t, blen + 3);
        npy_bad("m_trailing.npy", "after the array data");
        memcpy(t, base, blen);
        t[0] = 0x92;
        write_all("m_magic.npy", t, blen);
        npy_bad("m_magic.npy", "bad magic");
        memcpy(t, base, blen);
        t[1] = 'n';
        write_all("m_magic2.npy", t, blen);
        npy_bad("m_magic2.npy", "bad magic");
        memcpy(t, base, blen);
        t[6] = 4;
        write_all("m_version.npy", t, blen);
        npy_bad("m_version.npy", "version 4.0");
        memcpy(t, base, blen);
        t[8] = 0xFF; t[9] = 0xFF;
        write_all("m_hlen_big.npy", t, blen);
        npy_bad("m_hlen_big.npy", "runs past the end");
        memcpy(t, base, blen);
        t[6] = 2; /* v2 reads a 4-byte length: the dict's first bytes make it huge */
        write_all("m_hlen_v2.npy", t, blen);
        npy_bad("m_hlen_v2.npy", "runs past the end");
        free(t);
    }
    free(base);

    /* crafted headers */
    craft_npy("c_overflow.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }", 16);
    npy_bad("c_overflow.npy", "overflows");
    craft_npy("c_overflow2.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 16);
    npy_bad("c_overflow2.npy", "overflows");
    craft_npy("c_huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", 16);
    npy_bad("c_huge.npy", "truncated");
    craft_npy("c_dim_too_big.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 16);
    npy_bad("c_dim_too_big.npy", "too large");
    craft_npy("c_neg_dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }", 16);
    npy_bad("c_neg_dim.npy", "shape");
    craft_npy("c_fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
    npy_bad("c_fortran.npy", "fortran_order True");
    craft_npy("c_be.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", 16);
    npy_bad("c_be.npy", "big-endian");
    craft_npy("c_c16.npy", "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }", 32);
    npy_bad("c_c16.npy", "unsupported .npy dtype '<c16'");
    craft_npy("c_missing.npy", "{'descr': '<f4', 'shape': (4,), }", 16);
    npy_bad("c_missing.npy", "missing key 'fortran_order'");
    craft_npy("c_unknown_key.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1, }", 16);
    npy_bad("c_unknown_key.npy", "unexpected key");
    craft_npy("c_dup_key.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 16);
    npy_bad("c_dup_key.npy", "duplicate");
    craft_npy("c_unterminated.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,", 16);
    npy_bad("c_unterminated.npy", "malformed");
    craft_npy("c_open_str.npy", "{'descr': '<f4", 16);
    npy_bad("c_open_str.npy", "malformed");
    craft_npy("c_garbage.npy", "hello", 16);
    npy_bad("c_garbage.npy", "malformed");
    craft_npy("c_trailing.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } x", 16);
    npy_bad("c_trailing.npy", "trailing");
    craft_npy("c_rank9.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4);
    npy_bad("c_rank9.npy", "rank above 8");
    craft_npy("c_descr_list.npy", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", 16);
    npy_bad("c_descr_list.npy", "dtype");
    craft_npy("c_shape_int.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': 4, }", 16);
    npy_bad("c_shape_int.npy", "tuple");
    craft_npy("c_long_descr.npy", "{'descr': '<f4xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'fortran_order': False, 'shape': (4,), }", 16);
    npy_bad("c_long_descr.npy", "dtype");
    {
        /* A header containing a NUL byte inside the dict. */
        const char dict[] = "{'descr': '<f\0', 'fortran_order': False, 'shape': (4,), }";
        unsigned char b[128];
        memset(b, ' ', sizeof b);
        memcpy(b, "\x93NUMPY\x01\x00", 8);
        b[8] = 118; b[9] = 0;
        memcpy(b + 10, dict, sizeof dict - 1);
        b[127] = '\n';
        write_all("c_nul.npy", b, 128);
        npy_bad("c_nul.npy", NULL);
    }
    /* Python-2-era 'L' suffixes and a shape without spaces still load. */
    craft_npy("c_py2.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }", 16);
    {
        VccNpy a;
        char err[512];
        path_of(path, sizeof path, "c_py2.npy");
        ok(vcc_npy_load(path, &a, err, sizeof err) == 0 && a.rank == 1 && a.dims[0] == 2,
           "npy load c_py2.npy ('L' suffix)");
        vcc_npy_free(&a);
    }

    /* not a file */
    path_of(path, sizeof path, "does_not_exist.npy");
    npy_bad_path(path, "does_not_exist.npy", "cannot open");
    npy_bad_path(g_dir, "<directory>", NULL);
    {
        char err[8];
        VccNpy a;
        ok(vcc_npy_load(path, &a, err, sizeof err) != 0 && strlen(err) < sizeof err,
           "npy error message truncated safely to errlen 8 ('%s')", err);
        ok(vcc_npy_load(path, &a, NULL, 0) != 0, "npy err NULL / errlen 0 accepted");
    }
}

/* ------------------------------------------------------------------------ */
/* .safetensors                                                              */
/* ------------------------------------------------------------------------ */

static void craft_st(const char *name, const char *header, size_t hlen_override, const void *data, size_t dlen)
{
    size_t hl = strlen(header), total = 8 + hl + dlen, i;
    uint64_t hv = hlen_override ? (uint64_t)hlen_override : (uint64_t)hl;
    unsigned char *b = (unsigned char *)calloc(total ? total : 1, 1);
    for (i = 0; i < 8; i++) b[i] = (unsigned char)(hv >> (8 * i));
    memcpy(b + 8, header, hl);
    if (dlen) {
        if (data) memcpy(b + 8 + hl, data, dlen);
        else memset(b + 8 + hl, 0x3F, dlen);
    }
    write_all(name, b, total);
    free(b);
}

static void st_bad_path(const char *path, const char *label, const char *want)
{
    char err[512];
    VccSafetensors st;
    size_t pl = strlen(path);
    int rc;
    memset(&st, 0x5A, sizeof st);
    err[0] = '\0';
    rc = vcc_st_load(path, &st, err, sizeof err);
    ok(rc != 0 && st.buf == NULL && st.entries == NULL && st.n == 0 && strncmp(err, path, pl) == 0 &&
           err[pl] == ':' && (!want || strstr(err, want) != NULL),
       "st  reject %-26s -> %s", label, err);
    if (rc == 0) vcc_st_free(&st);
}

static void st_bad(const char *name, const char *header, const char *want, size_t dlen)
{
    char path[1024];
    craft_st(name, header, 0, NULL, dlen);
    path_of(path, sizeof path, name);
    st_bad_path(path, name, want);
}

static int st_good_crafted(const char *name, const char *header, size_t dlen)
{
    char path[1024], err[512];
    VccSafetensors st;
    int rc;
    craft_st(name, header, 0, NULL, dlen);
    path_of(path, sizeof path, name);
    rc = vcc_st_load(path, &st, err, sizeof err);
    ok(rc == 0, "st  accept %-26s %s", name, rc ? err : "");
    if (rc == 0) vcc_st_free(&st);
    return rc;
}

/* Check one entry of a loaded file against f4v / i8v formulas. */
static int st_entry_ok(const VccSafetensors *st, const char *name, const char *dtype, int rank, const int64_t *dims)
{
    const VccStEntry *e = vcc_st_find(st, name);
    int64_t n = 1, i;
    if (!e || strcmp(e->dtype, dtype) != 0 || e->rank != rank) return 0;
    for (i = 0; i < rank; i++) {
        if (e->dims[i] != dims[i]) return 0;
        n *= dims[i];
    }
    if (e->begin > e->end || e->end > st->size) return 0;
    for (i = 0; i < n; i++) {
        if (dtype[0] == 'F') {
            float v;
            memcpy(&v, st->buf + e->begin + 4 * i, 4);
            if (v != f4v(i)) return 0;
        } else {
            int64_t v;
            memcpy(&v, st->buf + e->begin + 8 * i, 8);
            if (v != i8v(i)) return 0;
        }
    }
    return 1;
}

static void test_st(int have_py)
{
    char path[1024], err[512];
    VccSafetensors st;
    static float w[4 * 3 * 3 * 3 * 3], fcb[5], weird[2];
    static int64_t labels[6];
    int64_t nbt = 7, i;
    static const int64_t dw[5] = {4, 3, 3, 3, 3}, d5[1] = {5}, d23[2] = {2, 3}, d2[1] = {2}, d0[1] = {0};
    const char *weird_name = "weird \"name\" \\ \n \xc3\xa9\xe6\xbc\xa2";
    VccStWrite t[6];
    int rc;

    for (i = 0; i < 324; i++) w[i] = f4v(i);
    for (i = 0; i < 5; i++) fcb[i] = f4v(i);
    for (i = 0; i < 2; i++) weird[i] = f4v(i);
    for (i = 0; i < 6; i++) labels[i] = i8v(i);
    memset(t, 0, sizeof t);
    t[0].name = "conv1.weight"; t[0].dtype = "F32"; t[0].rank = 5; t[0].dims = dw; t[0].data = w; t[0].nbytes = sizeof w;
    t[1].name = "fc.bias"; t[1].dtype = "F32"; t[1].rank = 1; t[1].dims = d5; t[1].data = fcb; t[1].nbytes = sizeof fcb;
    t[2].name = "bn1.num_batches_tracked"; t[2].dtype = "I64"; t[2].rank = 0; t[2].dims = NULL; t[2].data = &nbt; t[2].nbytes = 8;
    t[3].name = "labels"; t[3].dtype = "I64"; t[3].rank = 2; t[3].dims = d23; t[3].data = labels; t[3].nbytes = sizeof labels;
    t[4].name = weird_name; t[4].dtype = "F32"; t[4].rank = 1; t[4].dims = d2; t[4].data = weird; t[4].nbytes = 8;
    t[5].name = "empty"; t[5].dtype = "F32"; t[5].rank = 1; t[5].dims = d0; t[5].data = NULL; t[5].nbytes = 0;

    path_of(path, sizeof path, "c.safetensors");
    rc = vcc_st_save(path, t, 6, err, sizeof err);
    ok(rc == 0, "st  save c.safetensors (6 tensors) %s", rc ? err : "");
    rc = vcc_st_load(path, &st, err, sizeof err);
    ok(rc == 0, "st  load c.safetensors %s", rc ? err : "");
    if (rc == 0) {
        const VccStEntry *e = vcc_st_find(&st, "bn1.num_batches_tracked");
        int64_t v = 0;
        if (e && e->end - e->begin == 8) memcpy(&v, st.buf + e->begin, 8);
        ok(st.n == 6 && strcmp(st.entries[0].name, "conv1.weight") == 0 && strcmp(st.entries[5].name, "empty") == 0,
           "st  round trip keeps the 6 entries in order");
        ok(st_entry_ok(&st, "conv1.weight", "F32", 5, dw) && st_entry_ok(&st, "fc.bias", "F32", 1, d5) &&
               st_entry_ok(&st, "labels", "I64", 2, d23) && st_entry_ok(&st, weird_name, "F32", 1, d2) &&
               st_entry_ok(&st, "empty", "F32", 1, d0) && e && e->rank == 0 && v == 7,
           "st  round trip: dtypes, shapes, values exact (escaped / UTF-8 name, 0-d and empty tensors)");
        ok(vcc_st_find(&st, "nope") == NULL, "st  vcc_st_find of a missing name gives NULL");
        ok((8 + (st.entries[0].begin - 8)) % 8 == 0, "st  header padded to a multiple of 8");
        vcc_st_free(&st);
    }
    {
        FILE *f;
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        f = fopen(tmp, "rb");
#if VCC_IO_FSYNC
        ok(f == NULL && count_prefix("c.safetensors.tmp") == 0, "st  save leaves no temporary file behind");
#else
        ok(f == NULL, "st  save leaves no .tmp file behind");
#endif
        if (f) fclose(f);
    }
    path_of(path, sizeof path, "c_empty.safetensors");
    ok(vcc_st_save(path, NULL, 0, err, sizeof err) == 0, "st  save with zero tensors");
    rc = vcc_st_load(path, &st, err, sizeof err);
    ok(rc == 0 && st.n == 0, "st  load with zero tensors %s", rc ? err : "");
    if (rc == 0) vcc_st_free(&st);

    /* writer errors */
    {
        VccStWrite b[2];
        int64_t d3 = 3;
        memcpy(b, t, sizeof b[0]);
        b[1] = t[1];
        path_of(path, sizeof path, "bad_w.safetensors");
        b[1].nbytes = 16;
        ok(vcc_st_save(path, b, 2, err, sizeof err) != 0 && strstr(err, "nbytes"), "st  save rejects nbytes != shape: %s", err);
        b[1] = t[1]; b[1].dtype = "F33";
        ok(vcc_st_save(path, b, 2, err, sizeof err) != 0 && strstr(err, "dtype"), "st  save rejects unknown dtype: %s", err);
        b[1] = t[1]; b[1].name = "conv1.weight";
        ok(vcc_st_save(path, b, 2, err, sizeof err) != 0 && strstr(err, "duplicate"), "st  save rejects duplicate names: %s", err);
        b[1] = t[1]; b[1].name = "__metadata__";
        ok(vcc_st_save(path, b, 2, err, sizeof err) != 0 && strstr(err, "reserved"), "st  save rejects '__metadata__': %s", err);
        b[1] = t[1]; b[1].rank = 9;
        ok(vcc_st_save(path, b, 2, err, sizeof err) != 0, "st  save rejects rank 9: %s", err);
        b[1] = t[1]; d3 = -3; b[1].dims = &d3;
        ok(vcc_st_save(path, b, 2, err, sizeof err) != 0, "st  save rejects negative dims: %s", err);
        b[1] = t[1];
        ok(vcc_st_save("/nonexistent-dir/x.safetensors", b, 2, err, sizeof err) != 0 &&
               strncmp(err, "/nonexistent-dir/x.safetensors: ", 32) == 0,
           "st  save to an unwritable path fails: %s", err);
        {
            FILE *f = fopen(path, "rb");
            ok(f == NULL, "st  a rejected save writes nothing");
            if (f) fclose(f);
        }
    }

    /* the safetensors package's file */
    if (have_py) {
        static const int64_t dpw[5] = {4, 3, 3, 3, 3}, dl[1] = {5}, dh[1] = {2}, de[2] = {0, 2};
        path_of(path, sizeof path, "py.safetensors");
        rc = vcc_st_load(path, &st, err, sizeof err);
        ok(rc == 0, "st  load py.safetensors (written by the safetensors package) %s", rc ? err : "");
        if (rc == 0) {
            const VccStEntry *h = vcc_st_find(&st, "half"), *s = vcc_st_find(&st, "scalar");
            unsigned char hb[4] = {0, 0, 0, 0};
            float sv = 0.0f;
            if (h && h->end - h->begin == 4) memcpy(hb, st.buf + h->begin, 4);
            if (s && s->end - s->begin == 4) memcpy(&sv, st.buf + s->begin, 4);
            ok(st.n == 5 && st_entry_ok(&st, "layer1.0.conv1.weight", "F32", 5, dpw) &&
                   st_entry_ok(&st, "labels", "I64", 1, dl) && st_entry_ok(&st, "empty", "F32", 2, de) &&
                   h && strcmp(h->dtype, "F16") == 0 && h->rank == 1 && h->dims[0] == dh[0] &&
                   hb[0] == 0x00 && hb[1] == 0x3C && hb[2] == 0x00 && hb[3] == 0xC0 &&
                   s && s->rank == 0 && sv == f4v(0),
               "st  py.safetensors: 5 tensors (F32, I64, F16, 0-d, empty), __metadata__ skipped, values exact");
            vcc_st_free(&st);
        }
    }

    /* malformed files */
    {
        static const char *const good = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
        char hdr[512];
        path_of(path, sizeof path, "s_tiny.safetensors");
        write_all("s_tiny.safetensors", "\x08\x00\x00", 3);
        st_bad_path(path, "s_tiny (3 bytes)", "too short");
        write_all("s_zero.safetensors", "", 0);
        path_of(path, sizeof path, "s_zero.safetensors");
        st_bad_path(path, "s_zero (0 bytes)", "too short");
        craft_st("s_hsize.safetensors", good, 1000, NULL, 8);
        path_of(path, sizeof path, "s_hsize.safetensors");
        st_bad_path(path, "s_hsize (size > file)", "runs past the end");
        craft_st("s_hsize_max.safetensors", good, (size_t)-1, NULL, 8);
        path_of(path, sizeof path, "s_hsize_max.safetensors");
        st_bad_path(path, "s_hsize_max (2^64-1)", "runs past the end");
        st_good_crafted("s_good.safetensors", good, 8);
        st_good_crafted("s_meta_pad.safetensors",
                        "{\"__metadata__\":{\"format\":\"pt\",\"x\":\"\\u00e9\\ud83d\\ude00\"},"
                        "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":[1,{\"k\":null}]}}    ", 8);
        st_bad("s_json_open.safetensors", "{", "malformed", 0);
        st_bad("s_json_empty.safetensors", "", "JSON object", 0);
        st_bad("s_json_array.safetensors", "[]", "JSON object", 0);
        st_bad("s_json_value.safetensors", "{\"a\":}", "malformed", 8);
        st_bad("s_json_comma.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", "malformed", 8);
        st_bad("s_json_unterm.safetensors", "{\"a\":{\"dtype\":\"F32", "malformed", 8);
        st_bad("s_json_escape.safetensors", "{\"a\\q\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "bad escape", 8);
        st_bad("s_json_ctrl.safetensors", "{\"a\n\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "control", 8);
        st_bad("s_json_surr.safetensors", "{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "surrogate", 8);
        st_bad("s_json_nul.safetensors", "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "U+0000", 8);
        st_bad("s_json_trail.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", "trailing", 8);
        st_bad("s_json_noquote.safetensors", "{a:1}", "malformed", 0);
        {
            char deep[2200];
            int k, pos = 0;
            pos += sprintf(deep + pos, "{\"__metadata__\":");
            for (k = 0; k < 1000; k++) deep[pos++] = '[';
            for (k = 0; k < 1000; k++) deep[pos++] = ']';
            deep[pos++] = '}';
            deep[pos] = '\0';
            st_bad("s_json_deep.safetensors", deep, "too deep", 0);
        }
        st_bad("s_off_range.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", "past the data section", 8);
        st_bad("s_off_huge.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[18446744073709551608,18446744073709551615]}}", NULL, 8);
        st_bad("s_off_overflow.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551616]}}", "too large", 8);
        st_bad("s_off_rev.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "reversed", 8);
        st_bad("s_overlap.safetensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               "overlaps", 12);
        st_bad("s_same.safetensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
               "overlaps", 8);
        st_bad("s_gap.safetensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               "gap", 12);
        st_bad("s_uncovered.safetensors", good, "cover", 12);
        st_bad("s_no_tensors_data.safetensors", "{}", "no tensors", 4);
        st_bad("s_nbytes.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "needs 12", 8);
        st_bad("s_nbytes_i64.safetensors", "{\"a\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,8]}}", "needs 16", 8);
        st_bad("s_dtype.safetensors", "{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", "unknown dtype", 8);
        st_bad("s_dtype_long.safetensors", "{\"a\":{\"dtype\":\"F32XXXXXXXXXXXXXXXXXXXXXX\",\"shape\":[2],\"data_offsets\":[0,8]}}", "unknown dtype", 8);
        st_bad("s_dup.safetensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               "duplicate", 8);
        st_bad("s_rank9.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", "rank", 8);
        st_bad("s_dims_overflow.safetensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", "overflows", 8);
        st_bad("s_dims_overflow2.safetensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", "overflows", 8);
        st_bad("s_dim_neg.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", "non-negative", 8);
        st_bad("s_dim_float.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", "integer", 8);
        st_bad("s_off_float.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8e0]}}", "integer", 8);
        st_bad("s_off_three.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", "expected ']'", 8);
        st_bad("s_missing.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", "missing 'data_offsets'", 8);
        st_bad("s_info_not_obj.safetensors", "{\"a\":[1,2]}", "expected '{'", 8);
        st_bad("s_leading_ws.safetensors", " {}", "JSON object", 0);
        snprintf(hdr, sizeof hdr, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"__metadata__\":{\"a\":\"b\"}");
        st_bad("s_meta_unclosed.safetensors", hdr, "malformed", 8);
        path_of(path, sizeof path, "no_such.safetensors");
        st_bad_path(path, "no_such.safetensors", "cannot open");
        st_bad_path(g_dir, "<directory>", NULL);
    }
}

/* ------------------------------------------------------------------------ */
/* Many tensors: the reader and the writer stay O(n log n)                   */
/* ------------------------------------------------------------------------ */

#define MANY 200000

/* CPU seconds since t0. */
static double cpu_since(clock_t t0)
{
    return (double)(clock() - t0) / (double)CLOCKS_PER_SEC;
}

/* A header of MANY zero-size tensors "t0" ... and one 4-byte tensor named last; malloc'd. */
static char *many_header(const char *last)
{
    size_t cap = (size_t)MANY * 64 + 256, len = 0;
    char *h = (char *)malloc(cap);
    int i;
    if (!h) return NULL;
    len += (size_t)sprintf(h, "{");
    for (i = 0; i < MANY; i++)
        len += (size_t)sprintf(h + len, "\"t%d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},", i);
    sprintf(h + len, "\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", last);
    return h;
}

/* 200,000 tensors (quadratic duplicate checks and lookups took minutes at this size): the file loads,
 * every tensor is found by name, a duplicate name is refused, the writer writes and refuses as fast;
 * each within 5 s of CPU time, a bound far above what n log n needs and far below what n^2 takes. */
static void test_many(void)
{
    char path[1024], err[512], name[32];
    VccSafetensors st;
    VccStWrite *w;
    const char **names;
    char *h = many_header("last");
    clock_t t0;
    double secs;
    int i, rc, found = 0;
    if (!h) { ok(0, "many: out of memory"); return; }
    craft_st("many.safetensors", h, 0, NULL, 4);
    free(h);
    path_of(path, sizeof path, "many.safetensors");
    t0 = clock();
    rc = vcc_st_load(path, &st, err, sizeof err);
    if (rc == 0) {
        for (i = 0; i < MANY; i++) {
            snprintf(name, sizeof name, "t%d", i);
            found += vcc_st_find(&st, name) == &st.entries[i];
        }
        found += vcc_st_find(&st, "last") == &st.entries[MANY];
        found += vcc_st_find(&st, "t200000") == NULL && vcc_st_find(&st, "") == NULL && vcc_st_find(&st, "u") == NULL;
    }
    secs = cpu_since(t0);
    ok(rc == 0 && st.n == MANY + 1 && found == MANY + 2 && secs < 5.0,
       "st  %d tensors load and each is found by name in %.2f s of CPU (bound 5 s) %s", MANY + 1, secs, rc ? err : "");
    if (rc == 0) vcc_st_free(&st);

    h = many_header("t123456");
    if (!h) { ok(0, "many: out of memory"); return; }
    craft_st("many_dup.safetensors", h, 0, NULL, 4);
    free(h);
    path_of(path, sizeof path, "many_dup.safetensors");
    t0 = clock();
    rc = vcc_st_load(path, &st, err, sizeof err);
    secs = cpu_since(t0);
    ok(rc != 0 && strstr(err, "duplicate tensor name 't123456'") && secs < 5.0,
       "st  %d tensors with one duplicate name refused in %.2f s of CPU -> %s", MANY + 1, secs, err);
    if (rc == 0) vcc_st_free(&st);

    w = (VccStWrite *)calloc(MANY, sizeof *w);
    names = (const char **)calloc(MANY, sizeof *names);
    if (!w || !names) { ok(0, "many: out of memory"); free(w); free((void *)names); return; }
    for (i = 0; i < MANY; i++) {
        char *nm = (char *)malloc(16);
        static const int64_t d0 = 0;
        if (!nm) { ok(0, "many: out of memory"); break; }
        snprintf(nm, 16, "w%d", MANY - i);
        names[i] = nm;
        w[i].name = nm;
        w[i].dtype = "F32";
        w[i].rank = 1;
        w[i].dims = &d0;
    }
    path_of(path, sizeof path, "many_w.safetensors");
    t0 = clock();
    rc = vcc_st_save(path, w, MANY, err, sizeof err);
    secs = cpu_since(t0);
    ok(rc == 0 && secs < 5.0, "st  save of %d tensors in %.2f s of CPU %s", MANY, secs, rc ? err : "");
    if (vcc_st_load(path, &st, err, sizeof err) == 0) {
        ok(st.n == MANY && strcmp(st.entries[0].name, names[0]) == 0 && strcmp(st.entries[MANY - 1].name, names[MANY - 1]) == 0,
           "st  the %d tensors read back in the order written", MANY);
        vcc_st_free(&st);
    } else {
        ok(0, "st  the %d-tensor file reads back: %s", MANY, err);
    }
    w[MANY - 1].name = names[7];
    t0 = clock();
    rc = vcc_st_save(path, w, MANY, err, sizeof err);
    secs = cpu_since(t0);
    ok(rc != 0 && strstr(err, "duplicate tensor name") && secs < 5.0,
       "st  save of %d tensors with a duplicate name refused in %.2f s of CPU -> %s", MANY, secs, err);
    for (i = 0; i < MANY; i++) free((void *)names[i]);
    free((void *)names);
    free(w);
}

#if VCC_IO_FSYNC
/* ------------------------------------------------------------------------ */
/* POSIX: what the programs' files may be                                   */
/* ------------------------------------------------------------------------ */

/* Names in g_dir that start with prefix, counted. */
static int count_prefix(const char *prefix)
{
    DIR *d = opendir(g_dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* The file type of name in g_dir, a symlink not followed: 'f' FIFO, 'd' folder, 'l' link, 'r' regular, '?'. */
static char kind_of(const char *name)
{
    char path[1024];
    struct stat sb;
    path_of(path, sizeof path, name);
    if (lstat(path, &sb) != 0) return '-';
    return S_ISFIFO(sb.st_mode) ? 'f' : S_ISDIR(sb.st_mode) ? 'd' : S_ISLNK(sb.st_mode) ? 'l' : S_ISREG(sb.st_mode) ? 'r' : '?';
}

/* Whether name in g_dir holds exactly text. */
static int holds(const char *name, const char *text)
{
    unsigned char *b = NULL;
    size_t n = 0;
    int same = read_all(name, &b, &n) == 0 && n == strlen(text) && memcmp(b, text, n) == 0;
    free(b);
    return same;
}

/* A symlink at name in g_dir pointing at target (replacing whatever is there). */
static void link_at(const char *target, const char *name)
{
    char path[1024];
    path_of(path, sizeof path, name);
    unlink(path);
    if (symlink(target, path) != 0) { fprintf(stderr, "cannot make the symlink %s\n", path); exit(2); }
}

static void test_files(void)
{
    static const float v[2] = {1.0f, 2.0f};
    static const int64_t d2[1] = {2};
    VccStWrite t;
    VccNpy a;
    VccSafetensors st;
    char path[1024], err[512];
    struct stat sb;
    mode_t old;
    int rc;

    memset(&t, 0, sizeof t);
    t.name = "x"; t.dtype = "F32"; t.rank = 1; t.dims = d2; t.data = v; t.nbytes = 8;

    /* a symlink planted at the old fixed temporary name is never followed */
    write_all("precious_a.txt", "precious\n", 9);
    write_all("precious_b.txt", "precious\n", 9);
    link_at("precious_a.txt", "lnk.safetensors.tmp");
    link_at("precious_b.txt", "lnk.npy.tmp");
    path_of(path, sizeof path, "lnk.safetensors");
    rc = vcc_st_save(path, &t, 1, err, sizeof err);
    path_of(path, sizeof path, "lnk.npy");
    rc |= vcc_npy_save(path, "f4", 1, d2, v, err, sizeof err);
    ok(rc == 0 && holds("precious_a.txt", "precious\n") && holds("precious_b.txt", "precious\n") &&
           kind_of("lnk.safetensors") == 'r' && kind_of("lnk.npy") == 'r',
       "io  a symlink at <out>.tmp is not followed: both writers leave its target intact %s", rc ? err : "");
    ok(count_prefix("lnk.safetensors.tmp.") == 0 && count_prefix("lnk.npy.tmp.") == 0,
       "io  the writers leave no temporary file behind");

    /* the writers refuse a path that is not a regular file, and leave it as it was */
    path_of(path, sizeof path, "fifo");
    unlink(path);
    if (mkfifo(path, 0666) != 0) { ok(0, "mkfifo %s", path); return; }
    rc = vcc_st_save(path, &t, 1, err, sizeof err);
    ok(rc != 0 && strstr(err, "fifo: not a regular file (a FIFO); refusing to replace it") && kind_of("fifo") == 'f',
       "io  st save over a FIFO refused -> %s", err);
    rc = vcc_npy_save(path, "f4", 1, d2, v, err, sizeof err);
    ok(rc != 0 && strstr(err, "not a regular file (a FIFO)") && kind_of("fifo") == 'f', "io  npy save over a FIFO refused -> %s", err);
    link_at("fifo", "fifo_link");
    path_of(path, sizeof path, "fifo_link");
    rc = vcc_st_save(path, &t, 1, err, sizeof err);
    ok(rc != 0 && strstr(err, "not a regular file (a FIFO)") && kind_of("fifo_link") == 'l', "io  st save over a symlink to a FIFO refused -> %s", err);
    path_of(path, sizeof path, "folder");
    mkdir(path, 0777);
    rc = vcc_npy_save(path, "f4", 1, d2, v, err, sizeof err);
    ok(rc != 0 && strstr(err, "not a regular file (a folder)") && kind_of("folder") == 'd', "io  npy save over a folder refused -> %s", err);
    link_at("precious_a.txt", "reg_link");
    path_of(path, sizeof path, "reg_link");
    rc = vcc_npy_save(path, "f4", 1, d2, v, err, sizeof err);
    ok(rc == 0 && kind_of("reg_link") == 'r' && holds("precious_a.txt", "precious\n"),
       "io  a symlink to a regular file is replaced by the output, its target kept %s", rc ? err : "");
    ok(vcc_npy_save("", "f4", 1, d2, v, err, sizeof err) != 0 && strstr(err, "the file name is empty"),
       "io  npy save to an empty name refused -> %s", err);

    /* vcc_io_check_output: before a run */
    path_of(path, sizeof path, "fifo");
    ok(vcc_io_check_output(path, err, sizeof err) != 0 && strstr(err, "not a regular file (a FIFO)"), "io  check_output: a FIFO -> %s", err);
    path_of(path, sizeof path, "folder/");
    ok(vcc_io_check_output(path, err, sizeof err) != 0 && strstr(err, "not a regular file (a folder)"), "io  check_output: 'folder/' -> %s", err);
    path_of(path, sizeof path, "no_such_folder/x.npy");
    ok(vcc_io_check_output(path, err, sizeof err) != 0 && strstr(err, "x.npy: cannot write: No such file or directory"),
       "io  check_output: a missing folder -> %s", err);
    ok(vcc_io_check_output("", err, sizeof err) != 0 && strstr(err, "empty"), "io  check_output: '' -> %s", err);
    path_of(path, sizeof path, "fresh.npy");
    rc = vcc_io_check_output(path, err, sizeof err);
    ok(rc == 0 && kind_of("fresh.npy") == '-' && count_prefix("fresh.npy") == 0,
       "io  check_output: a new file in a writable folder is fine, nothing left behind %s", rc ? err : "");

    /* the readers refuse what is not a regular file at once (a FIFO would block an open without O_NONBLOCK:
     * main's alarm ends a hang) */
    path_of(path, sizeof path, "fifo");
    rc = vcc_npy_load(path, &a, err, sizeof err);
    ok(rc != 0 && strstr(err, "fifo: not a regular file (a FIFO)") && a.data == NULL, "io  npy load of a FIFO refused -> %s", err);
    rc = vcc_st_load(path, &st, err, sizeof err);
    ok(rc != 0 && strstr(err, "fifo: not a regular file (a FIFO)") && st.buf == NULL, "io  st load of a FIFO refused -> %s", err);
    path_of(path, sizeof path, "folder");
    rc = vcc_st_load(path, &st, err, sizeof err);
    ok(rc != 0 && strstr(err, "folder: not a regular file (a folder)"), "io  st load of a folder refused -> %s", err);

    /* a new output's mode is 0666 less the umask, as a plain fopen would make it */
    old = umask(027);
    path_of(path, sizeof path, "mode.npy");
    rc = vcc_npy_save(path, "f4", 1, d2, v, err, sizeof err);
    if (rc != 0 || stat(path, &sb) != 0) sb.st_mode = 0;
    ok(rc == 0 && (sb.st_mode & 0777) == 0640, "io  umask 027: the output's mode is 0640 (%03o)", (unsigned)(sb.st_mode & 0777));
    umask(old);

    /* a file name of 245..255 bytes (legal, but the 11-byte temporary suffix would pass NAME_MAX) is
     * written; one of 256 is refused with the system's reason and nothing left behind */
    {
        static const int lens[4] = {244, 250, 255, 256};
        int i;
        for (i = 0; i < 4; i++) {
            char name[300];
            memset(name, 'n', (size_t)lens[i]);
            memcpy(name + lens[i] - 4, ".npy", 5);
            path_of(path, sizeof path, name);
            rc = vcc_npy_save(path, "f4", 1, d2, v, err, sizeof err);
            if (lens[i] <= 255) {
                VccNpy b;
                int back = rc == 0 && vcc_npy_load(path, &b, err, sizeof err) == 0;
                ok(back && b.rank == 1 && b.dims[0] == 2 && ((const float *)b.data)[1] == 2.0f &&
                       count_prefix("nnnn") == 1,
                   "io  npy save to a %d-byte file name: written, read back, no temporary file left %s", lens[i],
                   rc ? err : "");
                if (back) vcc_npy_free(&b);
                unlink(path);
            } else {
                ok(rc != 0 && strstr(err, "File name too long") && count_prefix("nnnn") == 0,
                   "io  npy save to a %d-byte file name refused, nothing left -> %s", lens[i], err);
            }
        }
    }

    /* vcc_st_save_tmp: the new file stays beside the old one until vcc_io_rename moves it over */
    {
        char *tmp = NULL;
        VccSafetensors back;
        static const float w[2] = {7.0f, 8.0f};
        VccStWrite t2 = t;
        t2.data = w;
        path_of(path, sizeof path, "pair.safetensors");
        rc = vcc_st_save(path, &t, 1, err, sizeof err);
        rc |= vcc_st_save_tmp(path, &t2, 1, &tmp, err, sizeof err);
        float x0 = 0;
        int loaded = rc == 0 && tmp && vcc_st_load(path, &back, err, sizeof err) == 0;
        if (loaded && back.n == 1) memcpy(&x0, back.buf + back.entries[0].begin, sizeof x0);
        if (loaded) vcc_st_free(&back);
        int old_kept = loaded && x0 == 1.0f;
        rc |= !tmp || vcc_io_rename(tmp, path, err, sizeof err);
        loaded = rc == 0 && vcc_st_load(path, &back, err, sizeof err) == 0;
        x0 = 0;
        if (loaded && back.n == 1) memcpy(&x0, back.buf + back.entries[0].begin, sizeof x0);
        if (loaded) vcc_st_free(&back);
        int new_in = loaded && x0 == 7.0f;
        ok(old_kept && new_in && count_prefix("pair.safetensors.tmp.") == 0,
           "io  st save_tmp: the old file kept until vcc_io_rename, then the new one, no temporary left %s",
           rc ? err : "");
        free(tmp);
    }

    /* temporary names: what checkpoint cleanup recognises */
    ok(vcc_io_is_tmp_suffix(".tmp.aB3xY9") && vcc_io_is_tmp_suffix(".tmp") && !vcc_io_is_tmp_suffix(".tmp.aB3xY") &&
           !vcc_io_is_tmp_suffix(".tmp.aB3xY9z") && !vcc_io_is_tmp_suffix(".tmp.aB3-Y9") && !vcc_io_is_tmp_suffix(""),
       "io  temporary-name suffixes: '.tmp.XXXXXX' (letters, digits) and the old '.tmp'");
}
#endif

/* ------------------------------------------------------------------------ */
/* Fuzzing: random damage must never crash or leak                           */
/* ------------------------------------------------------------------------ */

static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static void fuzz(const char *src, int is_npy, int rounds)
{
    unsigned char *base, *t;
    size_t len, k;
    int r, accepted = 0;
    char path[1024], err[512], name[64];
    if (read_all(src, &base, &len)) { ok(0, "fuzz: read %s", src); return; }
    t = (unsigned char *)malloc(len + 64);
    snprintf(name, sizeof name, "fuzz_%s", src);
    path_of(path, sizeof path, name);
    for (r = 0; r < rounds; r++) {
        size_t n = len, edits = 1 + rnd() % 4;
        memcpy(t, base, len);
        for (k = 0; k < edits; k++) {
            size_t span = (r & 1) ? (len < 160 ? len : 160) : len; /* odd rounds hit the header */
            size_t pos = span ? (size_t)(rnd() % span) : 0;
            switch (rnd() % 4) {
            case 0: if (pos < n) t[pos] = (unsigned char)rnd(); break;
            case 1: if (pos < n) t[pos] ^= (unsigned char)(1u << (rnd() % 8)); break;
            case 2: n = pos; break;
            default: if (pos < n) t[pos] = "{}[]\",:0123456789.eE-tfn'()LTF \\u"[rnd() % 33]; break;
            }
        }
        write_all(name, t, n);
        if (is_npy) {
            VccNpy a;
            if (vcc_npy_load(path, &a, err, sizeof err) == 0) {
                int64_t e = 1;
                int i;
                for (i = 0; i < a.rank; i++) e *= a.dims[i];
                if (a.nbytes != (size_t)e * (a.dtype[1] == '4' ? 4u : 8u)) {
                    ok(0, "fuzz %s: accepted inconsistent nbytes", src);
                }
                accepted++;
                vcc_npy_free(&a);
            } else if (strncmp(err, path, strlen(path)) != 0) {
                ok(0, "fuzz %s: message does not name the file: %s", src, err);
            }
        } else {
            VccSafetensors st;
            if (vcc_st_load(path, &st, err, sizeof err) == 0) {
                int i;
                for (i = 0; i < st.n; i++)
                    if (st.entries[i].begin > st.entries[i].end || st.entries[i].end > st.size)
                        ok(0, "fuzz %s: accepted an out-of-range entry", src);
                accepted++;
                vcc_st_free(&st);
            } else if (strncmp(err, path, strlen(path)) != 0) {
                ok(0, "fuzz %s: message does not name the file: %s", src, err);
            }
        }
    }
    ok(1, "fuzz %-18s %d random mutations/truncations: no crash (%d still valid)", src, rounds, accepted);
    free(t);
    free(base);
}

int main(int argc, char **argv)
{
    int have_py = argc > 2 && strcmp(argv[2], "--st") == 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [--st]   (DIR prepared by tests/runtime/io_check.py)\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
#if VCC_IO_FSYNC
    alarm(600); /* a reader that waits on a FIFO ends the test instead of hanging it */
#endif
    test_npy();
    test_st(have_py);
    test_many();
#if VCC_IO_FSYNC
    test_files();
#endif
    fuzz("f4_v1.npy", 1, 3000);
    fuzz("f4_v2.npy", 1, 1000);
    fuzz("c.safetensors", 0, 3000);
    if (have_py) fuzz("py.safetensors", 0, 1000);
    printf("%d of %d checks failed\n", g_fail, g_checks);
    return g_fail ? 1 : 0;
}
