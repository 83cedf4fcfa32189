/*
 * pipeline/check.h - what must hold before the pipeline queues or runs
 * anything (docs/pipeline.md "Checks before a run"): every routine that
 * will run exists, a notebook finds papermill, and a routine that calls
 * the AI command finds it.
 *
 * Invariants: nothing here writes; the router is never asked (a routine
 * it will pick is unknown until then: its fallback, default_routine, is
 * what is checked).  A check names every message concerned in one
 * message, so the user fixes them all at once.
 */
#ifndef DECREE_PIPELINE_CHECK_H
#define DECREE_PIPELINE_CHECK_H

#include "decree/pipeline.h"
#include "pipeline/routine.h"
#include "util/buf.h"

/* The routine of a spec file's own frontmatter (input_file relative to
 * root, or absolute): *out owned, NULL when it names none or cannot be
 * read.  0 or -1 (out of memory). */
int spec_routine(char **out, const char *root, const char *input_file);

/* An absolute input_file inside the project becomes relative (into
 * fixed, PATH_MAX; "" when unchanged); a relative one must exist.  0, or
 * DECREE_EINVALID naming it.  NULL: nothing to check. */
int check_input(char *fixed, size_t len, const decree_project *p,
		const char *input);

/* Why routine ri cannot run here, into why: a notebook without
 * papermill on PATH, or a routine that calls the AI command while
 * commands.ai is unset or its program not found; false when it can. */
bool check_runnable(buf *why, const decree_project *p,
		    const decree_routine_info *ri);

/* The checks of decree_pipeline_check (decree/pipeline.h) with the
 * routines already listed: a request, or what waits (the inbox, and with
 * specs the specs decree_pipeline_process would queue).  0,
 * DECREE_ENOTFOUND or DECREE_EINVALID with the message set, -1. */
int check_request(const decree_project *p, const decree_routine_list *l,
		  const decree_run_request *rq);
int check_queue(const decree_project *p, const decree_routine_list *l,
		bool specs);
/* What decree_pipeline_run (rq: the request, then the inbox) or
 * decree_pipeline_process (rq NULL: the inbox and the specs) checks. */
int check_before(const decree_project *p, const decree_routine_list *l,
		 const decree_run_request *rq);

#endif
