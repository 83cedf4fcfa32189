/*
 * cmd_hook.c - "decree hook": installing decree into coding agents, and
 * the command the agents run.  docs/cli/hook.md documents both.
 *
 *   decree hook install|uninstall AGENT [--user]   (src/hooks/install.c)
 *   decree hook status
 *   decree hook AGENT EVENT                        (src/hooks/run.c)
 *
 * The last one runs inside the agent, on every prompt and tool call, and
 * must never break it: whatever happens it exits 0, prints nothing on
 * stdout (Claude Code adds a prompt hook's stdout to the prompt), and
 * ends before the agent's timeout -- an alarm a little before it writes
 * one preformatted line to the hook log and _exits.  Its errors go to the
 * hook log (log.c), never to the agent.  Only a person typing it on a
 * terminal with the wrong number of words gets a usage error.  The
 * exceptions are the events the agent waits for an answer to (Claude
 * Code's WorktreeCreate and WorktreeRemove): the answer goes to stdout,
 * and a failure (or the alarm) exits 1 with the reason on stderr, which
 * the agent reports instead of working in a directory that is not there.
 *
 * The hooks' own functions set util's error slot (error_last()), which in
 * a program linked against libdecree.so is not the library's.
 */
#include "util/common.h"
#include "cli.h"
#include "hooks/hooks.h"
#include "util/error.h"
#include "util/json.h"
#include "util/utc.h"

#include <ftw.h>
#include <signal.h>
#include <time.h>

static const char hook_help[] =
	"usage: decree hook install AGENT [--user]\n"
	"       decree hook uninstall AGENT [--user]\n"
	"       decree hook status\n"
	"       decree hook AGENT EVENT     (what the agent runs; payload on "
	"stdin)\n\n"
	"Make a coding agent checkpoint the project with decree.  AGENT is\n"
	"claude-code (or claude), codex or gemini.\n\n"
	"install    merge decree's hooks into the agent's own hook settings,\n"
	"           keeping every other setting and hook: the project's file\n"
	"           (.claude/settings.json, .codex/hooks.json or\n"
	"           .gemini/settings.json in the project root), or with --user\n"
	"           the user's ($CLAUDE_CONFIG_DIR/settings.json, default\n"
	"           ~/.claude/settings.json; $CODEX_HOME/hooks.json, default\n"
	"           ~/.codex/hooks.json; $GEMINI_CLI_HOME/.gemini/settings.json,\n"
	"           default ~/.gemini/settings.json).  Events: the\n"
	"           prompt, and before and after every tool (UserPromptSubmit,\n"
	"           PreToolUse, PostToolUse; Gemini: BeforeAgent, BeforeTool,\n"
	"           AfterTool), and Claude Code's WorktreeCreate and\n"
	"           WorktreeRemove (claude --worktree without git: a decree\n"
	"           workspace), each running\n"
	"             '<this decree binary>' hook <agent> <Event>\n"
	"           plus --store '<DIR>' when --store was given.  Running it\n"
	"           again changes nothing; after moving decree, run it again.\n"
	"uninstall  remove decree's hooks, and only them, from that file.\n"
	"status     for every agent and scope: whether decree's hooks are\n"
	"           installed, for which events, and whether the decree they\n"
	"           run exists; the last hook error for this project; the\n"
	"           store and its size; the agent sessions it has a journal\n"
	"           of.\n\n"
	"'decree hook AGENT EVENT' reads the event's JSON payload on stdin (up\n"
	"to 32 MiB).  It never fails its agent: it exits 0 whatever happens,\n"
	"prints nothing on stdout, and gives up 10 s before the installed\n"
	"timeout (after 50 s, 590 s for the worktree events, whose installed\n"
	"timeout is 600 s; DECREE_HOOK_BUDGET=SECONDS sets it).  What goes\n"
	"wrong goes to the hook log, <store>/hooks.log (else\n"
	"$XDG_STATE_HOME/decree/hooks.log, ~/.local/state/decree/hooks.log),\n"
	"one line per failure; 'status' shows this project's last one.\n"
	"Except WorktreeCreate, which prints the workspace's path (the payload's\n"
	"name; an existing one is reused), and WorktreeRemove, which discards\n"
	"the workspace at worktree_path (undoable): Claude Code waits for\n"
	"them, so a failure exits 1 with the reason on stderr.\n\n"
	"Codex runs a project's hooks only when the project is trusted\n"
	"('codex exec --trust', or trust_level = \"trusted\" in its\n"
	"config.toml), and any hook only once it is trusted in codex (the\n"
	"review at its start, or /hooks; again after a reinstall changes\n"
	"the command), or with --dangerously-bypass-hook-trust.\n\n"
	"--json: install and uninstall print {\"agent\",\"scope\",\"file\",\n"
	"\"changed\",\"events\"}; status one object (docs/cli/hook.md).";

