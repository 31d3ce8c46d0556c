/* tests/dsa/test_dsa_check.c: vcc_dsa_check must refuse overlapping and misaligned placements and
 * name the offending pair; vcc_dsa_print_ascii draws a plan. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsa.h"

#include "expect.h"

static void test_overlap(void) {
  /* items 1 and 3 overlap in time ([2,6] and [6,8], inclusive) and in bytes ([64,128) and
   * [100,132)); items 0 and 2 share bytes but never live together. */
  VccDsaItem it[4] = {{64, 64, 0, 1}, {64, 64, 2, 6}, {64, 32, 1, 1}, {32, 4, 6, 8}};
  uint64_t off[4] = {0, 64, 32, 100};
  size_t a = 99, b = 99;
  /* item 2 at 32 overlaps item 0 at step 1 */
  EXPECT(vcc_dsa_check(it, 4, off, &a, &b) == 1, "overlap not detected");
  EXPECT(a == 0 && b == 2, "pair (%zu, %zu), want (0, 2)", a, b);
  off[2] = 128; /* now only 1 and 3 collide */
  EXPECT(vcc_dsa_check(it, 4, off, &a, &b) == 1 && a == 1 && b == 3, "pair (%zu, %zu), want (1, 3)",
         a, b);
  off[3] = 128 + 64; /* touching byte ranges are fine */
  EXPECT(vcc_dsa_check(it, 4, off, &a, &b) == 0, "valid plan refused (%zu, %zu)", a, b);
  /* end == start of another is a conflict (inclusive ends) */
  VccDsaItem t[2] = {{8, 1, 0, 3}, {8, 1, 3, 5}};
  uint64_t o2[2] = {0, 4};
  EXPECT(vcc_dsa_check(t, 2, o2, &a, &b) == 1 && a == 0 && b == 1, "inclusive end");
  t[1].start = 4;
  EXPECT(vcc_dsa_check(t, 2, o2, NULL, NULL) == 0, "adjacent lifetimes may share bytes");
  /* one byte of overlap is enough */
  VccDsaItem u[2] = {{10, 1, 0, 0}, {10, 1, 0, 0}};
  uint64_t o3[2] = {9, 0};
  EXPECT(vcc_dsa_check(u, 2, o3, &a, &b) == 1 && a == 0 && b == 1, "one byte");
  o3[0] = 10;
  EXPECT(vcc_dsa_check(u, 2, o3, &a, &b) == 0, "adjacent");
  /* zero-size items never overlap anything */
  VccDsaItem z[2] = {{0, 1, 0, 5}, {10, 1, 0, 5}};
  uint64_t oz[2] = {5, 0};
  EXPECT(vcc_dsa_check(z, 2, oz, NULL, NULL) == 0, "zero size");
  /* the smallest pair is reported, whatever the sweep order */
  VccDsaItem m[4] = {{8, 1, 5, 9}, {8, 1, 0, 9}, {8, 1, 0, 1}, {8, 1, 0, 1}};
  uint64_t om[4] = {0, 100, 200, 200}; /* (2,3) overlap; (0,?) none */
  EXPECT(vcc_dsa_check(m, 4, om, &a, &b) == 1 && a == 2 && b == 3, "pair (%zu,%zu)", a, b);
  om[1] = 4; /* now (0,1) too: smaller */
  EXPECT(vcc_dsa_check(m, 4, om, &a, &b) == 1 && a == 0 && b == 1, "pair (%zu,%zu)", a, b);
  /* NULL a/b pointers are allowed */
  EXPECT(vcc_dsa_check(m, 4, om, NULL, NULL) == 1, "NULL out pointers");
}

static void test_alignment(void) {
  VccDsaItem it[3] = {{16, 16, 0, 1}, {16, 16, 5, 6}, {16, 8, 10, 11}};
  uint64_t off[3] = {0, 24, 8};
  size_t a = 99, b = 99;
  EXPECT(vcc_dsa_check(it, 3, off, &a, &b) == 1 && a == 1 && b == 1, "misaligned: (%zu, %zu)", a,
         b);
  off[1] = 32;
  EXPECT(vcc_dsa_check(it, 3, off, &a, &b) == 0, "aligned plan refused (%zu, %zu)", a, b);
  off[2] = 4;
  EXPECT(vcc_dsa_check(it, 3, off, &a, &b) == 1 && a == 2 && b == 2, "misaligned 2");
  /* misalignment wins over an overlap with a smaller index */
  VccDsaItem o[3] = {{8, 1, 0, 1}, {8, 1, 0, 1}, {8, 8, 0, 9}};
  uint64_t oo[3] = {0, 0, 17};
  EXPECT(vcc_dsa_check(o, 3, oo, &a, &b) == 1 && a == 2 && b == 2, "misalignment first");
  /* offset + size past 2^64 */
  VccDsaItem big[1] = {{16, 1, 0, 0}};
  uint64_t ob[1] = {UINT64_MAX - 3};
  EXPECT(vcc_dsa_check(big, 1, ob, &a, &b) == 1 && a == 0 && b == 0, "offset overflow");
}

