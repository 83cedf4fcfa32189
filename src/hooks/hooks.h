/*
 * hooks.h - decree as the checkpoint engine of coding agents.
 *
 * src/hooks holds the adapters between agent CLIs and libdecree.  They
 * are clients of the public API (include/decree/, chiefly agent.h) plus
 * util, like the pipeline, and are linked into the program:
 *   agents.c   the agents decree knows: names, hook events, where their
 *              hook settings live
 *   install.c  merging decree's entries into an agent's settings file,
 *              removing them, reporting what is installed (JSON edited
 *              with jansson, written atomically)
 *   run.c      "decree hook AGENT EVENT": the payload on stdin becomes a
 *              turn, a tool start, or a record of the paths a tool changed
 *   log.c      the hook log: a hook never fails its agent, so its errors
 *              go here and 'decree hook status' shows the last one
 * docs/agents.md is the user's side of it.
 */
#ifndef DECREE_HOOKS_H
#define DECREE_HOOKS_H

#include "decree/decree.h"
#include "decree/agent.h"
#include "util/buf.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* What an agent event means to decree. */
typedef enum {
	HOOK_PROMPT = 1, /* the user submitted a prompt: start a turn */
	HOOK_PRE_TOOL,	 /* a tool is about to run */
	HOOK_POST_TOOL,	 /* a tool ran */
	/* Claude Code's worktree events: answered, not just observed (the
	 * agent waits for the path and fails on a non-zero exit) */
	HOOK_WORKTREE_CREATE, /* make a workspace; its path on stdout */
	HOOK_WORKTREE_REMOVE, /* discard the workspace at worktree_path */
} hook_kind;

/* Does the agent wait for this event's answer (stdout, exit status)? */
static inline bool hook_kind_answers(hook_kind k)
{
	return k == HOOK_WORKTREE_CREATE || k == HOOK_WORKTREE_REMOVE;
}

typedef struct {
	const char *event; /* the agent's own name: "PreToolUse" */
	hook_kind kind;
	const char *matcher; /* tool matcher to install (NULL: none) */
	unsigned timeout;    /* to install, in the agent's unit; 0: its own */
} hook_event;

typedef struct {
	const char *name;  /* "claude-code", "codex", "gemini" */
	const char *alias; /* another accepted name ("claude"), or NULL */
	const char *project_file; /* settings file, relative to the project */
	/* the user's settings: $ENV/rel when ENV is set, else ~/home_rel */
	const char *user_env, *user_env_rel, *user_home_rel;
	const char *root_env;	  /* env var with the project dir, or NULL */
	unsigned timeout;	  /* installed hook timeout, in timeout_unit */
	bool timeout_ms;	  /* gemini: milliseconds; others: seconds */
	const hook_event *events; /* those decree installs; {NULL}-ended */
} hook_agent;

/* The timeout decree installs for event ev of agent a (in a's unit). */
static inline unsigned hook_event_timeout(const hook_agent *a,
					  const hook_event *ev)
{
	return ev && ev->timeout ? ev->timeout : a->timeout;
}

/* Every agent decree knows, then {NULL}. */
extern const hook_agent hook_agents[];

/* The agent named `name` (its name or alias), else NULL. */
const hook_agent *hook_agent_find(const char *name);
/* The agent's event named `event` (exact, as the agent spells it), else
 * NULL. */
const hook_event *hook_event_find(const hook_agent *a, const char *event);

/*
 * install.c: decree's entries in an agent's hook settings file.
 *
 * decree's own entry is a command hook whose command, split into shell
 * words, starts with a program whose basename starts with "decree",
 * followed by "hook <agent>" (its name or alias): whatever decree binary
 * or store it names, it is decree's, so a reinstall replaces it and
 * uninstall removes it.  Every other setting and hook is kept (the file
 * is parsed and rewritten with jansson: key order kept, 2-space indent);
 * a file is rewritten only when decree's entries change, atomically and
 * keeping its mode.  Errors name the file and leave it untouched.
 */
