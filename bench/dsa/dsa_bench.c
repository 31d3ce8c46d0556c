/* bench/dsa/dsa_bench.c: runs every vcc_dsa strategy over the DSA benchmark instances and prints a
 * Markdown table: instance, n, lower bound, published capacity, arena per strategy (and arena/LB),
 * best/capacity, the CPU seconds of VCC_DSA_BY_SIZE (one greedy pass) and of VCC_DSA_BEST, and,
 * where a capacity is published, what vcc_dsa_fit finds at it within FIT_BUDGET nodes and its CPU
 * seconds.
 * Every plan is verified with vcc_dsa_check; a failing plan is printed as FAIL and makes the exit
 * status 1.
 *
 * usage: dsa_bench [BENCH_DIR | FILE.csv...]
 *   BENCH_DIR (default ../shared/dsa-benchmarks) must hold minimalloc/ and idealloc/ as described
 * in its SOURCE.md; with .csv arguments, just those files are run. Without them, two last rows plan a
 *   synthetic 5000-item training schedule (see synthetic_training) and 100,000 random buffers (see
 *   random_instance). `dsa_bench random` runs only the latter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsa_csv.h"
#include "dsa.h"

static const char *const kFiles[] = {
    "minimalloc/A.1048576.csv",
    "minimalloc/B.1048576.csv",
    "minimalloc/C.1048576.csv",
    "minimalloc/D.1048576.csv",
    "minimalloc/E.1048576.csv",
    "minimalloc/F.1048576.csv",
    "minimalloc/G.1048576.csv",
    "minimalloc/H.1048576.csv",
    "minimalloc/I.1048576.csv",
    "minimalloc/J.1048576.csv",
    "minimalloc/K.1048576.csv",
    "minimalloc/input.12.csv",
    "idealloc/somas_tensors/resnet50.csv",
    "idealloc/somas_tensors/pangu_2.6B.csv",
    "idealloc/iopddl/G_1.csv",
    "idealloc/iopddl/S_1.csv",
    "idealloc/iopddl/Y_1.csv",
};

/* A synthetic training schedule of `layers` layers, 5 items per layer (about the size of a video
 * network's training graph): forward step i makes an activation saved until its backward step
 * 2L - i and a one-step workspace; backward step 2L - i makes a gradient that lives two steps, a
 * one-step workspace and a weight gradient that lives to the optimizer step 2L + 1. Sizes are
 * drawn from a fixed-seed generator, multiples of 256 bytes with align 256. */
static VccDsaItem *synthetic_training(size_t layers, size_t *n_out) {
  VccDsaItem *it = malloc(5 * layers * sizeof *it);
  if (!it) return NULL;
  uint64_t s = 42;
  size_t n = 0;
  int64_t L = (int64_t)layers;
  for (int64_t i = 0; i < L; i++) {
    uint64_t r[5];
    for (int k = 0; k < 5; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      r[k] = s >> 33;
    }
    uint64_t act = 256 * (256 + r[0] % 32768); /* 64 KiB .. 8 MiB */
    it[n++] = (VccDsaItem){act, 256, i, 2 * L - i};
    it[n++] = (VccDsaItem){256 * (1 + r[1] % 16384), 256, i, i};
    it[n++] = (VccDsaItem){act, 256, 2 * L - i, 2 * L - i + 1};
    it[n++] = (VccDsaItem){256 * (1 + r[2] % 16384), 256, 2 * L - i, 2 * L - i};
    it[n++] = (VccDsaItem){256 * (1 + r[3] % 4096), 256, 2 * L - i, 2 * L + 1};
  }
  *n_out = n;
  return it;
}

/* n random buffers (seed 7, a 64-bit LCG): start uniform in [0, n), lifetime 1 + (r % 64) steps
 * for 15 buffers in 16 and 1 + (r % 1024) for the rest, size 64 B .. 1 MiB (a random multiple of 64
 * B, times 1, 16 or 256 for a spread of magnitudes), align 64. About 63 buffers are live at a
 * step, so the conflicting pairs grow linearly with n (6.2 million for n = 100,000). */
static VccDsaItem *random_instance(size_t n) {
  VccDsaItem *it = malloc(n * sizeof *it);
  if (!it) return NULL;
  uint64_t s = 7;
  for (size_t i = 0; i < n; i++) {
    uint64_t r[4];
    for (int k = 0; k < 4; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      r[k] = s >> 33;
    }
    int64_t start = (int64_t)(r[0] % n);
    int64_t len = (int64_t)(r[1] % 16 ? 1 + (r[1] >> 4) % 64 : 1 + (r[1] >> 4) % 1024);
    uint64_t size = 64 * (1 + r[2] % 64) * (r[3] % 3 == 0 ? 1 : r[3] % 3 == 1 ? 16 : 256);
    it[i] = (VccDsaItem){size, 64, start, start + len - 1};
  }
  return it;
}

