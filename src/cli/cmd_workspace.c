/*
 * cmd_workspace.c - "decree workspace create|list|path|diff|conflicts|
 * apply|discard" (decree/workspace.h; docs/cli/workspace.md documents
 * every output, docs/workspaces.md the model).
 */
#include "util/common.h"
#include "cli.h"
#include "util/json.h"
#include "util/utc.h"

static void info_json(buf *b, const decree_workspace_info *w)
{
	char at[UTC_TEXT_MAX];

	utc_format_ns(at, w->created_ns);
	buf_putc(b, '{');
	json_kv_str(b, "name", w->name, false);
	json_kv_path(b, "path", w->path, true);
	json_kv_path(b, "project", w->project, true);
	json_kv_str(b, "base", w->base, true);
	json_kv_str(b, "base_tree", w->base_tree, true);
	json_kv_str(b, "created_at", at, true);
	json_kv_str(b, "mode", w->mode, true);
	buf_printf(b,
		   ",\"reflink_verified\":%s,\"copy\":{\"cloned\":%llu,"
		   "\"copied\":%llu,\"from_store\":%llu,\"links\":%llu,"
		   "\"dirs\":%llu,\"bytes\":%llu}}",
		   w->reflink_verified ? "true" : "false",
		   (unsigned long long)w->copy.cloned,
		   (unsigned long long)w->copy.copied,
		   (unsigned long long)w->copy.from_store,
		   (unsigned long long)w->copy.links,
		   (unsigned long long)w->copy.dirs,
		   (unsigned long long)w->copy.bytes);
}

/* What create and path print on stdout: the workspace's document with
 * --json, else its path (what a script wants, also with -q). */
static void print_workspace(const cli_ctx *ctx, const decree_workspace_info *w)
{
	if (ctx->json) {
		buf b = BUF_INIT;
		info_json(&b, w);
		printf("%s\n", b.ptr);
		buf_release(&b);
	} else {
		printf("%s\n", w->path);
	}
}

/* One positional NAME, else a usage error. */
static int one_name(cli_ctx *ctx, const char *usage)
{
	if (ctx->argc != 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree %s", usage);
	return 0;
}

static int ws_create(cli_ctx *ctx)
{
	decree_workspace_create_options o =
		DECREE_WORKSPACE_CREATE_OPTIONS_INIT;
	bool no_reflink = false;
	opt_spec specs[] = {
		{ "from", 0, true, &o.from, NULL, NULL },
		{ "no-reflink", 0, false, NULL, &no_reflink, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_workspace_info w;
	decree_store *s;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree workspace create [NAME] "
					"[--from REF] [--no-reflink]");
	o.name = ctx->argc ? ctx->argv[0] : NULL;
	o.no_reflink = no_reflink;
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	cli_progress_begin(ctx, s);
	r = decree_workspace_create(&w, s, &o);
	cli_progress_end(s);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	cli_did("workspace %s was created at %s", w.name, w.path);
	print_workspace(ctx, &w);
	if (!ctx->json && !ctx->quiet)
		fprintf(stderr,
			"workspace %s: %llu file(s) from checkpoint "
			"%.12s (%s: %llu cloned, %llu copied, %llu "
			"from the store)\n",
			w.name,
			(unsigned long long)(w.copy.cloned + w.copy.copied +
					     w.copy.from_store + w.copy.links),
			w.base, w.mode, (unsigned long long)w.copy.cloned,
			(unsigned long long)w.copy.copied,
			(unsigned long long)w.copy.from_store);
	decree_workspace_info_release(&w);
	return EXIT_OK;
}

static int ws_list(cli_ctx *ctx)
{
	decree_workspace_info *v;
	decree_store *s;
	buf b = BUF_INIT;
	size_t n;
	int r;

	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "usage: decree workspace list");
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	r = decree_workspace_list(&v, &n, s);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json)
		buf_puts(&b, "{\"workspaces\":[");
	else if (n)
		buf_printf(&b, "%-20s  %-20s  %-12s  %-7s  %s\n", "NAME",
			   "CREATED", "BASE", "MODE", "PATH");
	for (size_t i = 0; i < n; i++) {
		char at[UTC_TEXT_MAX];
		if (ctx->json) {
			if (i)
				buf_putc(&b, ',');
			info_json(&b, &v[i]);
			continue;
		}
		utc_format_ns(at, v[i].created_ns);
		buf_printf(&b, "%-20s  %-20s  %.12s  %-7s  %s\n", v[i].name, at,
			   v[i].base, v[i].mode, cli_q(v[i].path));
	}
	if (ctx->json)
		buf_puts(&b, "]}\n");
	fwrite(b.ptr, 1, b.len, stdout);
	buf_release(&b);
	decree_workspace_list_free(v, n);
	return EXIT_OK;
}

