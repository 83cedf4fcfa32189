/*
 * pipeline/routine.h - routines: discovery, declared parameters, and
 * running one attempt; the router.
 *
 * Invariants: a routine runs in the project root in a process group of
 * its own, with stdin /dev/null and stdout+stderr to its log (a regular
 * file, watched by reading it, never through a pipe); its
 * environment is the host's plus the standard variables, DECREE_* and
 * only the custom parameters the routine declares (so a message cannot
 * set PATH or BASH_ENV).  Children are started with posix_spawn: nothing
 * runs between fork and exec, so a multi-threaded host is safe.
 */
#ifndef DECREE_PIPELINE_ROUTINE_H
#define DECREE_PIPELINE_ROUTINE_H

#include "decree/pipeline.h"
#include "pipeline/message.h"

struct decree_routine_list {
	decree_routine_info *v; /* owns every string and params array */
	size_t n;
};

/* The routines of `root` (notebooks only when `notebooks`). */
int routine_list_load(decree_routine_list **out, const char *root,
		      bool notebooks);

/* One attempt of a routine. */
typedef struct {
	const char *root;
	const char *id, *dir_rel, *chain, *seq, *spec_file;
	const message *m;
	const decree_routine_info *ri;
	int attempt;
	const char *failure_context; /* relative path, or NULL */
	const char *ai;		     /* commands.ai, or NULL */
	const volatile int *cancel;
	/* what the routine writes, as its log grows; NULL: not watched */
	void (*output)(void *payload, const char *data, size_t len);
	void *output_payload;
} routine_attempt;

/* Is program `prog` found as a routine would find it: on PATH (an empty
 * entry is the root), or, with a '/', as a path relative to root? */
bool routine_program_found(const char *prog, const char *root);

/* Can the command line `cmd` (commands.ai) be started: its first word,
 * after any NAME=value assignments, found as routine_program_found says?
 * A first word decree cannot judge without running a shell (quotes,
 * expansions, a shell keyword or builtin) counts as found.  prog: that
 * word, for messages. */
bool routine_command_found(char *prog, size_t len, const char *cmd,
			   const char *root);

/* Run an attempt with its output to log_path.  *status: the exit code or
 * 128 + signal; *interrupted when *cancel stopped it (its process group
 * was terminated).  0, or an error when it could not be run at all. */
int routine_run(int *status, bool *interrupted, const routine_attempt *x,
		const char *log_path);

/* Run the router command template `tpl` ({prompt} -> the shell-quoted
 * prompt) in root; its trimmed stdout in *answer (owned).  0, or -1 when
 * it failed or said nothing (no error is set: the caller falls back). */
int router_ask(char **answer, const char *root, const char *tpl,
	       const char *prompt);

#endif