/* --- install, uninstall ------------------------------------------------- */

/* The project root, absolute. */
static int abs_root(char *out, size_t len, const cli_ctx *ctx)
{
	char root[PATH_MAX];
	int r;

	if ((r = cli_project_root(root, sizeof(root), ctx)) != 0)
		return r;
	if (!realpath(root, out))
		return fail("cannot resolve the project root '%s': %s", root,
			    strerror(errno));
	(void)len;
	return 0;
}

/* The directory `p` as an absolute path without "." or "..": resolved
 * when it exists, else its parent resolved (a store not created yet). */
static int abs_path(char *out, size_t len, const char *p)
{
	char dir[PATH_MAX], real[PATH_MAX], *slash;
	const char *base;

	if (realpath(p, out))
		return 0;
	if (snprintf(dir, sizeof(dir), "%s", p) >= (int)sizeof(dir))
		return fail("path too long: '%s'", p);
	while ((slash = strrchr(dir, '/')) && slash != dir && !slash[1])
		*slash = '\0'; /* "st/" */
	slash = strrchr(dir, '/');
	base = slash ? slash + 1 : dir;
	if (slash == dir)
		snprintf(real, sizeof(real), "/");
	else if (!realpath(slash ? (*slash = '\0', dir) : ".", real))
		return fail("cannot use '%s' as the store: %s", p,
			    strerror(errno));
	if (!strcmp(base, ".") || !strcmp(base, ".."))
		return fail("cannot use '%s' as the store: it does not exist",
			    p);
	if (snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "", base) >=
	    (int)len)
		return fail("path too long: '%s'", p);
	return 0;
}

static void json_list(buf *b, const char *key, char **l)
{
	buf_printf(b, ",\"%s\":[", key);
	for (size_t i = 0; l && l[i]; i++) {
		if (i)
			buf_putc(b, ',');
		json_str(b, l[i]);
	}
	buf_putc(b, ']');
}

static void list_text(buf *b, char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		buf_printf(b, "%s%s", i ? ", " : "", l[i]);
}

