/*
 * decree/checkpoint.h - checkpoints: create, list, resolve, show, compare,
 * prune, drop.  Restoring one is in decree/restore.h, its diff in
 * decree/diff.h.
 *
 * A checkpoint is a snapshot of the scanned part of the project root (see
 * docs/scanning.md), with a session (timeline), optional message and label.
 * Ids are 64 lowercase hex digits; references (REF) accept a full id, a
 * unique prefix of at least 4 hex digits, or "SESSION:MESSAGE".  Every
 * checkpoint also has a tree id: the id of its root tree object (64 hex),
 * equal for two checkpoints exactly when they hold the same files.
 *
 * Ownership: lists and snapshots returned through **out belong to the
 * caller and are freed with their _free function (NULL is fine).  Pointers
 * returned by getters live as long as their parent.
 *
 * Errors: every function returns 0 or a negative decree_error_code;
 * decree_error_last() has the message.
 */
#ifndef DECREE_CHECKPOINT_H
#define DECREE_CHECKPOINT_H

#include "common.h"
#include "store.h"

DECREE_BEGIN_DECL

#define DECREE_ID_HEXLEN 64

/** Metadata of one checkpoint (strings may be NULL when unset). */
typedef struct {
	char id[DECREE_ID_HEXLEN + 1];
	const char *session;
	const char *message;
	const char *label;
	int64_t created_ns;  /**< Unix time in nanoseconds */
	char created_at[40]; /**< RFC 3339 UTC, second precision */
	uint64_t file_count;
	uint64_t total_bytes;
	uint64_t skipped_count;
	bool has_changes; /**< only set by decree_checkpoint_list */
	char tree[DECREE_ID_HEXLEN + 1]; /**< root tree object id */
	/** Against the previous checkpoint of the same session (the first
	 *  one: against an empty tree): files added, deleted or changed
	 *  (content or mode), and lines inserted and deleted in text files
	 *  (a binary or skipped file counts as changed with 0 lines).
	 *  Computed when the checkpoint is made; -1 for checkpoints made
	 *  before decree kept them. */
	int64_t files_changed;
	int64_t insertions;
	int64_t deletions;
} decree_checkpoint_info;

#define DECREE_CHECKPOINT_CREATE_OPTIONS_VERSION 2
typedef struct {
	unsigned version;
	const char *session; /**< NULL: "default" */
	const char *message; /**< one checkpoint per (session, message) */
	const char *label;
	/* version 2: */
	/** Create nothing when the working tree equals (same tree id) the
	 *  session's latest checkpoint: that one is returned, *created
	 *  false. */
	bool if_changed;
	/** Extra ignore patterns (gitignore syntax, one line of UTF-8 each),
	 *  NULL-terminated, added to the store's.  They are kept in the
	 *  checkpoint: every later restore, diff or compare of it honours
	 *  them, so a restore never deletes what they exclude. */
	const char *const *excludes;
	/** Files above this many bytes are not stored, only recorded as
	 *  skipped (0: the store's limit).  Kept in the checkpoint, as
	 *  excludes are: it replaces the store's limit for every later
	 *  comparison with it. */
	uint64_t max_file_size;
} decree_checkpoint_create_options;
#define DECREE_CHECKPOINT_CREATE_OPTIONS_INIT                               \
	{                                                                   \
		DECREE_CHECKPOINT_CREATE_OPTIONS_VERSION, NULL, NULL, NULL, \
			false, NULL, 0                                      \
	}

/** What decree_checkpoint_create_ext made or found. */
typedef struct {
	char id[DECREE_ID_HEXLEN + 1];
	char tree[DECREE_ID_HEXLEN + 1]; /**< its root tree object id */
	bool created; /**< false: an existing checkpoint was returned */
	/** as in decree_checkpoint_info (-1: unknown) */
	int64_t files_changed, insertions, deletions;
} decree_checkpoint_created;

/**
 * Snapshot the working tree.  With a message that already has a checkpoint
 * in the session, or with if_changed and a tree equal to the session's
 * latest checkpoint, nothing is created and that checkpoint is returned
 * (*created false).  Options of version 1 are accepted.
 * @return 0, DECREE_ELOCKED, DECREE_EINVALID (bad options, session name or
 *         exclude pattern), -1.
 */
DECREE_API int
decree_checkpoint_create(char id_out[DECREE_ID_HEXLEN + 1], bool *created,
			 decree_store *s,
			 const decree_checkpoint_create_options *opts);

/** The same, saying also the tree id and the change counts. */
DECREE_API int
decree_checkpoint_create_ext(decree_checkpoint_created *out, decree_store *s,
			     const decree_checkpoint_create_options *opts);

