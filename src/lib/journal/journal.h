/*
 * journal.h - the agent-write journal of one agent session.
 *
 * src/lib/journal keeps, per agent session of a root, what the agent did
 * turn by turn: the turns (each with the checkpoint taken before it), the
 * starts of tools that may write, and the paths tools changed with what
 * they left there.  It uses util and store (the handle's root directory)
 * and knows nothing of scanning or restoring: ops/agent.c decides what to
 * record, ops/restore.c what to revert.
 *
 * File: <store>/roots/<key>/journal/<first 32 hex of SHA-256(session)>,
 * append-only, one record per line (docs/format.md):
 *     <16 hex: the first 8 bytes of SHA-256 of JSON> ' ' JSON '\n'
 * The first record names the session (the next turn names it again when
 * that record was damaged).  Every append is one write(2) of
 * whole lines with O_APPEND under an flock of the file, so parallel hooks
 * interleave whole records.  A line that does not check out (a torn last
 * line after a crash, damage) is skipped and counted: the journal is an
 * account of the agent's writes, never needed to read the store, and a
 * lost record only makes an agent-only restore revert less.
 */
#ifndef DECREE_JOURNAL_H
#define DECREE_JOURNAL_H

#include "decree/store.h"
#include "util/sha256.h"

#include <stdbool.h>
#include <stdint.h>

#define JOURNAL_DIR "journal"

typedef enum {
	JR_SESSION = 1, /* first record: session, agent */
	JR_TURN,	/* a prompt: turn, message, prompt, checkpoint */
	JR_START,	/* a tool that may write is starting: tool, tool_id */
	JR_WRITE,	/* a tool changed path: present/mode/id */
} jr_type;

typedef struct {
	jr_type type;
	unsigned turn; /* the turn the record belongs to (1-based) */
	int64_t time_ns;
	const char *session, *agent;	    /* JR_SESSION */
	const char *message, *prompt;	    /* JR_TURN (prompt: first line) */
	char checkpoint[SHA256_HEXLEN + 1]; /* JR_TURN */
	const char *tool, *tool_id;	    /* JR_START, JR_WRITE */
	const char *path;		    /* JR_WRITE, root-relative */
	bool present;			    /* JR_WRITE: false = deleted */
	uint32_t mode;			    /* JR_WRITE, present */
	oid id;				    /* JR_WRITE, present */
} jr_record;

/* A journal read whole: the records in file order (their strings live as
 * long as the journal), how many lines were skipped. */
typedef struct {
	jr_record *v;
	size_t n, cap;
	size_t damaged;
	struct jr_strings *strings;
} journal;
#define JOURNAL_INIT                \
	{                           \
		NULL, 0, 0, 0, NULL \
	}

/* An open journal file, locked (flock LOCK_EX) until journal_close. */
typedef struct {
	int fd;
	char path[4096];
} journal_file;

/* Open (creating the directory and file when `create`) and lock the
 * journal of `session`.  DECREE_ENOTFOUND when it does not exist and not
 * `create`. */
int journal_open(journal_file *f, decree_store *s, const char *session,
		 bool create);
void journal_close(journal_file *f);

/* Read the whole journal of an open file (appends to j). */
int journal_read(journal *j, journal_file *f);
/* Read the journal at a path without locking it (listing; a restore,
 * which holds the store lock that a hook holding the journal's lock may
 * be waiting for).  An append in progress reads as a torn last line. */
int journal_read_path(journal *j, const char *path);
void journal_release(journal *j);

/* Append records as one write; with sync, fdatasync after. */
int journal_append(journal_file *f, const jr_record *v, size_t n, bool sync);

/* Replace the journal at `path` with the records of j (fsck --repair:
 * what could be read), atomically. */
int journal_rewrite(const char *path, const journal *j);

/* The journal file of `session` (whether it exists or not). */
int journal_path(char *out, size_t len, const decree_store *s,
		 const char *session);

/* The journal directory of the handle's root (out: PATH_MAX). */
void journal_dir(char *out, const decree_store *s);

/* The last JR_TURN of j, or NULL. */
const jr_record *journal_last_turn(const journal *j);

#endif
