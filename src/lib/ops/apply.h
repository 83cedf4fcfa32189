/*
 * apply.h - the apply engine for operations that compute the final state
 * of each path themselves (workspace.c) instead of from a patch.
 *
 * An apply_set holds, per path, what stands on disk now (read when the
 * path is first named) and what must stand there afterwards.
 * apply_set_run then does what decree_apply does after checking hunks:
 * refuse shapes that cannot be written (a file where a directory stands,
 * below a file), report every path through o->report, refuse the whole set
 * if any path conflicts, let o->verify check every result, and write the
 * changed paths as one transaction pushed on the undo history (`what` is
 * its description), then run o->exec with the same rollback.
 *
 * Locking: the caller takes the lock (txn_lock) before naming paths, so
 * that what was read is what the transaction replaces; apply_set_run may
 * release and retake it around o->exec, and says in *locked whether it is
 * held on return (the caller releases it).
 */
#ifndef DECREE_OPS_APPLY_H
#define DECREE_OPS_APPLY_H
#include "decree/apply.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct apply_set apply_set;

int apply_set_new(apply_set **out);
void apply_set_free(apply_set *t); /* NULL is fine */

/* The final state of `path`: absent (exists false), or a file of `mode`
 * (MODE_REG | permissions) or a symlink (MODE_LINK, data = the target)
 * with these bytes. */
int apply_set_path(apply_set *t, decree_store *s, const char *path, bool exists,
		   uint32_t mode, const void *data, size_t len);

/* `path` cannot be carried over: the set is refused, `why` reported. */
int apply_set_conflict(apply_set *t, decree_store *s, const char *path,
		       const char *why);

/* Run the set (taken over: *t is left empty); returns as decree_apply. */
int apply_set_run(decree_apply_result *res, decree_store *s, apply_set *t,
		  const char *name, const char *what,
		  const decree_apply_options *o, bool *locked);

#endif
