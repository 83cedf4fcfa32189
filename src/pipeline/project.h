/*
 * pipeline/project.h - the decree_project handle, shared by the pipeline's
 * modules.
 *
 * Invariants: root is absolute with symlinks resolved and holds
 * .decree/inbox/ (checked at open); cfg is read once at open and never
 * changes; the store is opened on first use with cfg and the open
 * options, and closed with the handle.
 */
#ifndef DECREE_PIPELINE_PROJECT_H
#define DECREE_PIPELINE_PROJECT_H

#include "decree/project.h"

#include <limits.h>

struct decree_project {
	char root[PATH_MAX];
	decree_config *cfg;
	char *store_path; /* override, or NULL */
	int lock_timeout_ms;
	unsigned threads;
	decree_store *store; /* opened on first use */
};

/* "<root>/<rel>" into out (PATH_MAX). */
void project_path(char *out, const decree_project *p, const char *rel);

#endif
