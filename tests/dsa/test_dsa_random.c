/* tests/dsa/test_dsa_random.c: randomized instances for passes/dsa.
 *
 * For every instance and strategy, the plan is judged by references written here, independently of
 * dsa.c:
 *   - a brute-force pairwise overlap and alignment check (not vcc_dsa_check);
 *   - the arena equals max(offset + footprint) and is >= a brute-force max-load bound, which must
 * also equal vcc_dsa_lower_bound;
 *   - for n <= 8, an exhaustive optimum: the minimum over all n! placement orders of "put each item
 *     at its lowest free aligned offset". This is exact: take an optimal plan and place its items
 * by increasing offset; each then lands at or below its optimal offset (every conflicting item
 *     placed before it lies below its optimal offset), so that order reproduces or beats it. The
 *     plan must never beat the optimum; the gap is reported.
 * Plus: VCC_DSA_BEST <= every single strategy, plans are deterministic, and bad input is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsa.h"

#include "expect.h"

/* splitmix64 */
static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t rnd_in(uint64_t *s, uint64_t lo, uint64_t hi) {
  return lo + rnd(s) % (hi - lo + 1);
}

static uint64_t ref_footprint(const VccDsaItem *it) {
  return (it->size + it->align - 1) / it->align * it->align; /* test sizes are small: no overflow */
}
static int ref_time_overlap(const VccDsaItem *a, const VccDsaItem *b) {
  return a->start <= b->end && b->start <= a->end;
}

/* Returns 1 when the plan is valid: aligned offsets, and no two time-overlapping items share a
 * byte. */
static int ref_valid(const VccDsaItem *it, size_t n, const uint64_t *off, char *why,
                     size_t whylen) {
  for (size_t i = 0; i < n; i++) {
    if (off[i] % it[i].align != 0) {
      snprintf(why, whylen, "item %zu offset %llu not a multiple of %llu", i,
               (unsigned long long)off[i], (unsigned long long)it[i].align);
      return 0;
    }
    for (size_t j = i + 1; j < n; j++) {
      if (!ref_time_overlap(&it[i], &it[j]) || it[i].size == 0 || it[j].size == 0) continue;
      if (off[i] < off[j] + it[j].size && off[j] < off[i] + it[i].size) {
        snprintf(why, whylen, "items %zu and %zu overlap", i, j);
        return 0;
      }
    }
  }
  return 1;
}

/* Max over steps of the live footprint: the load only rises at a start step, so test those. */
static uint64_t ref_lower_bound(const VccDsaItem *it, size_t n) {
  uint64_t best = 0;
  for (size_t k = 0; k < n; k++) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
      if (it[i].start <= it[k].start && it[k].start <= it[i].end) sum += ref_footprint(&it[i]);
    if (sum > best) best = sum;
  }
  return best;
}

/* Exhaustive optimum for small n (see the file comment). */
typedef struct {
  const VccDsaItem *it;
  size_t n;
  uint64_t off[8], best;
  int used[8];
  size_t placed[8];
} Exh;

static uint64_t lowest_offset(const Exh *x, size_t depth, size_t i) {
  uint64_t fp = ref_footprint(&x->it[i]), al = x->it[i].align;
  /* candidates: 0 and the aligned top of every placed conflicting item, tried in ascending order */
  uint64_t cand[9];
  size_t nc = 0;
  cand[nc++] = 0;
  for (size_t d = 0; d < depth; d++) {
    size_t j = x->placed[d];
    if (!ref_time_overlap(&x->it[i], &x->it[j])) continue;
    uint64_t top = x->off[j] + ref_footprint(&x->it[j]);
    cand[nc++] = (top + al - 1) / al * al;
  }
  uint64_t lowest = UINT64_MAX;
  for (size_t c = 0; c < nc; c++) {
    uint64_t o = cand[c];
    if (o >= lowest) continue;
    int ok = 1;
    for (size_t d = 0; d < depth && ok; d++) {
      size_t j = x->placed[d];
      if (!ref_time_overlap(&x->it[i], &x->it[j])) continue;
      uint64_t fj = ref_footprint(&x->it[j]);
      if (fp > 0 && fj > 0 && o < x->off[j] + fj && x->off[j] < o + fp) ok = 0;
    }
    if (ok) lowest = o;
  }
  return lowest;
}

