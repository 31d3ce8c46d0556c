/* frontend/outfile.h: how vcc writes a text output that may also go to a terminal or a pipe (the plan
 * JSON, trace and SVG, vcc dsa's CSV) (frontend/outfile.c). */
#ifndef VCC_FRONTEND_OUTFILE_H
#define VCC_FRONTEND_OUTFILE_H

#include <stdio.h>

/* What fills one text output: writes its whole contents to f. */
typedef void (*VccTextWriter)(FILE *f, const void *arg);

/* Writes write(f, arg)'s text at path:
 *   - where path is this process's standard output or error (runtime/vcc_io.h's vcc_io_std_stream:
 *     /dev/stdout, or the file a shell redirected it to), into that stream, after what is already there;
 *   - to a device, FIFO or socket (/dev/stdout on a terminal or a pipe), directly;
 *   - to anything else through a new temporary file beside path, renamed over it once complete
 *     (vcc_io_create_tmp, vcc_io_commit: a failure leaves no partial file, and a folder is refused).
 * Returns 0, or 1 with "<prog>: <path>: <problem>" printed on stderr. */
int vcc_write_text_output(const char *prog, const char *path, VccTextWriter write, const void *arg);

/* The first half of vcc_write_text_output, for a command with several outputs that replaces none of them
 * until all are complete: a stream or device is written at once (*tmp = NULL); a file is written to a
 * new temporary file beside path, complete and closed, left for the caller to rename over path
 * (vcc_io_rename) or remove; *tmp is that file's name (the caller frees it). Returns 0, or 1 with
 * "<prog>: <path>: <problem>" printed on stderr (no temporary file left). */
int vcc_text_output_prepare(const char *prog, const char *path, VccTextWriter write, const void *arg, char **tmp);

#endif /* VCC_FRONTEND_OUTFILE_H */
