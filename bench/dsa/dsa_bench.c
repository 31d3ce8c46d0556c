/* bench/dsa/dsa_bench.c: runs every vcc_dsa strategy over the DSA benchmark instances and prints a
 * Markdown table: instance, n, lower bound, published capacity, arena per strategy, best/LB,
 * best/capacity, and the time of VCC_DSA_BEST. Every plan is verified with vcc_dsa_check; a
 * failing plan is printed as FAIL and makes the exit status 1.
 *
 * usage: dsa_bench [BENCH_DIR | FILE.csv...]
 *   BENCH_DIR (default ../shared/dsa-benchmarks) must hold minimalloc/ and idealloc/ as described in
 *   its SOURCE.md; with .csv arguments, just those files are run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tests/dsa/dsa_csv.h"
#include "dsa.h"

static const char *const kFiles[] = {
    "minimalloc/A.1048576.csv", "minimalloc/B.1048576.csv", "minimalloc/C.1048576.csv",
    "minimalloc/D.1048576.csv", "minimalloc/E.1048576.csv", "minimalloc/F.1048576.csv",
    "minimalloc/G.1048576.csv", "minimalloc/H.1048576.csv", "minimalloc/I.1048576.csv",
    "minimalloc/J.1048576.csv", "minimalloc/K.1048576.csv", "minimalloc/input.12.csv",
    "idealloc/somas_tensors/resnet50.csv", "idealloc/somas_tensors/pangu_2.6B.csv",
    "idealloc/iopddl/G_1.csv", "idealloc/iopddl/S_1.csv", "idealloc/iopddl/Y_1.csv",
};

static int run_one(const char *path, const char *label) {
  VccDsaItem *items;
  size_t n;
  char err[512];
  if (dsa_csv_read(path, &items, &n, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  unsigned long long cap = strstr(path, "minimalloc/") ? dsa_csv_capacity(path) : 0;
  uint64_t lb = vcc_dsa_lower_bound(items, n);
  uint64_t *off = malloc((n ? n : 1) * sizeof *off);
  int bad = 0;
  printf("| %s | %zu | %llu | ", label, n, (unsigned long long)lb);
  if (cap) printf("%llu |", cap);
  else printf("- |");
  uint64_t best = 0;
  double secs = 0;
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
  }
  if (cap) printf(" %.4f |", (double)best / (double)cap);
  else printf(" - |");
  printf(" %.2f |\n", secs);
  fflush(stdout);
  free(off);
  free(items);
  return bad;
}

int main(int argc, char **argv) {
  const char *dir = "../shared/dsa-benchmarks";
  int explicit_files = argc > 1 && strstr(argv[1], ".csv") != NULL;
  if (argc > 1 && !explicit_files) dir = argv[1];
  printf("| instance | n | LB | capacity |");
  for (int s = VCC_DSA_BY_SIZE; s < VCC_DSA_NUM_STRATEGIES; s++)
    printf(" %s (/LB) |", vcc_dsa_strategy_name((VccDsaStrategy)s));
  printf(" best (/LB) | best/capacity | best s |\n|---|---:|---:|---:|");
  for (int s = VCC_DSA_BY_SIZE; s <= VCC_DSA_NUM_STRATEGIES; s++) printf("---:|");
  printf("---:|---:|\n");
  int bad = 0;
  if (explicit_files) {
    for (int i = 1; i < argc; i++) bad |= run_one(argv[i], argv[i]);
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
  }
  return bad;
}
