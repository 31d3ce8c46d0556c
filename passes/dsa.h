/* passes/dsa.h: the arena planner as a pure function (dynamic storage allocation, "DSA").
 *
 * Input:  n items {size, align, start, end}: a buffer of `size` bytes that must start at a multiple
 * of `align` bytes and is live over the schedule steps [start, end] (both inclusive). Output: one
 * byte offset per item inside a single arena, such that two items whose step intervals intersect
 * never share a byte, and the arena size.
 *
 * Nothing here knows about graphs, tensors or passes: passes/memplan turns live intervals into
 * items and items' offsets back into the IR (the planner-interface split of TFLite Micro's
 * MemoryPlanner, tensorflow/lite/micro/memory_planner/). No global state; the only side channel is
 * errno.
 *
 * Footprint.  Each item occupies footprint(i) = size rounded up to a multiple of align bytes, i.e.
 * [offset, offset + footprint) is reserved for it, and the arena size is max(offset + footprint).
 * When every size is a multiple of its alignment (the usual case) that is max(offset + size). The
 * rounding makes vcc_dsa_lower_bound (which sums footprints) a true lower bound on the arena.
 *
 * Problem: offset assignment for fixed lifetimes is dynamic storage allocation, NP-hard (Garey &
 * Johnson, "Computers and Intractability", 1979, problem SR2); the planners here are greedy
 * heuristics plus a bounded local search (vcc_dsa_plan), compared against the max-load lower bound,
 * and an exact branch and bound for a given capacity (vcc_dsa_fit). Every budget is a count of
 * steps, never time, so plans do not depend on the machine. passes/dsa_csv.h reads and writes the
 * MiniMalloc CSV format these functions are benchmarked on (bench/dsa/README.md).
 */
#ifndef VCC_PASSES_DSA_H
#define VCC_PASSES_DSA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One buffer to place. Units: bytes (size, align) and schedule steps (start, end). */
typedef struct {
  uint64_t size;  /* bytes; 0 is allowed (offset 0, occupies nothing) */
  uint64_t align; /* bytes, a power of two >= 1 */
  int64_t start;  /* first schedule step live, inclusive */
  int64_t end;    /* last schedule step live, inclusive (end >= start) */
} VccDsaItem;

/* Placement orders. Every greedy order places items one at a time, each at the best-fitting gap
 * left by the already placed items whose intervals intersect its own (best fit = the gap, or the
 * room under the current arena top, that leaves the least unused space; if none fits, directly on
 * top of the highest conflicting item). Ties are broken by item index, so plans are deterministic.
 */
typedef enum {
  /* A portfolio of greedy passes, then a hill climb. The passes are the orders below with best
   * fit and with first fit (lowest offset), run in the order that wins on large traces (conflicts
   * and best fit, size and first fit, length and best fit, then the others); a pass is abandoned
   * once it cannot beat the record, and no new pass starts once the passes have spent 1.05*10^8
   * counted steps (about 0.3 s here), so small plans run all ten and 100,000 random buffers two.
   * The smallest arena wins (ties: the earlier order by enum value, best fit first). Then, when one
   * pass costs less than 2*10^7 steps, hill climbing over the placement order (TVM USMP
   * hill_climb's idea) from the winner and from the best first-fit order, re-running the greedy
   * pass per try, capped at 4*10^7 counted steps and 100 + 25 n tries and stopped early at the
   * lower bound. Last, for at most 2048 items still above the lower bound, the exact search
   * vcc_dsa_fit at the lower bound with 10,000 nodes (about 0.3 s at most for a thousand items);
   * its plan, when found, is optimal. */
  VCC_DSA_BEST = 0,
  /* Size descending (then longer lifetime first): TFLite Micro GreedyMemoryPlanner, XLA
   * GlobalDecreasingSizeBestFitHeap (spatial), TVM USMP greedy_by_size; Pisarchyk & Lee 2020,
   * "Efficient Memory Management for Deep Neural Net Inference" (greedy by size). */
  VCC_DSA_BY_SIZE,
  /* Lifetime length descending (then size): the temporal counterpart that XLA's
   * GlobalDecreasingSizeBestFitHeap runs next to its size order, keeping the better plan. */
  VCC_DSA_BY_LENGTH,
  /* Lifetime order: start step ascending (then size descending), the order in which a linear-scan
   * allocator meets the intervals (Poletto & Sarkar, "Linear scan register allocation", TOPLAS
   * 1999), here with best-fit offsets instead of registers. */
  VCC_DSA_BY_START,
  /* Area (size x lifetime length) descending. */
  VCC_DSA_BY_AREA,
  /* Number of intersecting intervals descending (then size): TVM USMP greedy_by_conflicts. */
  VCC_DSA_BY_CONFLICTS,
  VCC_DSA_NUM_STRATEGIES
} VccDsaStrategy;

/* Plans offsets for items[0..n).
 * offsets: n entries out, bytes from the arena base, each a multiple of its item's align.
 * arena_bytes: out, max over items of offset + footprint (0 when n == 0 or all sizes are 0).
 * items and offsets may be NULL only when n == 0; arena_bytes must not be NULL.
 * Returns 0 on success. Returns -1 with errno set, and leaves the outputs unspecified, when:
 *   EINVAL    an align is 0 or not a power of two, an end < start, a NULL pointer, or an unknown
 *             strategy;
 *   EOVERFLOW a footprint or an offset + footprint does not fit in uint64_t;
 *   ENOMEM    scratch memory could not be allocated.
 * Cost: one greedy pass is O(n log n + P log n) time with P the number of intersecting interval
 * pairs (about 0.05 s for a 5,000-item training schedule), O(n) memory. VCC_DSA_BEST is up to 10
 * passes (about 10^8 counted steps: index nodes, bucket slots and gaps visited) plus climbing moves
 * capped at 4*10^7 steps: about 0.4 s for 5,000 items, 0.1-0.4 s for a few hundred; for very large
 * traces the first pass alone may exceed the budget (62,185 IOPDDL buffers, 1.8*10^8 pairs: one
 * pass, about 3 s; bench/dsa/README.md). */
