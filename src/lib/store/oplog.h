/*
 * oplog.h - the undo/redo history of one project root.
 *
 * Every tree mutation (restore, apply, revert) pushes an entry listing each
 * path it changed with its state before and after (mode, size, object id,
 * or absent).  Undo writes the "before" states back and moves the entry to
 * the redo stack; redo writes the "after" states and moves it back.  A new
 * mutation clears the redo stack.  The objects named by entries are gc
 * roots.  At most OPLOG_MAX_UNDO entries are kept (oldest dropped).
 *
 * Damage is contained: each entry has its own checksum (docs/format.md),
 * so a damaged entry is one damaged entry.  oplog_load_all() keeps it in
 * its place, flagged, with its bytes; oplog_save() writes those back as
 * they were (still damaged), so that pushing a new entry (restore, apply)
 * never needs the old ones to be readable and never destroys them, while
 * undo/redo refuse an entry that is damaged.  Bytes that cannot even be
 * framed as entries (a damaged header, a cut file) become one damaged
 * entry holding all of them.  Dropping damaged entries is an explicit
 * decision (decree_history_drop_damaged).
 */
#ifndef DECREE_OPLOG_H
#define DECREE_OPLOG_H

#include "util/buf.h"
#include "util/sha256.h"
#include <stdbool.h>
#include <stdint.h>

#define OPLOG_MAX_UNDO 100

enum oplog_kind {
	OPLOG_RESTORE = 1,
	OPLOG_APPLY = 2,
	OPLOG_REVERT = 3,
	/* decree_workspace_discard: one change, path = the workspace's
	 * name, old side = the capture's tree (mode MODE_DIR); undo makes
	 * the workspace again (ops/workspace.c) */
	OPLOG_WORKSPACE = 4,
};

typedef struct {
	char *path;
	bool has_old, has_new;
	uint32_t old_mode, new_mode;
	uint64_t old_size, new_size;
	oid old_id, new_id;
} txn_change;

/* The two sides of a change, as both the history and the transaction log
 * store them (docs/format.md): flags u8 (1 old, 2 new), then mode u32,
 * size u64 and id[32] of the old side, and of the new side. */
#define TXN_CHANGE_SIDES_LEN 89
int txn_change_put_sides(buf *b, const txn_change *c);
/* Read them from TXN_CHANGE_SIDES_LEN bytes at p (path untouched). */
void txn_change_get_sides(txn_change *c, const unsigned char *p);

typedef struct {
	unsigned kind;
	char id[17]; /* hex id of the transaction that made it */
	int64_t time_ns;
	char *session; /* session for safety captures; may be NULL */
	char *what;    /* human description, e.g. the restored ref */
	txn_change *changes;
	size_t n;
	/* A damaged entry: none of the above is set.  Its bytes, kept to be
	 * written back as they were, and why it cannot be read. */
	bool damaged;
	/* An entry oplog_load_for_update did not read (not on top of its
	 * stack): none of the above is set either, its bytes and stored
	 * checksum are written back as they were, damaged or not. */
	bool opaque;
	unsigned char *raw;
	size_t raw_len;
	uint64_t raw_sum;   /* the checksum written with it */
	const char *damage; /* static text */
} oplog_entry;

typedef struct {
	oplog_entry *undo; /* oldest first; top = last */
	size_t nundo;
	oplog_entry *redo;
	size_t nredo;
	size_t ndamaged; /* damaged entries (oplog_load_all) */
} oplog;

#define OPLOG_INIT                  \
	{                           \
		NULL, 0, NULL, 0, 0 \
	}

/* Missing file = empty history.  Keeps damaged entries, flagged (see
 * above); fails only to read the file, when out of memory, or with
 * DECREE_ECORRUPT for a history of a version this code does not know
 * (which must not be rewritten). */
int oplog_load_all(oplog *out, const char *path);
/* The same for a history update (oplog_push or oplog_move, then
 * oplog_save): only the top entry of each stack is read and checked, the
 * others are kept opaque.  The file is framed and copied, not decoded:
 * 0.03 ms for a history of 100 restores (208 KB), where oplog_load_all
 * takes 0.31 ms (in a loop, caches warm).  ndamaged counts only the
 * damage it saw. */
int oplog_load_for_update(oplog *out, const char *path);
/* The same, but a damaged entry is an error: DECREE_ECORRUPT naming the
 * file and the entry (for gc and fsck, which need every entry). */
int oplog_load(oplog *out, const char *path);
int oplog_save(const oplog *l, const char *path);
/* The bytes oplog_save writes, appended to out. */
int oplog_encode(buf *out, const oplog *l);
/* The history updates of a mutation, idempotent (a recovery may do one
 * again): oplog_push puts a copy of e on the undo stack and clears the
 * redo stack, unless e (by id) is on top already; oplog_move moves the
 * entry `id` from the top of the undo stack to the redo stack (undo
 * true) or back, unless it is not on top (moved already).  0: l changed
 * (save it), 1: nothing to do, <0: out of memory. */
int oplog_push(oplog *l, const oplog_entry *e);
int oplog_move(oplog *l, bool undo, const char *id);
/* The history at `path` (damaged entries kept as they are) with e pushed
 * (e not NULL) or `id` moved, saved when that changed it. */
int oplog_update(const char *path, const oplog_entry *e, bool undo,
		 const char *id);

/* Remove the damaged entries of both stacks; returns how many. */
size_t oplog_drop_damaged(oplog *l);
void oplog_release(oplog *l);
void oplog_entry_release(oplog_entry *e);

/* One entry to/from bytes (also used inside the WAL). */
int oplog_entry_encode(buf *out, const oplog_entry *e);
int oplog_entry_decode(oplog_entry *e, const unsigned char **p,
		       const unsigned char *end);

/* Deep copy. */
int oplog_entry_copy(oplog_entry *dst, const oplog_entry *src);

const char *oplog_kind_name(unsigned kind);

#endif
