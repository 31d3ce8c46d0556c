/*
 * cli_check.c — run the vcc command line on one (hostile) model and check how it behaves.
 *
 *   fuzz_cli_check [options] VCC MODEL OUTDIR [VCC-ARGS...]
 *
 *     -t SECONDS       time limit for vcc (default 30): a run that takes longer is a hang, killed
 *     --max-lines N    most lines vcc may write to stderr (default 25: errors are capped)
 *     --expect-fail    vcc must refuse the model (exit status 1)
 *
 * Runs `VCC MODEL -o OUTDIR/train.c VCC-ARGS...` (OUTDIR is emptied first and created if missing), with
 * stdout and stderr going to OUTDIR.stdout and OUTDIR.stderr, and checks:
 *   - vcc exited (no signal: no abort, no sanitizer trap) with status 0 or 1, within the time limit;
 *   - stderr has at most N lines, and stdout and stderr hold no raw control characters (only '\n') and
 *     are valid UTF-8: names from the model reach the terminal escaped;
 *   - status 1 left OUTDIR empty (no trainer, no weights, no temporary file); status 0 left the trainer
 *     (non-empty, first line "// build...") and its weights, and nothing else.
 * Prints the first lines of stderr (escaped) either way, and one line per failed check. Exit status 0
 * when every check holds, 1 when one fails, 2 on a usage or system error.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_util.h"

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cli check FAILED: ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    failures++;
}

/* Remove every plain file in dir (the folder is vcc's output folder: flat). */
static int empty_dir(const char *dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return 1;
    DIR *d = opendir(dir);
    if (!d) return 1;
    struct dirent *e;
    char p[8192];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return 0;
}

/* Names left in dir, sorted, in a static buffer ("" when none). */
static const char *dir_listing(const char *dir, int *count) {
    static char buf[4096];
    buf[0] = 0;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return buf;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        if (*count) strncat(buf, " ", sizeof buf - strlen(buf) - 1);
        strncat(buf, e->d_name, sizeof buf - strlen(buf) - 1);
        ++*count;
    }
    closedir(d);
    return buf;
}

/* Scan a file's text: lines, and the first problem for a terminal (NULL if none). */
typedef struct {
    uint64_t bytes, lines;
    char problem[160];
} Scan;

static void scan_file(const char *path, Scan *s) {
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f) return;
    /* line by line: a problem is reported with its line number; lines are scanned whole (UTF-8
     * sequences never span a '\n') */
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        s->bytes += (uint64_t)n;
        s->lines += line[n - 1] == '\n';
        if (!s->problem[0]) {
            const char *why = fuzz_text_problem(line, (size_t)n);
            if (why) snprintf(s->problem, sizeof s->problem, "line %llu: %s", (unsigned long long)s->lines + (line[n - 1] != '\n'), why);
        }
    }
    free(line);
    fclose(f);
}

