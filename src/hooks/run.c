/*
 * run.c - "decree hook AGENT EVENT" (hooks.h): an agent's hook payload
 * becomes a turn, a tool start or a record of what a tool changed.
 *
 *   prompt      decree_agent_turn: checkpoint, journal the turn
 *   pre-tool    a tool that may write: join (or start) the turn; for a
 *               tool whose writes are unknown, note its start
 *   post-tool   a tool that names its files: journal those paths (no
 *               walk); any other tool that may write: journal what the
 *               walk finds changed since it started
 *   worktrees   Claude Code's WorktreeCreate: a decree workspace of the
 *               project (named after the payload's "name"; an existing
 *               one of that name is reused), its path answered on
 *               stdout; WorktreeRemove: discard the workspace at
 *               "worktree_path" (undoable).  The agent waits for these,
 *               so their failure is also the caller's exit status.
 * Tools known to only read are ignored.  The project is the agent's
 * project directory (its env var, else the payload's cwd; then the
 * nearest ancestor holding .decree/, as for every command); the store is
 * found as the program finds it (--store, DECREE_STORE, config.yml).
 * Every failure is logged (log.c), never reported to the agent.
 */
#include "util/common.h"
#include "hooks.h"
#include "util/alloc.h"

#include <jansson.h>

/* Tools that only read: nothing to do before or after them. */
static const char *const read_only_tools[] = {
	/* Claude Code */
	"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite",
	"NotebookRead", "BashOutput", "ExitPlanMode", "ListMcpResourcesTool",
	"ReadMcpResourceTool",
	/* Gemini CLI */
	"read_file", "read_many_files", "list_directory", "glob",
	"search_file_content", "grep_search", "google_web_search", "web_fetch",
	"write_todos",
	/* Codex CLI */
	"update_plan", "view_image", "web_search", NULL
};

typedef enum { TOOL_READS, TOOL_NAMES_PATHS, TOOL_UNKNOWN_WRITES } tool_kind;

static tool_kind classify(const char *tool)
{
	static const char *const by_path[] = { "Write",	      "Edit",
					       "MultiEdit",   "NotebookEdit",
					       "write_file",  "replace",
					       "apply_patch", NULL };
	for (size_t i = 0; read_only_tools[i]; i++)
		if (!strcmp(tool, read_only_tools[i]))
			return TOOL_READS;
	for (size_t i = 0; by_path[i]; i++)
		if (!strcmp(tool, by_path[i]))
			return TOOL_NAMES_PATHS;
	return TOOL_UNKNOWN_WRITES; /* Bash, run_shell_command, Task, MCP... */
}

typedef struct {
	const hook_request *rq;
	const hook_event *ev;
	json_t *p;	      /* the payload */
	char start[PATH_MAX]; /* the agent's directory */
	char root[PATH_MAX];
	decree_store *s;
	buf err;
} hook_ctx;

static const char *pstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int fail(hook_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(hook_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err.len)
		return -1; /* the first failure is the one to tell */
	va_start(ap, fmt);
	buf_vprintf(&c->err, fmt, ap);
	va_end(ap);
	return -1;
}

static int lib_failed(hook_ctx *c, const char *what)
{
	return fail(c, "%s: %s", what, decree_error_last());
}

/* The project: -C, else the agent's variable naming its project, else
 * the payload's cwd, else the working directory (where agents run
 * hooks); without -C, its nearest ancestor holding .decree/, as for
 * every command.  Without a payload (it could not be read) the root is
 * still found, for the log. */