/**
 * Is `c` a capture: a checkpoint decree made by itself to keep the tree as
 * it was just before it changed it, so that nothing is lost and `decree
 * undo` can bring it back?  Those are the "pre-restore" capture of a
 * restore (also of rollback and rewind), the "pre-undo" and "pre-redo"
 * captures of an undo or redo that found edits made after the operation,
 * and the "exec-failed" capture of an apply whose command failed.  A
 * capture has no message and one of those labels; every other checkpoint
 * (made by decree_checkpoint_create, an agent hook or a pipeline run) is
 * not one, unless it was given such a label and no message.  Listings
 * for people (`decree rollback`, `decree log`) number captures apart, so
 * that restoring never renumbers the checkpoints the user made.
 */
DECREE_API bool decree_checkpoint_is_capture(const decree_checkpoint_info *c);

typedef struct decree_checkpoint_list decree_checkpoint_list;

enum decree_list_flags {
	DECREE_LIST_HAS_CHANGES = 1 << 0, /**< compute has_changes (scans) */
};

/** Checkpoints of this root, oldest first; session NULL = all. */
DECREE_API int decree_checkpoint_list_get(decree_checkpoint_list **out,
					  decree_store *s, const char *session,
					  unsigned flags);
DECREE_API size_t decree_checkpoint_list_count(const decree_checkpoint_list *l);
DECREE_API const decree_checkpoint_info *
decree_checkpoint_list_at(const decree_checkpoint_list *l, size_t i);
DECREE_API void decree_checkpoint_list_free(decree_checkpoint_list *l);

/**
 * A checkpoint record that cannot be read: its bytes no longer match its
 * id, it is not a record, or the file cannot be read.  Every call that
 * lists records (list, resolving a reference, show, diff, restore,
 * create, prune, drop) skips such a record instead of failing, and keeps
 * what it skipped on the handle until the next such call, so that the
 * caller can warn about it.  decree_fsck names it; prune and drop delete
 * damaged records of the sessions they act on, and decree_fsck_ext with
 * DECREE_FSCK_REPAIR deletes every damaged record.  A record that cannot
 * be read for another reason (permissions, I/O errors) is only skipped.
 */
typedef struct {
	char id[DECREE_ID_HEXLEN + 1];
	const char *problem; /**< why it cannot be read (one line) */
	bool damaged; /**< its bytes are damaged (not merely unreadable) */
	bool removed; /**< the call deleted it (prune, drop) */
} decree_damaged_record;

/** How many records the last listing call on this handle skipped. */
DECREE_API size_t decree_checkpoint_damaged_count(const decree_store *s);
/** The i-th of them (NULL when out of range); lives until the next call
 * on the handle. */
DECREE_API const decree_damaged_record *
decree_checkpoint_damaged_at(const decree_store *s, size_t i);

/*
 * Notices: what a call did that a user would not expect and should hear
 * about, though nothing failed.  A call that can notice something
 * (decree_checkpoint_create, _create_ext, decree_checkpoint_restore,
 * decree_undo, decree_redo, decree_rewind) forgets the notices of the
 * call before it and keeps its own on the handle until the next such
 * call.  The message states what happened; what to type about it is for
 * the application to say.
 */
typedef enum {
	/** create: the ignore rules excluded nearly everything the scan saw
	 *  (at least 10 entries and 90% of them, a directory counting once,
	 *  what it hides not being looked at) and the checkpoint holds at
	 *  most 100 files.  count: entries excluded; files: files kept;
	 *  rule_source, rule, rule_count: the pattern that excluded most
	 *  and how many; checkpoint: the one made or returned. */
	DECREE_NOTICE_MOSTLY_IGNORED = 1,
	/** create with a message: the session has a checkpoint with that
	 *  message, which is returned unchanged (nothing is scanned).
	 *  checkpoint, created_at, session, msg: that checkpoint. */
	DECREE_NOTICE_EXISTING = 2,
	/** create: files above the size limit were not stored (only their
	 *  path and size are recorded).  count: how many; path, size: the
	 *  largest; limit: the size limit; checkpoint: the one made or
	 *  returned. */
	DECREE_NOTICE_TOO_LARGE = 3,
	/** undo, redo: paths edited after the operation they reverse were
	 *  overwritten or deleted; what they held is in the checkpoint
	 *  captured first (label pre-undo / pre-redo), so restoring those
	 *  paths from it brings the edits back.  count, paths, npaths: those
	 *  paths; checkpoint, label: the capture ("pre-undo" or
	 *  "pre-redo"). */
	DECREE_NOTICE_EDITS_SAVED = 4,
	/** undo, redo of a workspace discard (decree/workspace.h): the
	 *  workspace was made again, or discarded again.  label: its name;
	 *  path: its directory; count: 1 made again, 0 discarded. */
	DECREE_NOTICE_WORKSPACE = 5,
} decree_notice_kind;

