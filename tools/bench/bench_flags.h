/*
 * bench_flags.h: tdb_bench's flags.
 */
#ifndef TDB_BENCH_OPTIONS_H
#define TDB_BENCH_OPTIONS_H

#include <stdio.h>

#include "bench.h"

/* Defaults of every flag. */
void options_default(bench_opts_t *o);
/* Parse argv (defaults first): 0 ok, 1 help was printed, -1 error. */
int options_parse(bench_opts_t *o, int argc, char **argv);
/* Print the help text. */
void options_usage(FILE *f);

#endif /* TDB_BENCH_OPTIONS_H */