static int find_root(hook_ctx *c)
{
	const char *dir = c->rq->root_opt;

	if (!dir && c->rq->agent->root_env)
		dir = getenv(c->rq->agent->root_env);
	if ((!dir || *dir != '/') && c->p)
		dir = pstr(c->p, "cwd");
	if (!dir || *dir != '/')
		dir = getcwd(c->start, sizeof(c->start)) ? c->start : NULL;
	if (!dir)
		return fail(c, "no project directory (no cwd in the payload)");
	if (strlen(dir) >= sizeof(c->start)) /* cut short: another dir */
		return fail(c, "the agent's directory is longer than %d bytes",
			    PATH_MAX - 1);
	if (dir != c->start)
		snprintf(c->start, sizeof(c->start), "%s", dir);
	if (c->rq->root_opt)
		snprintf(c->root, sizeof(c->root), "%s", c->rq->root_opt);
	else if (decree_project_find_root(c->root, sizeof(c->root), c->start) <
		 0)
		return lib_failed(c, "cannot find the project root");
	return 0;
}

/* The store of c->root, found as the program finds it. */
static int open_store_at_root(hook_ctx *c)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	decree_config *cfg;
	const char *env = getenv("DECREE_STORE");
	const char *tmo = getenv("DECREE_LOCK_TIMEOUT_MS");
	int r;

	if (decree_config_load(&cfg, c->root) < 0)
		return lib_failed(c, "cannot read the configuration");
	decree_config_store_options(&o, cfg, c->root);
	if (c->rq->store_opt)
		o.store_path = c->rq->store_opt;
	else if (env && *env)
		o.store_path = env;
	/* a hook waits for the lock only so long: the agent is waiting */
	o.lock_timeout_ms = tmo && *tmo ? (int)strtol(tmo, NULL, 10) : 10000;
	r = decree_store_open(&c->s, &o);
	decree_config_free(cfg);
	if (r < 0)
		return lib_failed(c, "cannot open the store");
	return 0;
}

static int open_store(hook_ctx *c)
{
	int r;

	if ((r = find_root(c)) < 0)
		return r;
	return open_store_at_root(c);
}

/* --- paths named by a tool ---------------------------------------------------
 */

typedef struct {
	char **v;
	size_t n, cap;
} path_list;

static void paths_release(path_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		decree_free(l->v[i]);
	decree_free(l->v);
	memset(l, 0, sizeof(*l));
}

/*
 * `p` as a path relative to the root: an absolute path, or one relative
 * to the agent's directory.  Its directory is resolved (symlinks, "..":
 * the agent may name the project through a link); the file itself may be
 * gone.  Paths outside the root are not the project's: skipped.
 */
