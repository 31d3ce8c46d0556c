/*
 * vcc_io.h - .npy and .safetensors file I/O for generated trainers and for
 * the vcc compiler (which writes initial weights with vcc_st_save).
 *
 * Host only, C99 + stdio, header-only (every function static inline), no
 * global state. Files are UNTRUSTED: every length and header field is checked
 * against the file size with overflow-safe arithmetic; malformed input gives a
 * nonzero return and a one-line message naming the file, never a crash and
 * never exit().
 *
 * Errors: functions returning int give 0 on success, nonzero on failure, and
 * write "<path>: <problem>" into err (errlen bytes, always NUL-terminated;
 * err may be NULL or errlen 0 to discard the message).
 *
 * Shape legend (for the arrays these files usually hold):
 *   N batch, C channels, T time, H height, W width, K classes/filters.
 * Byte order: both formats store little-endian data; this header assumes a
 * little-endian host (x86-64, AArch64) and copies bytes as they are.
 */
#ifndef VCC_IO_H
#define VCC_IO_H

#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

/* POSIX where the includer asked for it (_POSIX_C_SOURCE >= 200112L before the first include; the
 * generated programs define 200809L): fsync of written files, readers that open only regular files
 * (a FIFO or a device is refused at once, never waited on), writers that never replace a file that is
 * not a regular file. Without it (the compiler is strict C11) only C stdio: temporary files are still
 * created exclusively (fopen "wbx"), the file-kind checks are skipped. */
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L
#define VCC_IO_FSYNC 1
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef O_NOFOLLOW
#define VCC_IO_NOFOLLOW O_NOFOLLOW
#else
#define VCC_IO_NOFOLLOW 0
#endif
#ifdef O_CLOEXEC
#define VCC_IO_CLOEXEC O_CLOEXEC
#else
#define VCC_IO_CLOEXEC 0
#endif
#else
#define VCC_IO_FSYNC 0
#endif

/* An atomic write goes to "<path>" VCC_IO_TMP_MARK "XXXXXX" (VCC_IO_TMP_RANDOM random letters and
 * digits), then is renamed to path. A file name (the part after the last '/') of more than
 * VCC_IO_NAME_MAX bytes less the suffix gives its temporary name only its first bytes. */
#define VCC_IO_TMP_MARK ".tmp."
#define VCC_IO_TMP_RANDOM 6
/* The longest file name (one path component, bytes) vcc counts on: NAME_MAX of Linux, the BSDs and
 * macOS */
#define VCC_IO_NAME_MAX 255

#if defined(__GNUC__)
#define VCC_IO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VCC_IO_PRINTF(a, b)
#endif

/* Every function is static inline and marked unused, so a trainer or tool
 * that calls only some of them compiles warning-free (nvcc warns about
 * unreferenced static functions in the main file, where this text is inlined). */
#if defined(__GNUC__) || defined(__clang__) || defined(__CUDACC__)
#define VCC_IO_FN static inline __attribute__((unused))
#else
#define VCC_IO_FN static inline
#endif

/* ======================================================================== */
/* Common helpers                                                           */
/* ======================================================================== */

/* vcc_io_escape: copy s into out (cap bytes, always terminated, cut between
 * characters) with every byte that is not printable text escaped the way C
 * writes it: \n, \t, \r, and \xNN for other control characters (C0, DEL,
 * the C1 range U+0080..U+009F) and for bytes that are not valid UTF-8 (RFC
 * 3629). Valid multi-byte UTF-8 passes unchanged. Tensor names and header
 * keys from a file reach messages only through this, so they cannot forge
 * lines or send escape sequences to a terminal. */
VCC_IO_FN void vcc_io_escape(const char *s, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    if (cap == 0) return;
    while (*p) {
        unsigned c = p[0], cp = 0, min = 0;
        size_t len = 1, k;
        char esc[8];
        if (c >= 0xc2 && c <= 0xdf) { len = 2; min = 0x80; }
        else if (c >= 0xe0 && c <= 0xef) { len = 3; min = 0x800; }
        else if (c >= 0xf0 && c <= 0xf4) { len = 4; min = 0x10000; }
        if (len > 1) {
            cp = c & (0x3fu >> (len - 1));
            for (k = 1; k < len; k++) {
                if ((p[k] & 0xc0) != 0x80) break;
                cp = cp << 6 | (p[k] & 0x3fu);
            }
            if (k < len || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f)
                len = 1; /* not valid UTF-8, or a C1 control: escape the lead byte */
            else {
                if (o + len >= cap) break;
                memcpy(out + o, p, len);
                o += len;
                p += len;
                continue;
            }
        }
        if (c >= 0x20 && c < 0x7f) { esc[0] = (char)c; esc[1] = '\0'; }
        else if (c == '\n') strcpy(esc, "\\n");
        else if (c == '\t') strcpy(esc, "\\t");
        else if (c == '\r') strcpy(esc, "\\r");
        else snprintf(esc, sizeof esc, "\\x%02x", c);
        k = strlen(esc);
        if (o + k >= cap) break;
        memcpy(out + o, esc, k);
        o += k;
        p++;
    }
    out[o] = '\0';
}

/* vcc_io_errf: write "<path>: <formatted message>" into err (truncated to
 * errlen, always terminated), escaped with vcc_io_escape: names and keys that
 * come from a file may go into messages as they are. Returns 1 so callers can
 * `return vcc_io_errf(...)`. */
VCC_IO_FN int vcc_io_errf(char *err, size_t errlen, const char *path, const char *fmt, ...) VCC_IO_PRINTF(4, 5);
VCC_IO_FN int vcc_io_errf(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    va_list ap;
    int n;
    char msg[8192];
    if (!err || errlen == 0) return 1;
    n = snprintf(msg, sizeof msg, "%s: ", path ? path : "(null)");
    if (n < 0) n = 0;
    if ((size_t)n < sizeof msg) {
        va_start(ap, fmt);
        vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    vcc_io_escape(msg, err, errlen);
    return 1;
}

/* vcc_io_mul_u64: *r = a * b; returns 1 on overflow. */
VCC_IO_FN int vcc_io_mul_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    if (a != 0 && b > UINT64_MAX / a) return 1;
    *r = a * b;
    return 0;
}

/* vcc_io_file_size: size in bytes of an open binary file (position restored
 * to 0). Returns 0 on success. */
VCC_IO_FN int vcc_io_file_size(FILE *f, uint64_t *size)
{
    long end;
    if (fseek(f, 0, SEEK_END) != 0) return 1;
    end = ftell(f);
    if (end < 0) return 1;
    if (fseek(f, 0, SEEK_SET) != 0) return 1;
    *size = (uint64_t)end;
    return 0;
}

/* vcc_io_read: read exactly n bytes; returns 0 on success. */
VCC_IO_FN int vcc_io_read(FILE *f, void *dst, size_t n)
{
    if (n == 0) return 0;
    return fread(dst, 1, n, f) == n ? 0 : 1;
}

/* vcc_io_read_fail: message for a failed read (I/O error vs short read). */
VCC_IO_FN int vcc_io_read_fail(FILE *f, char *err, size_t errlen, const char *path, const char *what)
{
    if (ferror(f))
        return vcc_io_errf(err, errlen, path, "read error in %s: %s", what, strerror(errno));
    return vcc_io_errf(err, errlen, path, "unexpected end of file in %s", what);
}

/* ======================================================================== */
/* Opening files: readers take regular files only, writers create anew      */
/* ======================================================================== */

#if VCC_IO_FSYNC
/* vcc_io_kind: what a file of mode m is, for messages: "a FIFO", "a folder", "a character device"... */
VCC_IO_FN const char *vcc_io_kind(mode_t m)
{
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
#ifdef S_ISSOCK
    if (S_ISSOCK(m)) return "a socket";
#endif
    return "of an unknown kind";
}
#endif

/* vcc_io_open_read: open path for binary reading. With POSIX only a regular file (after symlinks) is
 * opened, and the open itself does not block (O_NONBLOCK, cleared once the file is known to be
 * regular): a FIFO, a device or a folder is refused at once instead of waiting for a writer. Returns
 * the stream, or NULL with "<path>: cannot open: <reason>" or "<path>: not a regular file (a FIFO)"
 * in err. */
VCC_IO_FN FILE *vcc_io_open_read(const char *path, char *err, size_t errlen)
{
#if VCC_IO_FSYNC
    struct stat sb;
    FILE *f = NULL;
    int fd, fl, e;
    fd = open(path, O_RDONLY | O_NONBLOCK | VCC_IO_CLOEXEC);
    if (fd < 0) {
        vcc_io_errf(err, errlen, path, "cannot open: %s", strerror(errno));
        return NULL;
    }
    if (fstat(fd, &sb) != 0) {
        e = errno;
        close(fd);
        vcc_io_errf(err, errlen, path, "cannot open: %s", strerror(e));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        vcc_io_errf(err, errlen, path, "not a regular file (%s)", vcc_io_kind(sb.st_mode));
        return NULL;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || (f = fdopen(fd, "rb")) == NULL) {
        e = errno;
        close(fd);
        vcc_io_errf(err, errlen, path, "cannot open: %s", strerror(e));
        return NULL;
    }
    return f;
#else
    FILE *f = fopen(path, "rb");
    if (!f) vcc_io_errf(err, errlen, path, "cannot open: %s", strerror(errno));
    return f;
#endif
}

/* vcc_io_std_stream: stdout or stderr where path names the file (the same device and inode, symlinks
 * followed) that this process's standard output or error already is: /dev/stdout, /proc/self/fd/2, or
 * the regular file a shell redirected them to (`> plan.json`). Else, and without POSIX, NULL. */
