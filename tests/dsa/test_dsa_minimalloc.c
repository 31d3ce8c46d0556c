/* tests/dsa/test_dsa_minimalloc.c: the MiniMalloc "challenging" instances A-K (and the README's
 * input.12 example), plus two idealloc traces, from the shared benchmark folder
 * (../shared/dsa-benchmarks/SOURCE.md describes them).
 *
 * usage: test_dsa_minimalloc BENCH_DIR      (exit 77 = skipped when BENCH_DIR/minimalloc is absent)
 *
 * For each instance: the parse matches the buffer count, size sum and half-open max-load lower
 * bound that SOURCE.md lists (computed there by a separate script), every strategy's plan passes
 * vcc_dsa_check and a pairwise check written here, and arena >= lower bound. input.12 must reach
 * its published capacity (12) with VCC_DSA_BEST. The greedy strategies miss A-K's capacity
 * (1048576); the exact search vcc_dsa_fit, at that capacity with FIT_BUDGET nodes, must find a plan
 * (checked by the pairwise reference, top <= capacity) for the instances marked must_fit: A, B, C,
 * D, F, G, H, J and K (9 of 11). On E and I it spends its budget without a plan, which the test
 * allows; it must never claim that no plan exists, since MiniMalloc's repository runs them all at
 * that capacity.
 */
#define _POSIX_C_SOURCE 200809L /* stat() */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsa.h"
#include "dsa_csv.h"

#include "expect.h"

typedef struct {
  const char *file;
  size_t n;
  unsigned long long size_sum, lb, capacity; /* capacity 0: none published */
  int must_fit; /* vcc_dsa_fit must find a plan within the capacity and FIT_BUDGET nodes */
} Instance;

/* Nodes vcc_dsa_fit may try per instance: a deterministic count, so the outcome does not depend
 * on the machine. */
#define FIT_BUDGET 3000000ull

