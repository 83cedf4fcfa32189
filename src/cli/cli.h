/*
 * cli.h - shared declarations of the decree program.
 *
 * The program uses only the public API (include/decree/) plus util
 * (src/util: buf, json, kvlist, yaml).
 *
 * Errors: a command function returns its exit code.  A helper returns 0,
 * or an exit code after printing one "decree: ..." line (fail,
 * usage_error, lib_fail); the caller passes that code up unchanged.
 */
#ifndef DECREE_CLI_H
#define DECREE_CLI_H

#include "decree/decree.h"
#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Exit codes (docs/cli/exit-codes.md). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_CANCELLED = 130, /* interrupted: 128 + SIGINT */
};

typedef struct {
	const char *root_opt;  /* -C */
	const char *store_opt; /* --store */
	bool json, quiet, help;
	bool verbose; /* -v/--verbose of the commands that take it */
	/* positional words after the command name(s) and their options */
	int argc;
	char **argv;
	/* arguments after "--" */
	int rest_argc;
	char **rest_argv;
	const char *cmdname;
} cli_ctx;

/* Option specification for opt_parse. */
typedef struct {
	const char *name; /* long name without "--" */
	char shortopt;	  /* 0: none */
	bool has_arg;
	const char **value; /* where to store the argument (has_arg) */
	bool *flag;	    /* set to true when seen (no arg) */
	int *count;	    /* incremented when seen */
} opt_spec;

/* Parse the command's options out of ctx->argv (options may come before
 * or after positionals; "--" ends options).  Positionals stay in
 * ctx->argv.  0, or EXIT_USAGE after printing the usage error. */
int opt_parse(cli_ctx *ctx, const opt_spec *specs);

/* A repeatable long option with a value ("--exclude A --exclude=B"): each
 * value (borrowed from argv) is appended to `values`, which must have
 * room for ctx->argc entries; *n counts them. */
typedef struct {
	const char *name; /* long name without "--"; NULL ends a table */
	const char **values;
	size_t *n;
} opt_list;

/* opt_parse with repeatable options (lists: a table ended by a NULL
 * name, or NULL). */
int opt_parse_lists(cli_ctx *ctx, const opt_spec *specs, const opt_list *lists);

/*
 * Did you mean: an unknown name answered with the known names nearest
 * to it (util/suggest.h says what near means).  cli_suggest appends "'a'", "'a'
 * or 'b'" or "'a', 'b' or 'c'" (each name after `prefix`, "--" for
 * options) to out and returns how many; 0 and nothing appended when no
 * name in the NULL-terminated `names` is near.  usage_unknown reports
 * "unknown <what> '<typed>'; did you mean ...?" as a usage error (without
 * the "(see ... --help)" tail), or "unknown <what> '<typed>'" with it
 * when nothing is near; `skip` bytes of typed ("--") are not compared.
 * Returns EXIT_USAGE.
 */
size_t cli_suggest(buf *out, const char *word, const char *const *names,
		   const char *prefix);
int usage_unknown(const cli_ctx *ctx, const char *what, const char *typed,
		  size_t skip, const char *const *names, const char *prefix);
/* The long global options without "--" (main.c parses them), NULL
 * ended: suggested for an unknown option of any command. */
extern const char *const cli_global_options[];

/*
 * color.c: color on the terminal (docs/cli/output.md).  main calls
 * cli_color_init once, before any output and before a pager starts:
 * `when` is CLI_COLOR_AUTO (stdout a terminal, NO_COLOR unset or
 * empty, TERM set and not "dumb"), CLI_COLOR_ALWAYS or CLI_COLOR_NEVER;
 * --json never has color.  cli_color(c) is the escape sequence that
 * starts color c (CLI_RESET ends it), or "" when color is off.
 */
enum { CLI_COLOR_AUTO, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER };
typedef enum {
	CLI_RESET,
	CLI_BOLD,
	CLI_RED,
	CLI_GREEN,
	CLI_YELLOW,
	CLI_CYAN,
} cli_color_name;
/* "auto", "always", "never" -> CLI_COLOR_*, else -1 */
int cli_color_parse(const char *when);
extern const char *const cli_color_whens[]; /* the three, NULL ended */
void cli_color_init(int when, bool json);
bool cli_color_on(void);
const char *cli_color(cli_color_name c);
/* The color of an action word of a plan ("create", "delete", "restore",
 * "modify", "replace", "skip", "skip-user-edit"); "" when off. */
const char *cli_action_color(const char *action);

/* Unified diff text to stdout, colored like git's when color is on
 * (headers bold, hunk headers cyan, removed lines red, added lines
 * green), byte for byte as given otherwise.  It may come in pieces of
 * any size; cli_diff_end after the last one.  CLI_DIFF_WRITER_INIT is
 * the state before the first byte. */