static void test_bad_input(void) {
  VccDsaItem it[1] = {{8, 6, 0, 1}};
  uint64_t off[1] = {0};
  errno = 0;
  EXPECT(vcc_dsa_check(it, 1, off, NULL, NULL) == -1 && errno == EINVAL, "align 6");
  it[0].align = 2;
  it[0].end = -1;
  EXPECT(vcc_dsa_check(it, 1, off, NULL, NULL) == -1, "end < start");
  it[0].end = 1;
  EXPECT(vcc_dsa_check(it, 1, NULL, NULL, NULL) == -1, "NULL offsets");
}

/* A planned 5000-item instance, damaged one item at a time, must be refused each time. */
static void test_damaged_plans(void) {
  enum { N = 5000 };
  VccDsaItem *it = malloc(N * sizeof *it);
  uint64_t *off = malloc(N * sizeof *off), arena;
  uint64_t s = 7;
  for (size_t i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    it[i].align = (uint64_t)1 << ((s >> 33) % 7);
    it[i].size = 1 + (s >> 40) % 5000;
    it[i].start = (int64_t)((s >> 20) % 4000);
    it[i].end = it[i].start + (int64_t)((s >> 45) % 300);
  }
  EXPECT(vcc_dsa_plan(it, N, VCC_DSA_BY_SIZE, off, &arena) == 0, "plan");
  EXPECT(vcc_dsa_check(it, N, off, NULL, NULL) == 0, "valid 5000-item plan refused");
  /* put item i on item j's offset, for time-overlapping pairs with align(i) <= align(j) (so the
   * offset stays aligned for i): the check must refuse every such plan */
  int refused = 0, tried = 0;
  for (size_t k = 0; k < 400 && tried < 50; k++) {
    size_t i = (k * 997) % N, j = (k * 7919 + 13) % N;
    if (i == j || it[i].start > it[j].end || it[j].start > it[i].end || it[i].align > it[j].align)
      continue;
    tried++;
    uint64_t saved = off[i];
    off[i] = off[j];
    size_t a = 0, b = 0;
    int r = vcc_dsa_check(it, N, off, &a, &b);
    refused += r == 1 && a < b && (a == i || b == i); /* the base plan is valid: i is involved */
    off[i] = saved;
  }
  EXPECT(tried >= 20 && refused == tried, "damaged plans: %d refused of %d", refused, tried);
  /* one misaligned offset */
  for (size_t i = 0; i < N; i++) {
    if (it[i].align < 2) continue;
    off[i] += 1;
    size_t a, b;
    EXPECT(vcc_dsa_check(it, N, off, &a, &b) == 1 && a == i && b == i, "misaligned item %zu", i);
    off[i] -= 1;
    break;
  }
  free(it);
  free(off);
}

static void test_ascii(void) {
  VccDsaItem it[3] = {{50, 1, 0, 4}, {50, 1, 5, 9}, {50, 1, 0, 9}};
  uint64_t off[3], arena;
  EXPECT(vcc_dsa_plan(it, 3, VCC_DSA_BEST, off, &arena) == 0 && arena == 100, "arena %llu",
         (unsigned long long)arena);
  FILE *f = tmpfile();
  if (!f) return;
  vcc_dsa_print_ascii(f, it, 3, off, arena, 10, 4);
  rewind(f);
  char buf[2048];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  buf[len] = 0;
  fclose(f);
  fputs(buf, stdout);
  /* header + 4 rows; item 2 fills one half for all 10 columns, items 0 and 1 split the other */
  int rows = 0;
  for (char *p = buf; *p; p++)
    rows += *p == '\n';
  EXPECT(rows == 5, "rows %d", rows);
  const char *two = off[2] == 0 ? "|2222222222|" : NULL;
  const char *zero_one = "|0000011111|";
  EXPECT(strstr(buf, zero_one) != NULL, "items 0/1 row missing");
  if (two) EXPECT(strstr(buf, two) != NULL, "item 2 row missing");
  const char *body = strchr(buf, '\n');
  EXPECT(body && !strchr(body, '#') && !strchr(body, '.'), "a full, valid plan has no '#' or '.'");
  /* an overlapping plan shows '#' */
  uint64_t bad[3] = {0, 0, 0};
  f = tmpfile();
  if (!f) return;
  vcc_dsa_print_ascii(f, it, 3, bad, 100, 10, 4);
  rewind(f);
  len = fread(buf, 1, sizeof buf - 1, f);
  buf[len] = 0;
  fclose(f);
  EXPECT(strchr(buf, '#') != NULL, "overlap not marked");
  EXPECT(strchr(strchr(buf, '\n'), '.') != NULL, "free space not marked");
}

int main(void) {
  test_overlap();
  test_alignment();
  test_bad_input();
  test_damaged_plans();
  test_ascii();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  puts("ok");
  return 0;
}
