/*
 * vir_roundtrip.c — print(parse(x)) == x for one .vir file.
 *
 *   vir_roundtrip FILE.vir
 *
 * Parses FILE.vir (vcc_vir_read), prints the graph again (vcc_print_graph, with the plan when the file
 * has one) into memory and compares it with the file's bytes. The `#` comment lines at the top of the
 * file (a dump's "# vcc IR after PASS") are not part of the IR and are left out of the comparison.
 * Exit status: 0 identical, 1 the file does not parse (the reader's errors are on stderr), 2 the
 * printed text differs (the first differing line of each is shown), 3 usage or I/O error.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    if (ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Print line `line` (1-based) of the text that starts at s, as "  <tag>: text". */
static void show_line(const char *tag, const char *s, const char *end, int line) {
    for (int l = 1; l < line && s < end; s++)
        if (*s == '\n') l++;
    const char *e = s;
    while (e < end && *e != '\n') e++;
    fprintf(stderr, "  %s: %.*s%s\n", tag, (int)(e - s), s, s == end ? "<end of text>" : "");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fputs("usage: vir_roundtrip FILE.vir\n", stderr);
        return 3;
    }
    size_t len;
    char *text = read_all(argv[1], &len);
    if (!text) {
        fprintf(stderr, "vir_roundtrip: %s: cannot read\n", argv[1]);
        return 3;
    }
    /* leading comment lines are not part of the IR */
    size_t skip = 0;
    int skipped_lines = 0;
    while (skip < len && text[skip] == '#') {
        while (skip < len && text[skip] != '\n') skip++;
        if (skip < len) skip++;
        skipped_lines++;
    }

    VccCtx ctx;
    vcc_ctx_init(&ctx, argv[1]);
    VccGraph *g;
    bool has_plan;
    if (vcc_vir_read(&ctx, argv[1], &g, &has_plan) != VCC_OK) {
        free(text);
        return 1;
    }
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem = open_memstream(&out, &outlen);
    if (!mem) {
        perror("vir_roundtrip: open_memstream");
        return 3;
    }
    vcc_print_graph(mem, g, has_plan);
    fclose(mem);
    vcc_graph_free(g);

    const char *a = text + skip, *b = out;
    size_t alen = len - skip;
    int rc = 0;
    if (alen != outlen || memcmp(a, b, alen) != 0) {
        size_t i = 0;
        int line = 1;
        while (i < alen && i < outlen && a[i] == b[i]) {
            if (a[i] == '\n') line++;
            i++;
        }
        fprintf(stderr, "vir_roundtrip: %s: the printed graph differs from the file at line %d:\n", argv[1],
                line + skipped_lines);
        show_line("file   ", a, a + alen, line);
        show_line("printed", b, b + outlen, line);
        rc = 2;
    } else {
        printf("%s: round trip ok (%zu bytes%s)\n", argv[1], alen, has_plan ? ", with plan" : "");
    }
    free(out);
    free(text);
    return rc;
}