VCC_IO_FN FILE *vcc_io_std_stream(const char *path)
{
#if VCC_IO_FSYNC
    struct stat sp, sf;
    int fd;
    if (!path || stat(path, &sp) != 0) return NULL;
    for (fd = 1; fd <= 2; fd++)
        if (fstat(fd, &sf) == 0 && sf.st_dev == sp.st_dev && sf.st_ino == sp.st_ino) return fd == 1 ? stdout : stderr;
#else
    (void)path;
#endif
    return NULL;
}

/* vcc_io_check_target: whether a write may rename a new file over path: refused when path exists and
 * is not a regular file, symlinks followed (a FIFO, a device such as /dev/null, a folder, a symlink to
 * one of those: the rename would replace it), and when it is this process's standard output or error
 * (vcc_io_std_stream: the rename would replace /dev/stdout itself, or leave the shell's redirect
 * writing to a removed file); any other symlink to a regular file is fine (the rename replaces the
 * link). Returns 0, or 1 with "<path>: not a regular file (a FIFO); refusing to replace it" in err.
 * Without POSIX nothing is checked (0). */
VCC_IO_FN int vcc_io_check_target(const char *path, char *err, size_t errlen)
{
#if VCC_IO_FSYNC
    struct stat sb;
    FILE *std = vcc_io_std_stream(path);
    if (std)
        return vcc_io_errf(err, errlen, path, "this program's standard %s; refusing to replace it (name the file itself)",
                           std == stdout ? "output" : "error");
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return vcc_io_errf(err, errlen, path, "not a regular file (%s); refusing to replace it", vcc_io_kind(sb.st_mode));
#else
    (void)path;
    (void)err;
    (void)errlen;
#endif
    return 0;
}

/* vcc_io_create_tmp: create the temporary file of an atomic write of path: a new file
 * "<path>.tmp.XXXXXX" (6 random letters and digits; where path's file name has more than
 * VCC_IO_NAME_MAX - 11 bytes, only its first VCC_IO_NAME_MAX - 11 before the suffix, so the temporary
 * name is a legal one wherever path's is), created exclusively (POSIX: open with O_CREAT |
 * O_EXCL | O_NOFOLLOW and mode 0666, so the umask applies; C11: fopen "wbx"), so neither a file nor a
 * symlink already at that name is ever opened or followed; a name that exists is drawn again (up to
 * 100 times). Refuses an empty path and, first, a path vcc_io_check_target refuses. Returns the
 * stream with the name in *tmp (malloc'd, free it), or NULL with "<path>: <problem>" in err (*tmp
 * NULL). */
VCC_IO_FN FILE *vcc_io_create_tmp(const char *path, char **tmp, char *err, size_t errlen)
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    size_t plen, mark = sizeof VCC_IO_TMP_MARK - 1, k;
    char *name;
    uint64_t seed;
    int attempt, e = 0;
    *tmp = NULL;
    if (!path || !*path) {
        vcc_io_errf(err, errlen, "''", "the file name is empty");
        return NULL;
    }
    if (vcc_io_check_target(path, err, errlen)) return NULL;
    plen = strlen(path);
    {
        const char *slash = strrchr(path, '/');
        size_t base = plen - (slash ? (size_t)(slash + 1 - path) : 0), keep = VCC_IO_NAME_MAX - mark - VCC_IO_TMP_RANDOM;
        if (base > keep && base <= VCC_IO_NAME_MAX) plen -= base - keep;
    }
    name = (char *)malloc(plen + mark + VCC_IO_TMP_RANDOM + 1);
    if (!name) {
        vcc_io_errf(err, errlen, path, "out of memory");
        return NULL;
    }
    memcpy(name, path, plen);
    memcpy(name + plen, VCC_IO_TMP_MARK, mark);
    name[plen + mark + VCC_IO_TMP_RANDOM] = '\0';
    seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 24) ^ (uint64_t)(uintptr_t)name ^ ((uint64_t)(uintptr_t)&plen << 16);
#if VCC_IO_FSYNC
    seed ^= (uint64_t)getpid() << 40;
#endif
    for (attempt = 0; attempt < 100; attempt++) {
        FILE *f;
        for (k = 0; k < VCC_IO_TMP_RANDOM; k++) { /* splitmix64 steps */
            uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            name[plen + mark + k] = alnum[(z ^ (z >> 31)) % (sizeof alnum - 1)];
        }
#if VCC_IO_FSYNC
        {
            int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | VCC_IO_NOFOLLOW | VCC_IO_CLOEXEC, 0666);
            if (fd < 0) {
                e = errno;
                if (e == EEXIST) continue;
                break;
            }
            f = fdopen(fd, "wb");
            if (!f) {
                e = errno;
                close(fd);
                remove(name);
                break;
            }
        }
#else
        errno = 0;
        f = fopen(name, "wbx");
        if (!f) {
            e = errno;
#ifdef EEXIST
            if (e == EEXIST) continue;
#endif
            break;
        }
#endif
        *tmp = name;
        return f;
    }
    vcc_io_errf(err, errlen, path, "cannot write: %s", e ? strerror(e) : "cannot create a temporary file");
    free(name);
    return NULL;
}

/* vcc_io_is_tmp_suffix: whether s is the rest of a temporary file's name after the file it is written
 * for: VCC_IO_TMP_MARK and VCC_IO_TMP_RANDOM letters or digits (vcc_io_create_tmp), or ".tmp" (the
 * name older programs used). */
VCC_IO_FN int vcc_io_is_tmp_suffix(const char *s)
{
    size_t mark = sizeof VCC_IO_TMP_MARK - 1, k;
    if (strcmp(s, ".tmp") == 0) return 1;
    if (strncmp(s, VCC_IO_TMP_MARK, mark) != 0) return 0;
    for (k = 0; k < VCC_IO_TMP_RANDOM; k++) {
        char c = s[mark + k];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return 0;
    }
    return s[mark + k] == '\0';
}

/* vcc_io_check_output: whether an output can be written at path, asked before the work that produces
 * it starts: refuses an empty name, an existing file that is not a regular file (vcc_io_check_target)
 * and a folder that is missing or not writable (a temporary file is created there, as the write will,
 * and removed). Returns 0, or 1 with "<path>: <problem>" in err. */
VCC_IO_FN int vcc_io_check_output(const char *path, char *err, size_t errlen)
{
    char *tmp = NULL;
    FILE *f = vcc_io_create_tmp(path, &tmp, err, errlen);
    if (!f) return 1;
    fclose(f);
    remove(tmp);
    free(tmp);
    return 0;
}

/* vcc_io_parse_float: a plain decimal number >= 0 into *out: digits with an optional '.' and fraction
 * and an optional exponent ("0.01", ".5", "5.", "1e-3"); no sign (PyTorch's SGD refuses negative lr,
 * momentum and weight decay), no spaces, no hex, inf or nan. Returns 0; 1 for any other text; 2 when
 * the value is too large for float32; 3 when a nonzero value is so small that it becomes 0 in float32
 * (1e-400). */
VCC_IO_FN int vcc_io_parse_float(const char *s, float *out)
{
    const char *p = s;
    int digits = 0, nonzero = 0;
    double v;
    for (; *p >= '0' && *p <= '9'; p++) digits++, nonzero |= *p != '0';
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++, nonzero |= *p != '0';
    if (!digits) return 1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 1;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return 1;
    v = strtod(s, NULL);
    if (!(v <= (double)FLT_MAX)) return 2;
    if (nonzero && (float)v == 0.0f) return 3;
    *out = (float)v;
    return 0;
}

/* vcc_io_path_text: path with "." components and repeated or trailing slashes dropped ("./a//./b/" ->
 * "a/b"), into buf (cap bytes): what two spellings of one path that does not exist yet have in common. */
VCC_IO_FN const char *vcc_io_path_text(const char *path, char *buf, size_t cap)
{
    size_t o = 0, n, k;
    const char *p = path, *e;
    if (cap < 2) {
        if (cap) buf[0] = '\0';
        return buf;
    }
    if (*p == '/') buf[o++] = '/';
    while (*p) {
        while (*p == '/') p++;
        e = p;
        while (*e && *e != '/') e++;
        n = (size_t)(e - p);
        if (n && !(n == 1 && *p == '.')) {
            if (o > 0 && buf[o - 1] != '/' && o < cap - 1) buf[o++] = '/';
            for (k = 0; k < n && o < cap - 1; k++) buf[o++] = p[k];
        }
        p = e;
    }
    if (o == 0) buf[o++] = '.';
    buf[o] = '\0';
    return buf;
}

/* vcc_io_same_file: whether paths x and y name the same file: the same device and inode when both
 * exist (hard links and symlinks included; POSIX), else the same text after vcc_io_path_text. */
VCC_IO_FN int vcc_io_same_file(const char *x, const char *y)
{
    char a[4200], b[4200];
#if VCC_IO_FSYNC
    struct stat sx, sy;
    int hx = stat(x, &sx) == 0, hy = stat(y, &sy) == 0;
    if (hx && hy) return sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
    if (hx || hy) return 0;
#endif
    return strcmp(vcc_io_path_text(x, a, sizeof a), vcc_io_path_text(y, b, sizeof b)) == 0;
}

/* ======================================================================== */
/* .npy                                                                     */
/* ======================================================================== */

/* VccNpy: one array loaded from a .npy file.
 *   dtype: the .npy code without its byte order: "f4" (float32), "f8", "i1", "i2", "i4", "i8", "u1",
 *   "u2", "u4", "u8" or "b1" (bool); little-endian, C order.
 *   dims[0..rank-1] the shape, e.g. clips (N, C, T, H, W), labels (N).
 *   data: malloc'd, nbytes = prod(dims) * itemsize (never NULL after a
 *   successful load, even for an empty array). */
