/*
 * outfile.c — the text outputs of the vcc command line (frontend/outfile.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "outfile.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "../runtime/vcc_io.h"

/* Write through an open stream f that is not ours to replace; close it when owned. 0, or 1 printed. */
static int write_stream(const char *prog, const char *path, FILE *f, int owned, VccTextWriter write, const void *arg) {
    write(f, arg);
    int bad = fflush(f) != 0 || ferror(f) != 0;
    int e = errno;
    if (owned && fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (bad) fprintf(stderr, "%s: %s: cannot write: %s\n", prog, path, strerror(e));
    return bad;
}

int vcc_text_output_prepare(const char *prog, const char *path, VccTextWriter write, const void *arg, char **tmp) {
    char err[1024];
    struct stat sb;
    *tmp = NULL;
    FILE *f = vcc_io_std_stream(path);
    if (f) return write_stream(prog, path, f, 0, write, arg);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) { /* a device, FIFO or socket */
        if (!(f = fopen(path, "w"))) {
            fprintf(stderr, "%s: %s: cannot write: %s\n", prog, path, strerror(errno));
            return 1;
        }
        return write_stream(prog, path, f, 1, write, arg);
    }
    if (!(f = vcc_io_create_tmp(path, tmp, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    write(f, arg);
    if (vcc_io_finish(f, *tmp, path, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        free(*tmp);
        *tmp = NULL;
        return 1;
    }
    return 0;
}

int vcc_write_text_output(const char *prog, const char *path, VccTextWriter write, const void *arg) {
    char err[1024], *tmp;
    int rc = vcc_text_output_prepare(prog, path, write, arg, &tmp);
    if (!rc && tmp && vcc_io_rename(tmp, path, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        rc = 1;
    }
    free(tmp);
    return rc;
}
