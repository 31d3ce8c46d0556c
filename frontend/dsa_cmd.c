/* frontend/dsa_cmd.c: `vcc dsa`, the arena planner (passes/dsa.h) on a MiniMalloc-format CSV.
 *
 * Reads buffers {id, lower, upper, size} (half-open lifetimes, passes/dsa_csv.h), plans them with
 * VCC_DSA_BEST and, when that misses the target (the capacity given, else the max-load lower
 * bound), with the exact search vcc_dsa_fit under a node budget; verifies the plan with
 * vcc_dsa_check; prints arena, lower bound, arena/LB, whether it fits, and the CPU time; with -o
 * writes MiniMalloc's solution CSV (an `offset` column added) as vcc writes its plan files
 * (frontend/outfile.h: through a temporary file renamed into place, or to a device, a pipe or the
 * standard output directly).
 */
#define _POSIX_C_SOURCE 200809L /* runtime/vcc_io.h's file checks */
#include "dsa_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../passes/dsa.h"
#include "../passes/dsa_csv.h"
#include "../runtime/vcc_io.h"
#include "outfile.h"

#define DSA_DEFAULT_BUDGET 5000000ull

static void dsa_usage(FILE *f) {
    fputs("usage: vcc dsa FILE.csv [--capacity N] [--budget NODES] [-o OUT.csv]\n"
          "\n"
          "Plan the buffers of a MiniMalloc CSV (header id,lower,upper,size; a buffer of size bytes\n"
          "lives over the half-open steps [lower, upper); an optional alignment column) into one arena.\n"
          "Prints the arena, the max-load lower bound (LB), arena/LB, whether the plan fits the\n"
          "capacity, and the CPU time. Every plan is verified by the planner's overlap checker.\n"
          "\n"
          "  --capacity N     the arena must not exceed N bytes: the greedy planner runs first, then, if\n"
          "                   it misses N, an exact branch and bound (vcc_dsa_fit). Without it, the\n"
          "                   search aims at the lower bound and the best plan found is kept.\n"
          "  --budget NODES   placements the exact search may try (default 5000000; 0: greedy only)\n"
          "  -o OUT.csv       write the plan as id,lower,upper,size,offset (MiniMalloc's solution\n"
          "                   format; id,lower,upper,size,alignment,offset when the input has an\n"
          "                   alignment column), never half-written; not written when the capacity is\n"
          "                   missed\n"
          "  -h, --help\n"
          "\n"
          "Exit status: 0 planned (within the capacity, if given), 1 no plan within the capacity was\n"
          "found (the best arena is printed), 2 usage, input or output error, 3 internal error.\n",
          f);
}

/* Parses digits only into *v. Returns 0, or -1. */
static int parse_u64(const char *s, unsigned long long *v) {
    if (!s || *s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return (errno || *end) ? -1 : 0;
}

/* The option's value: the text after "NAME=", or the next argument (advancing *i). */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
    size_t len = strlen(name);
    if (!strncmp(argv[*i], name, len) && argv[*i][len] == '=') return argv[*i] + len + 1;
    if (strcmp(argv[*i], name) != 0) return NULL;
    if (*i + 1 >= argc) return "";
    return argv[++*i];
}

/* Reports a failed planning step (what: "planning", "search") of file's buffers by errno: EOVERFLOW is
 * the input's (sizes and alignments past 64-bit offsets), status 2; anything else, status 3. */
static int plan_failed(const char *file, const char *what) {
    if (errno == EOVERFLOW) {
        fprintf(stderr, "vcc dsa: %s: the buffers' sizes (with their alignments) overflow 64-bit arena offsets\n", file);
        return 2;
    }
    fprintf(stderr, "vcc dsa: %s: %s failed: %s\n", file, what, strerror(errno));
    return 3;
}

/* A plan to write as MiniMalloc's solution CSV (-o). */
typedef struct {
    const VccDsaItem *items;
    size_t n;
    char *const *ids;
    const uint64_t *offsets;
} Solution;

static void print_solution(FILE *f, const void *arg) {
    const Solution *s = arg;
    vcc_dsa_csv_print(f, s->items, s->n, s->ids, s->offsets);
}