typedef struct { char dtype[8]; /* "f4", "i8", ... (little-endian only; reject others, reject fortran_order True) */
                 int rank; int64_t dims[8]; void *data; size_t nbytes; } VccNpy;

/* Cursor over the Python-literal header dict of a .npy file. */
typedef struct {
    const char *s;
    size_t n, i;
} VccNpyCur;

VCC_IO_FN void vcc_npy_ws(VccNpyCur *c)
{
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                           c->s[c->i] == '\n' || c->s[c->i] == '\r'))
        c->i++;
}

/* Parse a quoted Python string without escapes into out (cap bytes incl NUL).
 * Returns 0 on success, 1 on syntax error, 2 if too long. */
VCC_IO_FN int vcc_npy_str(VccNpyCur *c, char *out, size_t cap)
{
    char q;
    size_t len = 0;
    if (c->i >= c->n) return 1;
    q = c->s[c->i];
    if (q != '\'' && q != '"') return 1;
    c->i++;
    while (c->i < c->n && c->s[c->i] != q) {
        char ch = c->s[c->i];
        if (ch == '\\' || ch == '\0' || ch == '\n') return 1;
        if (len + 1 >= cap) return 2;
        out[len++] = ch;
        c->i++;
    }
    if (c->i >= c->n) return 1;
    c->i++; /* closing quote */
    out[len] = '\0';
    return 0;
}

/* Parse a non-negative decimal integer <= INT64_MAX (optional Python 2 'L'
 * suffix). Returns 0 on success, 1 on syntax error, 2 on overflow. */
VCC_IO_FN int vcc_npy_int(VccNpyCur *c, int64_t *v)
{
    uint64_t x = 0;
    size_t start = c->i;
    while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
        uint64_t d = (uint64_t)(c->s[c->i] - '0');
        if (x > ((uint64_t)INT64_MAX - d) / 10) return 2;
        x = x * 10 + d;
        c->i++;
    }
    if (c->i == start) return 1;
    if (c->i < c->n && c->s[c->i] == 'L') c->i++;
    *v = (int64_t)x;
    return 0;
}

/* vcc_npy_dtype_name: a readable name for a .npy 'descr' ("<i4" -> "int32", ">f8" -> "big-endian
 * float64"), written into buf (cap bytes); descrs outside the common numeric kinds are named "dtype". */
VCC_IO_FN const char *vcc_npy_dtype_name(const char *descr, char *buf, size_t cap)
{
    static const char *const codes[] = {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"};
    static const char *const names[] = {"float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                        "uint8", "uint16", "uint32", "uint64", "bool"};
    const char *code = descr;
    size_t i;
    if (*code == '<' || *code == '>' || *code == '|' || *code == '=') code++;
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i]) == 0) {
            snprintf(buf, cap, "%s%s", descr[0] == '>' ? "big-endian " : "", names[i]);
            return buf;
        }
    snprintf(buf, cap, "dtype");
    return buf;
}

/* vcc_npy_itemsize: bytes per element of a .npy dtype code without its byte order ("f4" -> 4, "b1" -> 1);
 * 0 for a code vcc does not read or write. */
VCC_IO_FN size_t vcc_npy_itemsize(const char *code)
{
    static const char *const codes[] = {"f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"};
    size_t k;
    for (k = 0; k < sizeof codes / sizeof codes[0]; k++)
        if (strcmp(code, codes[k]) == 0) return (size_t)(code[1] - '0');
    return 0;
}

/* Parse the header dict {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * into a (dtype/rank/dims). want (a code: "f4", "i8", "u1", ...; NULL for any) and what (the array's role, e.g.
 * "labels") give the message for any other dtype: "labels must be int64 ('<i8'), got int32 ('<i4')".
 * Returns 0 or writes err. */
VCC_IO_FN int vcc_npy_parse_header(const char *hdr, size_t hlen, const char *path, const char *want,
                                   const char *what, VccNpy *a, char *err, size_t errlen)
{
    VccNpyCur c;
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    char descr[32];
    int rc;
    c.s = hdr; c.n = hlen; c.i = 0;
    descr[0] = '\0';

    vcc_npy_ws(&c);
    if (c.i >= c.n || c.s[c.i] != '{')
        return vcc_io_errf(err, errlen, path, "malformed .npy header: expected '{' at byte %lu of the header", (unsigned long)c.i);
    c.i++;
    for (;;) {
        char key[32];
        vcc_npy_ws(&c);
        if (c.i >= c.n)
            return vcc_io_errf(err, errlen, path, "malformed .npy header: unterminated dict");
        if (c.s[c.i] == '}') { c.i++; break; }
        rc = vcc_npy_str(&c, key, sizeof key);
        if (rc)
            return vcc_io_errf(err, errlen, path, "malformed .npy header: bad key at byte %lu of the header", (unsigned long)c.i);
        vcc_npy_ws(&c);
        if (c.i >= c.n || c.s[c.i] != ':')
            return vcc_io_errf(err, errlen, path, "malformed .npy header: expected ':' after '%s'", key);
        c.i++;
        vcc_npy_ws(&c);
        if (strcmp(key, "descr") == 0) {
            if (have_descr)
                return vcc_io_errf(err, errlen, path, "malformed .npy header: duplicate key 'descr'");
            have_descr = 1;
            rc = vcc_npy_str(&c, descr, sizeof descr);
            if (rc)
                return vcc_io_errf(err, errlen, path, "unsupported .npy dtype (structured or malformed 'descr'); expected float32 ('<f4') or int64 ('<i8')");
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_fortran)
                return vcc_io_errf(err, errlen, path, "malformed .npy header: duplicate key 'fortran_order'");
            have_fortran = 1;
            if (c.n - c.i >= 5 && memcmp(c.s + c.i, "False", 5) == 0) {
                c.i += 5;
            } else if (c.n - c.i >= 4 && memcmp(c.s + c.i, "True", 4) == 0) {
                return vcc_io_errf(err, errlen, path, "fortran_order True is not supported (save a C-contiguous array)");
            } else {
                return vcc_io_errf(err, errlen, path, "malformed .npy header: 'fortran_order' must be True or False");
            }
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape)
                return vcc_io_errf(err, errlen, path, "malformed .npy header: duplicate key 'shape'");
            have_shape = 1;
            if (c.i >= c.n || c.s[c.i] != '(')
                return vcc_io_errf(err, errlen, path, "malformed .npy header: 'shape' must be a tuple");
            c.i++;
            a->rank = 0;
            for (;;) {
                int64_t v = 0;
                vcc_npy_ws(&c);
                if (c.i < c.n && c.s[c.i] == ')') { c.i++; break; }
                if (a->rank >= 8)
                    return vcc_io_errf(err, errlen, path, "array rank above 8 is not supported");
                rc = vcc_npy_int(&c, &v);
                if (rc == 2)
                    return vcc_io_errf(err, errlen, path, "shape dimension %d is too large", a->rank);
                if (rc)
                    return vcc_io_errf(err, errlen, path, "malformed .npy header: bad shape dimension %d", a->rank);
                a->dims[a->rank++] = v;
                vcc_npy_ws(&c);
                if (c.i < c.n && c.s[c.i] == ',') { c.i++; continue; }
                if (c.i < c.n && c.s[c.i] == ')') { c.i++; break; }
                return vcc_io_errf(err, errlen, path, "malformed .npy header: bad shape tuple");
            }
        } else {
            return vcc_io_errf(err, errlen, path, "malformed .npy header: unexpected key '%s'", key);
        }
        vcc_npy_ws(&c);
        if (c.i < c.n && c.s[c.i] == ',') { c.i++; continue; }
        if (c.i < c.n && c.s[c.i] == '}') { c.i++; break; }
        return vcc_io_errf(err, errlen, path, "malformed .npy header: expected ',' or '}' at byte %lu of the header", (unsigned long)c.i);
    }
    vcc_npy_ws(&c);
    while (c.i < c.n && c.s[c.i] == '\0') c.i++; /* tolerate NUL padding */
    if (c.i != c.n)
        return vcc_io_errf(err, errlen, path, "malformed .npy header: trailing characters after the dict");
    if (!have_descr || !have_fortran || !have_shape)
        return vcc_io_errf(err, errlen, path, "malformed .npy header: missing key '%s'",
                           !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
    if (want && ((descr[0] != '<' && descr[0] != '|') || strcmp(descr + 1, want) != 0)) {
        char wname[32], gname[48];
        int printable = 1;
        size_t k;
        for (k = 0; descr[k]; k++) printable &= descr[k] >= 0x20 && descr[k] < 0x7f;
        vcc_npy_dtype_name(want, wname, sizeof wname);
        return vcc_io_errf(err, errlen, path, "%s must be %s ('%c%s'), got %s ('%s')", what ? what : "the array", wname,
                           vcc_npy_itemsize(want) == 1 ? '|' : '<', want, vcc_npy_dtype_name(descr, gname, sizeof gname), printable ? descr : "?");
    }
    {
        /* little-endian (or byte-order free for one-byte types) numeric descrs */
        static const char *const ok[] = {"<f4", "<i8", "<f8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1", "|b1"};
        size_t k;
        for (k = 0; k < sizeof ok / sizeof ok[0]; k++)
            if (strcmp(descr, ok[k]) == 0) {
                strcpy(a->dtype, ok[k] + 1);
                return 0;
            }
    }
    if (descr[0] == '>')
        return vcc_io_errf(err, errlen, path, "big-endian dtype '%s' is not supported; write it little-endian ('<%s')",
                           descr, descr + 1);
    return vcc_io_errf(err, errlen, path, "unsupported .npy dtype '%s' (expected float32/64, int8/16/32/64, uint8/16/32/64 or bool)", descr);
}

