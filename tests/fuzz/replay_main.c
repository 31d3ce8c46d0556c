/*
 * replay_main.c — a main() for a fuzz target without libFuzzer: feeds files to LLVMFuzzerTestOneInput.
 *
 *   fuzz_TARGET_replay [-t SECONDS] PATH...
 *
 * Each PATH is a file, or a folder whose regular files (not recursing, in name order) are replayed one
 * after the other. Each input is copied into a buffer of exactly its size (so a sanitizer sees reads
 * past its end) and run once under an alarm of SECONDS (default 10, or $VCC_FUZZ_TIMEOUT): an input that
 * takes longer is a hang, reported by name, and the process exits with status 124. A crash or a failed
 * check in the target aborts the process (the last "running" line names the input). Exit status 0 when
 * every input ran, 2 on a usage or I/O error.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static const char *current;
static unsigned timeout_s = 10;

static void on_alarm(int sig) {
    (void)sig;
    static const char a[] = "fuzz replay: TIMEOUT: ";
    static const char b[] = " ran longer than the time limit (a hang)\n";
    ssize_t r = write(2, a, sizeof a - 1);
    if (current) r = write(2, current, strlen(current));
    r = write(2, b, sizeof b - 1);
    (void)r;
    _exit(124);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz replay: %s: cannot open\n", path);
        return 2;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "fuzz replay: out of memory\n");
            fclose(f);
            return 2;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "fuzz replay: %s: read error\n", path);
        free(buf);
        return 2;
    }
    unsigned char *exact = malloc(n ? n : 1); /* exactly n bytes: reads past the input are caught */
    if (!exact) {
        free(buf);
        return 2;
    }
    memcpy(exact, buf, n);
    free(buf);
    printf("running %s (%zu bytes)\n", path, n);
    fflush(stdout);
    current = path;
    double t0 = now();
    alarm(timeout_s);
    LLVMFuzzerTestOneInput(exact, n);
    alarm(0);
    printf("ok %s (%.3f s)\n", path, now() - t0);
    fflush(stdout);
    current = NULL;
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_path(const char *path, int *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz replay: %s: no such file or folder\n", path);
        return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
        ++*count;
        return run_file(path);
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "fuzz replay: %s: cannot read the folder\n", path);
        return 2;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        char *p = malloc(len);
        snprintf(p, len, "%s/%s", path, e->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(p);
            continue;
        }
        if (n == cap) names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
        names[n++] = p;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rc) {
            ++*count;
            rc = run_file(names[i]);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    const char *env = getenv("VCC_FUZZ_TIMEOUT");
    if (env && atoi(env) > 0) timeout_s = (unsigned)atoi(env);
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "-t") == 0) {
        if (atoi(argv[2]) <= 0) {
            fprintf(stderr, "fuzz replay: -t needs a positive number of seconds\n");
            return 2;
        }
        timeout_s = (unsigned)atoi(argv[2]);
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: %s [-t SECONDS] FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int count = 0;
    for (int i = first; i < argc; i++) {
        int rc = run_path(argv[i], &count);
        if (rc) return rc;
    }
    printf("%d input(s) replayed\n", count);
    return 0;
}
