/*
 * trace.h - phase timings for profiling, off unless DECREE_TRACE_PERF is
 * set in the environment (to anything but "" or "0").
 *
 *   trace_phase("scan");   // "decree: perf: scan 12.345 ms (+12.345)"
 *
 * Each call prints, on stderr, the time since the process's first
 * trace_phase call (or trace_start) and since the previous one.  It costs
 * one getenv the first time and one branch afterwards when off.  Meant for
 * `make bench` investigations and for users reporting slowness; the output
 * format is not a stable interface.
 */
#ifndef DECREE_TRACE_H
#define DECREE_TRACE_H

#include <stdbool.h>

/* True when DECREE_TRACE_PERF asks for timings. */
bool trace_enabled(void);

/* Start the clock (the first trace_phase starts it too). */
void trace_start(void);

/* Print the time of phase `name`, when enabled. */
void trace_phase(const char *name);

#endif
