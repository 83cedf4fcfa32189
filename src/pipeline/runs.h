/*
 * pipeline/runs.h - run directories: .decree/runs/<id>/ and what goes in.
 *
 * Invariants: every file of a run directory is written atomically (temp,
 * fsync, rename, directory fsync), so a crash leaves each artifact whole
 * or absent; outcome.json is written last, so a run without one did not
 * finish.  A re-queued message gets a fresh directory: the old one is
 * renamed <id>.old-N, never overwritten.
 */
#ifndef DECREE_PIPELINE_RUNS_H
#define DECREE_PIPELINE_RUNS_H

#include "decree/pipeline.h"
#include "util/buf.h"

/* Create the run directory of `id` into out (PATH_MAX). */
int run_dir_make(char *out, const decree_project *p, const char *id);

/* manifest.json of checkpoint ck (docs/pipeline.md). */
int run_write_manifest(decree_store *s, const char *ck, const char *path);

/* The diff from checkpoint ck to the working tree; *nfiles (may be NULL)
 * counts its records. */
int run_write_diff(decree_store *s, const char *ck, const char *path,
		   size_t *nfiles);

/* outcome.json in dir. */
int run_write_outcome(const char *dir, const char *id, const char *file,
		      const char *routine, decree_run_outcome o, int attempts,
		      const char *reason, int64_t started);

/* The last `max` bytes of a log (from a line start), for
 * failure-context.md; "(no output)" when it has none. */
void run_log_tail(buf *out, const char *path, size_t max);

/* Put the tree back to checkpoint ck and verify every path against it:
 * any difference afterwards is DECREE_EVERIFY naming the paths. */
int run_revert_to(decree_store *s, const char *ck);

#endif
