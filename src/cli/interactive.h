/*
 * interactive.h - a request to run (from flags or the interactive form),
 * the TTY form of `decree run`, and .decree/last-run.yml.
 */
#ifndef DECREE_CLI_INTERACTIVE_H
#define DECREE_CLI_INTERACTIVE_H

#include "cli.h"
#include "util/kvlist.h"

typedef struct {
	char *name;  /* -m NAME (raw; the library kebab-cases it), or NULL */
	char *body;  /* message body, or NULL */
	kvlist vars; /* -v KEY=VALUE in order (routine, input_file, custom) */
	bool interactive; /* came from the TTY form */
} run_request;

/* 0, or EXIT_FAIL after printing "out of memory". */
int run_request_set(run_request *rq, const char *key, const char *value);
const char *run_request_get(const run_request *rq, const char *key);
void run_request_release(run_request *rq);

/*
 * The interactive form of `decree run`, on the terminal open at tty_fd:
 * routine picker (arrow keys, type-ahead fuzzy filter, default_routine
 * pre-highlighted), message name (required), input file (optional), one
 * prompt per custom parameter of the chosen routine (its default shown;
 * Enter keeps it), body (multi-line, ends at an empty line or EOF;
 * required unless an input file was given).  Fields are pre-filled from
 * .decree/last-run.yml (never the body).
 * Returns 0 with *out filled (interactive = true), EXIT_CANCELLED if the
 * user cancelled (Ctrl-C, Esc: nothing must be created), or EXIT_FAIL
 * (printed).  The terminal is restored on every path.
 */
int interactive_request(run_request *out, decree_project *p, int tty_fd);

/* Write .decree/last-run.yml from a request that ran successfully. */
int last_run_save(const decree_project *p, const run_request *rq);

#endif
