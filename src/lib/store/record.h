/*
 * record.h - checkpoint records of one project root.
 *
 * A record is a small JSON document in <rootdir>/checkpoints/<id>, where
 * id is the SHA-256 of the record's bytes: a damaged record is detected
 * when it is read, and a record is never modified, only written whole
 * (last, after every object it names is durable) or removed.  The format
 * is in docs/format.md.  <rootdir>/checkpoints.cache keeps the parsed
 * fields of every record so that a listing reads one file; it is only a
 * cache (the directory listing is the truth).
 */
#ifndef DECREE_RECORD_H
#define DECREE_RECORD_H

#include "decree/checkpoint.h"
#include "store/snap.h"

/* The session of a checkpoint created without one. */
#define RECORD_DEFAULT_SESSION "default"

typedef struct {
	decree_checkpoint_info info; /* strings point to the owned ones below */
	char *session, *message, *label, *root;
	oid tree;
} record;

void record_release(record *r);

/* Every record of this root, oldest first.  A record that cannot be read
 * is skipped and noted on the handle (s->damaged, until the next call). */
int record_load_all(record **out, size_t *n, decree_store *s);
void record_free_all(record *v, size_t n);

/* Load the record file at `path` (verifies its id). */
int record_load_file(record *out, const char *path, const char *id);

/* Resolve a reference (full id, >= 4 hex prefix, SESSION:MESSAGE); the
 * record is read from its file and verified. */
int record_resolve(record *out, decree_store *s, const char *ref);

/* Write the record of a checkpoint of `cur` whose root tree is `tree`
 * (every object it names must be durable already); its id goes to
 * id_out.  session NULL: RECORD_DEFAULT_SESSION. */
int record_save(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		const oid *tree, const snap *cur, const char *session,
		const char *message, const char *label);

/* Delete one record (no directory fsync). */
int record_remove(decree_store *s, const char *id);

/* Delete the damaged records the last record_load_all noted that belong
 * to `session` (NULL: every one, also those whose session cannot be read;
 * records that are merely unreadable are kept).  Counts them in *removed
 * and marks them removed.  No directory fsync. */
int record_remove_damaged(size_t *removed, decree_store *s,
			  const char *session);

#endif