static void exh_dfs(Exh *x, size_t depth, uint64_t height) {
  if (height >= x->best) return;
  if (depth == x->n) {
    x->best = height;
    return;
  }
  for (size_t i = 0; i < x->n; i++) {
    if (x->used[i]) continue;
    uint64_t o = lowest_offset(x, depth, i);
    uint64_t top = ref_footprint(&x->it[i]) ? o + ref_footprint(&x->it[i]) : 0;
    x->used[i] = 1;
    x->off[i] = o;
    x->placed[depth] = i;
    exh_dfs(x, depth + 1, top > height ? top : height);
    x->used[i] = 0;
  }
}

static uint64_t exhaustive_optimum(const VccDsaItem *it, size_t n) {
  Exh x;
  memset(&x, 0, sizeof x);
  x.it = it;
  x.n = n;
  x.best = UINT64_MAX;
  exh_dfs(&x, 0, 0);
  return x.best;
}

/* Random instance: a mix of regimes (dense overlap, sparse, aligned sizes, zero sizes, far-apart
 * and negative steps). */
static size_t gen(uint64_t *s, VccDsaItem *it, size_t maxn) {
  size_t n = (size_t)rnd_in(s, 0, maxn);
  int regime = (int)rnd_in(s, 0, 3);
  int64_t horizon = (int64_t)rnd_in(s, 1, 3 * (maxn + 1));
  int64_t base = regime == 3 ? (int64_t)rnd_in(s, 0, 1000000) - 500000 : 0;
  static const uint64_t aligns[] = {1, 1, 1, 2, 4, 8, 16, 64};
  for (size_t i = 0; i < n; i++) {
    VccDsaItem *t = &it[i];
    t->align = regime == 0 ? 1 : aligns[rnd_in(s, 0, 7)];
    t->size = rnd_in(s, 0, 9) == 0 ? 0 : rnd_in(s, 1, regime == 2 ? 4096 : 100);
    if (regime == 2) t->size = (t->size + t->align - 1) / t->align * t->align;
    t->start = base + (int64_t)rnd_in(s, 0, (uint64_t)horizon);
    t->end = t->start + (int64_t)rnd_in(s, 0, (uint64_t)(horizon / 2 + 1));
  }
  return n;
}

static void test_random(void) {
  enum { MAXN = 48, ROUNDS = 1000 };
  VccDsaItem it[MAXN];
  uint64_t off[MAXN], off2[MAXN];
  uint64_t seed = 12345;
  double gap_sum[VCC_DSA_NUM_STRATEGIES] = {0}, gap_max[VCC_DSA_NUM_STRATEGIES] = {0};
  int n_exact = 0, n_opt[VCC_DSA_NUM_STRATEGIES] = {0};
  for (int round = 0; round < ROUNDS; round++) {
    size_t n = gen(&seed, it, round % 2 ? 8 : MAXN);
    uint64_t lb_ref = ref_lower_bound(it, n), lb = vcc_dsa_lower_bound(it, n);
    EXPECT(lb == lb_ref, "round %d: vcc_dsa_lower_bound %llu, reference %llu", round,
           (unsigned long long)lb, (unsigned long long)lb_ref);
    uint64_t opt = n <= 8 ? exhaustive_optimum(it, n) : 0;
    if (n <= 8) {
      n_exact++;
      EXPECT(opt >= lb_ref, "round %d: optimum %llu below the lower bound %llu", round,
             (unsigned long long)opt, (unsigned long long)lb_ref);
    }
    uint64_t single_min = UINT64_MAX;
    for (int s = VCC_DSA_NUM_STRATEGIES - 1; s >= 0; s--) { /* BEST last */
      uint64_t arena = 12345, arena2 = 0;
      char why[128];
      int rc = vcc_dsa_plan(it, n, (VccDsaStrategy)s, off, &arena);
      EXPECT(rc == 0, "round %d strategy %s: rc %d errno %d", round,
             vcc_dsa_strategy_name((VccDsaStrategy)s), rc, errno);
      if (rc) continue;
      EXPECT(ref_valid(it, n, off, why, sizeof why), "round %d strategy %s: %s", round,
             vcc_dsa_strategy_name((VccDsaStrategy)s), why);
      uint64_t top = 0;
      for (size_t i = 0; i < n; i++)
        if (ref_footprint(&it[i]) && off[i] + ref_footprint(&it[i]) > top)
          top = off[i] + ref_footprint(&it[i]);
      EXPECT(arena == top, "round %d strategy %s: arena %llu, max(offset+footprint) %llu", round,
             vcc_dsa_strategy_name((VccDsaStrategy)s), (unsigned long long)arena,
             (unsigned long long)top);
      EXPECT(arena >= lb_ref, "round %d: arena below the lower bound", round);
      EXPECT(vcc_dsa_check(it, n, off, NULL, NULL) == 0, "round %d: vcc_dsa_check refuses a plan",
             round);
      if (s != VCC_DSA_BEST && arena < single_min) single_min = arena;
      if (s == VCC_DSA_BEST)
        EXPECT(arena <= single_min, "round %d: best %llu > a single strategy's %llu", round,
               (unsigned long long)arena, (unsigned long long)single_min);
      /* determinism */
      rc = vcc_dsa_plan(it, n, (VccDsaStrategy)s, off2, &arena2);
      EXPECT(rc == 0 && arena2 == arena && !memcmp(off, off2, n * sizeof *off),
             "round %d strategy %s: not deterministic", round,
             vcc_dsa_strategy_name((VccDsaStrategy)s));
      if (n <= 8) {
        EXPECT(arena >= opt, "round %d strategy %s: arena %llu below the exhaustive optimum %llu",
               round, vcc_dsa_strategy_name((VccDsaStrategy)s), (unsigned long long)arena,
               (unsigned long long)opt);
        double gap = opt ? (double)arena / (double)opt - 1.0 : 0.0;
        gap_sum[s] += gap;
        if (gap > gap_max[s]) gap_max[s] = gap;
        n_opt[s] += arena == opt;
      }
    }
  }
  printf("exhaustive comparison on %d instances with n <= 8 (gap = arena/optimum - 1):\n", n_exact);
  for (int s = 0; s < VCC_DSA_NUM_STRATEGIES; s++)
    printf("  %-10s optimal %4d/%d  mean gap %6.3f%%  max gap %6.2f%%\n",
           vcc_dsa_strategy_name((VccDsaStrategy)s), n_opt[s], n_exact,
           100.0 * gap_sum[s] / (n_exact ? n_exact : 1), 100.0 * gap_max[s]);
}

