/*
 * decree/pipeline.h - the decree pipeline: routines, messages, runs.
 *
 * Overview (docs/pipeline.md): a message is a markdown file with optional
 * YAML frontmatter in .decree/inbox/.  Processing one runs a routine
 * (.decree/routines/<name>.sh, or a notebook) in the project root under an
 * engine checkpoint (session "decree", message = the run id): attempts
 * 1..max_retries keep each other's changes; then the tree is reverted for
 * one clean-slate attempt; if that fails too the tree is reverted and the
 * message is dead-lettered.  Each message leaves a run directory
 * .decree/runs/<id>/ (manifest, logs, diffs, outcome.json).  Follow-ups a
 * routine writes to the inbox are processed depth-first.
 *
 * Calling sequence:
 *     decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
 *     po.events = on_event;          (progress; optional)
 *     po.cancel = &stop_flag;        (set non-zero to stop; optional)
 *     po.output = on_output;         (routine output as it is written;
 * optional) decree_pipeline_result res; int r = decree_pipeline_process(&res,
 * project, &po);
 *
 * Cancellation: the library installs no signal handler.  The host sets
 * *cancel (from a signal handler, another thread, a UI) and the pipeline
 * notices within a fraction of a second: a running routine's process
 * group gets SIGTERM (SIGKILL after 5 s), its partial work is diffed, the
 * tree reverted, the message stays in the inbox, and the call returns
 * DECREE_ECANCELLED.
 *
 * Threads: one call at a time per project handle.  Two processes never
 * process one project at once: the second waits (DECREE_EVENT_WAITING).
 *
 * Ownership: everything an event or a list points to is borrowed: for the
 * duration of the callback, or as long as the list.
 *
 * Errors: 0 or a negative decree_error_code; decree_error_last() has the
 * one-line message.  A dead-lettered message is not an error: it is an
 * outcome, counted in decree_pipeline_result.
 */
#ifndef DECREE_PIPELINE_H
#define DECREE_PIPELINE_H

#include "common.h"
#include "apply.h"
#include "project.h"

DECREE_BEGIN_DECL

/* --- routines ------------------------------------------------------------ */

/** A custom parameter a routine declares, with its default ("" if none). */
typedef struct {
	const char *name;
	const char *def;
} decree_routine_param;

typedef struct {
	const char *name;    /**< file stem */
	const char *path;    /**< absolute path of the .sh or .ipynb */
	const char *summary; /**< first comment line, or NULL */
	bool notebook;
	const decree_routine_param *params; /**< in declaration order */
	size_t nparams;
	/** the routine calls the AI command: a line of it that is not a
	 * comment names DECREE_AI_COMMAND (a notebook: a line of a code
	 * cell), so it cannot run without commands.ai */
	bool needs_ai;
} decree_routine_info;

typedef struct decree_routine_list decree_routine_list;

/** The project's routines sorted by name (notebooks only with
 * notebook_support; a name with both forms is the shell routine).
 * @return 0; DECREE_EINVALID (a notebook that is not JSON); -1. */
DECREE_API int decree_routine_list_get(decree_routine_list **out,
				       decree_project *p);
DECREE_API size_t decree_routine_list_count(const decree_routine_list *l);
DECREE_API const decree_routine_info *
decree_routine_list_at(const decree_routine_list *l, size_t i);
/** The routine called `name`, or NULL. */
DECREE_API const decree_routine_info *
decree_routine_list_find(const decree_routine_list *l, const char *name);
DECREE_API void decree_routine_list_free(decree_routine_list *l);

/* --- processing ---------------------------------------------------------- */

/** One frontmatter field. */
typedef struct {
	const char *key;
	const char *value;
} decree_field;

#define DECREE_RUN_REQUEST_VERSION 1
/** A new message for decree_pipeline_run. */
typedef struct {
	unsigned version;
	const char *name; /**< kebab-cased to 50 bytes; NULL: the spec's
			     stem, else the router's answer, else
			     "run-<chain>" */
	const char *body; /**< message body, or NULL */
	/** routine, input_file (relative to the root), custom parameters;
	 * id, chain and seq are decree's and refused */
	const decree_field *fields;
	size_t nfields;
} decree_run_request;
#define DECREE_RUN_REQUEST_INIT                                 \
	{                                                       \
		DECREE_RUN_REQUEST_VERSION, NULL, NULL, NULL, 0 \
	}

/**
 * Check a request without running it: field names (letters, digits, '_',
 * '-'), values (UTF-8: frontmatter is YAML), no id, chain or seq.
 * decree_pipeline_run checks too; a program calls this first to tell a
 * usage error from a failed run.
 * @return 0; DECREE_EINVALID (the message says what is wrong).
 */
