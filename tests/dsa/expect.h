/* expect.h: the check macro the planner tests share. EXPECT(cond, fmt, ...) counts a failure and prints
 * file:line, the condition and a message; each test's main returns failures != 0. */
#ifndef VCC_TESTS_DSA_EXPECT_H
#define VCC_TESTS_DSA_EXPECT_H

#include <stdio.h>

static int failures;
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);                            \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

#endif /* VCC_TESTS_DSA_EXPECT_H */