static int install(cli_ctx *ctx, bool uninstall)
{
	const char *verb = uninstall ? "uninstall" : "install";
	bool user = false;
	const opt_spec specs[] = { { "user", 0, false, NULL, &user, NULL },
				   { NULL, 0, false, NULL, NULL, NULL } };
	char root[PATH_MAX] = "", path[PATH_MAX], program[PATH_MAX];
	char store[PATH_MAX];
	hook_file before = HOOK_FILE_INIT, f = HOOK_FILE_INIT;
	const hook_agent *a;
	buf b = BUF_INIT;
	ssize_t n;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 2 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree hook %s AGENT [--user]",
				   verb);
	if (!(a = hook_agent_find(ctx->argv[1])))
		return usage_error(ctx,
				   "unknown agent '%s' (known: claude-code, "
				   "codex, gemini)",
				   ctx->argv[1]);
	if (!user && (r = abs_root(root, sizeof(root), ctx)) != 0)
		return r;
	if (hook_settings_path(path, sizeof(path), a, user, root) < 0)
		return fail("%s", error_last());
	if (uninstall) {
		r = hook_uninstall(&f, a, path);
	} else {
		n = readlink("/proc/self/exe", program, sizeof(program) - 1);
		if (n <= 0 || n >= (ssize_t)sizeof(program) - 1)
			return fail("cannot find the decree binary "
				    "(/proc/self/exe): %s",
				    n < 0 ? strerror(errno) : "no path");
		program[n] = '\0';
		if (n > 10 && !strcmp(program + n - 10, " (deleted)"))
			return fail("the running decree binary '%.*s' was "
				    "deleted; run the installed one",
				    (int)(n - 10), program);
		if (ctx->store_opt &&
		    (r = abs_path(store, sizeof(store), ctx->store_opt)) != 0)
			return r;
		if (hook_inspect(&before, a, path) < 0)
			error_clear(); /* install reports it */
		r = hook_install(&f, a, path, program,
				 ctx->store_opt ? store : NULL);
	}
	if (r < 0) {
		hook_file_release(&before);
		return fail("cannot %s decree's %s hooks: %s", verb, a->name,
			    error_last());
	}
	if (ctx->json) {
		buf_puts(&b, "{");
		json_kv_str(&b, "agent", a->name, false);
		json_kv_str(&b, "scope", user ? "user" : "project", true);
		json_kv_path(&b, "file", path, true);
		buf_printf(&b, ",\"changed\":%s", f.changed ? "true" : "false");
		json_list(&b, "events", f.events);
		buf_puts(&b, "}\n");
	} else if (!ctx->quiet) {
		if (!f.changed)
			buf_printf(&b, "decree's %s hooks are %s in ", a->name,
				   uninstall ? "not installed"
					     : "already "
					       "installed");
		else if (uninstall)
			buf_printf(&b, "removed decree's %s hooks from ",
				   a->name);
		else
			buf_printf(&b, "%s decree's %s hooks in ",
				   before.events && before.events[0]
					   ? "updated"
					   : "installed",
				   a->name);
		buf_printf(&b, "'%s'", cli_q(path));
		if (f.changed && f.events[0]) {
			buf_puts(&b, " (");
			list_text(&b, f.events);
			buf_putc(&b, ')');
		}
		buf_putc(&b, '\n');
	}
	fwrite(b.ptr, 1, b.len, stdout);
	buf_release(&b);
	if (f.enabled_hooks && !ctx->quiet)
		fprintf(stderr,
			"decree: note: set hooksConfig.enabled to true in "
			"'%s': it was false, so no hook ran\n",
			cli_q(path));
	if (f.hooks_off && !uninstall)
		fprintf(stderr, "decree: warning: %s in '%s'; %s\n",
			a->timeout_ms ? "hooksConfig.disabled names decree's "
					"hooks"
				      : "\"disableAllHooks\": true",
			cli_q(path),
			a->timeout_ms ? "gemini does not run them until they "
					"are taken out of it"
				      : "Claude Code runs no hook until it is "
					"removed");
	/* codex 0.169.0 skips hooks silently unless the project is trusted
	 * (project hooks) and each hook is trusted by its hash, which
	 * changes with the command: both are codex's to grant */
	if (!uninstall && !strcmp(a->name, "codex") && !ctx->quiet)
		fprintf(stderr,
			"decree: note: codex runs these hooks only %sonce you "
			"trust them in codex (its start-up review or /hooks; "
			"again after each change), or with "
			"--dangerously-bypass-hook-trust\n",
			user ? ""
			     : "in a trusted project ('codex exec --trust', "
			       "or trust_level = \"trusted\" in "
			       "config.toml) and ");
	hook_file_release(&before);
	hook_file_release(&f);
	return EXIT_OK;
}

/* --- status ------------------------------------------------------------- */

static uint64_t walk_bytes;

static int add_size(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode))
		walk_bytes += (uint64_t)st->st_size;
	return 0;
}

/* The bytes of the regular files under `dir` (symlinks not followed). */
static uint64_t dir_bytes(const char *dir)
{
	walk_bytes = 0;
	(void)nftw(dir, add_size, 16, FTW_PHYS);
	return walk_bytes;
}

/* Is `prog` a program that can run (a bare name: found in $PATH)? */
static bool program_exists(const char *prog)
{
	const char *path = getenv("PATH"), *p, *e;
	char full[PATH_MAX];

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	for (p = path ? path : ""; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		snprintf(full, sizeof(full), "%.*s/%s",
			 e > p ? (int)(e - p) : 1, e > p ? p : ".", prog);
		if (access(full, X_OK) == 0)
			return true;
	}
	return false;
}

static size_t list_len(char **l)
{
	size_t n = 0;

	while (l && l[n])
		n++;
	return n;
}

static size_t agent_event_count(const hook_agent *a)
{
	size_t n = 0;

	while (a->events[n].event)
		n++;
	return n;
}