/* vcc_npy_free: release a VccNpy's data; safe on a zeroed or failed-load VccNpy. */
VCC_IO_FN void vcc_npy_free(VccNpy *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* vcc_npy_load_as: vcc_npy_load (below) for an array that must have one dtype: want "f4" (float32) or
 * "i8" (int64); any other dtype is refused before the data is read, with a message naming the array's
 * role what (e.g. "<path>: labels must be int64 ('<i8'), got int32 ('<i4')"). want NULL accepts both. */
VCC_IO_FN int vcc_npy_load_as(const char *path, const char *want, const char *what, VccNpy *out, char *err,
                              size_t errlen)
{
    FILE *f;
    unsigned char pre[12];
    uint64_t fsize, hstart, hlen, avail, nel = 1, nbytes;
    char *hdr = NULL;
    int i, major, minor;
    VccNpy a;

    memset(&a, 0, sizeof a);
    if (out) memset(out, 0, sizeof *out);
    if (!path || !out) return vcc_io_errf(err, errlen, path, "vcc_npy_load: NULL argument");
    f = vcc_io_open_read(path, err, errlen);
    if (!f) return 1;
    if (vcc_io_file_size(f, &fsize)) {
        vcc_io_errf(err, errlen, path, "cannot determine file size: %s", strerror(errno));
        goto fail;
    }
    if (vcc_io_read(f, pre, 8)) {
        if (ferror(f)) vcc_io_read_fail(f, err, errlen, path, ".npy preamble");
        else vcc_io_errf(err, errlen, path, "too short to be a .npy file (%llu bytes)", (unsigned long long)fsize);
        goto fail;
    }
    if (memcmp(pre, "\x93NUMPY", 6) != 0) {
        vcc_io_errf(err, errlen, path, "not a .npy file (bad magic)");
        goto fail;
    }
    major = pre[6];
    minor = pre[7];
    if (major == 1) {
        if (vcc_io_read(f, pre + 8, 2)) { vcc_io_read_fail(f, err, errlen, path, ".npy header length"); goto fail; }
        hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8);
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (vcc_io_read(f, pre + 8, 4)) { vcc_io_read_fail(f, err, errlen, path, ".npy header length"); goto fail; }
        hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8) | ((uint64_t)pre[10] << 16) | ((uint64_t)pre[11] << 24);
        hstart = 12;
    } else {
        vcc_io_errf(err, errlen, path, "unsupported .npy format version %d.%d", major, minor);
        goto fail;
    }
    if (fsize < hstart || hlen > fsize - hstart) {
        vcc_io_errf(err, errlen, path, "header length %llu runs past the end of the file (%llu bytes)",
                    (unsigned long long)hlen, (unsigned long long)fsize);
        goto fail;
    }
    if (hlen > ((uint64_t)1 << 20)) {
        vcc_io_errf(err, errlen, path, "header length %llu is implausibly large", (unsigned long long)hlen);
        goto fail;
    }
    hdr = (char *)malloc((size_t)hlen + 1);
    if (!hdr) { vcc_io_errf(err, errlen, path, "out of memory"); goto fail; }
    if (vcc_io_read(f, hdr, (size_t)hlen)) { vcc_io_read_fail(f, err, errlen, path, ".npy header"); goto fail; }
    hdr[hlen] = '\0';
    if (vcc_npy_parse_header(hdr, (size_t)hlen, path, want, what, &a, err, errlen)) goto fail;
    free(hdr);
    hdr = NULL;

    for (i = 0; i < a.rank; i++) {
        if (vcc_io_mul_u64(nel, (uint64_t)a.dims[i], &nel)) {
            vcc_io_errf(err, errlen, path, "shape overflows the addressable size");
            goto fail;
        }
    }
    if (vcc_io_mul_u64(nel, (uint64_t)vcc_npy_itemsize(a.dtype), &nbytes) || nbytes > (uint64_t)SIZE_MAX - 1) {
        vcc_io_errf(err, errlen, path, "shape overflows the addressable size");
        goto fail;
    }
    avail = fsize - hstart - hlen;
    if (avail < nbytes) {
        vcc_io_errf(err, errlen, path, "truncated: shape needs %llu data bytes, file has %llu after the header",
                    (unsigned long long)nbytes, (unsigned long long)avail);
        goto fail;
    }
    if (avail > nbytes) {
        vcc_io_errf(err, errlen, path, "%llu unexpected bytes after the array data",
                    (unsigned long long)(avail - nbytes));
        goto fail;
    }
    a.nbytes = (size_t)nbytes;
    a.data = malloc(nbytes ? (size_t)nbytes : 1);
    if (!a.data) {
        vcc_io_errf(err, errlen, path, "out of memory for %llu bytes", (unsigned long long)nbytes);
        goto fail;
    }
    if (vcc_io_read(f, a.data, a.nbytes)) { vcc_io_read_fail(f, err, errlen, path, ".npy data"); goto fail; }
    fclose(f);
    *out = a;
    return 0;
fail:
    free(hdr);
    free(a.data);
    fclose(f);
    return 1;
}

/* vcc_npy_load: read a .npy file (format versions 1.0, 2.0, 3.0; numpy.save
 * semantics) holding a C-order little-endian float32 ('<f4'), int64 ('<i8') or other numeric type
 * array of rank 0..8, e.g. clips (N, C, T, H, W) or labels (N).
 * On success out->data is malloc'd (free with vcc_npy_free) and returns 0.
 * Errors (nonzero return, out zeroed): cannot open/read, not a regular file
 * (POSIX: a FIFO or device is refused, not waited on), bad magic, unknown
 * version, header past end of file, malformed header dict, other dtypes,
 * big-endian, fortran_order True, rank > 8, size overflow, data shorter or
 * longer than prod(shape) * itemsize, out of memory. */
VCC_IO_FN int vcc_npy_load(const char *path, VccNpy *out, char *err, size_t errlen)
{
    return vcc_npy_load_as(path, NULL, NULL, out, err, errlen);
}

/* ======================================================================== */
/* .safetensors                                                             */
/* ======================================================================== */
/* Layout: u64 LE header size n; n bytes of JSON {"name": {"dtype": "F32",
 * "shape": [..], "data_offsets": [b, e]}, ..., "__metadata__": {..}};
 * then the data section. data_offsets are relative to the data section; the
 * tensors must tile it exactly (no gaps, no overlaps), as the reference
 * implementation requires. */

/* VccStEntry: one tensor of a loaded file. begin/end are ABSOLUTE byte
 * offsets into VccSafetensors.buf (data section start + data_offsets), so the
 * bytes are buf[begin, end). Not necessarily aligned: copy them out with
 * memcpy / vcc_upload. */
typedef struct { char *name; char dtype[8]; /* "F32","I64" */ int rank; int64_t dims[8]; uint64_t begin, end; } VccStEntry;
/* VccStMetaEntry: one string-valued key of the header's "__metadata__" object (UTF-8, malloc'd). */
typedef struct { char *key, *value; } VccStMetaEntry;
/* VccSafetensors: the whole file in buf (size bytes), its n entries in
 * header order, the nmeta string entries of "__metadata__" in file order, and
 * by_name: the n entry indices in name order (strcmp), for vcc_st_find. */
typedef struct { unsigned char *buf; size_t size; /* whole file */ VccStEntry *entries; int n;
                 VccStMetaEntry *meta; int nmeta; int *by_name; } VccSafetensors;
/* VccStMeta: one "__metadata__" entry to write (both strings non-NULL). */
typedef struct { const char *key; const char *value; } VccStMeta;
/* VccStWrite: one tensor to write: dims (rank) of a dtype ("F32", "I64", ...),
 * nbytes = prod(dims) * itemsize bytes at data (host memory). */
typedef struct { const char *name; const char *dtype; int rank; const int64_t *dims; const void *data; uint64_t nbytes; } VccStWrite;

/* vcc_st_dtype_size: bytes per element of a safetensors dtype name, 0 if unknown. */
VCC_IO_FN int vcc_st_dtype_size(const char *dt)
{
    static const char *const names[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8",
                                        "U64", "U32", "U16", "U8", "BOOL", "F8_E4M3", "F8_E5M2"};
    static const int sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1, 1, 1};
    size_t i;
    if (!dt) return 0;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(dt, names[i]) == 0) return sizes[i];
    return 0;
}

/* JSON cursor (strict RFC 8259 syntax for the subset in a safetensors header). */
typedef struct {
    const char *s;
    size_t n, i;
    const char *path;
    char *err;
    size_t errlen;
} VccJson;

VCC_IO_FN void vcc_json_ws(VccJson *j)
{
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' ||
                           j->s[j->i] == '\n' || j->s[j->i] == '\r'))
        j->i++;
}

VCC_IO_FN int vcc_json_fail(VccJson *j, const char *what)
{
    return vcc_io_errf(j->err, j->errlen, j->path, "malformed safetensors header JSON at byte %lu: %s",
                       (unsigned long)j->i, what);
}

VCC_IO_FN int vcc_json_expect(VccJson *j, char ch)
{
    vcc_json_ws(j);
    if (j->i >= j->n || j->s[j->i] != ch) {
        char msg[24];
        snprintf(msg, sizeof msg, "expected '%c'", ch);
        return vcc_json_fail(j, msg);
    }
    j->i++;
    return 0;
}

VCC_IO_FN int vcc_json_hex4(VccJson *j, unsigned *v)
{
    unsigned x = 0;
    int k;
    if (j->n - j->i < 4) return 1;
    for (k = 0; k < 4; k++) {
        char ch = j->s[j->i + (size_t)k];
        x <<= 4;
        if (ch >= '0' && ch <= '9') x |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') x |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') x |= (unsigned)(ch - 'A' + 10);
        else return 1;
    }
    j->i += 4;
    *v = x;
    return 0;
}

