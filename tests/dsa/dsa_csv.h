/* tests/dsa/dsa_csv.h: reader for MiniMalloc-format buffer CSVs (header-only, used by the dsa test
 * and by bench/dsa).
 *
 * Format (../shared/dsa-benchmarks/SOURCE.md): a header naming the columns, at least `lower`,
 * `upper`, `size` (any order; `id`, `alignment` and others allowed), then one row of integers per
 * buffer. A buffer is live over the half-open step interval [lower, upper), so the planner's
 * inclusive end is upper - 1. An `alignment` column, when present, becomes the item's align;
 * otherwise align is 1.
 */
#ifndef VCC_TESTS_DSA_CSV_H
#define VCC_TESTS_DSA_CSV_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsa.h"

/* Reads `path`. On success returns 0 and sets *items_out (malloc'd, caller frees) and *n_out.
 * On failure returns -1 and writes "path:line: why" into err (errlen bytes). */
static inline int dsa_csv_read(const char *path, VccDsaItem **items_out, size_t *n_out, char *err,
                               size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%.400s: %s", path, strerror(errno));
    return -1;
  }
  char line[4096];
  int col_lower = -1, col_upper = -1, col_size = -1, col_align = -1, ncols = 0;
  size_t cap = 0, n = 0, lineno = 0;
  VccDsaItem *items = NULL;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    if (len == 0) continue;
    if (lineno == 1) { /* header */
      char *save = line;
      for (int c = 0;; c++) {
        char *comma = strchr(save, ',');
        if (comma) *comma = 0;
        if (!strcmp(save, "lower"))
          col_lower = c;
        else if (!strcmp(save, "upper"))
          col_upper = c;
        else if (!strcmp(save, "size"))
          col_size = c;
        else if (!strcmp(save, "alignment"))
          col_align = c;
        ncols = c + 1;
        if (!comma) break;
        save = comma + 1;
      }
      if (col_lower < 0 || col_upper < 0 || col_size < 0) {
        snprintf(err, errlen, "%.400s:1: header lacks lower/upper/size", path);
        goto fail;
      }
      continue;
    }
    long long lower = 0, upper = 0;
    unsigned long long size = 0, align = 1;
    char *p = line;
    for (int c = 0; c < ncols; c++) {
      char *endp;
      errno = 0;
      if (c != col_lower && c != col_upper && c != col_size && c != col_align) {
        endp = p + strcspn(p, ","); /* a column we do not use (id may be text): skip it */
      } else if (c == col_size || c == col_align) {
        unsigned long long v = strtoull(p, &endp, 10);
        if (c == col_size)
          size = v;
        else
          align = v;
      } else {
        long long v = strtoll(p, &endp, 10);
        if (c == col_lower)
          lower = v;
        else if (c == col_upper)
          upper = v;
      }
      if (errno || (endp == p && (c == col_lower || c == col_upper || c == col_size))) {
        snprintf(err, errlen, "%.400s:%zu: bad number in column %d", path, lineno, c + 1);
        goto fail;
      }
      p = endp;
      if (c + 1 < ncols) {
        if (*p != ',') {
          snprintf(err, errlen, "%.400s:%zu: expected %d columns", path, lineno, ncols);
          goto fail;
        }
        p++;
      }
    }
    if (upper <= lower) {
      snprintf(err, errlen, "%.400s:%zu: empty interval [%lld, %lld)", path, lineno, lower, upper);
      goto fail;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      VccDsaItem *grown = realloc(items, cap * sizeof *grown);
      if (!grown) {
        snprintf(err, errlen, "%.400s: out of memory", path);
        goto fail;
      }
      items = grown;
    }
    items[n++] = (VccDsaItem){(uint64_t)size, (uint64_t)align, (int64_t)lower, (int64_t)upper - 1};
  }
  if (lineno == 0) {
    snprintf(err, errlen, "%.400s: empty file", path);
    goto fail;
  }
  fclose(f);
  *items_out = items;
  *n_out = n;
  return 0;
fail:
  fclose(f);
  free(items);
  return -1;
}

/* The capacity encoded in a MiniMalloc file name "NAME.CAPACITY.csv" (e.g. A.1048576.csv), or 0. */
static inline unsigned long long dsa_csv_capacity(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strchr(base, '.');
  if (!dot) return 0;
  char *endp;
  unsigned long long v = strtoull(dot + 1, &endp, 10);
  return (endp != dot + 1 && !strcmp(endp, ".csv")) ? v : 0;
}

#endif /* VCC_TESTS_DSA_CSV_H */