/* A few instances whose answer is known by hand. */
static void test_known(void) {
  uint64_t off[8], arena;
  /* MiniMalloc README example (input.12.csv), half-open [lower, upper) -> end = upper - 1:
   * optimum 12 = its lower bound. */
  VccDsaItem mm[5] = {{4, 1, 0, 2}, {4, 1, 3, 8}, {4, 1, 0, 8}, {4, 1, 9, 20}, {4, 1, 0, 20}};
  EXPECT(vcc_dsa_lower_bound(mm, 5) == 12, "lb %llu",
         (unsigned long long)vcc_dsa_lower_bound(mm, 5));
  for (int s = 0; s < VCC_DSA_NUM_STRATEGIES; s++) {
    EXPECT(vcc_dsa_plan(mm, 5, (VccDsaStrategy)s, off, &arena) == 0 && arena == 12,
           "strategy %s: arena %llu, want 12", vcc_dsa_strategy_name((VccDsaStrategy)s),
           (unsigned long long)arena);
  }
  /* disjoint lifetimes share offset 0; touching inclusive ends (2 and 2) conflict */
  VccDsaItem d[3] = {{100, 1, 0, 1}, {50, 1, 2, 3}, {70, 1, 3, 9}};
  EXPECT(vcc_dsa_plan(d, 3, VCC_DSA_BEST, off, &arena) == 0 && arena == 120 && off[0] == 0,
         "arena %llu", (unsigned long long)arena);
  /* alignment: footprints 256 + 256, and the second item starts on a 256 boundary */
  VccDsaItem al[2] = {{1, 256, 0, 5}, {3, 256, 0, 5}};
  EXPECT(vcc_dsa_plan(al, 2, VCC_DSA_BY_SIZE, off, &arena) == 0 && arena == 512 &&
             off[0] % 256 == 0 && off[1] % 256 == 0 && off[0] != off[1],
         "arena %llu offsets %llu %llu", (unsigned long long)arena, (unsigned long long)off[0],
         (unsigned long long)off[1]);
  EXPECT(vcc_dsa_lower_bound(al, 2) == 512, "aligned lb");
  /* zero-size items: offset 0, nothing in the arena */
  VccDsaItem z[3] = {{0, 8, 0, 9}, {0, 1, 0, 9}, {16, 16, 0, 9}};
  EXPECT(vcc_dsa_plan(z, 3, VCC_DSA_BEST, off, &arena) == 0 && arena == 16 && off[0] == 0 &&
             off[1] == 0 && off[2] == 0,
         "zero sizes: arena %llu", (unsigned long long)arena);
  /* best fit: the 40-byte item takes the 40-byte hole left by a dead item, not the 60-byte one */
  VccDsaItem bf[5] = {{60, 1, 0, 9}, {40, 1, 0, 4}, {100, 1, 0, 9}, {40, 1, 0, 9}, {40, 1, 5, 9}};
  EXPECT(vcc_dsa_plan(bf, 5, VCC_DSA_BY_SIZE, off, &arena) == 0 && arena == 240, "arena %llu",
         (unsigned long long)arena);
  /* extreme steps */
  VccDsaItem ex[3] = {
      {8, 8, INT64_MIN, INT64_MAX}, {8, 8, INT64_MIN, INT64_MIN}, {8, 8, INT64_MAX, INT64_MAX}};
  EXPECT(vcc_dsa_lower_bound(ex, 3) == 16, "extreme lb %llu",
         (unsigned long long)vcc_dsa_lower_bound(ex, 3));
  for (int s = 0; s < VCC_DSA_NUM_STRATEGIES; s++)
    EXPECT(vcc_dsa_plan(ex, 3, (VccDsaStrategy)s, off, &arena) == 0 && arena == 16 &&
               vcc_dsa_check(ex, 3, off, NULL, NULL) == 0,
           "extreme steps, strategy %s: arena %llu", vcc_dsa_strategy_name((VccDsaStrategy)s),
           (unsigned long long)arena);
  /* empty input */
  arena = 7;
  EXPECT(vcc_dsa_plan(NULL, 0, VCC_DSA_BEST, NULL, &arena) == 0 && arena == 0, "n = 0");
  EXPECT(vcc_dsa_lower_bound(NULL, 0) == 0, "n = 0 lb");
  EXPECT(vcc_dsa_check(NULL, 0, NULL, NULL, NULL) == 0, "n = 0 check");
}