/* Parse a JSON string. If out is non-NULL, *out receives a malloc'd,
 * unescaped, NUL-terminated copy (strings containing U+0000 are rejected). */
VCC_IO_FN int vcc_json_string(VccJson *j, char **out)
{
    size_t start, cap, len = 0;
    char *buf = NULL;
    vcc_json_ws(j);
    if (j->i >= j->n || j->s[j->i] != '"') return vcc_json_fail(j, "expected a string");
    j->i++;
    start = j->i;
    /* The unescaped form is never longer than the escaped form. */
    {
        size_t k = start;
        while (k < j->n && j->s[k] != '"') k += (j->s[k] == '\\') ? 2 : 1;
        if (k >= j->n) return vcc_json_fail(j, "unterminated string");
        cap = k - start + 1;
    }
    if (out) {
        buf = (char *)malloc(cap);
        if (!buf) return vcc_io_errf(j->err, j->errlen, j->path, "out of memory");
    }
    while (j->i < j->n && j->s[j->i] != '"') {
        unsigned char ch = (unsigned char)j->s[j->i];
        if (ch < 0x20) { free(buf); return vcc_json_fail(j, "control character in string"); }
        if (ch != '\\') {
            if (buf) buf[len++] = (char)ch;
            j->i++;
            continue;
        }
        j->i++;
        if (j->i >= j->n) { free(buf); return vcc_json_fail(j, "unterminated escape"); }
        ch = (unsigned char)j->s[j->i++];
        if (ch == 'u') {
            unsigned cp = 0, lo = 0;
            if (vcc_json_hex4(j, &cp)) { free(buf); return vcc_json_fail(j, "bad \\u escape"); }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (j->n - j->i < 2 || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u') {
                    free(buf); return vcc_json_fail(j, "unpaired surrogate");
                }
                j->i += 2;
                if (vcc_json_hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf); return vcc_json_fail(j, "unpaired surrogate");
                }
                cp = 0x10000u + ((cp - 0xD800u) << 10) + (lo - 0xDC00u);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(buf); return vcc_json_fail(j, "unpaired surrogate");
            }
            if (cp == 0) { free(buf); return vcc_json_fail(j, "U+0000 in string"); }
            if (buf) { /* UTF-8; an escape of >= 6 source bytes yields <= 4 bytes */
                if (cp < 0x80) buf[len++] = (char)cp;
                else if (cp < 0x800) { buf[len++] = (char)(0xC0 | (cp >> 6)); buf[len++] = (char)(0x80 | (cp & 0x3F)); }
                else if (cp < 0x10000) { buf[len++] = (char)(0xE0 | (cp >> 12)); buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3F)); buf[len++] = (char)(0x80 | (cp & 0x3F)); }
                else { buf[len++] = (char)(0xF0 | (cp >> 18)); buf[len++] = (char)(0x80 | ((cp >> 12) & 0x3F)); buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3F)); buf[len++] = (char)(0x80 | (cp & 0x3F)); }
            }
            continue;
        }
        switch (ch) {
        case '"': case '\\': case '/': break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        default: free(buf); return vcc_json_fail(j, "bad escape");
        }
        if (buf) buf[len++] = (char)ch;
    }
    if (j->i >= j->n) { free(buf); return vcc_json_fail(j, "unterminated string"); }
    j->i++; /* closing quote */
    if (buf) { buf[len] = '\0'; *out = buf; }
    return 0;
}

/* Parse a non-negative JSON integer (no sign, fraction or exponent). */
VCC_IO_FN int vcc_json_u64(VccJson *j, uint64_t *v)
{
    uint64_t x = 0;
    size_t start;
    vcc_json_ws(j);
    start = j->i;
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') {
        uint64_t d = (uint64_t)(j->s[j->i] - '0');
        if (x > (UINT64_MAX - d) / 10) return vcc_json_fail(j, "integer too large");
        x = x * 10 + d;
        j->i++;
    }
    if (j->i == start) return vcc_json_fail(j, "expected a non-negative integer");
    if (j->i - start > 1 && j->s[start] == '0') return vcc_json_fail(j, "leading zero in integer");
    if (j->i < j->n && (j->s[j->i] == '.' || j->s[j->i] == 'e' || j->s[j->i] == 'E'))
        return vcc_json_fail(j, "expected an integer");
    *v = x;
    return 0;
}

/* Skip any JSON value (depth-limited). */
VCC_IO_FN int vcc_json_skip(VccJson *j, int depth)
{
    char ch;
    if (depth > 64) return vcc_json_fail(j, "nesting too deep");
    vcc_json_ws(j);
    if (j->i >= j->n) return vcc_json_fail(j, "expected a value");
    ch = j->s[j->i];
    if (ch == '"') return vcc_json_string(j, NULL);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        j->i++;
        vcc_json_ws(j);
        if (j->i < j->n && j->s[j->i] == close) { j->i++; return 0; }
        for (;;) {
            if (ch == '{') {
                if (vcc_json_string(j, NULL) || vcc_json_expect(j, ':')) return 1;
            }
            if (vcc_json_skip(j, depth + 1)) return 1;
            vcc_json_ws(j);
            if (j->i < j->n && j->s[j->i] == ',') { j->i++; continue; }
            if (j->i < j->n && j->s[j->i] == close) { j->i++; return 0; }
            return vcc_json_fail(j, "expected ',' or a closing bracket");
        }
    }
    if (j->n - j->i >= 4 && memcmp(j->s + j->i, "true", 4) == 0) { j->i += 4; return 0; }
    if (j->n - j->i >= 5 && memcmp(j->s + j->i, "false", 5) == 0) { j->i += 5; return 0; }
    if (j->n - j->i >= 4 && memcmp(j->s + j->i, "null", 4) == 0) { j->i += 4; return 0; }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        size_t st;
        if (ch == '-') j->i++;
        st = j->i;
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
        if (j->i == st) return vcc_json_fail(j, "bad number");
        if (j->i - st > 1 && j->s[st] == '0') return vcc_json_fail(j, "leading zero in number");
        if (j->i < j->n && j->s[j->i] == '.') {
            j->i++; st = j->i;
            while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
            if (j->i == st) return vcc_json_fail(j, "bad number");
        }
        if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
            j->i++;
            if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-')) j->i++;
            st = j->i;
            while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
            if (j->i == st) return vcc_json_fail(j, "bad number");
        }
        return 0;
    }
    return vcc_json_fail(j, "unexpected character");
}

/* Parse one tensor info object {"dtype": .., "shape": [..], "data_offsets": [b, e]}
 * into e (name already set). Offsets are kept relative here. */
VCC_IO_FN int vcc_st_parse_info(VccJson *j, VccStEntry *e)
{
    int have_dtype = 0, have_shape = 0, have_off = 0;
    if (vcc_json_expect(j, '{')) return 1;
    vcc_json_ws(j);
    if (j->i < j->n && j->s[j->i] == '}') {
        j->i++;
        return vcc_io_errf(j->err, j->errlen, j->path, "tensor '%s': empty tensor info", e->name);
    }
    for (;;) {
        char *key = NULL;
        if (vcc_json_string(j, &key)) return 1;
        if (vcc_json_expect(j, ':')) { free(key); return 1; }
        if (strcmp(key, "dtype") == 0) {
            char *dt = NULL;
            free(key);
            if (have_dtype) return vcc_json_fail(j, "duplicate key 'dtype'");
            have_dtype = 1;
            if (vcc_json_string(j, &dt)) return 1;
            if (strlen(dt) >= sizeof e->dtype || vcc_st_dtype_size(dt) == 0) {
                vcc_io_errf(j->err, j->errlen, j->path, "tensor '%s': unknown dtype '%.16s'", e->name, dt);
                free(dt);
                return 1;
            }
            strcpy(e->dtype, dt);
            free(dt);
        } else if (strcmp(key, "shape") == 0) {
            free(key);
            if (have_shape) return vcc_json_fail(j, "duplicate key 'shape'");
            have_shape = 1;
            if (vcc_json_expect(j, '[')) return 1;
            e->rank = 0;
            vcc_json_ws(j);
            if (j->i < j->n && j->s[j->i] == ']') {
                j->i++;
            } else {
                for (;;) {
                    uint64_t v = 0;
                    if (e->rank >= 8)
                        return vcc_io_errf(j->err, j->errlen, j->path, "tensor '%s': rank above 8 is not supported", e->name);
                    if (vcc_json_u64(j, &v)) return 1;
                    if (v > (uint64_t)INT64_MAX)
                        return vcc_io_errf(j->err, j->errlen, j->path, "tensor '%s': dimension too large", e->name);
                    e->dims[e->rank++] = (int64_t)v;
                    vcc_json_ws(j);
                    if (j->i < j->n && j->s[j->i] == ',') { j->i++; continue; }
                    if (j->i < j->n && j->s[j->i] == ']') { j->i++; break; }
                    return vcc_json_fail(j, "expected ',' or ']' in shape");
                }
            }
        } else if (strcmp(key, "data_offsets") == 0) {
            free(key);
            if (have_off) return vcc_json_fail(j, "duplicate key 'data_offsets'");
            have_off = 1;
            if (vcc_json_expect(j, '[') || vcc_json_u64(j, &e->begin) || vcc_json_expect(j, ',') ||
                vcc_json_u64(j, &e->end) || vcc_json_expect(j, ']'))
                return 1;
        } else {
            free(key); /* unknown fields are ignored, as the reference reader does */
            if (vcc_json_skip(j, 1)) return 1;
        }
        vcc_json_ws(j);
        if (j->i < j->n && j->s[j->i] == ',') { j->i++; continue; }
        if (j->i < j->n && j->s[j->i] == '}') { j->i++; break; }
        return vcc_json_fail(j, "expected ',' or '}'");
    }
    if (!have_dtype || !have_shape || !have_off)
        return vcc_io_errf(j->err, j->errlen, j->path, "tensor '%s': missing '%s'", e->name,
                           !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return 0;
}

/* Parse the value of "__metadata__": an object's string values are appended to *meta in file order
 * (vcc_st_meta returns a repeated key's last value, as JSON readers do); values of other types, and a
 * value that is not an object, are skipped. Returns 0 or writes err. */
VCC_IO_FN int vcc_st_parse_meta(VccJson *j, VccStMetaEntry **meta, int *nmeta)
{
    int cap = 0;
    vcc_json_ws(j);
    if (j->i >= j->n || j->s[j->i] != '{') return vcc_json_skip(j, 1);
    j->i++;
    vcc_json_ws(j);
    if (j->i < j->n && j->s[j->i] == '}') { j->i++; return 0; }
    for (;;) {
        char *key = NULL, *value = NULL;
        if (vcc_json_string(j, &key)) return 1;
        if (vcc_json_expect(j, ':')) { free(key); return 1; }
        vcc_json_ws(j);
        if (j->i < j->n && j->s[j->i] == '"') {
            if (vcc_json_string(j, &value)) { free(key); return 1; }
            if (*nmeta == cap) {
                VccStMetaEntry *nm = NULL;
                if (cap < (1 << 24)) nm = (VccStMetaEntry *)realloc(*meta, (size_t)(cap ? 2 * cap : 8) * sizeof **meta);
                if (!nm) {
                    free(key);
                    free(value);
                    return vcc_io_errf(j->err, j->errlen, j->path, "out of memory for __metadata__");
                }
                *meta = nm;
                cap = cap ? 2 * cap : 8;
            }
            (*meta)[*nmeta].key = key;
            (*meta)[(*nmeta)++].value = value;
        } else {
            free(key);
            if (vcc_json_skip(j, 2)) return 1;
        }
        vcc_json_ws(j);
        if (j->i < j->n && j->s[j->i] == ',') { j->i++; continue; }
        if (j->i < j->n && j->s[j->i] == '}') { j->i++; return 0; }
        return vcc_json_fail(j, "expected ',' or '}'");
    }
}

/* vcc_st_meta_free: release n metadata entries and the array. */
VCC_IO_FN void vcc_st_meta_free(VccStMetaEntry *meta, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        free(meta[i].key);
        free(meta[i].value);
    }
    free(meta);
}

