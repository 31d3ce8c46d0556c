/* passes/dsa_csv.h: MiniMalloc-format buffer CSVs in and out (used by `vcc dsa`, tests/dsa and
 * bench/dsa).
 *
 * Format (Moffitt, "MiniMalloc", ASPLOS 2023; github.com/google/minimalloc; described in
 * ../shared/dsa-benchmarks/SOURCE.md): a header naming the columns, at least `lower`, `upper` and
 * `size` in any order (`id`, `alignment`, `offset` and others allowed), then one row per buffer. A
 * buffer of `size` bytes is live over the half-open step interval [lower, upper), so the planner's
 * inclusive end is upper - 1. `lower` and `upper` are decimal int64 values, `size` and `alignment`
 * decimal uint64 values without a sign; an `alignment` column (a power of two) becomes the item's
 * align, otherwise align is 1. Blank lines are skipped; a file with a header and no rows is an
 * empty instance.
 */
#ifndef VCC_PASSES_DSA_CSV_H
#define VCC_PASSES_DSA_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dsa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads `path`. On success returns 0 and sets *items_out (malloc'd; NULL when there are no rows)
 * and *n_out; when ids_out is not NULL, also *ids_out: n malloc'd strings, each row's `id` text
 * (the row number from 0 when the file has no id column); free it with vcc_dsa_csv_free_ids.
 * On failure returns -1, leaves the outputs unset and writes "path:line: why" (or "path: why")
 * into err (errlen bytes): a missing or unreadable file, no header, a header without
 * lower/upper/size or naming one twice, a row with another column count, a field that is not a
 * decimal integer of its kind, a number out of range, upper <= lower, an alignment that is not a
 * power of two, or no memory. */
int vcc_dsa_csv_read(const char *path, VccDsaItem **items_out, size_t *n_out, char ***ids_out,
                     char *err, size_t errlen);

/* Frees ids[0..n) and ids (either may be NULL). */
void vcc_dsa_csv_free_ids(char **ids, size_t n);

/* Prints a plan to f as MiniMalloc's solution CSV: header `id,lower,upper,size,offset` (with an
 * `alignment` column before `offset` when some align is not 1), one row per item in item order,
 * lower = start and upper = end + 1. ids may be NULL (ids are then the row numbers from 0). Write
 * errors stay in f's error flag (ferror) for the caller, which owns f. */
void vcc_dsa_csv_print(FILE *f, const VccDsaItem *items, size_t n, char *const *ids, const uint64_t *offsets);

/* The capacity encoded in a MiniMalloc file name "NAME.CAPACITY.csv" (A.1048576.csv: 1048576),
 * or 0 when the name has no such number. */
unsigned long long vcc_dsa_csv_capacity(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* VCC_PASSES_DSA_CSV_H */
