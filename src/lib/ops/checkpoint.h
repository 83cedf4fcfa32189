/*
 * checkpoint.h - what the other operations use of checkpoint.c: writing a
 * checkpoint of a scanned tree (restore's "pre-restore" capture, apply's
 * "exec-failed" capture, undo's "pre-undo").  Checkpoint records are in
 * store/record.h, scanning the working tree in scan/worktree.h.
 *
 * src/lib/ops implements the public API, one file per public header
 * (checkpoint, restore, diff, apply, maint); it may use every other engine
 * folder.  Invariants:
 *  - a call that changes records, history, objects or the tree takes the
 *    lock with txn_lock(), which finishes an interrupted transaction
 *    first; reading calls take no lock;
 *  - files in the tree are changed only through txn_run(), and only after
 *    every byte it overwrites or deletes is in the store (see txn.h for
 *    the one directory clean-up outside it);
 *  - messages state what happened; what to type next is for the program
 *    (src/cli) to say;
 *  - calls between these files go one way: restore.c and apply.c use
 *    checkpoint.c (checkpoint_write); checkpoint.c uses none of them.
 */
#ifndef DECREE_OPS_CHECKPOINT_H
#define DECREE_OPS_CHECKPOINT_H

#include "decree/checkpoint.h"
#include "scan/statcache.h"
#include "scan/worktree.h"
#include "store/odb.h"
#include "store/record.h"
#include "store/snap.h"
#include "util/buf.h"

#include <pthread.h>

/* The labels of the captures decree makes (decree_checkpoint_is_capture):
 * a capture is written with no message and one of these. */
#define CAPTURE_PRE_RESTORE "pre-restore"
#define CAPTURE_PRE_UNDO    "pre-undo"
#define CAPTURE_PRE_REDO    "pre-redo"
#define CAPTURE_EXEC_FAILED "exec-failed"

/* Write trees of `cur` through w, commit w, write the record.  Returns
 * the new id in id_out.  The caller holds the lock.  A file the stat
 * cache vouched for whose object has no intact copy is stored again from
 * the tree first (and its entry updated if it changed meanwhile), so the
 * record never names an object that cannot be read. */
int checkpoint_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		     odb_writer *w, snap *cur, const char *session,
		     const char *message, const char *label);

/*
 * checkpoint_write_meta in two halves, for a caller with other work to do
 * meanwhile (a restore's transaction, which mostly waits for the disk).
 * checkpoint_write_begin stores the trees and commits w, so every object
 * of cur is durable when it returns 0; it then counts the changes and
 * writes the record on another thread (at once, when no thread can be
 * started).  checkpoint_write_end waits for that and returns what
 * checkpoint_write_meta would, with the id in id_out; call it exactly
 * once after a begin that returned 0.  Until then cur and m stay as they
 * are, and the cache belongs to the caller again only after it (the
 * trees built are handed to it in begin).
 */
typedef struct {
	decree_store *s;
	const snap *cur;
	record_meta *m;
	oid root;
	tree_ids ids;
	char id[DECREE_ID_HEXLEN + 1];
	int r; /* the record's result, and its message */
	char msg[1024];
	pthread_t thread;
	bool running, pending;
} checkpoint_pending;
int checkpoint_write_begin(checkpoint_pending *p, decree_store *s,
			   odb_writer *w, snap *cur, record_meta *m,
			   statcache *cache);
int checkpoint_write_end(checkpoint_pending *p,
			 char id_out[DECREE_ID_HEXLEN + 1]);

/* Merge the store's small packs once there are more than a few (every
 * checkpoint and capture adds one; each object lookup searches them
 * all).  After the work is complete: a failure only costs speed, so it
 * is cleared, never returned. */
void checkpoint_repack_small(decree_store *s);

/* checkpoint_write with all a record says (record_meta): the session,
 * message, label and the scan rules `cur` was scanned with (a capture
 * made with a checkpoint's view must record it, or restoring the capture
 * would delete what that view left out).  The change counts against the
 * session's previous checkpoint are computed here and set in *m (-1 when
 * they cannot be: the checkpoint is made anyway).  tree_out (may be
 * NULL): the root tree.  cache (may be NULL): the stat cache of the scan
 * that made cur; the trees it vouches for are taken as they are
 * (statcache_tree_hints, tree_write_known), and it takes the ids built for
 * its next save (statcache_trees_built). */
int checkpoint_write_meta(char id_out[DECREE_ID_HEXLEN + 1], oid *tree_out,
			  decree_store *s, odb_writer *w, snap *cur,
			  record_meta *m, statcache *cache);

/* The scan rules of a checkpoint (borrowed from rec). */
static inline void checkpoint_view(worktree_view *out, const record *rec)
{
	out->excludes = (const char *const *)rec->excludes;
	out->max_file_size = rec->max_file_size;
	out->config = (const char *const *)rec->config_excludes;
	out->config_known = rec->config_known;
}

/* The bytes at `path` below rootfd as an entry of `mode` would store them:
 * a file's content, a symlink's target.  Never follows a symlink on the
 * way, never blocks on a FIFO.  DECREE_ENOTFOUND when it is gone or of
 * another kind. */
int checkpoint_read_path(buf *out, int rootfd, const char *path, uint32_t mode);

#endif