static int ws_path(cli_ctx *ctx)
{
	decree_workspace_info w;
	decree_store *s;
	int r;

	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if ((r = one_name(ctx, "workspace path NAME")) != 0)
		return r;
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	r = decree_workspace_get(&w, s, ctx->argv[0]);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	print_workspace(ctx, &w);
	decree_workspace_info_release(&w);
	return EXIT_OK;
}

typedef struct {
	decree_store *s;
	const char *name;
	const decree_diff_options *o;
} ws_diff_args;

static int ws_diff_source(void *arg, decree_diff_cb cb, void *payload)
{
	const ws_diff_args *a = arg;
	return decree_workspace_diff(a->s, a->name, a->o, cb, payload);
}

static int ws_diff(cli_ctx *ctx)
{
	bool stat = false, name_status = false;
	opt_spec specs[] = {
		{ "stat", 0, false, NULL, &stat, NULL },
		{ "name-status", 0, false, NULL, &name_status, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_diff_options o = DECREE_DIFF_OPTIONS_INIT;
	ws_diff_args a;
	decree_store *s;
	buf json = BUF_INIT;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 1)
		return usage_error(ctx, "usage: decree workspace diff NAME "
					"[--stat | --name-status]");
	if (stat && name_status)
		return usage_error(
			ctx, "--stat and --name-status exclude each other");
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	o.no_text = name_status;
	a.s = s;
	a.name = ctx->argv[0];
	a.o = &o;
	r = cli_diff_show(ctx,
			  stat		? CLI_DIFF_STAT
			  : name_status ? CLI_DIFF_NAME_STATUS
					: CLI_DIFF_TEXT,
			  &json, ws_diff_source, &a);
	close_store(s);
	if (r < 0)
		r = lib_fail(r);
	if (r == 0 && ctx->json)
		printf("{%s}\n", json.ptr);
	buf_release(&json);
	return r;
}

/* decree_workspace_apply of workspace `arg`. */
static int ws_apply_source(void *arg, decree_apply_result *res, decree_store *s,
			   const char *name, const decree_apply_options *o)
{
	(void)name;
	return decree_workspace_apply(res, s, arg, o);
}

static int ws_apply(cli_ctx *ctx)
{
	bool check = false;
	const char *exec = NULL, *session = NULL;
	opt_spec specs[] = {
		{ "check", 0, false, NULL, &check, NULL },
		{ "exec", 0, true, &exec, NULL, NULL },
		{ "session", 's', true, &session, NULL, NULL },
		{ "verbose", 'v', false, NULL, &ctx->verbose, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_apply_options o = DECREE_APPLY_OPTIONS_INIT;
	char name[128];
	decree_store *s;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (!isatty(STDERR_FILENO)) /* as decree apply */
		ctx->verbose = true;
	if ((r = one_name(ctx,
			  "workspace apply NAME [--check] [--exec CMD]")) != 0)
		return r;
	if (check && exec)
		return usage_error(ctx, "--check runs no command; drop --exec");
	if (exec && !*exec)
		return usage_error(ctx, "--exec needs a command");
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	snprintf(name, sizeof(name), "workspace %s", ctx->argv[0]);
	return cli_apply_run(ctx, s, &o, name, check, exec, session,
			     ws_apply_source, ctx->argv[0]);
}

typedef struct {
	const cli_ctx *ctx;
	buf json;
	size_t n, total;
} conflicts_out;

static void on_conflict(void *payload, const char *path, decree_apply_action a,
			const char *detail)
{
	conflicts_out *c = payload;

	c->total++;
	if (a != DECREE_APPLY_CONFLICT)
		return;
	if (c->ctx->json) {
		buf_puts(&c->json, c->n ? ",{" : "{");
		json_kv_path(&c->json, "path", path, false);
		json_kv_str(&c->json, "detail", detail, true);
		buf_putc(&c->json, '}');
	} else {
		buf q = BUF_INIT;
		/* the detail names the path: 'PATH': why */
		cli_sanitize(&q, detail ? detail : path);
		printf("%s\n", q.ptr);
		buf_release(&q);
	}
	c->n++;
}

static int ws_conflicts(cli_ctx *ctx)
{
	decree_apply_options o = DECREE_APPLY_OPTIONS_INIT;
	decree_apply_result res;
	conflicts_out c;
	decree_store *s;
	int r;

	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if ((r = one_name(ctx, "workspace conflicts NAME")) != 0)
		return r;
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	memset(&c, 0, sizeof(c));
	c.ctx = ctx;
	c.json = (buf)BUF_INIT;
	o.check_only = true;
	o.report = on_conflict;
	o.payload = &c;
	r = decree_workspace_apply(&res, s, ctx->argv[0], &o);
	close_store(s);
	if (r < 0 && r != DECREE_ECONFLICT) {
		buf_release(&c.json);
		return lib_fail(r);
	}
	if (ctx->json)
		printf("{\"clean\":%s,\"files\":%zu,\"conflicts\":[%s]}\n",
		       c.n ? "false" : "true", c.total,
		       c.json.ptr ? c.json.ptr : "");
	else if (!c.n && !ctx->quiet)
		printf("no conflicts: %zu file(s) would change\n",
		       res.created + res.modified + res.deleted);
	buf_release(&c.json);
	/* conflicts are what was asked for, not a failure of the command;
	 * the status still says whether an apply would go through */
	return c.n ? EXIT_FAIL : EXIT_OK;
}

static int ws_discard(cli_ctx *ctx)
{
	char id[DECREE_ID_HEXLEN + 1];
	decree_store *s;
	int r;

	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if ((r = one_name(ctx, "workspace discard NAME")) != 0)
		return r;
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	r = decree_workspace_discard(id, s, ctx->argv[0]);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	cli_did("workspace %s was discarded (captured as %s)", ctx->argv[0],
		id);
	if (ctx->json) {
		buf b = BUF_INIT;
		buf_putc(&b, '{');
		json_kv_str(&b, "discarded", ctx->argv[0], false);
		json_kv_str(&b, "checkpoint", id, true);
		buf_puts(&b, "}\n");
		fwrite(b.ptr, 1, b.len, stdout);
		buf_release(&b);
	} else if (!ctx->quiet) {
		printf("discarded workspace %s (captured as %.12s); 'decree "
		       "undo' brings it back\n",
		       ctx->argv[0], id);
	}
	return EXIT_OK;
}

static const char create_help[] =
	"Copy the project's scanned tree into a new workspace under the store\n"
	"and print its path.  The base is a new checkpoint of the project\n"
	"(session 'workspace'), or REF.  Files are reflink clones where the\n"
	"file system shares extents (checked on a clone), copies otherwise;\n"
	"--json says which ('mode').  NAME defaults to ws-1, ws-2, ...\n"
	"\n"
	"  --from REF      base the workspace on checkpoint REF\n"
	"  --no-reflink    always copy the bytes";
static const char list_help[] = "The workspaces of this project, by name.";
static const char path_help[] = "Print the workspace's directory.";
static const char diff_help[] =
	"The workspace's changes: its base checkpoint against its files now,\n"
	"in the lossless format of 'decree checkpoint diff'.\n"
	"\n"
	"  --stat          a line per file with its added/removed lines\n"
	"  --name-status   M/A/D per file";
static const char conflicts_help[] =
	"What an apply of the workspace would refuse: one line per path that\n"
	"cannot be merged with the project as it is now, with the reason.\n"
	"Exit status 1 when there is any, 0 when an apply would go through.";
static const char apply_help[] =
	"Carry the workspace's changes (base -> workspace) onto the project as\n"
	"it is now.  Changes to different files and to different parts of a\n"
	"text file merge (as 'git merge-file' would); overlapping or adjacent\n"
	"edits, an edit against a delete, and binary files changed on both\n"
	"sides are conflicts: each is reported and nothing is written.\n"
	"A clean apply is one transaction; 'decree undo' reverts it.\n"
	"\n"
	"  --check             only check and list what would change\n"
	"  --exec CMD          run CMD in the project after the writes; if it\n"
	"                      fails, put the project back as for 'decree apply'\n"
	"  -s, --session S     session of the safety checkpoint taken when CMD fails\n"
	"  -v, --verbose       one stderr line per file and step";
static const char discard_help[] =
	"Remove the workspace.  Its files are captured first (a checkpoint of\n"
	"the workspace, label 'discarded'); 'decree undo' brings it back.";

static const cli_sub subs[] = {
	{ "create", ws_create,
	  "workspace create [NAME] [--from REF] [--no-reflink]",
	  "workspace create", create_help },
	{ "list", ws_list, "workspace list", "workspace list", list_help },
	{ "path", ws_path, "workspace path NAME", "workspace path", path_help },
	{ "diff", ws_diff, "workspace diff NAME [--stat | --name-status]",
	  "workspace diff", diff_help },
	{ "conflicts", ws_conflicts, "workspace conflicts NAME",
	  "workspace conflicts", conflicts_help },
	{ "apply", ws_apply,
	  "workspace apply NAME [--check] [--exec CMD] [-s S] [-v]",
	  "workspace apply", apply_help },
	{ "discard", ws_discard, "workspace discard NAME", "workspace discard",
	  discard_help },
	{ NULL, NULL, NULL, NULL, NULL },
};

static const char workspace_about[] =
	"A workspace is a private copy of the project's scanned tree under the\n"
	"store: an agent works there, 'workspace diff' shows what it did,\n"
	"'workspace apply' merges it into the project as one undoable\n"
	"transaction, 'workspace discard' removes it (undoable too).\n";

int cmd_workspace(cli_ctx *ctx)
{
	return cli_subcommand(ctx, subs, "workspace", workspace_about);
}
