/*
 * trace.c - phase timings (trace.h).
 */
#include "util/common.h"
#include "util/trace.h"

#include <time.h>

static int enabled = -1; /* -1: the environment not read yet */
static double t0, tprev;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool trace_enabled(void)
{
	if (enabled < 0) {
		const char *v = getenv("DECREE_TRACE_PERF");
		enabled = v && *v && strcmp(v, "0") ? 1 : 0;
	}
	return enabled == 1;
}

void trace_start(void)
{
	if (!trace_enabled())
		return;
	t0 = tprev = now_ms();
}

void trace_phase(const char *name)
{
	double t;

	if (!trace_enabled())
		return;
	t = now_ms();
	if (t0 == 0)
		t0 = tprev = t;
	fprintf(stderr, "decree: perf: %-24s %9.3f ms (+%.3f)\n", name, t - t0,
		t - tprev);
	tprev = t;
}
