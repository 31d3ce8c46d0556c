/*
 * fuzz_util.h — what the fuzz targets share: a private scratch folder for the readers that take a
 * path, the check that makes a broken invariant a crash libFuzzer records, and the test that text
 * meant for a terminal (error messages) holds no raw control characters and is valid UTF-8.
 *
 * Header-only (static functions); each target includes it once after defining _POSIX_C_SOURCE.
 */
#ifndef VCC_FUZZ_UTIL_H
#define VCC_FUZZ_UTIL_H

#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every helper is static and marked unused: each target uses some of them. */
#define FUZZ_FN static __attribute__((unused))

/* A broken invariant: print what and where, then abort() (libFuzzer saves the input as a crash). */
#define FUZZ_CHECK(cond, ...)                                                                                 \
    do {                                                                                                      \
        if (!(cond)) {                                                                                        \
            fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                                     \
            fputc('\n', stderr);                                                                              \
            abort();                                                                                          \
        }                                                                                                     \
    } while (0)

static char fuzz_dir_path[4096];

FUZZ_FN void fuzz_dir_remove(void) {
    if (!fuzz_dir_path[0]) return;
    DIR *d = opendir(fuzz_dir_path);
    if (d) {
        struct dirent *e;
        char p[8192];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", fuzz_dir_path, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(fuzz_dir_path);
    fuzz_dir_path[0] = 0;
}

/* The process's scratch folder ($TMPDIR or /tmp, vcc-fuzz-XXXXXX), made on first use and removed at exit. */
FUZZ_FN const char *fuzz_dir(void) {
    if (fuzz_dir_path[0]) return fuzz_dir_path;
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/vcc-fuzz-XXXXXX", base);
    if (!mkdtemp(fuzz_dir_path)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_dir_remove);
    return fuzz_dir_path;
}

/* "<scratch folder>/name" in a static buffer per slot (slot 0..3). */
FUZZ_FN const char *fuzz_path(int slot, const char *name) {
    static char paths[4][8192];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", fuzz_dir(), name);
    return paths[slot];
}

/* Replace the file at path with the n bytes at data. */
FUZZ_FN void fuzz_write_file(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

/* Whether the targets describe what they did on stderr (VCC_FUZZ_VERBOSE=1; for replaying by hand). */
FUZZ_FN bool fuzz_verbose(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("VCC_FUZZ_VERBOSE");
        on = e && e[0] && e[0] != '0';
    }
    return on;
}

/* Whether diagnostics are checked for raw control characters and invalid UTF-8 (default on;
 * VCC_FUZZ_TEXT_CHECK=0 turns it off, for long runs that should look past that finding). */
FUZZ_FN bool fuzz_text_check_enabled(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("VCC_FUZZ_TEXT_CHECK");
        on = !(e && e[0] == '0');
    }
    return on;
}

/* NULL when the n bytes at s are fit for a terminal: valid UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF) with no control characters but '\n' (C0, DEL, C1). Otherwise what is
 * wrong, with the byte offset, in a static buffer. */
FUZZ_FN const char *fuzz_text_problem(const char *s, size_t n) {
    static char why[128];
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\n') || c == 0x7f) {
                snprintf(why, sizeof why, "control character 0x%02x at byte %zu", c, i);
                return why;
            }
            i++;
            continue;
        }
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
        if (len == 0 || c > 0xf4 || i + len > n) {
            snprintf(why, sizeof why, "invalid UTF-8 (byte 0x%02x) at byte %zu", c, i);
            return why;
        }
        uint32_t cp = c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                snprintf(why, sizeof why, "invalid UTF-8 (truncated sequence) at byte %zu", i);
                return why;
            }
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            snprintf(why, sizeof why, "invalid UTF-8 (overlong or out of range) at byte %zu", i);
            return why;
        }
        if (cp >= 0x80 && cp <= 0x9f) {
            snprintf(why, sizeof why, "C1 control character U+%04X at byte %zu", (unsigned)cp, i);
            return why;
        }
        i += len;
    }
    return NULL;
}

/* Write at most max bytes of s[0, n) to f with every byte outside printable ASCII (but '\n') as \xHH. */
FUZZ_FN void fuzz_print_escaped(FILE *f, const char *s, size_t n, size_t max) {
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n' || (c >= 0x20 && c < 0x7f)) fputc(c, f);
        else fprintf(f, "\\x%02x", c);
    }
    if (n > max) fprintf(f, "... (%zu bytes in all)", n);
    fputc('\n', f);
}

/* FUZZ_CHECK that diagnostic text is fit for a terminal (when the check is enabled); the offending
 * text is shown escaped. */
FUZZ_FN void fuzz_check_text(const char *what, const char *s, size_t n) {
    if (!fuzz_text_check_enabled()) return;
    const char *why = fuzz_text_problem(s, n);
    if (why) {
        fprintf(stderr, "fuzz check failed: %s prints raw bytes: %s, in (escaped here):\n", what, why);
        fuzz_print_escaped(stderr, s, n, 2000);
        abort();
    }
}

/* A runtime reader's refusal (runtime/vcc_io.h): the result (size bytes at result) is zeroed and err is
 * "<path>: <message>", fit for a terminal. what names the file kind in messages. */
FUZZ_FN void fuzz_check_io_refusal(const char *what, const char *path, const void *result, size_t size,
                                   const char *err) {
    const unsigned char *r = result;
    for (size_t i = 0; i < size; i++) FUZZ_CHECK(r[i] == 0, "a refused %s left a non-zeroed result", what);
    size_t plen = strlen(path);
    FUZZ_CHECK(strncmp(err, path, plen) == 0 && err[plen] == ':' && err[plen + 1] == ' ' && err[plen + 2],
               "the message about a refused %s does not name the file", what);
    char label[128];
    snprintf(label, sizeof label, "a %s's error message", what);
    fuzz_check_text(label, err, strlen(err));
}

#ifdef VCC_IR_H
/* The graph as vcc_print_graph writes it, in a malloc'd string of *len bytes. */
FUZZ_FN char *fuzz_print_graph(const VccGraph *g, bool plan, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    FUZZ_CHECK(f != NULL, "open_memstream");
    vcc_print_graph(f, g, plan);
    fclose(f);
    return text;
}
#endif

#endif /* VCC_FUZZ_UTIL_H */