DECREE_API int decree_run_request_check(const decree_run_request *rq);

typedef enum {
	DECREE_RUN_UNFINISHED = 0, /**< no outcome recorded (yet) */
	DECREE_RUN_DONE = 1,
	DECREE_RUN_DEAD = 2,	    /**< dead-lettered */
	DECREE_RUN_INTERRUPTED = 3, /**< cancelled; the message stays queued */
	DECREE_RUN_ERROR = 4,	    /**< processing stopped on an error */
} decree_run_outcome;

/** "unfinished", "done", "dead", "interrupted", "error". */
DECREE_API const char *decree_run_outcome_name(decree_run_outcome o);

typedef enum {
	/** another process is running this project's pipeline: waiting */
	DECREE_EVENT_WAITING = 1,
	/** a request became inbox message `file` */
	DECREE_EVENT_QUEUED = 2,
	/** message `file` starts as run `id` with `routine` */
	DECREE_EVENT_STARTED = 3,
	/** attempt `attempt` exited with `status` (`clean_slate`); `path`:
	 * its log */
	DECREE_EVENT_ATTEMPT_FAILED = 4,
	/** `attempt` attempts failed, the tree was reverted; `path`: the
	 * failure context the clean-slate attempt gets */
	DECREE_EVENT_CLEAN_SLATE = 5,
	/** attempt `attempt` succeeded changing `files` files; `path`: the
	 * run's changes.diff */
	DECREE_EVENT_SUCCEEDED = 6,
	/** cancelled during attempt `attempt`: `path` holds the partial
	 * diff, the tree was reverted, `file` stays in the inbox */
	DECREE_EVENT_INTERRUPTED = 7,
	/** `file` moved to inbox/dead/ because of `reason` */
	DECREE_EVENT_DEAD_LETTERED = 8,
	/** spec `path` was skipped because of `reason` */
	DECREE_EVENT_SPEC_SKIPPED = 9,
	/** run `id` of `file` ended with `outcome` after `attempt` attempts */
	DECREE_EVENT_FINISHED = 10,
	/** something failed that did not stop processing (`reason`) */
	DECREE_EVENT_WARNING = 11,
} decree_pipeline_event_kind;

/** An event; the fields the kind does not name are NULL / 0.  Paths are
 * relative to the project root. */
typedef struct {
	decree_pipeline_event_kind kind;
	const char *id;	     /**< run id "<chain>-<seq>" */
	const char *file;    /**< inbox file name ("fix-login.md") */
	const char *routine; /**< routine name */
	const char *path;
	const char *reason;
	int attempt; /**< 1-based */
	int status;  /**< exit status, or 128 + signal number */
	bool clean_slate;
	size_t files;
	decree_run_outcome outcome;
} decree_pipeline_event;

typedef void (*decree_pipeline_cb)(void *payload,
				   const decree_pipeline_event *ev);

/** What a running routine writes, as it reaches its log: `len` bytes
 * (not NUL-terminated) of attempt `attempt` of run `id`.  The chunks of
 * an attempt, in order, are its log byte for byte; a chunk may end in
 * the middle of a line or of a UTF-8 character.  Called on the calling
 * thread, between the events of the attempt, within about 50 ms of the
 * routine's write. */
typedef void (*decree_pipeline_output_cb)(void *payload, const char *id,
					  int attempt, const char *data,
					  size_t len);

/* Version 1 ends before `output`; both versions are accepted. */
#define DECREE_PIPELINE_OPTIONS_VERSION 2
typedef struct {
	unsigned version;
	decree_pipeline_cb events; /**< NULL: none */
	void *payload;		   /**< for events and output */
	/** polled: non-zero stops processing (see Cancellation above) */
	const volatile int *cancel;
	/** the routines' output while they run; NULL: not read (the logs
	 * are written all the same) */
	decree_pipeline_output_cb output;
} decree_pipeline_options;
#define DECREE_PIPELINE_OPTIONS_INIT                                    \
	{                                                               \
		DECREE_PIPELINE_OPTIONS_VERSION, NULL, NULL, NULL, NULL \
	}

/**
 * Check, before anything is queued or run, that what would run can run:
 * the routine of request rq, or (rq NULL) of every message waiting in
 * the inbox and every spec decree_pipeline_process would queue, exists,
 * a notebook finds papermill on PATH, and a routine that calls the AI
 * command (needs_ai) finds commands.ai set and its program on PATH.  A routine
 * the router will pick is not known yet: then the fallback default_routine must
 * exist.  A message that cannot be parsed is not checked (processing
 * dead-letters it). Nothing is written.  decree_pipeline_run and
 * decree_pipeline_process make the same checks (run: the request, then the
 * inbox) before they queue or run anything, and fail with these codes; a
 * program calls this first to tell a bad request from a failed run.
 * @return 0; DECREE_ENOTFOUND (a routine that does not exist: the
 *         message names it, with the closest routine or the list of
 *         them, and for a queue every message concerned);
 *         DECREE_EINVALID (papermill missing for a notebook, or a
 *         routine needs commands.ai, which is unset or whose program is
 *         not found: the message says what to install or set);
 *         -1.
 */
