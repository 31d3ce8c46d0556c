/*
 * vcc_cpu.h - the whole C target runtime: cpu/base.h and every op family's kernels (cpu/<family>.h),
 * for code that wants them all (tests, tools). Generated programs inline only the families their
 * schedule uses. Link with -lopenblas -lm.
 */
#ifndef VCC_CPU_H
#define VCC_CPU_H
#include "cpu/base.h"
#include "cpu/conv.h"
#include "cpu/norm.h"
#include "cpu/unary.h"
#include "cpu/binary.h"
#include "cpu/reduce.h"
#include "cpu/pool.h"
#include "cpu/pad.h"
#include "cpu/layout.h"
#include "cpu/matmul.h"
#include "cpu/softmax.h"
#include "cpu/loss.h"
#include "cpu/optim.h"
#include "cpu/dropout.h"
#include "cpu/attention.h"
#include "cpu/scatter.h"
#include "cpu/compare.h"
#endif /* VCC_CPU_H */