typedef struct {
	char path[PATH_MAX]; /* the settings file (absolute) */
	bool exists;	     /* it existed before the call */
	bool changed;	     /* the call rewrote it */
	/* events with decree's entry: after install or for inspect; the
	 * ones it was removed from for uninstall (NULL-ended, never NULL
	 * after a successful call) */
	char **events;
	/* the decree programs those entries run (NULL-ended) */
	char **programs;
	/* gemini: install set hooksConfig.enabled, which was false */
	bool enabled_hooks;
	/* the file stops decree's hooks: gemini's hooksConfig.enabled is
	 * false or hooksConfig.disabled names them, Claude Code's
	 * disableAllHooks is true */
	bool hooks_off;
} hook_file;
#define HOOK_FILE_INIT                                     \
	{                                                  \
		"", false, false, NULL, NULL, false, false \
	}
void hook_file_release(hook_file *f);

/* The settings file of agent `a`: <root>/<project_file>, or with `user`
 * the user's ($<user_env>/<user_env_rel> when that variable is set, else
 * $HOME/<user_home_rel>).  0, or -1 with an error set. */
int hook_settings_path(char *out, size_t len, const hook_agent *a, bool user,
		       const char *root);

/* The command decree installs for `event`: '<program>' hook <agent>
 * <event> [--store '<store>'] (shell-quoted). */
int hook_command(buf *out, const hook_agent *a, const char *event,
		 const char *program, const char *store);

/* Whether `command` is decree's hook for `a`: 1 (and, when not NULL,
 * *program and *event get malloc'ed copies of the program and the event
 * word, "" if none), 0 not, -1 out of memory. */
int hook_command_is_decree(const hook_agent *a, const char *command,
			   char **program, char **event);

/* Merge decree's entries for every event of `a` into the settings file
 * `path` (created with its directory when missing), running `program`
 * with `store` (NULL: none).  Idempotent.  0, or a negative code with an
 * error naming the file (DECREE_EINVALID: not a JSON object, "hooks" not
 * an object, an event not an array); nothing is written then. */
int hook_install(hook_file *out, const hook_agent *a, const char *path,
		 const char *program, const char *store);
/* Remove decree's entries for `a` from `path` (and the matcher groups,
 * event arrays and "hooks" object left empty by that); a missing file is
 * left missing. */
int hook_uninstall(hook_file *out, const hook_agent *a, const char *path);
/* What `path` holds of decree's for `a` (writes nothing; a missing file
 * is exists = false). */
int hook_inspect(hook_file *out, const hook_agent *a, const char *path);

/*
 * Run one hook: read the payload (JSON) from `payload`, act on it.  An
 * event that is only observed never fails the agent: whatever happens the
 * caller exits 0.  An event the agent waits for (hook_kind_answers:
 * WorktreeCreate, WorktreeRemove) gets its answer in *out (stdout: the
 * workspace's path) and, when it failed, the reason in *err, and the
 * caller exits 1 so that the agent says so.  Returns 0 when everything
 * was done, -1 when something failed (it is in the hook log, see below).
 * store_opt: --store as given to the program (NULL: DECREE_STORE, else
 * the project's .decree/store).  root_opt: -C (NULL: the agent's project
 * directory: its env var, else the payload's cwd).
 */
typedef struct {
	const hook_agent *agent;
	const char *event;
	const char *root_opt, *store_opt;
	const char *payload; /* the whole stdin */
	size_t payload_len;
	buf *out, *err; /* may be NULL */
} hook_request;
int hook_run(const hook_request *rq);

/*
 * The hook log: one line per failed hook call, "<RFC 3339> <agent>
 * <event> <root>: <message>".  It lives in the store (<store>/hooks.log)
 * when the store can be opened, else in $XDG_STATE_HOME/decree/hooks.log
 * (~/.local/state/decree/hooks.log).  Kept under 1 MiB (the older half is
 * dropped).  hook_log_last finds the newest line about `root` in both
 * (out: the line without its newline; 0 found, 1 none, -1 error).
 */
int hook_log_write(const char *store_dir, const char *agent, const char *event,
		   const char *root, const char *msg);
int hook_log_last(buf *out, const char *store_dir, const char *root);
/* The fallback log's path (for status and docs). */
int hook_log_fallback_path(char *out, size_t len);

#endif