/* One agent and scope: a JSON object, or a line. */
static void status_scope(buf *b, const cli_ctx *ctx, const hook_agent *a,
			 bool user, const char *root, bool first)
{
	char path[PATH_MAX];
	hook_file f = HOOK_FILE_INIT;
	const char *err = NULL, *scope = user ? "user" : "project";
	bool have_path =
		hook_settings_path(path, sizeof(path), a, user, root) == 0;
	bool installed, partly;

	if (!have_path)
		err = error_last();
	else if (hook_inspect(&f, a, path) < 0)
		err = error_last();
	installed = !err && list_len(f.events) >= agent_event_count(a);
	partly = !err && !installed && list_len(f.events) > 0;
	if (ctx->json) {
		buf_puts(b, first ? "{" : ",{");
		json_kv_str(b, "agent", a->name, false);
		json_kv_str(b, "scope", scope, true);
		json_kv_path(b, "file", have_path ? path : NULL, true);
		buf_printf(b, ",\"exists\":%s,\"installed\":%s",
			   f.exists ? "true" : "false",
			   installed ? "true" : "false");
		json_list(b, "events", f.events);
		buf_puts(b, ",\"programs\":[");
		for (size_t i = 0; f.programs && f.programs[i]; i++) {
			buf_puts(b, i ? ",{" : "{");
			json_kv_path(b, "path", f.programs[i], false);
			buf_printf(b, ",\"exists\":%s}",
				   program_exists(f.programs[i]) ? "true"
								 : "false");
		}
		buf_printf(b, "],\"disabled\":%s",
			   f.hooks_off ? "true" : "false");
		json_kv_str(b, "error", err, true);
		buf_putc(b, '}');
		hook_file_release(&f);
		return;
	}
	buf_printf(b, "  %-12s %-8s ", a->name, scope);
	if (err) {
		buf_puts(b, "error: ");
		cli_sanitize(b, err);
		buf_putc(b, '\n');
		return;
	}
	buf_puts(b, installed ? "installed"
		    : partly  ? "partly installed"
			      : "not installed");
	if (installed || partly) {
		buf_puts(b, " (");
		list_text(b, f.events);
		buf_putc(b, ')');
	}
	buf_printf(b, " in '%s'", cli_q(path));
	if (!f.exists)
		buf_puts(b, " (no such file)");
	for (size_t i = 0; f.programs && f.programs[i]; i++)
		if (!program_exists(f.programs[i]))
			buf_printf(b, "; its decree '%s' does not exist",
				   cli_q(f.programs[i]));
	if (f.hooks_off)
		buf_puts(b, a->timeout_ms ? "; disabled by hooksConfig"
					  : "; disabled by disableAllHooks");
	buf_putc(b, '\n');
	hook_file_release(&f);
}

/* "<time> <agent> <event> <root>: <message>" (hooks.h). */
static void status_last_error(buf *b, const cli_ctx *ctx, const char *line,
			      const char *root)
{
	char at[64] = "", agent[64] = "", event[128] = "";
	const char *msg = line;
	buf needle = BUF_INIT;

	buf_printf(&needle, " %s: ", root);
	if (sscanf(line, "%63s %63s %127s", at, agent, event) == 3 &&
	    strstr(line, needle.ptr))
		msg = strstr(line, needle.ptr) + needle.len;
	buf_release(&needle);
	if (!ctx->json) {
		buf_puts(b, "last hook error: ");
		cli_sanitize(b, line);
		buf_putc(b, '\n');
		return;
	}
	buf_puts(b, ",\"last_error\":{");
	json_kv_str(b, "at", msg != line ? at : NULL, false);
	json_kv_str(b, "agent", msg != line ? agent : NULL, true);
	json_kv_str(b, "event", msg != line ? event : NULL, true);
	json_kv_str(b, "message", msg, true);
	buf_putc(b, '}');
}

static void status_sessions(buf *b, const cli_ctx *ctx, decree_store *s)
{
	decree_agent_sessions *l = NULL;
	size_t n;

	if (!s || decree_agent_sessions_get(&l, s) < 0) {
		buf_puts(b, ctx->json ? ",\"sessions\":null"
				      : "agent sessions: cannot be read\n");
		return;
	}
	n = decree_agent_sessions_count(l);
	if (ctx->json)
		buf_puts(b, ",\"sessions\":[");
	else
		buf_printf(b, "agent sessions: %s\n", n ? "" : "none");
	for (size_t i = 0; i < n; i++) {
		const decree_agent_session_info *si =
			decree_agent_sessions_at(l, i);
		if (ctx->json) {
			buf_puts(b, i ? ",{" : "{");
			json_kv_str(b, "session", si->session, false);
			json_kv_str(b, "agent", si->agent, true);
			buf_printf(b, ",\"turns\":%zu", si->turns);
			json_kv_str(b, "last_at", si->last_at, true);
			buf_putc(b, '}');
		} else {
			buf_printf(b, "  %-12s %s  %zu turn%s  last %s\n",
				   si->agent ? si->agent : "-",
				   cli_q(si->session), si->turns,
				   si->turns == 1 ? "" : "s", si->last_at);
		}
	}
	if (ctx->json)
		buf_putc(b, ']');
	decree_agent_sessions_free(l);
}