static void test_errors(void) {
  uint64_t off[4], arena;
  VccDsaItem bad_align[1] = {{8, 3, 0, 1}};
  VccDsaItem zero_align[1] = {{8, 0, 0, 1}};
  VccDsaItem bad_interval[1] = {{8, 1, 5, 4}};
  VccDsaItem ok[1] = {{8, 1, 0, 1}};
  errno = 0;
  EXPECT(vcc_dsa_plan(bad_align, 1, VCC_DSA_BEST, off, &arena) == -1 && errno == EINVAL, "align 3");
  errno = 0;
  EXPECT(vcc_dsa_plan(zero_align, 1, VCC_DSA_BY_SIZE, off, &arena) == -1 && errno == EINVAL,
         "align 0");
  errno = 0;
  EXPECT(vcc_dsa_plan(bad_interval, 1, VCC_DSA_BY_START, off, &arena) == -1 && errno == EINVAL,
         "end < start");
  errno = 0;
  EXPECT(vcc_dsa_plan(ok, 1, VCC_DSA_NUM_STRATEGIES, off, &arena) == -1 && errno == EINVAL,
         "unknown strategy");
  EXPECT(vcc_dsa_plan(ok, 1, (VccDsaStrategy)-1, off, &arena) == -1, "negative strategy");
  EXPECT(vcc_dsa_plan(ok, 1, VCC_DSA_BEST, NULL, &arena) == -1, "NULL offsets");
  EXPECT(vcc_dsa_plan(ok, 1, VCC_DSA_BEST, off, NULL) == -1, "NULL arena");
  EXPECT(vcc_dsa_plan(NULL, 1, VCC_DSA_BEST, off, &arena) == -1, "NULL items");
  errno = 0;
  EXPECT(vcc_dsa_lower_bound(bad_align, 1) == 0 && errno == EINVAL, "lb bad align");
  EXPECT(vcc_dsa_check(bad_interval, 1, off, NULL, NULL) == -1, "check bad interval");
  /* footprint overflow: size rounds up past 2^64 */
  VccDsaItem big_fp[1] = {{UINT64_MAX - 2, 16, 0, 1}};
  errno = 0;
  EXPECT(vcc_dsa_plan(big_fp, 1, VCC_DSA_BEST, off, &arena) == -1 && errno == EOVERFLOW,
         "footprint overflow");
  /* offset + footprint overflow: two 2^63-byte items live together */
  VccDsaItem big2[2] = {{(uint64_t)1 << 63, 1, 0, 1}, {(uint64_t)1 << 63, 1, 0, 1}};
  for (int s = 0; s < VCC_DSA_NUM_STRATEGIES; s++) {
    errno = 0;
    EXPECT(vcc_dsa_plan(big2, 2, (VccDsaStrategy)s, off, &arena) == -1 && errno == EOVERFLOW,
           "arena overflow, strategy %s", vcc_dsa_strategy_name((VccDsaStrategy)s));
  }
  EXPECT(vcc_dsa_lower_bound(big2, 2) == UINT64_MAX, "lb saturates");
  /* ... but one of them alone, or both at different times, fits exactly */
  big2[1].start = big2[1].end = 2;
  EXPECT(vcc_dsa_plan(big2, 2, VCC_DSA_BEST, off, &arena) == 0 && arena == (uint64_t)1 << 63,
         "2^63 twice at different times");
}

