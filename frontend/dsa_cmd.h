/* frontend/dsa_cmd.h: `vcc dsa`, the arena planner on a MiniMalloc CSV (frontend/dsa_cmd.c). */
#ifndef VCC_FRONTEND_DSA_CMD_H
#define VCC_FRONTEND_DSA_CMD_H

/* Runs `vcc dsa FILE.csv [--capacity N] [--budget NODES] [-o OUT.csv]`; argv[0] is "dsa".
 * Returns the process exit status: 0 planned (and within the capacity, when one is given), 1 no
 * placement within the capacity was found, 2 usage, input or output error, 3 internal error. */
int vcc_dsa_main(int argc, char **argv);

#endif /* VCC_FRONTEND_DSA_CMD_H */
