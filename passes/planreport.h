/*
 * planreport.h — the memory plan for people: `vcc plan`'s report, a Chrome trace-event JSON (Perfetto)
 * and an SVG picture of the arena (schedule steps across, arena offsets up).
 *
 * All three read a graph after memplan (offsets, live intervals, arena line filled) and draw the same
 * objects: one "block" per tensor that holds its own bytes (views are left out: they are their base's
 * bytes), over the steps it holds them. A tensor written in place over an input (inplace_of) takes the
 * buffer at the step of the node that reads the old value and writes the new one, so the older holder's
 * block ends there: blocks of one buffer follow one another and never overlap. Persistent tensors hold
 * their bytes over every step, 0 .. g->nnodes (the host's read after the last node).
 */
#ifndef VCC_PLANREPORT_H
#define VCC_PLANREPORT_H

#include <stdio.h>

#include "../ir/ir.h"

/* Write the plan report `vcc plan` prints: arena, lower bound (LB), arena/LB, the no-reuse sum, the
 * persistent bytes and the saved floor (persistent + saved activations, VccGraph.saved_floor_bytes); the
 * bytes by category (parameter, gradient, optimizer_state, saved_activation, activation, workspace) that
 * the arena holds at the peak step (the step whose live bytes make the lower bound; each buffer rounded
 * up to VCC_ARENA_ALIGN as the arena holds it), with % of the arena and the no-reuse bytes per category;
 * the tensors live at the peak step, largest first, with the op and name of the node producing each;
 * and what sharing and fusion removed: in-place outputs and views (bytes they do not allocate) and the
 * FusedAttention sites. model names the input in the title. unfused, when not NULL, is the same model
 * compiled with --no-fuse-attention: its arena and LB are printed beside this plan's. Byte counts are
 * printed exactly and in MiB (2^20 bytes). g must have been planned (vcc_memplan). Never fails; write
 * errors are left in f's error flag. */
void vcc_plan_report(FILE *f, const VccGraph *g, const char *model, const VccGraph *unfused);

/* Write the plan as Chrome trace-event JSON ({"traceEvents": [...]}, the format Perfetto and
 * chrome://tracing open): time is the schedule (1 µs of trace time = 1 step), and each block is a
 * complete event ("ph": "X", ts = its first step, dur = steps it holds its bytes) on a track ("tid") of
 * its own arena offset, the tracks in address order (thread_sort_index, named "@ <offset>"); process 1 is
 * the planned region, process 2 the persistent one. Every event's args hold name, bytes, offset,
 * category, op, layer and the live interval. A counter track ("ph": "C", "planned bytes live") gives the
 * planned region's live bytes at each step; its maximum plus the persistent bytes is the lower bound.
 * Never fails; write errors are left in f's error flag. */
void vcc_plan_write_trace(FILE *f, const VccGraph *g, const char *model);

/* Write an SVG picture of the plan: one rectangle per block (x: the steps it holds its bytes, y: its
 * bytes in the arena, offset 0 at the bottom; a persistent region of more than a quarter of the arena is
 * drawn to a smaller scale in the bottom fifth, labelled so), filled by category, with a <title> (name, bytes, offset,
 * live interval, category) and data-offset/data-bytes/data-x0/data-x1 attributes holding the exact
 * numbers (bytes, steps; the block covers steps x0 .. x1-1); a title line (model, arena, LB), axes in
 * steps and MiB, a legend, dashed lines at the lower bound and the persistent region's top, and the peak
 * step marked. Never fails; write errors are left in f's error flag. */
void vcc_plan_write_svg(FILE *f, const VccGraph *g, const char *model);

#endif /* VCC_PLANREPORT_H */