/* vcc_dsa_fit against the exhaustive optimum: with a budget that cannot run out on these sizes,
 * the search must place every instance at its optimum (a plan the references accept, arena ==
 * optimum) and prove that one byte less is impossible. The last MATE_ROUNDS instances keep at most
 * three distinct intervals, so many items share one with different sizes: the case where the
 * search refuses to stack an item directly on a smaller one with its interval and align. */
static void test_fit(void) {
  enum { MAXN = 8, ROUNDS = 900, MATE_ROUNDS = 300 };
  VccDsaItem it[MAXN];
  uint64_t off[MAXN];
  uint64_t seed = 777;
  int found = 0, refused = 0;
  for (int round = 0; round < ROUNDS; round++) {
    size_t n = gen(&seed, it, MAXN);
    if (round >= ROUNDS - MATE_ROUNDS) /* odd rounds: aligns shared too, so mates really form */
      for (size_t i = 3; i < n; i++) {
        it[i].start = it[i % 3].start, it[i].end = it[i % 3].end;
        if (round % 2) it[i].align = it[i % 3].align;
      }
    uint64_t opt = exhaustive_optimum(it, n), arena = 0;
    char why[128];
    int r = vcc_dsa_fit(it, n, opt, 100000000ull, off, &arena);
    EXPECT(r == VCC_DSA_FIT_FOUND, "fit round %d: n %zu, at the optimum %llu: result %d", round, n,
           (unsigned long long)opt, r);
    if (r == VCC_DSA_FIT_FOUND) {
      found++;
      EXPECT(ref_valid(it, n, off, why, sizeof why), "fit round %d: %s", round, why);
      uint64_t top = 0;
      for (size_t i = 0; i < n; i++)
        if (ref_footprint(&it[i]) && off[i] + ref_footprint(&it[i]) > top)
          top = off[i] + ref_footprint(&it[i]);
      EXPECT(arena == top && top == opt, "fit round %d: arena %llu, top %llu, optimum %llu", round,
             (unsigned long long)arena, (unsigned long long)top, (unsigned long long)opt);
    }
    if (opt > 0) {
      r = vcc_dsa_fit(it, n, opt - 1, 100000000ull, off, &arena);
      EXPECT(r == VCC_DSA_FIT_NONE, "fit round %d: n %zu, below the optimum %llu: result %d", round,
             n, (unsigned long long)opt, r);
      refused += r == VCC_DSA_FIT_NONE;
    }
  }
  /* a budget of 0 nodes decides nothing on an instance that needs a placement */
  VccDsaItem two[2] = {{4, 1, 0, 3}, {4, 1, 2, 5}};
  uint64_t arena = 0;
  EXPECT(vcc_dsa_fit(two, 2, 8, 0, off, &arena) == VCC_DSA_FIT_UNKNOWN, "fit: budget 0");
  EXPECT(vcc_dsa_fit(two, 2, 8, 100, off, &arena) == VCC_DSA_FIT_FOUND && arena == 8, "fit: 8");
  EXPECT(vcc_dsa_fit(two, 2, 7, 100, off, &arena) == VCC_DSA_FIT_NONE, "fit: 7 is too small");
  EXPECT(vcc_dsa_fit(two, 2, 8, 100, off, NULL) == -1 && errno == EINVAL, "fit: NULL arena");
  two[1].align = 3;
  EXPECT(vcc_dsa_fit(two, 2, 8, 100, off, &arena) == -1 && errno == EINVAL, "fit: align 3");
  printf("vcc_dsa_fit: %d/%d instances placed at the exhaustive optimum, %d proved infeasible one "
         "byte below\n", found, ROUNDS, refused);
}

int main(void) {
  test_known();
  test_errors();
  test_fit();
  test_random();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  puts("ok");
  return 0;
}
