/*
 * request.h - a request to run: what `decree run` was told, by flags or
 * by the interactive form, before the library sees it.
 */
#ifndef DECREE_CLI_REQUEST_H
#define DECREE_CLI_REQUEST_H

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

/* The library's view of a request: pointers into rq, *fields a
 * caller-freed array.  0, or EXIT_FAIL (printed). */
int run_request_view(decree_run_request *out, decree_field **fields,
		     const run_request *rq);

#endif