/* Print the first `max` lines of a file, escaped, indented. */
static void show_head(const char *path, int max) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    for (int k = 0; k < max && (n = getline(&line, &cap, f)) > 0; k++) {
        fputs("  | ", stdout);
        fuzz_print_escaped(stdout, line, (size_t)(line[n - 1] == '\n' ? n - 1 : n), 400);
    }
    free(line);
    fclose(f);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int timeout_s = 30, max_lines = 25, i = 1;
    bool expect_fail = false;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) timeout_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-lines") && i + 1 < argc) max_lines = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--expect-fail")) expect_fail = true;
        else break;
    }
    if (argc - i < 3 || timeout_s <= 0) {
        fputs("usage: fuzz_cli_check [-t SECONDS] [--max-lines N] [--expect-fail] VCC MODEL OUTDIR [VCC-ARGS...]\n",
              stderr);
        return 2;
    }
    const char *vcc = argv[i], *model = argv[i + 1], *outdir = argv[i + 2];
    char out_c[4096], out_stdout[4096], out_stderr[4096];
    snprintf(out_c, sizeof out_c, "%s/train.c", outdir);
    snprintf(out_stdout, sizeof out_stdout, "%s.stdout", outdir);
    snprintf(out_stderr, sizeof out_stderr, "%s.stderr", outdir);
    if (empty_dir(outdir)) {
        fprintf(stderr, "fuzz_cli_check: %s: cannot prepare the output folder: %s\n", outdir, strerror(errno));
        return 2;
    }

    /* vcc MODEL -o OUTDIR/train.c ARGS... */
    int nextra = argc - (i + 3);
    char **args = calloc((size_t)nextra + 5, sizeof *args);
    args[0] = (char *)vcc;
    args[1] = (char *)model;
    args[2] = "-o";
    args[3] = out_c;
    for (int k = 0; k < nextra; k++) args[4 + k] = argv[i + 3 + k];
    printf("$ %s %s -o %s", vcc, model, out_c);
    for (int k = 0; k < nextra; k++) printf(" %s", args[4 + k]);
    putchar('\n');
    fflush(stdout);

    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fuzz_cli_check: fork");
        return 2;
    }
    if (pid == 0) {
        int o = open(out_stdout, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        int e = open(out_stderr, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(127);
        close(o);
        close(e);
        setpgid(0, 0);
        execv(vcc, args);
        _exit(127);
    }
    int status = 0;
    bool timed_out = false;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            perror("fuzz_cli_check: waitpid");
            return 2;
        }
        if (now() - t0 > timeout_s) {
            timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    double secs = now() - t0;
    free(args);

    Scan err, out;
    scan_file(out_stderr, &err);
    scan_file(out_stdout, &out);
    /* keep what a reader needs, not the hundreds of megabytes an uncapped error list can take */
    if (err.bytes > ((uint64_t)1 << 20) && truncate(out_stderr, (off_t)1 << 20) != 0) perror(out_stderr);
    int exit_status = -1;
    if (timed_out) {
        printf("vcc ran longer than %d s and was killed (a hang)\n", timeout_s);
        fail("vcc hangs");
    } else if (WIFSIGNALED(status)) {
        printf("vcc was killed by signal %d (%s) after %.2f s\n", WTERMSIG(status), strsignal(WTERMSIG(status)), secs);
        fail("vcc died of a signal instead of exiting with status 0 or 1");
    } else {
        exit_status = WEXITSTATUS(status);
        printf("vcc exited with status %d after %.2f s\n", exit_status, secs);
        if (exit_status == 127) fail("cannot run %s", vcc);
        else if (exit_status != 0 && exit_status != 1) fail("exit status %d (expected 0 or 1)", exit_status);
        else if (expect_fail && exit_status != 1) fail("vcc accepted a model it must refuse");
    }
    printf("stderr: %llu lines, %llu bytes; first lines (escaped):\n", (unsigned long long)err.lines,
           (unsigned long long)err.bytes);
    show_head(out_stderr, 8);
    if (err.lines > (uint64_t)max_lines) fail("%llu lines on stderr (at most %d)", (unsigned long long)err.lines, max_lines);
    if (err.problem[0]) fail("stderr is not fit for a terminal: %s", err.problem);
    if (out.problem[0]) fail("stdout is not fit for a terminal: %s", out.problem);

    int left;
    const char *listing = dir_listing(outdir, &left);
    if (exit_status == 0) {
        char want_w[4096];
        snprintf(want_w, sizeof want_w, "%s/train.safetensors", outdir);
        struct stat st;
        if (stat(out_c, &st) != 0 || st.st_size == 0) {
            fail("status 0 but no trainer at %s", out_c);
        } else {
            FILE *f = fopen(out_c, "rb");
            char head[10] = {0};
            if (!f || fread(head, 1, 8, f) != 8 || memcmp(head, "// build", 8) != 0)
                fail("%s does not start with its build line", out_c);
            if (f) fclose(f);
        }
        if (stat(want_w, &st) != 0) fail("status 0 but no weights at %s", want_w);
        if (left != 2) fail("status 0 left other files in %s: %s", outdir, listing);
    } else if (left) {
        fail("a failed run left files behind in %s: %s", outdir, listing);
    }
    if (failures) printf("%d check(s) failed\n", failures);
    else puts("ok");
    return failures ? 1 : 0;
}
