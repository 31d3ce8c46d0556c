/* passes/dsa_csv.c: MiniMalloc-format buffer CSVs in and out (see dsa_csv.h for the format).
 *
 * requires: a file path; produces: planner items (dsa.h) and, for writing, a solution CSV renamed
 * into place. Errors name the file and line; nothing here exits or prints.
 */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "dsa_csv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Parses a whole field as a decimal integer: signed (int64) or unsigned (uint64, digits only).
 * Returns 0, or -1 (not a number) / -2 (out of range). */
static int parse_field(const char *s, int is_signed, int64_t *sv, uint64_t *uv) {
  if (*s == 0) return -1;
  const char *d = s;
  if (is_signed && (*d == '-' || *d == '+')) d++;
  if (*d < '0' || *d > '9') return -1;
  for (const char *p = d; *p; p++)
    if (*p < '0' || *p > '9') return -1;
  char *end;
  errno = 0;
  if (is_signed) {
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE) return -2;
    *sv = (int64_t)v;
  } else {
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) return -2;
    *uv = (uint64_t)v;
  }
  return *end ? -1 : 0;
}

void vcc_dsa_csv_free_ids(char **ids, size_t n) {
  if (!ids) return;
  for (size_t i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
}

enum { COL_OTHER, COL_ID, COL_LOWER, COL_UPPER, COL_SIZE, COL_ALIGN };

int vcc_dsa_csv_read(const char *path, VccDsaItem **items_out, size_t *n_out, char ***ids_out,
                     char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    set_err(err, errlen, "%.400s: %s", path, strerror(errno));
    return -1;
  }
  char *line = NULL, **ids = NULL;
  size_t linecap = 0, cap = 0, n = 0, lineno = 0;
  int *kind = NULL, ncols = 0, have_header = 0;
  VccDsaItem *items = NULL;
  ssize_t len;
  while ((len = getline(&line, &linecap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    if ((size_t)len != strlen(line)) {
      set_err(err, errlen, "%.400s:%zu: a NUL byte in the line", path, lineno);
      goto fail;
    }
    if (len == 0) continue;
    if (!have_header) {
      have_header = 1;
      /* a UTF-8 byte order mark (as spreadsheet programs write CSV) is not part of the first name */
      if (!strncmp(line, "\xEF\xBB\xBF", 3)) memmove(line, line + 3, strlen(line + 3) + 1);
      ncols = 1;
      for (char *p = line; *p; p++)
        ncols += *p == ',';
      kind = calloc((size_t)ncols, sizeof *kind);
      if (!kind) goto oom;
      char *field = line;
      int seen[COL_ALIGN + 1] = {0};
      for (int c = 0; c < ncols; c++) {
        char *comma = strchr(field, ',');
        if (comma) *comma = 0;
        static const char *const kNames[] = {"", "id", "lower", "upper", "size", "alignment"};
        for (int k = COL_ID; k <= COL_ALIGN; k++)
          if (!strcmp(field, kNames[k])) kind[c] = k;
        if (kind[c] != COL_OTHER && seen[kind[c]]++) {
          set_err(err, errlen, "%.400s:%zu: column '%s' named twice", path, lineno, field);
          goto fail;
        }
        field = comma ? comma + 1 : field + strlen(field);
      }
      if (!seen[COL_LOWER] || !seen[COL_UPPER] || !seen[COL_SIZE]) {
        set_err(err, errlen, "%.400s:%zu: the header names no lower, upper or size column", path,
                lineno);
        goto fail;
      }
      continue;
    }
    int64_t lower = 0, upper = 0;
    uint64_t size = 0, align = 1;
    const char *id = NULL;
    char *field = line;
    for (int c = 0; c < ncols; c++) {
      char *comma = strchr(field, ',');
      if ((comma != NULL) != (c + 1 < ncols)) {
        set_err(err, errlen, "%.400s:%zu: expected %d columns", path, lineno, ncols);
        goto fail;
      }
      if (comma) *comma = 0;
      int r = 0;
      uint64_t uv = 0;
      switch (kind[c]) {
      case COL_ID: id = field; break;
      case COL_LOWER: r = parse_field(field, 1, &lower, NULL); break;
      case COL_UPPER: r = parse_field(field, 1, &upper, NULL); break;
      case COL_SIZE: r = parse_field(field, 0, NULL, &size); break;
      case COL_ALIGN:
        r = parse_field(field, 0, NULL, &uv);
        align = uv;
        break;
      default: break;
      }
      if (r == -1) {
        int is_unsigned = kind[c] == COL_SIZE || kind[c] == COL_ALIGN;
        set_err(err, errlen, "%.400s:%zu: column %d: '%.40s' is not a%s decimal integer", path,
                lineno, c + 1, field, is_unsigned ? "n unsigned" : "");
        goto fail;
      }
      if (r == -2) {
        set_err(err, errlen, "%.400s:%zu: column %d: %.40s is out of range", path, lineno, c + 1,
                field);
        goto fail;
      }
      field = comma ? comma + 1 : field;
    }
    if (upper <= lower) {
      set_err(err, errlen, "%.400s:%zu: empty lifetime [%lld, %lld): upper must exceed lower", path,
              lineno, (long long)lower, (long long)upper);
      goto fail;
    }
    if (align == 0 || (align & (align - 1)) != 0) {
      set_err(err, errlen, "%.400s:%zu: alignment %llu is not a power of two", path, lineno,
              (unsigned long long)align);
      goto fail;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      VccDsaItem *grown = realloc(items, nc * sizeof *grown);
      if (!grown) goto oom;
      items = grown;
      if (ids_out) {
        char **g = realloc(ids, nc * sizeof *g);
        if (!g) goto oom;
        ids = g;
      }
      cap = nc;
    }
    if (ids_out) {
      char num[32];
      if (!id) snprintf(num, sizeof num, "%zu", n);
      ids[n] = strdup(id ? id : num);
      if (!ids[n]) goto oom;
    }
    items[n++] = (VccDsaItem){size, align, lower, upper - 1};
  }
  if (ferror(f)) {
    set_err(err, errlen, "%.400s: read error", path);
    goto fail;
  }
  if (!have_header) {
    set_err(err, errlen, "%.400s: empty file (no header line)", path);
    goto fail;
  }
  fclose(f);
  free(line);
  free(kind);
  *items_out = items;
  *n_out = n;
  if (ids_out) *ids_out = ids;
  return 0;
oom:
  set_err(err, errlen, "%.400s:%zu: out of memory", path, lineno);
fail:
  fclose(f);
  free(line);
  free(kind);
  free(items);
  vcc_dsa_csv_free_ids(ids, ids_out ? n : 0);
  return -1;
}

void vcc_dsa_csv_print(FILE *f, const VccDsaItem *items, size_t n, char *const *ids, const uint64_t *offsets) {
  int aligned = 0;
  for (size_t i = 0; i < n; i++)
    aligned |= items[i].align != 1;
  fprintf(f, "id,lower,upper,size,%soffset\n", aligned ? "alignment," : "");
  for (size_t i = 0; i < n; i++) {
    if (ids)
      fprintf(f, "%s,", ids[i]);
    else
      fprintf(f, "%zu,", i);
    fprintf(f, "%lld,%lld,%llu,", (long long)items[i].start, (long long)items[i].end + 1,
            (unsigned long long)items[i].size);
    if (aligned) fprintf(f, "%llu,", (unsigned long long)items[i].align);
    fprintf(f, "%llu\n", (unsigned long long)offsets[i]);
  }
}

unsigned long long vcc_dsa_csv_capacity(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strchr(base, '.');
  if (!dot || dot[1] < '0' || dot[1] > '9') return 0;
  char *endp;
  errno = 0;
  unsigned long long v = strtoull(dot + 1, &endp, 10);
  return (errno == 0 && !strcmp(endp, ".csv")) ? v : 0;
}
