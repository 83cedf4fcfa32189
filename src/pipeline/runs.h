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
#include "util/fs.h"

#include <pthread.h>

/* Create the run directory of `id` into out (PATH_MAX). */
int run_dir_make(char *out, const decree_project *p, const char *id);

/* A manifest.json written, its fsyncs running on a thread of their own
 * (RUN_MANIFEST_INIT: none). */
typedef struct {
	fs_pending file;
	pthread_t thread;
	bool syncing; /* thread started */
} run_manifest;
#define RUN_MANIFEST_INIT                 \
	{                                 \
		FS_PENDING_INIT, 0, false \
	}

/* manifest.json of checkpoint ck (docs/pipeline.md).  With `later` NULL
 * it is durable on return; else it is complete under its name (temp +
 * rename) and durable once run_manifest_wait(later) returned 0. */
int run_write_manifest(decree_store *s, const char *ck, const char *path,
		       run_manifest *later);
/* Wait for the fsyncs of a manifest written with `later` (nothing
 * pending: 0) and report a failure. */
int run_manifest_wait(run_manifest *m);

/* The diff from checkpoint ck to the working tree; *nfiles (may be NULL)
 * counts its records.  `man` (may be NULL): a manifest made durable
 * before the diff is written (the diff is computed meanwhile), so a run
 * directory with a diff always has a durable manifest. */
int run_write_diff(decree_store *s, const char *ck, const char *path,
		   size_t *nfiles, run_manifest *man);

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