typedef struct {
	bool in_hunk;
	uint64_t old_left, new_left; /* lines of the hunk still to come */
	char head[160];		     /* the start of the current line */
	size_t nhead;
	bool streaming; /* the line's color is out, its rest is written */
	bool colored;	/* a color is open on this line */
} cli_diff_writer;
#define CLI_DIFF_WRITER_INIT                        \
	{                                           \
		false, 0, 0, { 0 }, 0, false, false \
	}
void cli_diff_write(cli_diff_writer *w, const char *p, size_t n);
void cli_diff_end(cli_diff_writer *w);
/* A whole diff file (a run's changes.diff) through cli_diff_write; stops
 * early when stdout fails (cli_output_closed).  0, or -1 with errno when
 * it cannot be read. */
int cli_diff_cat(const char *path);

/*
 * pager.c: long output through a pager on a terminal (docs/cli/output.md).
 * main calls cli_pager_allow(!--no-pager && !--json) first; a command
 * calls cli_pager_start just before its first byte of output: when stdout
 * is a terminal and a pager is set ($DECREE_PAGER, else $PAGER, else
 * less; "" or "cat": none), stdout (and stderr when it is the terminal
 * too) then feed the pager.  cli_pager_finish (main, at the end) closes
 * the pipe, waits for the pager and returns the exit status: `status`,
 * or EXIT_FAIL when the pager could not be run.  cli_output_closed: a
 * write to stdout failed (the user quit the pager: stop writing, it is
 * no failure when cli_pager_active).  cli_output_reader_gone: stdout is
 * a pipe (or socket, or terminal) nobody reads from any more, as when
 * `| head` has what it wanted.
 */
void cli_pager_allow(bool on);
void cli_pager_start(void);
bool cli_pager_active(void);
int cli_pager_finish(int status);
bool cli_output_closed(void);
bool cli_output_reader_gone(void);

/* A command group's subcommands (checkpoint, workspace): name, function,
 * usage (after "decree "), the name errors use, more --help text (or
 * NULL); a table ends with a NULL name.  cli_subcommand runs the one
 * ctx->argv[0] names (its --help with ctx->help), or reports a missing
 * or unknown one with a did-you-mean; the group's help is the usage of
 * each subcommand, then `about`. */
typedef struct {
	const char *name;
	int (*fn)(cli_ctx *ctx);
	const char *usage;
	const char *cmdname;
	const char *help;
} cli_sub;
int cli_subcommand(cli_ctx *ctx, const cli_sub *subs, const char *group,
		   const char *about);

/* apply's output (cmd_patch.c), for decree apply and decree workspace
 * apply: `produce` runs the apply with the options filled here (report,
 * progress, cancel, check, exec, session); then the store is closed, the
 * summary or the JSON "done" event printed, and the exit code returned. */
typedef int (*cli_apply_source)(void *arg, decree_apply_result *res,
				decree_store *s, const char *name,
				const decree_apply_options *o);
int cli_apply_run(cli_ctx *ctx, decree_store *s,
		  const decree_apply_options *base, const char *name,
		  bool check, const char *exec, const char *session,
		  cli_apply_source produce, void *arg);

/* The "--" paths as root-relative paths for the library: each is taken
 * relative to the current directory (to the root with -C), as in git,
 * normalized (".", "..", "//", a trailing '/'), and must stay inside the
 * project root of `s`.  *out: NULL when there are none or one names the
 * root itself (the whole tree), else a NULL-terminated array freed with
 * cli_paths_free.  0, or EXIT_FAIL after printing why. */
int cli_paths(char ***out, const cli_ctx *ctx, const decree_store *s);
void cli_paths_free(char **paths);

/*
 * Failures: one line "decree: <message>" on stderr.  With --json
 * (cli_json_errors, set by main) the failure is also one document on
 * stdout, {"error":{"code","message"}} (docs/schema/error.schema.json),
 * the message being the stderr line without "decree: ".  At most one
 * such document per run.  A command whose --json document reports its
 * own failure (fsck, run, process, apply's "done" event) calls
 * cli_error_capture(&b) before reporting it: the {"code","message"}
 * object is then appended to b (for the document's "error" member)
 * instead of printed; cli_error_capture(NULL) ends that.
 *
 * usage_error: code "usage", EXIT_USAGE, "(see 'decree CMD --help')"
 * appended.  fail_usage: the same without the pointer to --help (for a
 * bad value whose message says what to use instead).  fail: code "error",
 * EXIT_FAIL.  fail_code: the code of a decree_error_code, EXIT_FAIL
 * (EXIT_CANCELLED for DECREE_ECANCELLED). fail_interrupted: code "interrupted",
 * EXIT_CANCELLED (a signal). cli_note: the same "decree: " line for a note or a
 * warning, never on stdout, changing nothing.
 */