/** "mostly_ignored", "existing", "too_large", "edits_saved", "workspace"
 * (the `kind` of a notice in `--json` output); "other" otherwise.
 * Static. */
DECREE_API const char *decree_notice_kind_name(decree_notice_kind k);

/** One notice (strings borrowed from the handle; NULL when unused). */
typedef struct {
	decree_notice_kind kind;
	const char *message; /**< one line, what happened */
	uint64_t count;
	uint64_t files;
	const char *path;
	uint64_t size;
	uint64_t limit;
	const char *rule_source; /**< ".gitignore", "sub/.decreeignore",
				    "exclude" (the store's or the
				    checkpoint's), "built-in" */
	const char *rule;	 /**< the pattern, as written */
	uint64_t rule_count;
	char checkpoint[DECREE_ID_HEXLEN + 1]; /**< "" when none */
	char created_at[40];		       /**< RFC 3339 UTC, or "" */
	const char *session;
	const char *msg;
	const char *label;
	const char *const *paths;
	size_t npaths;
} decree_notice;

/** How many notices the last call that can notice left on the handle. */
DECREE_API size_t decree_notice_count(const decree_store *s);
/** The i-th of them (NULL when out of range); lives until the next call
 * that can notice, or decree_store_free (copy a checkpoint id before
 * passing it to such a call). */
DECREE_API const decree_notice *decree_notice_at(const decree_store *s,
						 size_t i);

/** Resolve a reference.  DECREE_ENOTFOUND, DECREE_EAMBIGUOUS (message
 * lists the candidates), DECREE_EINVALID. */
DECREE_API int decree_checkpoint_resolve(char id_out[DECREE_ID_HEXLEN + 1],
					 decree_store *s, const char *ref);

/** File list of a checkpoint. */
typedef struct decree_snapshot decree_snapshot;
typedef struct {
	const char *path;
	char sha256[DECREE_ID_HEXLEN + 1]; /**< "" for skipped files */
	uint64_t size;
	unsigned mode; /**< permission bits of a file (0644, 0600, ...), 0120000
			  (symlink), 0 skipped */
	const char *skip_reason; /**< NULL unless skipped */
} decree_file_info;

DECREE_API int decree_checkpoint_show(decree_snapshot **out,
				      decree_checkpoint_info *info_out,
				      decree_store *s, const char *ref);
DECREE_API size_t decree_snapshot_count(const decree_snapshot *snap);
DECREE_API void decree_snapshot_at(decree_file_info *out,
				   const decree_snapshot *snap, size_t i);
DECREE_API void decree_snapshot_free(decree_snapshot *snap);

/**
 * Delete checkpoint records: keep the newest `keep` of the session (keep > 0)
 * and/or those younger than older_than_days (>= 0; -1 = unused).  Never
 * deletes the newest checkpoint of a session.  session NULL = every session.
 * @return 0, DECREE_EINVALID (neither keep nor older_than_days given),
 *         DECREE_ELOCKED, -1.
 */
DECREE_API int decree_checkpoint_prune(size_t *removed, decree_store *s,
				       const char *session, long keep,
				       long older_than_days);

/**
 * Delete a session's records for this root and the session's agent
 * journal (decree/agent.h); session NULL = every record, the undo/redo
 * history and every agent journal of this root.  All or nothing, as
 * prune.  Then decree_gc frees the storage (and forgets a root left with
 * nothing).  @return 0, DECREE_ELOCKED, -1.
 */
DECREE_API int decree_checkpoint_drop(size_t *removed, decree_store *s,
				      const char *session);

/**
 * Delete one checkpoint record (any one, the newest of a session too), all
 * or nothing, as prune: under the lock, after recovery, so an interrupted
 * transaction that cannot be finished makes it refuse
 * (DECREE_EUNFINISHED or DECREE_ELOGDAMAGED) and nothing is deleted.
 * @return 0, DECREE_ENOTFOUND, DECREE_EAMBIGUOUS, DECREE_EINVALID (a bad
 *         reference), DECREE_ECORRUPT (the record is damaged: fsck
 *         --repair deletes it), DECREE_ELOCKED, -1.
 */
DECREE_API int decree_checkpoint_delete(decree_store *s, const char *ref);

/** Per-path difference between a checkpoint and the working tree (ref2 NULL)
 * or another checkpoint.  status: 'A' added, 'D' deleted, 'M' modified
 * (content or mode), as seen going from ref to ref2/worktree. */
typedef int (*decree_change_cb)(void *payload, const char *path, char status);
DECREE_API int decree_checkpoint_compare(decree_store *s, const char *ref,
					 const char *ref2, decree_change_cb cb,
					 void *payload);

DECREE_END_DECL

#endif