/* Nodes vcc_dsa_fit may try at a published capacity (the test's budget). */
#define FIT_BUDGET 3000000ull

static int run_one(const char *path, const char *label) {
  VccDsaItem *items;
  size_t n;
  char err[512];
  if (path == NULL && !strncmp(label, "random", 6)) {
    n = 100000;
    items = random_instance(n);
    if (!items) return 1;
  } else if (path == NULL) {
    items = synthetic_training(1000, &n);
    if (!items) return 1;
  } else if (vcc_dsa_csv_read(path, &items, &n, NULL, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  unsigned long long cap = path && strstr(path, "minimalloc/") ? vcc_dsa_csv_capacity(path) : 0;
  uint64_t lb = vcc_dsa_lower_bound(items, n);
  uint64_t *off = malloc((n ? n : 1) * sizeof *off);
  int bad = 0;
  printf("| %s | %zu | %llu | ", label, n, (unsigned long long)lb);
  if (cap)
    printf("%llu |", cap);
  else
    printf("- |");
  uint64_t best = 0;
  double secs = 0, size_secs = 0;
  for (int s = VCC_DSA_BY_SIZE; s <= VCC_DSA_NUM_STRATEGIES; s++) {
    VccDsaStrategy st = s == VCC_DSA_NUM_STRATEGIES ? VCC_DSA_BEST : (VccDsaStrategy)s;
    uint64_t arena = 0;
    clock_t t0 = clock();
    int rc = off ? vcc_dsa_plan(items, n, st, off, &arena) : -1;
    double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (rc == 0 && vcc_dsa_check(items, n, off, NULL, NULL) == 0 && arena >= lb) {
      printf(" %llu (%.4f) |", (unsigned long long)arena, lb ? (double)arena / (double)lb : 1.0);
    } else {
      printf(" FAIL |");
      bad = 1;
    }
    if (st == VCC_DSA_BEST) best = arena, secs = dt;
    if (st == VCC_DSA_BY_SIZE) size_secs = dt;
  }
  if (cap)
    printf(" %.4f |", (double)best / (double)cap);
  else
    printf(" - |");
  printf(" %.3f | %.2f |", size_secs, secs);
  if (cap && off) { /* the exact search at the published capacity */
    uint64_t arena = 0;
    clock_t t0 = clock();
    int r = vcc_dsa_fit(items, n, cap, FIT_BUDGET, off, &arena);
    double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (r == VCC_DSA_FIT_FOUND && vcc_dsa_check(items, n, off, NULL, NULL) == 0 && arena <= cap) {
      printf(" %llu (fits) | %.2f |\n", (unsigned long long)arena, dt);
    } else if (r == VCC_DSA_FIT_FOUND || r < 0) {
      printf(" FAIL | %.2f |\n", dt);
      bad = 1;
    } else {
      printf(" %s | %.2f |\n", r == VCC_DSA_FIT_NONE ? "none exists" : "budget spent", dt);
    }
  } else {
    printf(" - | - |\n");
  }
  fflush(stdout);
  free(off);
  free(items);
  return bad;
}

int main(int argc, char **argv) {
  const char *dir = "../shared/dsa-benchmarks";
  int explicit_files = argc > 1 && strstr(argv[1], ".csv") != NULL;
  int only_random = argc > 1 && !strcmp(argv[1], "random");
  if (argc > 1 && !explicit_files) dir = argv[1];
  printf("| instance | n | LB | capacity |");
  for (int s = VCC_DSA_BY_SIZE; s < VCC_DSA_NUM_STRATEGIES; s++)
    printf(" %s (/LB) |", vcc_dsa_strategy_name((VccDsaStrategy)s));
  printf(" best (/LB) | best/capacity | size s | best s | fit at capacity | fit s |\n"
         "|---|---:|---:|---:|");
  for (int s = VCC_DSA_BY_SIZE; s <= VCC_DSA_NUM_STRATEGIES; s++)
    printf("---:|");
  printf("---:|---:|---:|---|---:|\n");
  int bad = 0;
  if (only_random) {
    bad |= run_one(NULL, "random 100k");
  } else if (explicit_files) {
    for (int i = 1; i < argc; i++)
      bad |= run_one(argv[i], argv[i]);
  } else {
    for (size_t i = 0; i < sizeof kFiles / sizeof kFiles[0]; i++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, kFiles[i]);
      const char *slash = strrchr(kFiles[i], '/');
      char label[256];
      snprintf(label, sizeof label, "%s", slash ? slash + 1 : kFiles[i]);
      char *dot = strstr(label, ".csv");
      if (dot) *dot = 0;
      bad |= run_one(path, label);
    }
    bad |= run_one(NULL, "synthetic train (1000 layers)");
    bad |= run_one(NULL, "random 100k");
  }
  return bad;
}
