/*
 * run.c - "decree hook AGENT EVENT" (hooks.h).  Being written: see
 * docs/agents.md once it lands.
 */
#include "util/common.h"
#include "hooks.h"

int hook_run(const hook_request *rq)
{
	(void)rq;
	return -1;
}
