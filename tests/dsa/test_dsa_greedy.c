/* test_dsa_greedy.c: one greedy pass of vcc_dsa_plan (VCC_DSA_BY_SIZE, best fit) against a
 * plain reimplementation of the same rule, offset for offset, on instances large enough that the
 * planner keeps its long-lived items apart (passes/dsa.c: 4,096 items or more; an interval of at
 * least 1/16 of the schedule).
 *
 * The reference: order by footprint (size rounded up to align) descending, interval length
 * descending, start ascending, index ascending; each item, in turn, collects every placed item whose
 * interval intersects its own (a scan over all of them), sorts their byte ranges by offset, and
 * walks the gaps between the union of those ranges from offset 0 up, the room below the arena top
 * last: it takes the gap with the least leftover bytes (the first of equals) where the aligned
 * start fits, else the aligned top of the highest conflicting range. Zero-size items sit at 0.
 * Instances mix short lives (1-8 steps) with long ones (a quarter of the schedule or more), sizes
 * over three magnitudes and alignments 1 to 512; the plans must also pass vcc_dsa_check. */
#include "dsa.h"
#include "expect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static uint64_t rnd_in(uint64_t lo, uint64_t hi) { return lo + rnd() % (hi - lo + 1); }

static uint64_t fp_of(const VccDsaItem *it) { return (it->size + it->align - 1) / it->align * it->align; }

static const VccDsaItem *g_items;
static int by_size(const void *pa, const void *pb) {
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  const VccDsaItem *x = &g_items[a], *y = &g_items[b];
  uint64_t fx = fp_of(x), fy = fp_of(y), lx = (uint64_t)(x->end - x->start), ly = (uint64_t)(y->end - y->start);
  if (fx != fy) return fx > fy ? -1 : 1;
  if (lx != ly) return lx > ly ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (a > b) - (a < b);
}

typedef struct {
  uint64_t off, top;
} Range;

static int by_off(const void *pa, const void *pb) {
  const Range *a = pa, *b = pb;
  return (a->off > b->off) - (a->off < b->off);
}

/* The reference plan; returns the arena. */
static uint64_t reference(const VccDsaItem *items, size_t n, uint64_t *off) {
  size_t *order = malloc(n * sizeof *order), *placed = malloc(n * sizeof *placed), np = 0;
  Range *r = malloc(n * sizeof *r);
  for (size_t i = 0; i < n; i++) order[i] = i;
  g_items = items;
  qsort(order, n, sizeof *order, by_size);
  uint64_t H = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = order[k];
    uint64_t fp = fp_of(&items[i]), al = items[i].align;
    off[i] = 0;
    if (fp == 0) continue;
    size_t m = 0;
    for (size_t q = 0; q < np; q++) {
      size_t j = placed[q];
      if (items[j].start <= items[i].end && items[j].end >= items[i].start)
        r[m++] = (Range){off[j], off[j] + fp_of(&items[j])};
    }
    qsort(r, m, sizeof *r, by_off);
    uint64_t floor = 0, best = 0, waste_best = UINT64_MAX;
    int found = 0;
    for (size_t j = 0; j <= m; j++) {
      uint64_t hi = j < m ? r[j].off : H;
      if (hi > floor) {
        uint64_t cand = (floor + al - 1) / al * al;
        if (cand <= hi && hi - cand >= fp && hi - floor - fp < waste_best)
          best = cand, waste_best = hi - floor - fp, found = 1;
      }
      if (j < m && r[j].top > floor) floor = r[j].top;
    }
    if (!found) best = (floor + al - 1) / al * al;
    off[i] = best;
    if (best + fp > H) H = best + fp;
    placed[np++] = i;
  }
  free(order);
  free(placed);
  free(r);
  return H;
}

static void one_instance(uint64_t seed, size_t n, int64_t steps) {
  rng_state = seed;
  VccDsaItem *it = malloc(n * sizeof *it);
  size_t nlong = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t len = rnd() % 5 == 0 ? (int64_t)rnd_in((uint64_t)steps / 4, (uint64_t)steps - 1) : (int64_t)rnd_in(0, 7);
    int64_t start = (int64_t)rnd_in(0, (uint64_t)(steps - 1 - len));
    unsigned mag = (unsigned)rnd() % 3;
    uint64_t size = mag == 0 ? rnd_in(0, 300) : mag == 1 ? rnd_in(1000, 60000) : rnd_in(100000, 4000000);
    it[i] = (VccDsaItem){size, (uint64_t)1 << rnd_in(0, 9), start, start + len};
    nlong += len >= steps / 16;
  }
  uint64_t *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want), arena = 0;
  EXPECT(vcc_dsa_plan(it, n, VCC_DSA_BY_SIZE, got, &arena) == 0, "seed %llu: the planner failed",
         (unsigned long long)seed);
  uint64_t ref = reference(it, n, want);
  size_t differ = 0, first = n;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) differ++, first = first < n ? first : i;
  EXPECT(differ == 0 && arena == ref,
         "seed %llu (n %zu, %zu long-lived): %zu offsets differ from the reference (item %zu: %llu, not %llu); "
         "arena %llu, reference %llu", (unsigned long long)seed, n, nlong, differ, first,
         first < n ? (unsigned long long)got[first] : 0ull, first < n ? (unsigned long long)want[first] : 0ull,
         (unsigned long long)arena, (unsigned long long)ref);
  size_t a, b;
  EXPECT(vcc_dsa_check(it, n, got, &a, &b) == 0, "seed %llu: the plan fails vcc_dsa_check", (unsigned long long)seed);
  printf("seed %llu: %zu items (%zu long-lived), %lld steps: arena %llu, the reference's %llu\n",
         (unsigned long long)seed, n, nlong, (long long)steps, (unsigned long long)arena, (unsigned long long)ref);
  free(it);
  free(got);
  free(want);
}

int main(void) {
  /* a few hundred steps: many items meet; thousands: few do */
  one_instance(0x9E3779B97F4A7C15ull, 5000, 400);
  one_instance(0xD1B54A32D192ED03ull, 6000, 3000);
  one_instance(0x8CB92BA72F3D8DD7ull, 4096, 64);
  return failures != 0;
}