void cli_json_errors(bool on);
void cli_error_capture(buf *b);
int usage_error(const cli_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail_code(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int fail_interrupted(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What the command changed, in a few words ("checkpoint ID was created"),
 * said once its change is done and before its report is printed: when
 * that report cannot be written (a full disk, a closed pipe), the one
 * error line says what happened anyway.  cli_did_text: "" when nothing
 * was said. */
void cli_did(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *cli_did_text(void);
/* Report the library's last error on one "decree: " line, followed by
 * what to type next when the error has a command of its own (the library
 * states what happened; the program knows its commands).  code: what the
 * call returned (DECREE_ERROR: take the last error's code).  Returns
 * EXIT_FAIL. */
int lib_fail(int code);

/*
 * Ctrl-C during a change of the tree (restore, undo, redo, apply):
 * cli_cancel_catch installs handlers for SIGINT, SIGTERM and SIGHUP that
 * set the flag it returns (pass it as the options' `cancel`); a second
 * signal goes to the handler that was there before (the next command
 * recovers, as after a kill);
 * cli_cancel_release puts the previous handlers back and returns the
 * signal caught (0: none).  cli_cancel_report then says which way it
 * went: r == DECREE_ECANCELLED prints "decree: interrupted; the <verb>
 * was rolled back, nothing changed" and returns EXIT_CANCELLED; r == 0
 * after a signal (it came after the commit) prints that the change was
 * completed and returns EXIT_OK; otherwise it prints nothing and returns
 * EXIT_OK (the caller reports r as usual).  See docs/cli/exit-codes.md.
 */
const volatile int *cli_cancel_catch(void);
int cli_cancel_release(void);
int cli_cancel_report(int r, const char *verb);
/* A signal was caught since the last cli_cancel_catch. */
bool cli_cancelled(void);
/* The same with `hint` ("run 'decree fsck'") appended; NULL: lib_fail. */
int lib_fail_hint(int code, const char *hint);
/* The library's warning (decree_warning_last), if any, as one line
 * "decree: warning: ..." on stderr, with what to type when something is
 * left to finish. */
void lib_warn(void);
/* The hint for a command that reads stored objects: damage
 * (DECREE_ECORRUPT) is for fsck to name; NULL for any other code. */
const char *fsck_hint(int code);

/* quote.c: names on the terminal.  A path, session, label or message
 * with a control character, a '"' or '\\', or bytes that are not valid
 * UTF-8 is printed C-quoted in double quotes, as git quotes paths
 * ("a\033[31mb", "x\ny"); anything else as it is.  cli_q returns the
 * printable form: `s` itself, or a buffer that stays valid for the next
 * 7 calls (enough for one output line).  cli_quote appends it to out;
 * cli_sanitize appends s with the same bytes escaped but without quotes
 * (for sentences that quote their names already: error messages).
 * JSON output does not use them (json.c escapes). */
const char *cli_q(const char *s);
bool cli_needs_quote(const char *s);
int cli_quote(buf *out, const char *s);
int cli_sanitize(buf *out, const char *s);

/* Read a whole file ("-": stdin) into out (appends).  0, or -1 with errno
 * set; prints nothing. */
int cli_read_file(buf *out, const char *path);

/* Replace a file atomically: temp file, write, fsync, rename, fsync of
 * the directory.  0, or EXIT_FAIL after printing why. */
int cli_write_atomic(const char *path, const void *data, size_t len);

/* One file of a diff as a --json object, the same in `checkpoint diff`
 * and the pipeline's `diff` (docs/schema/checkpoint-diff.schema.json):
 * path, status, old_mode, new_mode ("644", "120000", null), binary,
 * skipped, insertions, deletions, and with_text the record as "diff".
 * 0, or -1 out of memory. */
int cli_diff_file_json(buf *b, const decree_diff_file *f, bool with_text);

/*
 * cmd_patch.c: a diff shown the way `checkpoint diff` shows it.  A source
 * calls cb for each file of a diff (decree_checkpoint_diff and
 * decree_patch_files are two) and returns what they return.
 * cli_diff_show prints the files as they come: their records
 * (CLI_DIFF_TEXT), `path | N ++--` and a total (CLI_DIFF_STAT), or
 * `S<TAB>path` (CLI_DIFF_NAME_STATUS); with --json it appends the members
 * "files":[...],"files_changed","insertions","deletions" (no braces; a
 * file's "diff" only with CLI_DIFF_TEXT) to `json` instead.  It returns
 * what the source returned (< 0: not reported yet) or -1 (out of memory).
 * cli_checkpoint_diff_show is that for checkpoint `ref` against ref2 or
 * the working tree (ref2 NULL), limited to the "--" paths, with `context`
 * lines of context: 0, an exit code (a bad path, reported), or what the
 * library returned (< 0, for the caller to report with lib_fail once the
 * store is closed).
 */
typedef enum {
	CLI_DIFF_TEXT,
	CLI_DIFF_STAT,
	CLI_DIFF_NAME_STATUS,
} cli_diff_mode;
typedef int (*cli_diff_source)(void *arg, decree_diff_cb cb, void *payload);
int cli_diff_show(const cli_ctx *ctx, cli_diff_mode mode, buf *json,
		  cli_diff_source produce, void *arg);
int cli_checkpoint_diff_show(const cli_ctx *ctx, cli_diff_mode mode, buf *json,
			     decree_store *s, const char *ref, const char *ref2,
			     unsigned context);

/* progress.c: the progress line of a long call and its notices.
 * cli_progress_begin: show the progress the calls on s report, on stderr,
 * if it is a terminal and neither --json nor -q is given (after
 * DECREE_PROGRESS_DELAY_MS, default 500).  cli_progress_clear: erase the
 * line (before printing anything else while it may be up);
 * cli_progress_end: erase it and stop (before printing the result).
 * cli_notices: the notices the last call left on s, one
 * "decree: notice: ..." line each on stderr (not with -q), and with json
 * the "notices" array ("[...]") appended to it. */
void cli_progress_begin(const cli_ctx *ctx, decree_store *s);
void cli_progress_clear(void);
void cli_progress_end(decree_store *s);
void cli_notices(const cli_ctx *ctx, const decree_store *s, buf *json);

/* root.c: the project root of this invocation (-C, else the nearest
 * ancestor holding .decree/, else the current directory; out: PATH_MAX),
 * its store (--store, DECREE_STORE, config.yml), its pipeline project
 * ("not a decree project (run decree init)"). */
int cli_project_root(char *out, size_t len, const cli_ctx *ctx);
int open_store(decree_store **out, const cli_ctx *ctx);
/* The same, but -C may name a root that no longer exists when the store
 * is named (--store, DECREE_STORE) and has checkpoints for it: for the
 * commands that need only the store (list, prune, drop, gc, fsck). */
int open_store_any_root(decree_store **out, const cli_ctx *ctx);
/* Warn on stderr about the checkpoint records the last call skipped or
 * removed because they cannot be read, then free the handle. */
void close_store(decree_store *s);
int cli_open_project(decree_project **out, const cli_ctx *ctx);
/* The same for a command that works in any project: *out NULL (and 0)
 * when the root is not a pipeline project. */
int cli_open_project_if_any(decree_project **out, const cli_ctx *ctx);

/* cmd_checkpoint.c: what `decree rollback` numbers and what it prints.
 * The argument rollback takes for each checkpoint of a list (oldest
 * first, as decree_checkpoint_list_get gives it): the user's checkpoints
 * are "1", "2", ... from the newest, decree's captures
 * (decree_checkpoint_is_capture) "u1", "u2", ... from the newest, apart;
 * so a restore, which only adds a capture, renumbers none of the user's.
 * *out: one per entry (free()), or EXIT_FAIL after printing why. */
typedef struct {
	char s[24];
} cli_ref;
int cli_rollback_refs(cli_ref **out, const decree_checkpoint_list *l);
/* One checkpoint as `checkpoint list --json` gives it, without
 * has_changes (docs/schema/checkpoint-list.schema.json). */
void cli_checkpoint_json(buf *b, const decree_checkpoint_info *c);

int cmd_checkpoint(cli_ctx *ctx);
int cmd_checkpoint_diff(cli_ctx *ctx);
int cmd_apply(cli_ctx *ctx);
int cmd_init(cli_ctx *ctx);
int cmd_run(cli_ctx *ctx);
int cmd_process(cli_ctx *ctx);
int cmd_status(cli_ctx *ctx);
int cmd_log(cli_ctx *ctx);
int cmd_diff(cli_ctx *ctx);
int cmd_revert(cli_ctx *ctx);
int cmd_rollback(cli_ctx *ctx);
int cmd_rewind(cli_ctx *ctx);
int cmd_undo(cli_ctx *ctx);
int cmd_redo(cli_ctx *ctx);
int cmd_recover(cli_ctx *ctx);
int cmd_gc(cli_ctx *ctx);
int cmd_fsck(cli_ctx *ctx);
int cmd_projects(cli_ctx *ctx);
int cmd_workspace(cli_ctx *ctx);
int cmd_hook(cli_ctx *ctx);

#endif