/* vcc_st_free: release everything vcc_st_load allocated; safe on a zeroed or
 * failed-load VccSafetensors. */
VCC_IO_FN void vcc_st_free(VccSafetensors *st)
{
    int i;
    if (!st) return;
    if (st->entries)
        for (i = 0; i < st->n; i++) free(st->entries[i].name);
    free(st->entries);
    vcc_st_meta_free(st->meta, st->nmeta);
    free(st->by_name);
    free(st->buf);
    memset(st, 0, sizeof *st);
}

/* qsort order on the name (strcmp) over an array of entry pointers. */
VCC_IO_FN int vcc_st_cmp_name(const void *pa, const void *pb)
{
    return strcmp((*(const VccStEntry *const *)pa)->name, (*(const VccStEntry *const *)pb)->name);
}

/* qsort order on (begin, end) over an array of entry pointers. */
VCC_IO_FN int vcc_st_cmp(const void *pa, const void *pb)
{
    const VccStEntry *a = *(const VccStEntry *const *)pa;
    const VccStEntry *b = *(const VccStEntry *const *)pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return 0;
}

/* vcc_st_load: read a whole .safetensors file into st (buf = the file bytes)
 * and parse its header: one VccStEntry per tensor in header order, with
 * absolute byte ranges [begin, end) into buf; the string values of
 * "__metadata__" in st->meta (read them with vcc_st_meta).
 * Returns 0, or nonzero with err set and st zeroed. Rejected: file shorter
 * than 8 bytes, header size past the end of the file or above 100 MB,
 * malformed JSON, a header that is not an object, duplicate names, unknown
 * dtypes, rank > 8, missing fields, begin > end, end past the data section,
 * end - begin != prod(shape) * itemsize, tensors that overlap, leave gaps, or
 * do not cover the data section exactly; with POSIX, a path that is not a
 * regular file. O(n log n) in the tensor count n: duplicates are found in
 * name order, the tiling in offset order. */
VCC_IO_FN int vcc_st_load(const char *path, VccSafetensors *st, char *err, size_t errlen)
{
    FILE *f;
    uint64_t fsize, hsize, dsize, dstart;
    unsigned char pre[8];
    VccJson j;
    VccStEntry *ents = NULL;
    VccStEntry **order = NULL;
    int *by_name = NULL;
    int n = 0, cap = 0, i, k, nmeta = 0;
    unsigned char *buf = NULL;
    VccStMetaEntry *meta = NULL;

    if (st) memset(st, 0, sizeof *st);
    if (!path || !st) return vcc_io_errf(err, errlen, path, "vcc_st_load: NULL argument");
    f = vcc_io_open_read(path, err, errlen);
    if (!f) return 1;
    if (vcc_io_file_size(f, &fsize)) {
        vcc_io_errf(err, errlen, path, "cannot determine file size: %s", strerror(errno));
        fclose(f);
        return 1;
    }
    if (vcc_io_read(f, pre, 8)) {
        if (ferror(f)) vcc_io_read_fail(f, err, errlen, path, "safetensors header size");
        else vcc_io_errf(err, errlen, path, "too short to be a safetensors file (%llu bytes)", (unsigned long long)fsize);
        fclose(f);
        return 1;
    }
    hsize = 0;
    for (i = 7; i >= 0; i--) hsize = (hsize << 8) | pre[i];
    if (fsize < 8 || hsize > fsize - 8) {
        vcc_io_errf(err, errlen, path, "header size %llu runs past the end of the file (%llu bytes)",
                    (unsigned long long)hsize, (unsigned long long)fsize);
        fclose(f);
        return 1;
    }
    if (hsize > 100000000u) {
        vcc_io_errf(err, errlen, path, "header size %llu exceeds the 100 MB limit", (unsigned long long)hsize);
        fclose(f);
        return 1;
    }
    if (fsize > (uint64_t)SIZE_MAX) {
        vcc_io_errf(err, errlen, path, "file too large for this host");
        fclose(f);
        return 1;
    }
    buf = (unsigned char *)malloc(fsize ? (size_t)fsize : 1);
    if (!buf) {
        vcc_io_errf(err, errlen, path, "out of memory for %llu bytes", (unsigned long long)fsize);
        fclose(f);
        return 1;
    }
    memcpy(buf, pre, 8);
    if (vcc_io_read(f, buf + 8, (size_t)(fsize - 8))) {
        vcc_io_read_fail(f, err, errlen, path, "safetensors file");
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);

    dstart = 8 + hsize;
    dsize = fsize - dstart;
    j.s = (const char *)buf + 8;
    j.n = (size_t)hsize;
    j.i = 0;
    j.path = path;
    j.err = err;
    j.errlen = errlen;

    if (hsize == 0 || j.s[0] != '{') {
        vcc_io_errf(err, errlen, path, "safetensors header must be a JSON object starting with '{'");
        goto fail;
    }
    j.i = 1;
    vcc_json_ws(&j);
    if (j.i < j.n && j.s[j.i] == '}') {
        j.i++;
    } else {
        for (;;) {
            char *name = NULL;
            if (vcc_json_string(&j, &name)) goto fail;
            if (vcc_json_expect(&j, ':')) { free(name); goto fail; }
            if (strcmp(name, "__metadata__") == 0) {
                free(name);
                vcc_st_meta_free(meta, nmeta); /* a repeated "__metadata__": the last one counts */
                meta = NULL;
                nmeta = 0;
                if (vcc_st_parse_meta(&j, &meta, &nmeta)) goto fail;
            } else {
                VccStEntry *e;
                if (n == cap) {
                    int ncap = cap ? cap * 2 : 16;
                    VccStEntry *ne;
                    if (cap > (1 << 24)) { free(name); vcc_io_errf(err, errlen, path, "too many tensors"); goto fail; }
                    ne = (VccStEntry *)realloc(ents, (size_t)ncap * sizeof *ents);
                    if (!ne) { free(name); vcc_io_errf(err, errlen, path, "out of memory"); goto fail; }
                    ents = ne;
                    cap = ncap;
                }
                e = &ents[n++];
                memset(e, 0, sizeof *e);
                e->name = name;
                if (vcc_st_parse_info(&j, e)) goto fail;
            }
            vcc_json_ws(&j);
            if (j.i < j.n && j.s[j.i] == ',') { j.i++; continue; }
            if (j.i < j.n && j.s[j.i] == '}') { j.i++; break; }
            vcc_json_fail(&j, "expected ',' or '}'");
            goto fail;
        }
    }
    vcc_json_ws(&j);
    if (j.i != j.n) {
        vcc_json_fail(&j, "trailing characters after the header object");
        goto fail;
    }

    /* Names: sorted, a duplicate is next to its twin; the order is kept for vcc_st_find. */
    if (n > 0) {
        order = (VccStEntry **)malloc((size_t)n * sizeof *order);
        by_name = (int *)malloc((size_t)n * sizeof *by_name);
        if (!order || !by_name) { vcc_io_errf(err, errlen, path, "out of memory"); goto fail; }
        for (i = 0; i < n; i++) order[i] = &ents[i];
        qsort(order, (size_t)n, sizeof *order, vcc_st_cmp_name);
        for (i = 0; i < n; i++) {
            if (i > 0 && strcmp(order[i - 1]->name, order[i]->name) == 0) {
                vcc_io_errf(err, errlen, path, "duplicate tensor name '%s'", order[i]->name);
                goto fail;
            }
            by_name[i] = (int)(order[i] - ents);
        }
    }

    /* Sizes and ranges. */
    for (i = 0; i < n; i++) {
        VccStEntry *e = &ents[i];
        uint64_t nel = 1, nb;
        for (k = 0; k < e->rank; k++) {
            if (vcc_io_mul_u64(nel, (uint64_t)e->dims[k], &nel)) {
                vcc_io_errf(err, errlen, path, "tensor '%s': shape overflows", e->name);
                goto fail;
            }
        }
        if (vcc_io_mul_u64(nel, (uint64_t)vcc_st_dtype_size(e->dtype), &nb)) {
            vcc_io_errf(err, errlen, path, "tensor '%s': shape overflows", e->name);
            goto fail;
        }
        if (e->begin > e->end) {
            vcc_io_errf(err, errlen, path, "tensor '%s': data_offsets [%llu, %llu] are reversed", e->name,
                        (unsigned long long)e->begin, (unsigned long long)e->end);
            goto fail;
        }
        if (e->end > dsize) {
            vcc_io_errf(err, errlen, path, "tensor '%s': data_offsets end %llu is past the data section (%llu bytes)",
                        e->name, (unsigned long long)e->end, (unsigned long long)dsize);
            goto fail;
        }
        if (e->end - e->begin != nb) {
            vcc_io_errf(err, errlen, path, "tensor '%s': data_offsets span %llu bytes but %s shape needs %llu",
                        e->name, (unsigned long long)(e->end - e->begin), e->dtype, (unsigned long long)nb);
            goto fail;
        }
    }
    /* Tiling: sorted by offset, each tensor starts where the previous ended. */
    if (n > 0) {
        uint64_t pos = 0;
        const char *prev = NULL;
        for (i = 0; i < n; i++) order[i] = &ents[i];
        qsort(order, (size_t)n, sizeof *order, vcc_st_cmp);
        for (i = 0; i < n; i++) {
            if (order[i]->begin < pos) {
                vcc_io_errf(err, errlen, path, "tensor '%s' overlaps tensor '%s' in the data section",
                            order[i]->name, prev ? prev : "?");
                goto fail;
            }
            if (order[i]->begin > pos) {
                vcc_io_errf(err, errlen, path, "gap of %llu bytes before tensor '%s' in the data section",
                            (unsigned long long)(order[i]->begin - pos), order[i]->name);
                goto fail;
            }
            pos = order[i]->end;
            prev = order[i]->name;
        }
        if (pos != dsize) {
            vcc_io_errf(err, errlen, path, "data section has %llu bytes but the tensors cover %llu",
                        (unsigned long long)dsize, (unsigned long long)pos);
            goto fail;
        }
        free(order);
        order = NULL;
    } else if (dsize != 0) {
        vcc_io_errf(err, errlen, path, "data section has %llu bytes but the header lists no tensors",
                    (unsigned long long)dsize);
        goto fail;
    }
    for (i = 0; i < n; i++) {
        ents[i].begin += dstart;
        ents[i].end += dstart;
    }
    st->buf = buf;
    st->size = (size_t)fsize;
    st->entries = ents;
    st->n = n;
    st->meta = meta;
    st->nmeta = nmeta;
    st->by_name = by_name;
    return 0;
fail:
    for (i = 0; i < n; i++) free(ents[i].name);
    free(ents);
    vcc_st_meta_free(meta, nmeta);
    free(order);
    free(by_name);
    free(buf);
    return 1;
}

