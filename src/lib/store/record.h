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
#include "util/oidset.h"

/* The session of a checkpoint created without one. */
#define RECORD_DEFAULT_SESSION "default"

typedef struct {
	decree_checkpoint_info info; /* strings point to the owned ones below */
	char *session, *message, *label, *root;
	oid tree;
	/* The scan rules the checkpoint was made with beyond the store's
	 * (create --exclude, --max-file-size): every later comparison of the
	 * working tree with it (restore, diff, compare, has_changes) scans
	 * with them too.  excludes: NULL-terminated, NULL when none;
	 * max_file_size 0: the store's limit. */
	char **excludes;
	uint64_t max_file_size;
	/* The config's excludes in force when it was made (config_known;
	 * NULL when there were none): later comparisons scan with these, not
	 * with the config of today.  A record written before decree kept
	 * them has config_known false (the store's excludes apply). */
	char **config_excludes;
	bool config_known;
} record;

/* What a new record says besides its tree and totals. */
typedef struct {
	const char *session; /* NULL: RECORD_DEFAULT_SESSION */
	const char *message, *label;
	const char *const *excludes; /* scan rules to record (see record) */
	uint64_t max_file_size;
	/* against the session's previous checkpoint; -1: unknown */
	int64_t files_changed, insertions, deletions;
	/* the config's excludes the scan used: config_known, `config`;
	 * else the store's (s->excludes) */
	const char *const *config;
	bool config_known;
	/* the root's records, when the caller has loaded them already under
	 * the lock it still holds (known_loaded; sorted as record_load_all
	 * leaves them): the change counts find the previous checkpoint there
	 * instead of loading every record again */
	const record *known;
	size_t nknown;
	bool known_loaded;
} record_meta;
#define RECORD_META_INIT                                                     \
	{                                                                    \
		NULL, NULL, NULL, NULL, 0, -1, -1, -1, NULL, false, NULL, 0, \
			false                                                \
	}

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
 * id_out.  Every record names the config's excludes it was made with
 * (config_excludes, possibly empty).  A record with config excludes is
 * version 3, else one with scan rules of its own (m->excludes,
 * m->max_file_size) version 2, any other version 1 (docs/format.md). */
int record_save(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		const oid *tree, const snap *cur, const record_meta *m);

/* Is every pattern of the NULL-terminated list v (NULL: none) one an
 * exclude list can record (one line of valid UTF-8)?  0, or
 * DECREE_EINVALID naming the first that is not. */
int record_check_patterns(const char *const *v);

/* Delete one record (no directory fsync). */
int record_remove(decree_store *s, const char *id);

/*
 * Removing records is all or nothing (prune, drop; docs/transactions.md,
 * "Removing checkpoints"): record_drop_commit writes the ids to remove to
 * <rootdir>/checkpoints.drop; once it returns 0 they are removed for every
 * reader (record_load_all skips them), and record_drop_finish deletes
 * their files and then the list.  A failing record_drop_commit changed
 * nothing.  RECORD_DROP_ALL: the finish also deletes the history and the
 * stat cache (a drop of every session).
 */
#define RECORD_DROP_ALL 1u
int record_drop_commit(decree_store *s, const oid *ids, size_t n,
		       unsigned flags);

/* The same, also deleting the agent journal of `session` (NULL: none;
 * with RECORD_DROP_ALL the whole journal directory goes anyway). */
int record_drop_commit_journal(decree_store *s, const oid *ids, size_t n,
			       unsigned flags, const char *session);

/* The name of a session's agent journal in <rootdir>/journal/: the first
 * 32 hex digits of SHA-256 of the session (out: 33 bytes). */
void record_journal_key(char out[33], const char *session);

/* Finish an unfinished removal, if there is one (*done: there was).  A
 * list that cannot be read as one is removed, its records kept, with a
 * warning.  On failure the list stays, for the next call. */
int record_drop_finish(bool *done, decree_store *s);

/* Add the ids an unfinished removal lists to `gone`.  DECREE_ENOTFOUND:
 * there is none; DECREE_ECORRUPT: its list is damaged. */
int record_drop_pending(oidset *gone, decree_store *s);

/* Check the list of an unfinished removal of root `rootdir` (fsck): 0,
 * DECREE_ENOTFOUND (none) or DECREE_ECORRUPT. */
int record_drop_check(const char *rootdir);

#endif