static int status(cli_ctx *ctx)
{
	char root[PATH_MAX];
	decree_store *s = NULL;
	const char *store = NULL;
	struct stat st;
	buf b = BUF_INIT, line = BUF_INIT;
	bool first = true, store_exists;
	int r;

	if (opt_parse(ctx, (const opt_spec[]){
				   { NULL, 0, false, NULL, NULL, NULL } }) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree hook status");
	if ((r = abs_root(root, sizeof(root), ctx)) != 0)
		return r;
	/* a store that cannot be opened is reported, and the rest shown */
	if (open_store(&s, ctx) == 0)
		store = decree_store_path(s);
	store_exists = store && stat(store, &st) == 0 && S_ISDIR(st.st_mode);
	if (ctx->json) {
		buf_puts(&b, "{");
		json_kv_path(&b, "root", root, false);
		if (store) {
			buf_puts(&b, ",\"store\":{");
			json_kv_path(&b, "path", store, false);
			buf_printf(&b, ",\"exists\":%s,\"bytes\":%" PRIu64 "}",
				   store_exists ? "true" : "false",
				   store_exists ? dir_bytes(store) : 0);
		} else {
			buf_puts(&b, ",\"store\":null");
		}
		buf_puts(&b, ",\"hooks\":[");
	} else {
		buf_printf(&b, "project: '%s'\n", cli_q(root));
		if (!store)
			buf_puts(&b, "store:   cannot be opened\n");
		else if (store_exists)
			buf_printf(&b, "store:   '%s', %" PRIu64 " bytes\n",
				   cli_q(store), dir_bytes(store));
		else
			buf_printf(&b, "store:   '%s' (not created yet)\n",
				   cli_q(store));
		buf_puts(&b, "hooks:\n");
	}
	for (const hook_agent *a = hook_agents; a->name; a++)
		for (int user = 0; user < 2; user++, first = false)
			status_scope(&b, ctx, a, user, root, first);
	if (ctx->json)
		buf_putc(&b, ']');
	if ((r = hook_log_last(&line, store, root)) == 0)
		status_last_error(&b, ctx, line.ptr, root);
	else
		buf_puts(&b, ctx->json ? ",\"last_error\":null"
				       : "last hook error: none\n");
	status_sessions(&b, ctx, s);
	if (ctx->json)
		buf_puts(&b, "}\n");
	fwrite(b.ptr, 1, b.len, stdout);
	buf_release(&b);
	buf_release(&line);
	if (s)
		close_store(s);
	return EXIT_OK;
}

/* --- the hook the agent runs ------------------------------------------- */

#define PAYLOAD_MAX ((size_t)32 << 20)

/* Written by the alarm handler: prepared before the alarm is armed. */
static char alarm_log[PATH_MAX];
static char alarm_line[2048];
static size_t alarm_line_len;
/* 1 for an event the agent waits for: a late answer is a failure */
static volatile sig_atomic_t alarm_status;

/* Async-signal-safe: mkdir, open, write, close, _exit. */
static void on_alarm(int sig)
{
	(void)sig;
	if (alarm_log[0]) {
		int fd;
		/* the fallback log's directory may not exist yet */
		for (char *p = alarm_log + 1; *p; p++) {
			if (*p != '/')
				continue;
			*p = '\0';
			(void)mkdir(alarm_log, 0700);
			*p = '/';
		}
		fd = open(alarm_log,
			  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
				  O_NOFOLLOW,
			  0600);
		if (fd >= 0) {
			ssize_t w = write(fd, alarm_line, alarm_line_len);
			(void)w;
			close(fd);
		}
	}
	_exit(alarm_status);
}

/* The store directory whose log a hook writes to, when it exists:
 * --store, DECREE_STORE, else the project's .decree/store (run.c finds a
 * config.yml store; the fallback log takes the line otherwise, and
 * status reads both). */
static const char *log_store(char *out, size_t len, const cli_ctx *ctx,
			     const char *root)
{
	const char *env = getenv("DECREE_STORE");
	const char *s = ctx->store_opt ? ctx->store_opt
			: env && *env  ? env
				       : NULL;
	struct stat st;

	if (s)
		snprintf(out, len, "%s", s);
	else
		snprintf(out, len, "%s/.decree/store", root);
	return stat(out, &st) == 0 && S_ISDIR(st.st_mode) ? out : NULL;
}

/* The project a hook is about, as run.c takes it: -C, else the agent's
 * variable naming it, else the working directory (where agents run
 * hooks); then, without -C, its nearest ancestor holding .decree/. */
static void hook_root(char *out, size_t len, const cli_ctx *ctx,
		      const hook_agent *a)
{
	const char *env = a && a->root_env ? getenv(a->root_env) : NULL;
	const char *dir = ctx->root_opt ? ctx->root_opt
			  : env && *env ? env
					: ".";
	char cwd[PATH_MAX], real[PATH_MAX];

	if (realpath(dir, real)) {
		if (ctx->root_opt ||
		    decree_project_find_root(out, len, real) < 0)
			snprintf(out, len, "%s", real);
		return;
	}
	if (getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s", *dir == '/' ? dir : cwd);
	else
		snprintf(out, len, "%s", dir);
}

static void hook_log(const cli_ctx *ctx, const char *root, const char *agent,
		     const char *event, const char *msg)
{
	char dir[PATH_MAX];
	const char *store = log_store(dir, sizeof(dir), ctx, root);

	if (!store || hook_log_write(store, agent, event, root, msg) < 0)
		(void)hook_log_write(NULL, agent, event, root, msg);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "decree: hook %s %s: %s\n", agent, event, msg);
}

/* Seconds the hook may take: DECREE_HOOK_BUDGET, else 10 s less than the
 * timeout install writes for the event. */
static unsigned budget(const hook_agent *a, const hook_event *ev)
{
	const char *env = getenv("DECREE_HOOK_BUDGET");
	unsigned t =
		!a ? 60
		   : hook_event_timeout(a, ev) / (a->timeout_ms ? 1000 : 1);

	if (env && *env) {
		long v = strtol(env, NULL, 10);
		if (v > 0 && v < 86400)
			return (unsigned)v;
	}
	return t > 20 ? t - 10 : t > 2 ? t - 1 : 1;
}

/* Arm the alarm: its line goes to the store's log when there is one,
 * else to the fallback log. */
static void arm(const cli_ctx *ctx, const char *root, const char *agent,
		const char *event, unsigned secs)
{
	char dir[PATH_MAX], when[UTC_TEXT_MAX];
	const char *store = log_store(dir, sizeof(dir), ctx, root);
	struct sigaction sa;
	struct timespec ts;
	buf b = BUF_INIT;

	clock_gettime(CLOCK_REALTIME, &ts);
	utc_format(when, ts.tv_sec);
	buf_printf(&b,
		   "%s %s %s %s: did not finish within %u s; stopped, "
		   "so the agent was not held up\n",
		   when, agent, event, root, secs);
	for (size_t i = 0; i + 1 < b.len; i++) /* one line */
		if ((unsigned char)b.ptr[i] < 0x20 || b.ptr[i] == 0x7f)
			b.ptr[i] = '?';
	alarm_line_len = b.len < sizeof(alarm_line) ? b.len : 0;
	memcpy(alarm_line, b.ptr, alarm_line_len);
	buf_release(&b);
	if (store)
		snprintf(alarm_log, sizeof(alarm_log), "%s/hooks.log", store);
	else if (hook_log_fallback_path(alarm_log, sizeof(alarm_log)) < 0)
		alarm_log[0] = '\0';
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(secs);
}

/* The payload: all of stdin up to PAYLOAD_MAX (the rest is read and
 * dropped, so the agent's write does not fail); nothing from a
 * terminal or a closed stdin. */
static void read_payload(buf *out, bool stdin_open, bool *too_big)
{
	char chunk[65536];

	*too_big = false;
	if (!stdin_open || isatty(STDIN_FILENO))
		return;
	for (;;) {
		ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		if (*too_big || out->len + (size_t)n > PAYLOAD_MAX ||
		    buf_put(out, chunk, (size_t)n) < 0)
			*too_big = true;
	}
}

static int run_hook(cli_ctx *ctx)
{
	/* agents always pipe the payload; stderr may be anything (and a
	 * usage error's exit 2 would block Claude's tool call) */
	bool human = isatty(STDIN_FILENO);
	bool stdin_open = fcntl(STDIN_FILENO, F_GETFD) != -1, too_big;
	const char *agent = ctx->argc > 0 ? ctx->argv[0] : "-";
	const char *event = ctx->argc > 1 ? ctx->argv[1] : "-";
	const hook_agent *a = hook_agent_find(agent);
	const hook_event *ev = a ? hook_event_find(a, event) : NULL;
	bool answers = ev && hook_kind_answers(ev->kind);
	char root[PATH_MAX];
	buf payload = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	int fd, real_out = -1, rc = EXIT_OK;

	if (human && ctx->argc > 0 && !a) {
		/* a person who mistyped "install" or an agent's name */
		const char *names[16] = { "install", "uninstall", "status" };
		size_t n = 3;
		for (const hook_agent *h = hook_agents; h->name && n < 14;
		     h++) {
			names[n++] = h->name;
			if (h->alias)
				names[n++] = h->alias;
		}
		names[n] = NULL;
		return usage_unknown(ctx, "hook command or agent", agent, 0,
				     names, "");
	}
	if ((ctx->argc != 2 || ctx->rest_argc) && human)
		return usage_error(ctx, "usage: decree hook AGENT EVENT, with "
					"the event's payload on stdin");
	/* fds 0-2 stay taken (a file opened later must not become
	 * "stdout"), and stdout goes nowhere: the agent may read it.  An
	 * event the agent waits for gets its answer on the real stdout,
	 * written once at the end. */
	if (answers && ctx->argc == 2 && !ctx->rest_argc)
		real_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	alarm_status = answers ? 1 : 0;
	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO)
		;
	if (fd > STDERR_FILENO) {
		fflush(stdout);
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	hook_root(root, sizeof(root), ctx, a);
	arm(ctx, root, agent, event, budget(a, ev));
	read_payload(&payload, stdin_open, &too_big);
	if (ctx->argc != 2 || ctx->rest_argc) {
		hook_log(ctx, root, agent, event,
			 "usage: decree hook AGENT EVENT (wrong number of "
			 "arguments)");
	} else if (!a) {
		buf m = BUF_INIT;
		buf_printf(&m, "unknown agent '%s'", agent);
		hook_log(ctx, root, agent, event, m.ptr);
		buf_release(&m);
	} else if (!hook_event_find(a, event)) {
		buf m = BUF_INIT;
		buf_printf(&m, "%s has no event '%s' decree handles", a->name,
			   event);
		hook_log(ctx, root, a->name, event, m.ptr);
		buf_release(&m);
	} else if (too_big) {
		hook_log(ctx, root, a->name, event,
			 "payload over 32 MiB (or out of memory); ignored");
	} else {
		hook_request rq = {
			a,	     event,	  ctx->root_opt, ctx->store_opt,
			payload.ptr, payload.len, &out,		 &err
		};
		if (hook_run(&rq) < 0 && answers) {
			/* the agent shows it: "WorktreeCreate hook failed" */
			fprintf(stderr, "decree: hook %s %s: %s\n", a->name,
				event, err.len ? err.ptr : "failed");
			rc = EXIT_FAIL;
		}
	}
	alarm(0);
	if (real_out >= 0) {
		FILE *f = fdopen(real_out, "w");
		if (!f)
			close(real_out);
		if (!f ||
		    (rc == EXIT_OK && out.len &&
		     fwrite(out.ptr, 1, out.len, f) != out.len) ||
		    fclose(f) != 0)
			rc = EXIT_FAIL;
	}
	buf_release(&payload);
	buf_release(&out);
	buf_release(&err);
	return rc;
}

int cmd_hook(cli_ctx *ctx)
{
	if (ctx->help) {
		puts(hook_help);
		return EXIT_OK;
	}
	if (ctx->argc > 0 && !strcmp(ctx->argv[0], "install"))
		return install(ctx, false);
	if (ctx->argc > 0 && !strcmp(ctx->argv[0], "uninstall"))
		return install(ctx, true);
	if (ctx->argc > 0 && !strcmp(ctx->argv[0], "status"))
		return status(ctx);
	return run_hook(ctx);
}