int vcc_dsa_plan(const VccDsaItem *items, size_t n, VccDsaStrategy s, uint64_t *offsets,
                 uint64_t *arena_bytes);

/* Outcome of vcc_dsa_fit. */
typedef enum {
  VCC_DSA_FIT_NONE = 0,    /* proved: no placement fits the capacity */
  VCC_DSA_FIT_FOUND = 1,   /* offsets written; arena <= capacity */
  VCC_DSA_FIT_UNKNOWN = 2, /* the node budget ran out (or the instance is beyond the search's
                            * limits: more than 4096 non-empty items or 2^24 conflicting pairs) */
} VccDsaFit;

/* Searches for a placement of items[0..n) whose arena is at most `capacity` bytes: the decision
 * problem MiniMalloc solves (M. D. Moffitt, "MiniMalloc: A Lightweight Memory Allocator for
 * Hardware-Accelerated Machine Learning", ASPLOS 2023). The ideas are the paper's, the code vcc's:
 * an exact depth-first branch and bound over canonical placements (items placed in non-decreasing
 * offset order, each pushed down onto the highest conflicting item below it), pruned by a
 * per-section bound on the footprint still to place, by gap dominance (no item may be placed where
 * an unplaced one could still drop below it), by symmetry (items at one offset in a fixed order;
 * identical items in index order; no item directly on a smaller one with the same interval and
 * align), split into independent time components, and restarted round robin over four static
 * candidate orders with a node limit that doubles from 2n.
 * node_budget: the most placements tried over all restarts (a deterministic count, never time);
 * each costs O(n + sections + conflicts of the item) time, about 1-9 us on MiniMalloc's A-K.
 * offsets: n entries out on VCC_DSA_FIT_FOUND (unspecified otherwise), each a multiple of its
 * item's align, and *arena_bytes = max(offset + footprint) <= capacity.
 * Returns a VccDsaFit, or -1 with errno EINVAL (same input rules as vcc_dsa_plan, NULL
 * arena_bytes), EOVERFLOW (a footprint overflows) or ENOMEM. Memory O(n^2) at most (the conflict
 * lists and the per-depth candidate and item lists). Zero-size items get offset 0. */
int vcc_dsa_fit(const VccDsaItem *items, size_t n, uint64_t capacity, uint64_t node_budget,
                uint64_t *offsets, uint64_t *arena_bytes);

/* Max-load lower bound, in bytes: the maximum over schedule steps t of the sum of footprints
 * (size rounded up to align) of the items with start <= t <= end. No placement can have a smaller
 * arena. Computed by a sweep over the sorted interval endpoints, O(n log n). This is the usual
 * max-load ("LOAD") bound of the DSA literature, e.g. Gergov, "Algorithms for compile-time memory
 * optimization", SODA 1999; MiniMalloc (Moffitt, ASPLOS 2023) prunes with the same quantity.
 * Returns 0 when n == 0; saturates at UINT64_MAX. On bad input (an align not a power of two, an
 * end < start, items NULL with n > 0) or when scratch memory cannot be allocated it returns 0 and
 * sets errno (EINVAL / ENOMEM). */
uint64_t vcc_dsa_lower_bound(const VccDsaItem *items, size_t n);

/* The planner's own verifier, independent of how the offsets were made (the overlap checker of
 * the planner-interface idea in DESIGN.md; a sweep in start order over the live items).
 * Returns 0 when every offset is a multiple of its item's align and no two items whose step
 * intervals intersect share a byte ([offset, offset + size) ranges; size-0 items share nothing).
 * Returns 1 otherwise and writes the offending pair to *a, *b (each pointer may be NULL):
 *   an item i whose offset is misaligned or whose offset + size overflows: *a = *b = i (smallest
 * i); else the overlapping pair with a < b that is smallest in (a, b) lexicographic order. Returns
 * -1 with errno = EINVAL on bad input (align not a power of two, end < start, NULL arrays with n >
 * 0), or -1 with errno = ENOMEM. Cost: O(n log n + P), P = intersecting interval pairs. */
int vcc_dsa_check(const VccDsaItem *items, size_t n, const uint64_t *offsets, size_t *a, size_t *b);

/* Writes an ASCII picture of a plan to f: schedule steps across (width columns), arena bytes down
 * (height rows, offset 0 at the top). Each cell shows the item covering the cell's centre sample
 * ('0'-'9', 'a'-'z', 'A'-'Z' cycling by item index), '.' for free space, '#' where two or more
 * items cover the same sample (an invalid plan). width and height are clamped to [1, 1000];
 * arena_bytes == 0 prints only the header. Cost O(width * height * n). The same kind of map as
 * TFLite Micro's GreedyMemoryPlanner::PrintMemoryPlan, transposed to steps across. */
void vcc_dsa_print_ascii(FILE *f, const VccDsaItem *items, size_t n, const uint64_t *offsets,
                         uint64_t arena_bytes, int width, int height);

/* Short lower-case name of a strategy ("best", "size", "length", "start", "area", "conflicts"),
 * or "?" for a value outside the enum. */
const char *vcc_dsa_strategy_name(VccDsaStrategy s);

#ifdef __cplusplus
}
#endif

#endif /* VCC_PASSES_DSA_H */