static int add_path(hook_ctx *c, path_list *l, const char *p)
{
	char dir[PATH_MAX], *slash, *rel = NULL;
	const char *root = decree_store_root(c->s), *base;
	size_t rl = strlen(root);
	struct stat st;
	buf full = BUF_INIT;
	int r = 0;

	if (!p || !*p)
		return 0;
	/* whole: cut short, it could name another file */
	if ((*p == '/' ? buf_puts(&full, p)
		       : buf_printf(&full, "%s/%s", c->start, p)) < 0)
		return fail(c, "out of memory");
	while ((slash = strrchr(full.ptr, '/')) && slash[1] == '\0' &&
	       slash != full.ptr)
		*slash = '\0';
	slash = strrchr(full.ptr, '/');
	*slash = '\0';
	base = slash + 1;
	if (!realpath(*full.ptr ? full.ptr : "/", dir) || stat(dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		goto done; /* its directory is gone, or a file */
	if (strncmp(dir, root, rl) || (dir[rl] != '/' && dir[rl] != '\0'))
		goto done; /* outside the project */
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		goto done;
	if (dir[rl] == '\0')
		rel = decree_strdup(base);
	else {
		buf b = BUF_INIT;
		buf_printf(&b, "%s/%s", dir + rl + 1, base);
		rel = b.ptr ? decree_strdup(b.ptr) : NULL;
		buf_release(&b);
	}
	if (!rel || GROW(l->v, l->cap, l->n + 2) < 0) {
		decree_free(rel);
		r = fail(c, "out of memory");
		goto done;
	}
	l->v[l->n++] = rel;
	l->v[l->n] = NULL;
done:
	buf_release(&full);
	return r;
}

/* The files of a Codex apply_patch: "*** Add File: P", "*** Update File:
 * P", "*** Delete File: P", "*** Move to: P", relative to the cwd. */
static int patch_paths(hook_ctx *c, path_list *l, const char *patch)
{
	static const char *const heads[] = {
		"*** Add File: ", "*** Update File: ", "*** Delete File: ",
		"*** Move to: ", NULL
	};
	while (patch && *patch) {
		const char *nl = strchr(patch, '\n');
		size_t len = nl ? (size_t)(nl - patch) : strlen(patch);
		for (size_t i = 0; heads[i]; i++) {
			size_t h = strlen(heads[i]);
			if (len > h && !strncmp(patch, heads[i], h)) {
				char *p = decree_strndup(patch + h, len - h);
				int r;
				if (!p)
					return fail(c, "out of memory");
				while (*p && strchr(" \t\r", p[strlen(p) - 1]))
					p[strlen(p) - 1] = '\0';
				r = add_path(c, l, p);
				decree_free(p);
				if (r < 0)
					return r;
			}
		}
		patch = nl ? nl + 1 : NULL;
	}
	return 0;
}

static int tool_paths(hook_ctx *c, path_list *l, const char *tool)
{
	json_t *in = json_object_get(c->p, "tool_input");

	if (!strcmp(tool, "apply_patch")) {
		const char *patch = pstr(in, "command");
		if (!patch)
			patch = pstr(in, "input");
		if (!patch && json_is_string(in))
			patch = json_string_value(in);
		return patch_paths(c, l, patch);
	}
	if (!strcmp(tool, "NotebookEdit"))
		return add_path(c, l, pstr(in, "notebook_path"));
	return add_path(c, l, pstr(in, "file_path"));
}

/* --- the events
 * ----------------------------------------------------------------
 */

/* The agent's id of this turn: Claude's prompt_id, Codex's turn_id. */
static const char *turn_id(hook_ctx *c)
{
	const char *id = pstr(c->p, "prompt_id");
	return id ? id : pstr(c->p, "turn_id");
}

static int ensure_turn(hook_ctx *c, const char *session, bool ensure)
{
	decree_turn_options o = DECREE_TURN_OPTIONS_INIT;
	decree_turn_result res;

	o.session = session;
	o.agent = c->rq->agent->name;
	o.message = turn_id(c);
	o.prompt = pstr(c->p, "prompt");
	o.ensure = ensure;
	if (decree_agent_turn(&res, c->s, &o) < 0)
		return lib_failed(c,
				  ensure ? "cannot start the turn before the "
					   "tool"
					 : "cannot checkpoint the turn");
	return 0;
}

static int on_post_tool(hook_ctx *c, const char *session, const char *tool,
			tool_kind k)
{
	const char *tool_id = pstr(c->p, "tool_use_id");
	size_t n;
	int r;

	if (k == TOOL_NAMES_PATHS) {
		path_list l = { NULL, 0, 0 };
		if ((r = tool_paths(c, &l, tool)) == 0 && l.n) {
			r = decree_agent_record_paths(&n, c->s, session, tool,
						      (const char *const *)l.v);
			if (r == DECREE_ENOTFOUND) { /* no turn: pre-tool failed
						      */
				decree_error_clear();
				if ((r = ensure_turn(c, session, true)) == 0)
					r = decree_agent_record_paths(
						&n, c->s, session, tool,
						(const char *const *)l.v);
			}
			if (r < 0)
				r = lib_failed(
					c, "cannot record the tool's files");
		}
		paths_release(&l);
		return r;
	}
	r = decree_agent_record_scan(&n, c->s, session, tool, tool_id);
	if (r == DECREE_ENOTFOUND) {
		decree_error_clear();
		if ((r = ensure_turn(c, session, true)) < 0)
			return r;
		/* no baseline before the tool: its changes cannot be told */
		return 0;
	}
	return r < 0 ? lib_failed(c, "cannot record what the tool changed") : 0;
}

/* --- Claude Code's worktrees: decree workspaces ------------------------------
 */

/* A workspace name from the agent's worktree name: letters, digits, '-',
 * '_' and '.' kept, anything else '-', no leading '.' or '-', at most 64
 * bytes; "" when nothing is left (decree picks ws-N). */
static void workspace_name(char out[65], const char *name)
{
	size_t n = 0;

	for (const char *p = name ? name : ""; *p && n < 64; p++) {
		unsigned char ch = (unsigned char)*p;
		bool keep = (ch >= 'a' && ch <= 'z') ||
			    (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') || ch == '-' ||
			    ch == '_' || ch == '.';
		if (!n && (ch == '.' || ch == '-' || !keep))
			continue;
		out[n++] = keep ? (char)ch : '-';
	}
	while (n && out[n - 1] == '-') /* "my wt!" -> "my-wt" */
		n--;
	out[n] = '\0';
}

/* WorktreeCreate: make a workspace of the project (or find the one of
 * that name) and answer its absolute path. */
static int on_worktree_create(hook_ctx *c)
{
	decree_workspace_create_options o =
		DECREE_WORKSPACE_CREATE_OPTIONS_INIT;
	decree_workspace_info wi;
	const char *want = pstr(c->p, "name");
	char name[65];
	int r;

	if (!want)
		want = pstr(c->p, "worktree_name");
	workspace_name(name, want);
	if ((r = open_store(c)) < 0)
		return r;
	memset(&wi, 0, sizeof(wi));
	/* claude --worktree NAME again: the same workspace, as git's */
	if (!*name || (r = decree_workspace_get(&wi, c->s, name)) < 0) {
		decree_error_clear();
		o.name = *name ? name : NULL;
		if (decree_workspace_create(&wi, c->s, &o) < 0)
			return lib_failed(c, "cannot create the workspace");
	}
	if (c->rq->out)
		buf_printf(c->rq->out, "%s\n", wi.path);
	decree_workspace_info_release(&wi);
	return 0;
}

/* The project of the workspace at `path`, from its .decree/workspace.json,
 * into c->root (for a hook run from inside the workspace). */
static int project_of_workspace(hook_ctx *c, const char *path)
{
	char meta[PATH_MAX + 32];
	json_error_t jerr;
	json_t *m;
	const char *proj;
	int r = -1;

	snprintf(meta, sizeof(meta), "%s/.decree/workspace.json", path);
	if (!(m = json_load_file(meta, 0, &jerr)))
		return -1;
	if ((proj = pstr(m, "project")) && *proj == '/' &&
	    strlen(proj) < sizeof(c->root)) {
		snprintf(c->root, sizeof(c->root), "%s", proj);
		r = 0;
	}
	json_decref(m);
	return r;
}

/* WorktreeRemove: discard the workspace at worktree_path (captured
 * first: `decree undo` in the project brings it back). */
static int on_worktree_remove(hook_ctx *c)
{
	const char *path = pstr(c->p, "worktree_path");
	const char *base;
	char real[PATH_MAX], have[PATH_MAX];
	decree_workspace_info wi;
	int r;

	if (!path || *path != '/')
		return fail(c, "the payload has no absolute worktree_path");
	if (!realpath(path, real))
		return fail(c, "cannot resolve the worktree '%s': %s", path,
			    strerror(errno));
	base = strrchr(real, '/') + 1;
	if ((r = open_store(c)) < 0)
		return r;
	memset(&wi, 0, sizeof(wi));
	if (decree_workspace_get(&wi, c->s, base) < 0 ||
	    !realpath(wi.path, have) || strcmp(have, real)) {
		/* the hook ran from elsewhere (inside the workspace): its
		 * project is the one the workspace names */
		decree_error_clear();
		decree_workspace_info_release(&wi);
		decree_store_free(c->s);
		c->s = NULL;
		if (project_of_workspace(c, real) < 0)
			return fail(c, "'%s' is not a decree workspace of '%s'",
				    real, c->root);
		if ((r = open_store_at_root(c)) < 0)
			return r;
		if (decree_workspace_get(&wi, c->s, base) < 0 ||
		    !realpath(wi.path, have) || strcmp(have, real)) {
			decree_workspace_info_release(&wi);
			return fail(c, "'%s' is not a decree workspace of '%s'",
				    real, c->root);
		}
	}
	decree_workspace_info_release(&wi);
	if (decree_workspace_discard(NULL, c->s, base) < 0)
		return lib_failed(c, "cannot discard the workspace");
	return 0;
}

static int dispatch(hook_ctx *c)
{
	json_error_t jerr;
	const char *session, *tool;
	tool_kind k;
	int r;

	if (!(c->ev = hook_event_find(c->rq->agent, c->rq->event)))
		return fail(c, "unknown %s event '%s'", c->rq->agent->name,
			    c->rq->event);
	c->p = json_loadb(c->rq->payload ? c->rq->payload : "",
			  c->rq->payload_len, 0, &jerr);
	if (!json_is_object(c->p))
		return fail(c, "the payload is not a JSON object: %s",
			    jerr.text);
	if (c->ev->kind == HOOK_WORKTREE_CREATE)
		return on_worktree_create(c);
	if (c->ev->kind == HOOK_WORKTREE_REMOVE)
		return on_worktree_remove(c);
	if (!(session = pstr(c->p, "session_id")) || !*session)
		return fail(c, "the payload has no session_id");
	tool = pstr(c->p, "tool_name");
	k = c->ev->kind == HOOK_PROMPT ? TOOL_UNKNOWN_WRITES
	    : tool		       ? classify(tool)
				       : TOOL_UNKNOWN_WRITES;
	if (!tool)
		tool = "tool";
	if (k == TOOL_READS)
		return 0; /* before the store is even opened */
	if ((r = open_store(c)) < 0)
		return r;
	switch (c->ev->kind) {
	case HOOK_PROMPT:
		return ensure_turn(c, session, false);
	case HOOK_PRE_TOOL:
		if ((r = ensure_turn(c, session, true)) < 0)
			return r;
		if (k == TOOL_UNKNOWN_WRITES &&
		    decree_agent_tool_start(c->s, session, tool,
					    pstr(c->p, "tool_use_id")) < 0)
			return lib_failed(c, "cannot note the tool's start");
		return 0;
	case HOOK_POST_TOOL:
		return on_post_tool(c, session, tool, k);
	case HOOK_WORKTREE_CREATE:
	case HOOK_WORKTREE_REMOVE:
		break; /* answered above */
	}
	return 0;
}

int hook_run(const hook_request *rq)
{
	hook_ctx c;
	int r;

	memset(&c, 0, sizeof(c));
	c.rq = rq;
	r = dispatch(&c);
	if (r < 0) {
		/* the root as 'decree hook status' names it: resolved */
		char real[PATH_MAX];
		if (!*c.root) {
			buf keep = BUF_INIT; /* the first failure is the one */
			buf_puts(&keep, c.err.ptr ? c.err.ptr : "failed");
			(void)find_root(&c);
			buf_release(&c.err);
			c.err = keep;
		}
		const char *root = c.s	      ? decree_store_root(c.s)
				   : *c.root  ? c.root
				   : *c.start ? c.start
					      : NULL;
		const char *msg = c.err.len ? c.err.ptr : "failed";
		if (root && !c.s && realpath(root, real))
			root = real;
		if (!c.s ||
		    hook_log_write(decree_store_path(c.s), rq->agent->name,
				   rq->event, root, msg) < 0)
			hook_log_write(NULL, rq->agent->name, rq->event, root,
				       msg);
		if (rq->err)
			buf_puts(rq->err, msg);
	}
	decree_store_free(c.s);
	json_decref(c.p);
	buf_release(&c.err);
	return r;
}