int vcc_dsa_main(int argc, char **argv) {
    const char *file = NULL, *out = NULL, *v;
    unsigned long long capacity = 0, budget = DSA_DEFAULT_BUDGET;
    int have_capacity = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            dsa_usage(stdout);
            return 0;
        } else if ((v = opt_value(argc, argv, &i, "--capacity")) != NULL) {
            if (parse_u64(v, &capacity)) {
                fprintf(stderr, "vcc dsa: --capacity takes a byte count, not '%s'\n", v);
                return 2;
            }
            have_capacity = 1;
        } else if ((v = opt_value(argc, argv, &i, "--budget")) != NULL) {
            if (parse_u64(v, &budget)) {
                fprintf(stderr, "vcc dsa: --budget takes a node count, not '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "-o")) != NULL) {
            if (!*v) {
                fputs("vcc dsa: -o takes a file name\n", stderr);
                return 2;
            }
            out = v;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "vcc dsa: unknown option '%s' (see vcc dsa --help)\n", a);
            return 2;
        } else if (file) {
            fprintf(stderr, "vcc dsa: one input file only ('%s' and '%s')\n", file, a);
            return 2;
        } else {
            file = a;
        }
    }
    if (!file) {
        fputs("vcc dsa: no input: vcc dsa FILE.csv [--capacity N] [-o OUT.csv] (see vcc dsa --help)\n",
              stderr);
        return 2;
    }
    if (out && vcc_io_same_file(out, file)) {
        fprintf(stderr, "vcc dsa: -o %s would overwrite the input\n", out);
        return 2;
    }
    VccDsaItem *items = NULL;
    char **ids = NULL, err[512];
    size_t n = 0;
    if (vcc_dsa_csv_read(file, &items, &n, &ids, err, sizeof err)) {
        fprintf(stderr, "vcc dsa: %s\n", err);
        return 2;
    }
    int status = 3;
    char *tmp = NULL; /* the -o file, written and not yet renamed */
    uint64_t *off = malloc((n ? n : 1) * sizeof *off), *trial = malloc((n ? n : 1) * sizeof *trial);
    uint64_t arena = 0, fit_arena = 0;
    errno = 0;
    uint64_t lb = vcc_dsa_lower_bound(items, n);
    const char *search = "not run";
    clock_t t0 = clock();
    if (!off || !trial || errno || vcc_dsa_plan(items, n, VCC_DSA_BEST, off, &arena)) {
        status = plan_failed(file, "planning");
        goto done;
    }
    uint64_t target = have_capacity ? (uint64_t)capacity : lb;
    if (arena > target && budget > 0) {
        int r = vcc_dsa_fit(items, n, target, budget, trial, &fit_arena);
        if (r < 0) {
            status = plan_failed(file, "search");
            goto done;
        }
        if (r == VCC_DSA_FIT_FOUND)
            search = "found a plan";
        else if (r == VCC_DSA_FIT_NONE)
            search = "proved that none exists";
        else
            search = "no decision (node budget spent, or over the search's size limits)";
        if (r == VCC_DSA_FIT_FOUND) {
            memcpy(off, trial, (n ? n : 1) * sizeof *off);
            arena = fit_arena;
        }
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    size_t a = 0, b = 0;
    if (vcc_dsa_check(items, n, off, &a, &b) != 0) {
        fprintf(stderr, "vcc dsa: %s: internal error: the plan overlaps buffers %s and %s\n", file,
                n ? ids[a] : "?", n ? ids[b] : "?");
        goto done;
    }
    int fits = !have_capacity || arena <= capacity;
    printf("%s: %zu buffers\n", file, n);
    printf("  arena      %llu bytes\n", (unsigned long long)arena);
    printf("  LB         %llu bytes (max load)\n", (unsigned long long)lb);
    printf("  arena/LB   %.4f\n", lb ? (double)arena / (double)lb : 1.0);
    if (have_capacity)
        printf("  capacity   %llu bytes: fits %s\n", capacity, fits ? "yes" : "no");
    else
        printf("  capacity   none given\n");
    printf("  search     %s (target %llu bytes)\n", search, (unsigned long long)target);
    printf("  time       %.2f s\n", secs);
    if (!fits) {
        fprintf(stderr, "vcc dsa: %s: no plan within %llu bytes found (best %llu)%s\n", file,
                capacity, (unsigned long long)arena, out ? "; nothing written" : "");
        status = 1;
        goto done;
    }
    /* the plan file complete in a temporary file, then the report flushed, then the rename: a failure
     * up to the rename (a full standard output included) writes nothing */
    const Solution sol = {items, n, ids, off};
    if (out && vcc_text_output_prepare("vcc dsa", out, print_solution, &sol, &tmp)) {
        status = 2;
        goto done;
    }
    if (out) printf("  wrote      %s\n", out);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "vcc dsa: cannot write to standard output: %s\n", strerror(errno));
        status = 2;
        goto done;
    }
    if (tmp) {
        char rerr[1024];
        int bad = vcc_io_rename(tmp, out, rerr, sizeof rerr);
        free(tmp);
        tmp = NULL;
        if (bad) {
            fprintf(stderr, "vcc dsa: %s\n", rerr);
            status = 2;
            goto done;
        }
    }
    status = 0;
done:
    if (tmp) remove(tmp);
    free(tmp);
    free(off);
    free(trial);
    free(items);
    vcc_dsa_csv_free_ids(ids, n);
    return status;
}