/* Figures from SOURCE.md's tables. */
static const Instance kInstances[] = {
    {"minimalloc/A.1048576.csv", 154, 15071232ull, 1048576ull, 1048576ull, 1},
    {"minimalloc/B.1048576.csv", 170, 17871872ull, 1048576ull, 1048576ull, 1},
    {"minimalloc/C.1048576.csv", 203, 21476352ull, 1039360ull, 1048576ull, 1},
    {"minimalloc/D.1048576.csv", 213, 7328768ull, 986112ull, 1048576ull, 1},
    {"minimalloc/E.1048576.csv", 215, 25556992ull, 1048576ull, 1048576ull, 0},
    {"minimalloc/F.1048576.csv", 296, 20930560ull, 1048576ull, 1048576ull, 1},
    {"minimalloc/G.1048576.csv", 308, 20795392ull, 1048576ull, 1048576ull, 1},
    {"minimalloc/H.1048576.csv", 316, 20830208ull, 1048576ull, 1048576ull, 1},
    {"minimalloc/I.1048576.csv", 374, 48854016ull, 1048576ull, 1048576ull, 0},
    {"minimalloc/J.1048576.csv", 409, 13794304ull, 989184ull, 1048576ull, 1},
    {"minimalloc/K.1048576.csv", 454, 79005696ull, 1048576ull, 1048576ull, 1},
    {"minimalloc/input.12.csv", 5, 20ull, 12ull, 12ull, 1},
    {"idealloc/somas_tensors/resnet50.csv", 1042, 3424204028ull, 1515472556ull, 0, 0},
    {"idealloc/iopddl/G_1.csv", 816, 6060429057ull, 3030937746ull, 0, 0},
};

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Pairwise reference check (independent of vcc_dsa_check). */
static int pairwise_ok(const VccDsaItem *it, size_t n, const uint64_t *off) {
  for (size_t i = 0; i < n; i++) {
    if (off[i] % it[i].align) return 0;
    for (size_t j = i + 1; j < n; j++)
      if (it[i].start <= it[j].end && it[j].start <= it[i].end && off[i] < off[j] + it[j].size &&
          off[j] < off[i] + it[i].size)
        return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "../shared/dsa-benchmarks";
  char path[4096];
  snprintf(path, sizeof path, "%s/minimalloc", dir);
  if (!is_dir(path)) {
    printf("skipped: %s not found\n", path);
    return 77;
  }
  printf("%-38s %5s %10s %10s %10s %8s %8s %s\n", "instance", "n", "LB", "capacity", "best",
         "best/LB", "best/cap", "vcc_dsa_fit at the capacity");
  int fits = 0;
  for (size_t k = 0; k < sizeof kInstances / sizeof kInstances[0]; k++) {
    const Instance *in = &kInstances[k];
    snprintf(path, sizeof path, "%s/%s", dir, in->file);
    VccDsaItem *it;
    size_t n;
    char err[512];
    if (strncmp(in->file, "idealloc/", 9) == 0) {
      FILE *probe = fopen(path, "r");
      if (!probe) {
        printf("%-38s absent, not run\n", in->file);
        continue;
      }
      fclose(probe);
    }
    if (vcc_dsa_csv_read(path, &it, &n, NULL, err, sizeof err)) {
      EXPECT(0, "%s", err);
      continue;
    }
    unsigned long long sum = 0;
    for (size_t i = 0; i < n; i++)
      sum += it[i].size;
    uint64_t lb = vcc_dsa_lower_bound(it, n);
    EXPECT(n == in->n, "%s: %zu buffers, SOURCE.md says %zu", in->file, n, in->n);
    EXPECT(sum == in->size_sum, "%s: size sum %llu, SOURCE.md says %llu", in->file, sum,
           in->size_sum);
    EXPECT(lb == in->lb, "%s: lower bound %llu, SOURCE.md says %llu", in->file,
           (unsigned long long)lb, in->lb);
    uint64_t *off = malloc(n * sizeof *off), best = 0;
    for (int s = 0; s < VCC_DSA_NUM_STRATEGIES; s++) {
      uint64_t arena = 0;
      size_t a = 0, b = 0;
      int rc = vcc_dsa_plan(it, n, (VccDsaStrategy)s, off, &arena);
      EXPECT(rc == 0, "%s/%s: plan failed", in->file, vcc_dsa_strategy_name((VccDsaStrategy)s));
      if (rc) continue;
      EXPECT(vcc_dsa_check(it, n, off, &a, &b) == 0, "%s/%s: check refuses pair (%zu, %zu)",
             in->file, vcc_dsa_strategy_name((VccDsaStrategy)s), a, b);
      EXPECT(pairwise_ok(it, n, off), "%s/%s: pairwise reference refuses the plan", in->file,
             vcc_dsa_strategy_name((VccDsaStrategy)s));
      EXPECT(arena >= lb, "%s/%s: arena %llu below LB %llu", in->file,
             vcc_dsa_strategy_name((VccDsaStrategy)s), (unsigned long long)arena,
             (unsigned long long)lb);
      if (s == VCC_DSA_BEST) best = arena;
    }
    if (!strcmp(in->file, "minimalloc/input.12.csv"))
      EXPECT(best == 12, "input.12: arena %llu, published capacity 12", (unsigned long long)best);
    const char *fit = "-";
    if (in->capacity) {
      uint64_t arena = 0;
      int r = vcc_dsa_fit(it, n, in->capacity, FIT_BUDGET, off, &arena);
      EXPECT(r >= 0 && r != VCC_DSA_FIT_NONE, "%s: search says no plan fits %llu (result %d)",
             in->file, in->capacity, r);
      if (r == VCC_DSA_FIT_FOUND) {
        fit = "fits";
        fits++;
        EXPECT(pairwise_ok(it, n, off), "%s/fit: pairwise reference refuses the plan", in->file);
        uint64_t top = 0;
        for (size_t i = 0; i < n; i++)
          if (it[i].size && off[i] + it[i].size > top) top = off[i] + it[i].size;
        EXPECT(top <= in->capacity && top == arena, "%s/fit: top %llu, arena %llu, capacity %llu",
               in->file, (unsigned long long)top, (unsigned long long)arena, in->capacity);
      } else {
        fit = "budget spent";
      }
      EXPECT(!in->must_fit || r == VCC_DSA_FIT_FOUND, "%s: no plan within %llu bytes found in %llu "
             "nodes", in->file, in->capacity, FIT_BUDGET);
    }
    printf("%-38s %5zu %10llu %10llu %10llu %8.4f", in->file, n, (unsigned long long)lb,
           in->capacity, (unsigned long long)best, (double)best / (double)lb);
    if (in->capacity)
      printf(" %8.4f %s\n", (double)best / (double)in->capacity, fit);
    else
      printf(" %8s\n", "-");
    free(off);
    free(it);
  }
  printf("vcc_dsa_fit: %d of the 12 MiniMalloc instances (A-K, input.12) fit their capacity\n", fits);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  puts("ok");
  return 0;
}