/* vcc_st_meta: the "__metadata__" value of key, or NULL when the file has none. */
VCC_IO_FN const char *vcc_st_meta(const VccSafetensors *st, const char *key)
{
    int i;
    if (!st || !key) return NULL;
    for (i = st->nmeta - 1; i >= 0; i--)
        if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
    return NULL;
}

/* vcc_st_find: the entry named name, or NULL; a binary search over by_name (O(log n)), a scan when a
 * hand-made VccSafetensors has no by_name. */
VCC_IO_FN const VccStEntry *vcc_st_find(const VccSafetensors *st, const char *name)
{
    int i, lo = 0, hi;
    if (!st || !name) return NULL;
    if (!st->by_name) {
        for (i = 0; i < st->n; i++)
            if (strcmp(st->entries[i].name, name) == 0) return &st->entries[i];
        return NULL;
    }
    hi = st->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(st->entries[st->by_name[mid]].name, name);
        if (c == 0) return &st->entries[st->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* qsort order on strings (strcmp) over an array of const char *. */
VCC_IO_FN int vcc_io_cmp_str(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* Growable byte buffer for the writer's header. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} VccStBuf;

VCC_IO_FN void vcc_stbuf_put(VccStBuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (n > ((size_t)-1) / 2 - b->len) { b->oom = 1; return; }
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        char *np;
        while (nc < b->len + n + 1) nc *= 2;
        np = (char *)realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

VCC_IO_FN void vcc_stbuf_str(VccStBuf *b, const char *s) { vcc_stbuf_put(b, s, strlen(s)); }

VCC_IO_FN void vcc_stbuf_u64(VccStBuf *b, uint64_t v)
{
    char t[24];
    int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    vcc_stbuf_put(b, t, (size_t)n);
}

/* JSON string literal with escapes for '"', '\\' and control characters. */
VCC_IO_FN void vcc_stbuf_json(VccStBuf *b, const char *s)
{
    vcc_stbuf_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char t[2];
            t[0] = '\\'; t[1] = (char)ch;
            vcc_stbuf_put(b, t, 2);
        } else if (ch < 0x20) {
            char t[8];
            snprintf(t, sizeof t, "\\u%04x", (unsigned)ch);
            vcc_stbuf_put(b, t, 6);
        } else {
            vcc_stbuf_put(b, (const char *)&ch, 1);
        }
    }
    vcc_stbuf_put(b, "\"", 1);
}

/* vcc_io_finish: the first half of vcc_io_commit, everything that can fail before the rename: fflush,
 * fsync (where the host has it: _POSIX_C_SOURCE >= 200112L before the first include) and fclose of f,
 * the file written to tmp (vcc_io_create_tmp), and a second vcc_io_check_target (path may have become a
 * FIFO or a device while the file was written). On a failure tmp is removed. Returns 0 (then
 * vcc_io_rename moves tmp to path), or nonzero with "<path>: <problem>" in err. */
VCC_IO_FN int vcc_io_finish(FILE *f, const char *tmp, const char *path, char *err, size_t errlen)
{
    int bad = ferror(f) != 0 || fflush(f) != 0;
#if VCC_IO_FSYNC
    if (!bad && fsync(fileno(f)) != 0) bad = 1;
#endif
    if (fclose(f) != 0) bad = 1;
    if (bad) {
        vcc_io_errf(err, errlen, path, "write error on %s: %s", tmp, strerror(errno));
        remove(tmp);
        return 1;
    }
    if (vcc_io_check_target(path, err, errlen)) {
        remove(tmp);
        return 1;
    }
    return 0;
}

/* vcc_io_rename: the second half of vcc_io_commit: rename tmp (finished by vcc_io_finish) over path,
 * then fsync of path's folder so the rename itself survives a power loss. On a failure tmp is removed.
 * Returns 0, or nonzero with "<path>: <problem>" in err. */
VCC_IO_FN int vcc_io_rename(const char *tmp, const char *path, char *err, size_t errlen)
{
    if (rename(tmp, path) != 0) {
        vcc_io_errf(err, errlen, path, "cannot rename %s: %s", tmp, strerror(errno));
        remove(tmp);
        return 1;
    }
#if VCC_IO_FSYNC
    {
        char dir[4096];
        const char *slash = strrchr(path, '/');
        int fd;
        if (!slash) snprintf(dir, sizeof dir, ".");
        else snprintf(dir, sizeof dir, "%.*s", (int)(slash == path ? 1 : slash - path), path);
        fd = open(dir, O_RDONLY);
        if (fd >= 0) {
            (void)fsync(fd); /* best effort: some file systems refuse fsync on a folder */
            close(fd);
        }
    }
#endif
    return 0;
}

/* vcc_io_commit: finish a file written to tmp (vcc_io_create_tmp) through f and move it to path
 * (vcc_io_finish, then vcc_io_rename). On any failure tmp is removed. Returns 0, or nonzero with
 * "<path>: <problem>" in err. */
VCC_IO_FN int vcc_io_commit(FILE *f, const char *tmp, const char *path, char *err, size_t errlen)
{
    return vcc_io_finish(f, tmp, path, err, errlen) || vcc_io_rename(tmp, path, err, errlen);
}

/* The body of vcc_st_save_meta (below) and vcc_st_save_tmp; with done, the file is finished but not
 * renamed, its name in *done. */
VCC_IO_FN int vcc_st_write(const char *path, const VccStMeta *meta, int nmeta, const VccStWrite *t, int n,
                           char **done, char *err, size_t errlen)
{
    VccStBuf h;
    uint64_t off = 0;
    char *tmp = NULL;
    FILE *f = NULL;
    int i, k;
    unsigned char pre[8];

    if (!path || (n > 0 && !t) || n < 0 || nmeta < 0 || (nmeta > 0 && !meta))
        return vcc_io_errf(err, errlen, path, "vcc_st_save: bad arguments");
    for (i = 0; i < nmeta; i++)
        if (!meta[i].key || !meta[i].value)
            return vcc_io_errf(err, errlen, path, "metadata entry %d: NULL key or value", i);
    memset(&h, 0, sizeof h);
    for (i = 0; i < n; i++) {
        uint64_t nel = 1, nb;
        int isz;
        if (!t[i].name || !t[i].dtype)
            return vcc_io_errf(err, errlen, path, "tensor %d: NULL name or dtype", i);
        if (strcmp(t[i].name, "__metadata__") == 0)
            return vcc_io_errf(err, errlen, path, "tensor name '__metadata__' is reserved");
        isz = vcc_st_dtype_size(t[i].dtype);
        if (isz == 0)
            return vcc_io_errf(err, errlen, path, "tensor '%s': unknown dtype '%s'", t[i].name, t[i].dtype);
        if (t[i].rank < 0 || t[i].rank > 8 || (t[i].rank > 0 && !t[i].dims))
            return vcc_io_errf(err, errlen, path, "tensor '%s': bad rank %d", t[i].name, t[i].rank);
        for (k = 0; k < t[i].rank; k++) {
            if (t[i].dims[k] < 0 || vcc_io_mul_u64(nel, (uint64_t)t[i].dims[k], &nel))
                return vcc_io_errf(err, errlen, path, "tensor '%s': bad shape", t[i].name);
        }
        if (vcc_io_mul_u64(nel, (uint64_t)isz, &nb) || nb != t[i].nbytes)
            return vcc_io_errf(err, errlen, path, "tensor '%s': nbytes %llu does not match its %s shape",
                               t[i].name, (unsigned long long)t[i].nbytes, t[i].dtype);
        if (nb > 0 && !t[i].data)
            return vcc_io_errf(err, errlen, path, "tensor '%s': NULL data", t[i].name);
    }
    if (n > 1) {
        const char **names = (const char **)malloc((size_t)n * sizeof *names);
        const char *dup = NULL;
        if (!names) return vcc_io_errf(err, errlen, path, "out of memory");
        for (i = 0; i < n; i++) names[i] = t[i].name;
        qsort((void *)names, (size_t)n, sizeof *names, vcc_io_cmp_str);
        for (i = 1; i < n && !dup; i++)
            if (strcmp(names[i - 1], names[i]) == 0) dup = names[i];
        free((void *)names);
        if (dup) return vcc_io_errf(err, errlen, path, "duplicate tensor name '%s'", dup);
    }

    vcc_stbuf_put(&h, "{", 1);
    if (nmeta > 0) {
        vcc_stbuf_str(&h, "\"__metadata__\":{");
        for (i = 0; i < nmeta; i++) {
            if (i) vcc_stbuf_put(&h, ",", 1);
            vcc_stbuf_json(&h, meta[i].key);
            vcc_stbuf_put(&h, ":", 1);
            vcc_stbuf_json(&h, meta[i].value);
        }
        vcc_stbuf_put(&h, "}", 1);
        if (n > 0) vcc_stbuf_put(&h, ",", 1);
    }
    for (i = 0; i < n; i++) {
        if (i) vcc_stbuf_put(&h, ",", 1);
        vcc_stbuf_json(&h, t[i].name);
        vcc_stbuf_str(&h, ":{\"dtype\":\"");
        vcc_stbuf_str(&h, t[i].dtype);
        vcc_stbuf_str(&h, "\",\"shape\":[");
        for (k = 0; k < t[i].rank; k++) {
            if (k) vcc_stbuf_put(&h, ",", 1);
            vcc_stbuf_u64(&h, (uint64_t)t[i].dims[k]);
        }
        vcc_stbuf_str(&h, "],\"data_offsets\":[");
        vcc_stbuf_u64(&h, off);
        vcc_stbuf_put(&h, ",", 1);
        if (t[i].nbytes > UINT64_MAX - off) { free(h.p); return vcc_io_errf(err, errlen, path, "total size overflows"); }
        off += t[i].nbytes;
        vcc_stbuf_u64(&h, off);
        vcc_stbuf_str(&h, "]}");
    }
    vcc_stbuf_put(&h, "}", 1);
    while (!h.oom && h.len % 8 != 0) vcc_stbuf_put(&h, " ", 1);
    if (h.oom) { free(h.p); return vcc_io_errf(err, errlen, path, "out of memory"); }

    f = vcc_io_create_tmp(path, &tmp, err, errlen);
    if (!f) {
        free(h.p);
        return 1;
    }
    for (k = 0; k < 8; k++) pre[k] = (unsigned char)(((uint64_t)h.len >> (8 * k)) & 0xFF);
    if (fwrite(pre, 1, 8, f) != 8 || fwrite(h.p, 1, h.len, f) != h.len) goto wfail;
    for (i = 0; i < n; i++)
        if (t[i].nbytes > 0 && fwrite(t[i].data, 1, (size_t)t[i].nbytes, f) != (size_t)t[i].nbytes) goto wfail;
    if (done) {
        i = vcc_io_finish(f, tmp, path, err, errlen);
        if (i == 0) *done = tmp;
        else free(tmp);
    } else {
        i = vcc_io_commit(f, tmp, path, err, errlen);
        free(tmp);
    }
    free(h.p);
    return i;
wfail:
    vcc_io_errf(err, errlen, path, "write error on %s: %s", tmp, strerror(errno));
    fclose(f);
    remove(tmp);
    free(tmp);
    free(h.p);
    return 1;
}

/* vcc_st_save_meta: write n tensors to a .safetensors file, in the given order
 * (data_offsets consecutive), with the nmeta string entries of meta as the
 * header's "__metadata__" object (omitted when nmeta is 0); header padded
 * with spaces to a multiple of 8. Writes a new temporary file beside path
 * (vcc_io_create_tmp: "<path>.tmp.XXXXXX", created exclusively), flushes it
 * to disk and rename()s it over path (vcc_io_commit), so a crash never leaves
 * a half-written file at path. Returns 0, or nonzero with err set (and no
 * temporary file left). Rejected: NULL name/dtype, the reserved name
 * "__metadata__", duplicate names (found in name order: O(n log n)), unknown
 * dtype, rank outside 0..8, negative dims, nbytes != prod(dims) * itemsize,
 * NULL data with nbytes > 0, NULL metadata keys or values, an empty path, a
 * path that is not a regular file (POSIX), I/O errors. */
VCC_IO_FN int vcc_st_save_meta(const char *path, const VccStMeta *meta, int nmeta, const VccStWrite *t, int n,
                               char *err, size_t errlen)
{
    return vcc_st_write(path, meta, nmeta, t, n, NULL, err, errlen);
}

/* vcc_st_save_tmp: vcc_st_save without its rename: the file is written, flushed and closed
 * (vcc_io_finish) as "<path>.tmp.XXXXXX", whose name goes to *tmp (malloc'd, free it) for the caller to
 * vcc_io_rename over path (or remove), so that two files can both be written before either replaces
 * what was there. Returns 0, or nonzero with err set, *tmp NULL and no temporary file left. */
VCC_IO_FN int vcc_st_save_tmp(const char *path, const VccStWrite *t, int n, char **tmp, char *err, size_t errlen)
{
    *tmp = NULL;
    return vcc_st_write(path, NULL, 0, t, n, tmp, err, errlen);
}

/* vcc_st_save: vcc_st_save_meta without "__metadata__". */
VCC_IO_FN int vcc_st_save(const char *path, const VccStWrite *t, int n, char *err, size_t errlen)
{
    return vcc_st_save_meta(path, NULL, 0, t, n, err, errlen);
}

/* ======================================================================== */
/* .npy writer                                                              */
/* ======================================================================== */

/* vcc_npy_save: write a little-endian .npy (format 1.0) of dtype "f4", "f8", "i1", "i2", "i4", "i8", "u1",
 * "u2", "u4", "u8" or "b1" (bool, one byte 0 or 1) with the given shape
 * (rank 0..8, dims in elements) from host memory holding prod(dims) elements; written to a new
 * temporary file beside path (vcc_io_create_tmp) and moved to path by vcc_io_commit. Returns 0, or
 * nonzero with a one-line message naming the file in err (an empty path, a path that is not a regular
 * file, I/O errors). */
VCC_IO_FN int vcc_npy_save(const char *path, const char *dtype, int rank, const int64_t *dims, const void *data,
                           char *err, size_t errlen)
{
    char hdr[512], *tmp = NULL;
    size_t len, pad, nbytes = vcc_npy_itemsize(dtype);
    int i, n;
    FILE *f;
    if (!nbytes || rank < 0 || rank > 8)
        return vcc_io_errf(err, errlen, path, "cannot write dtype '%s' with rank %d", dtype, rank);
    n = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (", nbytes == 1 ? '|' : '<',
                 dtype);
    for (i = 0; i < rank; i++) {
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld,%s", (long long)dims[i], (i + 1 < rank) ? " " : "");
        nbytes *= (size_t)dims[i];
    }
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    len = 10 + (size_t)n + 1;           /* magic(6) + version(2) + header length(2) + header + '\n' */
    pad = (64 - len % 64) % 64;         /* the data starts on a 64-byte boundary */
    f = vcc_io_create_tmp(path, &tmp, err, errlen);
    if (!f) return 1;
    {
        unsigned hl = (unsigned)((size_t)n + pad + 1);
        unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
        pre[8] = (unsigned char)(hl & 0xff);
        pre[9] = (unsigned char)(hl >> 8);
        fwrite(pre, 1, 10, f);
        fwrite(hdr, 1, (size_t)n, f);
        for (i = 0; i < (int)pad; i++) fputc(' ', f);
        fputc('\n', f);
    }
    if (nbytes) fwrite(data, 1, nbytes, f);
    i = vcc_io_commit(f, tmp, path, err, errlen);
    free(tmp);
    return i;
}

#endif /* VCC_IO_H */
