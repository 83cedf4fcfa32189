/*
 * pipeline.h - the decree pipeline: projects, messages, routines, runs.
 *
 * A project is a root holding .decree/inbox/ (made by `decree init`).
 * Messages are markdown files with optional YAML frontmatter in
 * .decree/inbox/; each is processed under an engine checkpoint (session
 * "decree", message = the run id) by a routine in .decree/routines/, with
 * retries, a clean-slate attempt and dead-lettering (docs/pipeline.md).
 *
 * Modules: config.c (config.yml), message.c (frontmatter, names),
 * routine.c (discovery, declared parameters, execution), runner.c (the
 * processing loop), interactive.c (the TTY form of `decree run`),
 * cmd_pipeline.c (the commands).
 *
 * Errors: functions returning int return 0, or an exit code (non-zero)
 * after printing one "decree: ..." line with fail(), unless they say
 * otherwise.
 */
#ifndef DECREE_PIPELINE_H
#define DECREE_PIPELINE_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>

/* --- configuration (config.c) ----------------------------------------------
 */

typedef struct {
	char *store; /* absolute, or NULL */
	uint64_t max_file_size;
	char **excludes;
	size_t nexcludes;
	/* pipeline keys */
	char *router;	       /* commands.router ({prompt}), NULL if unset */
	char *ai;	       /* commands.ai (for routines), NULL if unset */
	long max_retries;      /* 3 */
	long max_depth;	       /* 10 */
	char *default_routine; /* "develop" */
	bool notebook_support; /* false */
} config;

/* The project root for this invocation: -C, else the nearest ancestor
 * holding .decree/, else the current directory.  out: PATH_MAX. */
int project_root(char *out, size_t len, const cli_ctx *ctx);
int config_load(config *c, const char *root);
void config_release(config *c);

/* --- projects ----------------------------------------------------------------
 */

typedef struct {
	char root[PATH_MAX]; /* absolute */
	config cfg;
	const cli_ctx *ctx;
} project;

/* Open the project of this invocation; fails with "not a decree project
 * (run decree init)" when the root has no .decree/inbox/. */
int project_open(project *p, const cli_ctx *ctx);
void project_release(project *p);

/* Build "<root>/<rel>" into out (PATH_MAX). */
void project_path(char *out, const project *p, const char *rel);

/* --- messages (message.c) ----------------------------------------------------
 */

typedef struct {
	char *key;
	char *value;
} fm_field;

typedef struct {
	fm_field *fields; /* frontmatter in file order */
	size_t n, cap;
	char *body; /* after the frontmatter, verbatim ("" if none) */
	size_t body_len;
} message;

/* Parse a message file's text.  Frontmatter values must be scalars.
 * On error, *err (malloc'ed) says why; returns -1 without printing. */
int message_parse(message *m, const char *text, size_t len, char **err);
void message_release(message *m);
const char *message_get(const message *m, const char *key);
/* Set (replace in place, or append) a key.  0 or -1 (out of memory). */
int message_set(message *m, const char *key, const char *value);
/* The same on any array of fields (run_request's too). */
int fm_set(fm_field **v, size_t *n, size_t *cap, const char *key,
	   const char *value);
/* Frontmatter (if any field) + body. */
int message_format(buf *out, const message *m);
/* Append a YAML scalar, plain when that reads back as the same string.
 * `s` must be valid UTF-8 (YAML cannot carry other bytes). */
int yaml_scalar(buf *out, const char *s);

/* Lowercase ASCII kebab-case, at most `max` bytes; "" if nothing left. */
void kebab_case(char *out, size_t outlen, const char *in, size_t max);

/* --- routines (routine.c) ----------------------------------------------------
 */

typedef struct {
	char *name;
	char *def; /* default value ("" if none) */
} routine_param;

typedef struct {
	char *name; /* file stem: .decree/routines/<name>.sh / .ipynb */
	char *path; /* absolute */
	bool notebook;
	char *summary;	       /* first comment line after the shebang, or
				  NULL */
	routine_param *params; /* custom parameters it declares, in order */
	size_t nparams;
} routine_info;

/* The standard variables every routine gets (not "custom"). */
bool routine_is_standard_var(const char *name);

/* Every routine of the project, sorted by name (.ipynb only with
 * notebook_support).  Returns 0 or -1 (printed). */
int routines_list(routine_info **out, size_t *n, const project *p);
void routines_free(routine_info *v, size_t n);
const routine_info *routine_find(const routine_info *v, size_t n,
				 const char *name);

/* --- a request to run (from flags or the interactive form) -------------------
 */

typedef struct {
	char *name;	/* -m NAME (raw; kebab-cased later), or NULL */
	char *body;	/* message body, or NULL */
	fm_field *vars; /* -v KEY=VALUE, in order (routine, input_file,
			   custom) */
	size_t nvars, cap;
	bool interactive; /* came from the TTY form */
} run_request;

int run_request_set(run_request *rq, const char *key, const char *value);
const char *run_request_get(const run_request *rq, const char *key);
void run_request_release(run_request *rq);

/*
 * The interactive form of `decree run` (interactive.c), on the terminal
 * open at tty_fd: routine picker (arrow keys, type-ahead fuzzy filter,
 * default_routine pre-highlighted), message name (required), input file
 * (optional), one prompt per custom parameter of the chosen routine (its
 * default shown; Enter keeps it), body (multi-line, ends at an empty line
 * or EOF; required unless an input file was given).  Fields are pre-filled
 * from .decree/last-run.yml (never the body).
 * Returns 0 with *out filled (interactive = true), 1 if the user cancelled
 * (Ctrl-C, Esc: nothing must be created), -1 on error (printed).  The
 * terminal is restored on every path.
 */
int interactive_request(run_request *out, const project *p, int tty_fd);

/* Write .decree/last-run.yml from a request that ran successfully. */
int last_run_save(const project *p, const run_request *rq);

/* --- processing (runner.c) ---------------------------------------------------
 */

/* Is the spec file `spec_name` (a base name) listed in
 * specs/processed-spec.md?  Lines may carry "- " and "specs/". */
bool spec_processed(const project *p, const char *spec_name);

/* Create the inbox message of a request, then process its chain
 * depth-first, then whatever else waits in the inbox.  Exit code. */
int pipeline_run(project *p, const run_request *rq);
/* Process the inbox, then every unprocessed spec.  Exit code. */
int pipeline_process(project *p);

#endif
