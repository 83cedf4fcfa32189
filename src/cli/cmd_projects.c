/*
 * cmd_projects.c - "decree projects" (the project roots a store serves)
 * and "decree projects move OLD NEW" (re-attach a moved project's
 * checkpoints).  docs/cli/projects.md documents both outputs.
 *
 * Which store: --store, DECREE_STORE, else the store of the project root
 * (-C, else the nearest ancestor holding .decree/, else the current
 * directory) -- for `move`, the root is NEW unless -C is given, so a
 * config.yml `store:` or in-tree store at the new place is found.
 */
#include "util/common.h"
#include "cli.h"
#include "util/json.h"

static const char projects_help[] =
	"usage: decree projects [--json]\n"
	"       decree projects move OLD NEW\n\n"
	"List the project roots the store keeps checkpoints for: checkpoints,\n"
	"bytes of the root's own records, history and caches in the store,\n"
	"the newest checkpoint's time, and whether the root still exists\n"
	"('*' marks this project).  After moving or renaming a project whose\n"
	"store is elsewhere, 'projects move OLD NEW' re-attaches its\n"
	"checkpoints and undo history to NEW (a directory; OLD need not\n"
	"exist).  A store inside the project follows the project by itself.\n"
	"A root that no longer exists can still be named with -C for\n"
	"'checkpoint list', 'checkpoint drop', 'checkpoint prune' and 'gc'.";

static int list(cli_ctx *ctx)
{
	decree_projects *l;
	decree_store *s;
	buf b = BUF_INIT;
	int r;

	if ((r = open_store_any_root(&s, ctx)) != 0)
		return r;
	r = decree_projects_list(&l, s);
	if (r < 0) {
		decree_store_free(s);
		return lib_fail(r);
	}
	if (ctx->json) {
		buf_puts(&b, "{");
		json_kv_str(&b, "store", decree_store_path(s), false);
		buf_puts(&b, ",\"projects\":[");
	} else if (decree_projects_count(l)) {
		buf_printf(&b, "  %11s %12s  %-20s  %-7s  %s\n", "CHECKPOINTS",
			   "BYTES", "LAST", "STATE", "ROOT");
	}
	for (size_t i = 0; i < decree_projects_count(l); i++) {
		const decree_projects_info *p = decree_projects_at(l, i);
		if (ctx->json) {
			buf_puts(&b, i ? ",{" : "{");
			json_kv_str(&b, "root", p->root[0] ? p->root : NULL,
				    false);
			buf_putc(&b, ',');
			json_kv_str(&b, "key", p->key, false);
			buf_printf(&b,
				   ",\"exists\":%s,\"current\":%s,"
				   "\"checkpoint_count\":%zu,\"damaged\":%zu,"
				   "\"history\":%zu,\"bytes\":%" PRIu64,
				   p->exists ? "true" : "false",
				   p->is_current ? "true" : "false",
				   p->checkpoints, p->damaged, p->history,
				   p->bytes);
			json_kv_str(&b, "last_checkpoint_at",
				    p->last_at[0] ? p->last_at : NULL, true);
			json_kv_str(&b, "workspace", p->workspace, true);
			buf_putc(&b, '}');
			continue;
		}
		buf_printf(&b, "%c %11zu %12" PRIu64 "  %-20s  %-7s  ",
			   p->is_current ? '*' : ' ', p->checkpoints, p->bytes,
			   p->last_at[0] ? p->last_at : "-",
			   p->exists ? "exists" : "missing");
		if (p->root[0])
			cli_quote(&b, p->root);
		else
			buf_printf(&b, "(unknown: roots/%s)", p->key);
		if (p->workspace)
			buf_printf(&b, "  (workspace %s)", p->workspace);
		buf_putc(&b, '\n');
	}
	if (ctx->json)
		buf_puts(&b, "]}\n");
	else if (!decree_projects_count(l) && !ctx->quiet)
		fprintf(stderr, "store '%s' has no checkpoints yet\n",
			decree_store_path(s));
	fwrite(b.ptr, 1, b.len, stdout);
	buf_release(&b);
	decree_projects_free(l);
	decree_store_free(s);
	return EXIT_OK;
}

/* A path argument the shell would have expanded but did not. */
static int check_path(const cli_ctx *ctx, const char *what, const char *p)
{
	if (!*p)
		return usage_error(ctx, "%s is empty", what);
	if (p[0] == '~')
		return usage_error(ctx,
				   "%s '%s' starts with '~', which is not "
				   "expanded here; give the path itself",
				   what, p);
	return 0;
}

static int move(cli_ctx *ctx)
{
	const char *old = ctx->argv[1], *new = ctx->argv[2];
	cli_ctx c = *ctx;
	decree_store *s;
	struct stat st;
	int r;

	if ((r = check_path(ctx, "OLD", old)) != 0 ||
	    (r = check_path(ctx, "NEW", new)) != 0)
		return r;
	if (stat(new, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail("cannot move checkpoints to '%s': not a directory",
			    new);
	if (!c.root_opt)
		c.root_opt = new;
	if ((r = open_store(&s, &c)) != 0)
		return r;
	r = decree_projects_move(s, old, new);
	if (r < 0) {
		decree_store_free(s);
		return lib_fail(r);
	}
	if (ctx->json) {
		buf b = BUF_INIT;
		char abs[PATH_MAX];
		buf_puts(&b, "{\"moved\":true,");
		json_kv_str(&b, "from", old, false);
		buf_putc(&b, ',');
		json_kv_str(&b, "to", realpath(new, abs) ? abs : new, false);
		json_kv_str(&b, "store", decree_store_path(s), true);
		buf_puts(&b, "}\n");
		fwrite(b.ptr, 1, b.len, stdout);
		buf_release(&b);
	} else if (!ctx->quiet) {
		printf("moved the checkpoints of '%s' to '%s'\n", cli_q(old),
		       cli_q(new));
	}
	decree_store_free(s);
	return EXIT_OK;
}

int cmd_projects(cli_ctx *ctx)
{
	if (ctx->help) {
		puts(projects_help);
		return EXIT_OK;
	}
	if (opt_parse(ctx, (const opt_spec[]){
				   { NULL, 0, false, NULL, NULL, NULL } }) != 0)
		return EXIT_USAGE;
	if (ctx->rest_argc)
		return usage_error(ctx, "'projects' takes no '--' arguments");
	if (ctx->argc == 0)
		return list(ctx);
	if (!strcmp(ctx->argv[0], "move")) {
		if (ctx->argc != 3)
			return usage_error(
				ctx, "usage: decree projects move OLD NEW");
		return move(ctx);
	}
	return usage_unknown(ctx, "projects command", ctx->argv[0], 0,
			     (const char *const[]){ "move", NULL }, "");
}
