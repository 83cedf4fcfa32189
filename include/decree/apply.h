/*
 * decree/apply.h - atomic application of a unified diff to the working
 * tree, optionally followed by a command that must succeed.
 *
 * Overview: the patch is parsed whole, then every file patch is checked
 * against the current bytes; only if everything applies are the files
 * written, as one crash-safe transaction (docs/transactions.md) pushed on
 * the undo history (decree_undo, decree/restore.h, reverts it).  Accepted
 * input: the format of docs/diff-format.md, which includes diff -u, diff
 * -ruN and git diff output.
 *
 * Calling sequence: fill a decree_apply_options from
 * DECREE_APPLY_OPTIONS_INIT; the report callback sees every path before
 * anything is written, the progress callback each step as it happens.
 *
 * Ownership: everything passed to a callback is borrowed for the duration
 * of the call; the result is a plain struct filled by the call.
 *
 * Errors: 0 or a negative decree_error_code; decree_error_last() has the
 * one-line message.
 */
#ifndef DECREE_APPLY_H
#define DECREE_APPLY_H

#include "common.h"
#include "checkpoint.h"
#include "restore.h"
#include "store.h"

DECREE_BEGIN_DECL

/** What apply does (or would do) to one path. */
typedef enum {
	DECREE_APPLY_CREATE = 1,
	DECREE_APPLY_MODIFY = 2,
	DECREE_APPLY_DELETE = 3,
	DECREE_APPLY_SKIP = 4,	   /**< already equal to the patch result */
	DECREE_APPLY_CONFLICT = 5, /**< does not apply; detail says why */
} decree_apply_action;

/** "create", "modify", "delete", "skip", "conflict" (`apply --check
 * --json`'s actions); "other" otherwise.  Static. */
DECREE_API const char *decree_apply_action_name(decree_apply_action a);

/** Per-path report, called for every path before anything is written
 * (detail: the conflict message, or NULL). */
typedef void (*decree_apply_report_cb)(void *payload, const char *path,
				       decree_apply_action action,
				       const char *detail);

/** Checks the final state of every path the patch touches before anything
 * is written (exists false: absent; mode: a file's permission bits, 0120000 for
 * a link; sha256 of the content or link target).  Non-zero: the path is wrong,
 * nothing is written and decree_apply fails with DECREE_EVERIFY naming it. */
typedef int (*decree_apply_verify_cb)(void *payload, const char *path,
				      bool exists, unsigned mode,
				      const char *sha256_hex);

/* Version 2 added `cancel`; version 1 structs are still accepted. */
#define DECREE_APPLY_OPTIONS_VERSION 2
typedef struct {
	unsigned version;
	bool check_only; /**< check and report; write nothing */
	bool reverse;	 /**< apply new -> old (patch -R) */
	int strip;	 /**< leading components to strip (-pN); -1: auto */
	/** Run after the writes with /bin/sh -c in the root; if it fails the
	 * tree is put back as before the apply (see decree_apply). */
	const char *exec;
	bool exec_stdout_to_stderr; /**< keep stdout for machine output */
	const char *session;	    /**< session of safety captures
				       (NULL: "default") */
	decree_apply_report_cb report;
	decree_progress_cb progress;   /**< phase per path as it is written or
					  rolled back */
	decree_apply_verify_cb verify; /**< NULL: no check */
	void *payload;
	/** May be NULL.  As decree_restore_options.cancel: polled between
	 * files until the writes commit; non-zero rolls them back and the
	 * call fails with DECREE_ECANCELLED.  Not looked at while `exec`
	 * runs or while its failure is rolled back. */
	const volatile int *cancel;
} decree_apply_options;
#define DECREE_APPLY_OPTIONS_INIT                                            \
	{                                                                    \
		DECREE_APPLY_OPTIONS_VERSION, false, false, -1, NULL, false, \
			NULL, NULL, NULL, NULL, NULL, NULL                   \
	}

typedef struct {
	size_t created, modified, deleted, skipped, conflicts;
	bool exec_ran;
	int exec_status; /**< exit status, or 128 + signal number */
	/** The command failed and the tree was put back: */
	size_t restored, removed, swept;
	char exec_checkpoint[DECREE_ID_HEXLEN + 1]; /**< capture of the tree
						       the failed command left
						       ("" if none) */
} decree_apply_result;

/**
 * Apply a unified diff to the working tree as one transaction.  Every
 * file patch is checked against the current bytes first; a file whose
 * bytes already equal the result is skipped (not written).  Any conflict
 * (context mismatch, file to create exists, file to delete differs) is
 * reported per path and nothing is written.  Otherwise all files are
 * written all-or-nothing and crash-safe, and the change is pushed on the
 * undo history (decree_undo reverts it).
 *
 * With opts->exec the command runs after the commit; if it exits non-zero
 * (or is killed) the tree the command left is captured (checkpoint
 * labelled "exec-failed"), then put back in one transaction: files the
 * patch or the command changed are restored, files the patch created are
 * removed, files that appeared while the command ran are swept (ignored
 * files excepted); the apply moves to the redo history, and the call
 * fails with DECREE_EEXEC.  If putting the tree back fails, the call fails
 * with that error instead while result->exec_ran is true and
 * result->exec_status non-zero: the patch is still applied (decree_undo
 * reverts it, after decree_recover if the error is DECREE_EUNFINISHED).
 *
 * @param name  how messages call the patch ("fix.diff", "<stdin>")
 * @return 0; DECREE_EINVALID (malformed or unsafe patch),
 *         DECREE_ECONFLICT (conflicts, or the tree changed meanwhile),
 *         DECREE_EVERIFY (opts->verify refused a result),
 *         DECREE_EAPPLY, DECREE_EEXEC (the command failed; rolled back),
 *         DECREE_ELOCKED, DECREE_ECORRUPT (a stored copy is damaged;
 *         nothing was written), DECREE_EUNFINISHED (a failure whose
 *         rollback failed too: the log stays for decree_recover), -1.
 *         Once the writes are committed the call does not fail for the
 *         bookkeeping after them: see decree_warning_last().
 */
DECREE_API int decree_apply(decree_apply_result *result, decree_store *s,
			    const char *name, const char *text, size_t len,
			    const decree_apply_options *opts);

DECREE_END_DECL

#endif
