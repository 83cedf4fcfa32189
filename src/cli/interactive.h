/*
 * interactive.h - the TTY form of `decree run`, and .decree/last-run.yml.
 */
#ifndef DECREE_CLI_INTERACTIVE_H
#define DECREE_CLI_INTERACTIVE_H

#include "request.h"

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
