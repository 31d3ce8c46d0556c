/*
 * vcc_elem.h - every op family's per-element bodies (elem/base.h, elem/<family>.h), for code that
 * wants them all (tests, tools). Generated programs inline only the families their schedule uses.
 */
#ifndef VCC_ELEM_H
#define VCC_ELEM_H
#include "elem/base.h"
#include "elem/conv.h"
#include "elem/norm.h"
#include "elem/unary.h"
#include "elem/binary.h"
#include "elem/reduce.h"
#include "elem/pool.h"
#include "elem/pad.h"
#include "elem/layout.h"
#include "elem/matmul.h"
#include "elem/softmax.h"
#include "elem/loss.h"
#include "elem/optim.h"
#include "elem/dropout.h"
#include "elem/attention.h"
#include "elem/scatter.h"
#include "elem/compare.h"
#endif /* VCC_ELEM_H */