DECREE_API int decree_pipeline_check(decree_project *p,
				     const decree_run_request *rq);

typedef struct {
	size_t done; /**< messages processed successfully */
	size_t dead; /**< messages dead-lettered */
} decree_pipeline_result;

/**
 * Queue a request as a new chain in the inbox, process it and its
 * follow-ups depth-first, then whatever else waits in the inbox.
 * @return 0 (see out->dead); DECREE_EINVALID (bad request: unknown
 *         input file, reserved key; or papermill or commands.ai
 *         missing: decree_pipeline_check); DECREE_ENOTFOUND (an unknown
 * routine: decree_pipeline_check); DECREE_ECANCELLED; -1.
 */
DECREE_API int decree_pipeline_run(decree_pipeline_result *out,
				   decree_project *p,
				   const decree_run_request *rq,
				   const decree_pipeline_options *opts);

/**
 * Process the inbox, then every spec (specs/NAME.spec.md) not listed in
 * specs/processed-spec.md, alphabetically, one chain each; a spec
 * dead-lettered earlier is skipped (DECREE_EVENT_SPEC_SKIPPED) until its
 * message is moved back to the inbox.
 * @return 0 (see out->dead); DECREE_ENOTFOUND, DECREE_EINVALID (what
 *         waits cannot run: decree_pipeline_check; nothing ran);
 *         DECREE_ECANCELLED; -1.
 */
DECREE_API int decree_pipeline_process(decree_pipeline_result *out,
				       decree_project *p,
				       const decree_pipeline_options *opts);

typedef struct {
	size_t specs_processed, specs_pending;
	size_t inbox_waiting, inbox_done, inbox_dead;
} decree_pipeline_status;

DECREE_API int decree_pipeline_status_get(decree_pipeline_status *out,
					  decree_project *p);

/* --- runs ------------------------------------------------------------------
 */

/** A run directory and its outcome.json (fields NULL / 0 when absent). */
typedef struct {
	const char *id;	   /**< "<chain>-<seq>" */
	const char *chain; /**< 16 digits */
	long seq;
	const char *dir; /**< absolute path of .decree/runs/<id> */
	decree_run_outcome outcome;
	const char *message; /**< the inbox file name */
	const char *routine;
	int attempts;
	int64_t started, finished; /**< Unix seconds */
	const char *reason;	   /**< why it was dead-lettered */
} decree_run_info;

typedef struct decree_run_list decree_run_list;

/** Every run of the project, by chain, then seq. */
DECREE_API int decree_run_list_get(decree_run_list **out, decree_project *p);
DECREE_API size_t decree_run_list_count(const decree_run_list *l);
DECREE_API const decree_run_info *decree_run_list_at(const decree_run_list *l,
						     size_t i);
DECREE_API void decree_run_list_free(decree_run_list *l);

/**
 * Resolve ID against a list: a run id or a unique prefix of one (one run),
 * or a chain id (all its runs, in seq order); NULL: the latest run.  The
 * runs are [*first, *first + *count).
 * @return 0; DECREE_ENOTFOUND (no runs, or none matches);
 *         DECREE_EAMBIGUOUS (the message lists candidates).
 */
DECREE_API int decree_run_list_select(size_t *first, size_t *count,
				      const decree_run_list *l, const char *id);

typedef struct {
	char id[32];		   /**< the run reverted */
	decree_apply_result apply; /**< what the reverse apply did */
	size_t verified;	   /**< paths checked against manifest.json */
	bool empty; /**< the run changed nothing: nothing was done */
} decree_revert_result;

/**
 * Apply run ID's changes.diff in reverse as one undoable transaction,
 * checking every result against the run's manifest.json before anything
 * is written (a mismatch names the paths and writes nothing).
 * @return 0; DECREE_ENOTFOUND, DECREE_EAMBIGUOUS (ID); DECREE_EINVALID (ID
 *         is a chain of several runs, or the run has no changes.diff);
 *         DECREE_ECORRUPT (manifest.json unreadable); what decree_apply
 *         returns.
 */
DECREE_API int decree_run_revert(decree_revert_result *out, decree_project *p,
				 const char *id);

DECREE_END_DECL

#endif
