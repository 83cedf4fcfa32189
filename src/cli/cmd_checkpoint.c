/*
 * cmd_checkpoint.c - "decree checkpoint ...", rollback, undo, redo,
 * recover, gc and fsck.  Human output on stdout, errors on stderr as
 * "decree: <message>", --json output as documented in docs/cli/.
 */
#include "util/common.h"
#include "cli.h"
#include "util/json.h"
#include "decree/agent.h"
#include "util/size.h"

#include <time.h>

static void emit(buf *b)
{
	fwrite(b->ptr, 1, b->len, stdout);
	buf_release(b);
}

/* "644", "600", "120000": the permission bits of a file in octal */
static const char *mode_str(char out[8], unsigned mode)
{
	snprintf(out, 8, "%o", mode & 0177777u);
	return out;
}

/*
 * The common start of a command that takes no positional arguments: print
 * `help` for --help, parse the options, refuse arguments, open the store.
 * Returns PROCEED with *s open, or the exit code to return.
 */
#define PROCEED (-1)
static int start_plain(decree_store **s, cli_ctx *ctx, const opt_spec *specs,
		       const char *help)
{
	int r;

	if (ctx->help) {
		puts(help);
		return EXIT_OK;
	}
	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'%s' takes no arguments",
				   ctx->cmdname);
	if ((r = open_store_any_root(s, ctx)) != 0)
		return r;
	return PROCEED;
}

/* --- create -----------------------------------------------------------------
 */

static int ck_create(cli_ctx *ctx)
{
	const char *session = NULL, *message = NULL, *label = NULL;
	const char *max_size = NULL;
	bool if_changed = false;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	opt_spec specs[] = {
		{ "session", 's', true, &session, NULL, NULL },
		{ "message", 'm', true, &message, NULL, NULL },
		{ "label", 'l', true, &label, NULL, NULL },
		{ "if-changed", 0, false, NULL, &if_changed, NULL },
		{ "max-file-size", 0, true, &max_size, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	const char **excludes;
	size_t nex = 0;
	opt_list lists[] = {
		{ "exclude", NULL, &nex },
		{ NULL, NULL, NULL },
	};
	decree_checkpoint_created res;
	decree_store *s;
	buf notes = BUF_INIT;
	int r;

	/* one slot per word at most, and the NULL that ends the list */
	if (!(excludes = calloc((size_t)ctx->argc + 1, sizeof(*excludes))))
		return fail("out of memory");
	lists[0].values = excludes;
	if (opt_parse_lists(ctx, specs, lists) != 0) {
		r = EXIT_USAGE;
		goto done;
	}
	if (ctx->argc || ctx->rest_argc) {
		r = usage_error(ctx, "'checkpoint create' takes no arguments");
		goto done;
	}
	if (session && !*session) {
		r = usage_error(ctx, "--session needs a non-empty name");
		goto done;
	}
	if (max_size && size_parse(&o.max_file_size, max_size) < 0) {
		r = usage_error(ctx,
				"--max-file-size needs a positive size like "
				"52428800 or 50M, not '%s'",
				max_size);
		goto done;
	}
	if ((r = open_store(&s, ctx)) != 0)
		goto done;
	o.session = session;
	o.message = message;
	o.label = label;
	o.if_changed = if_changed;
	o.excludes = nex ? excludes : NULL;
	cli_progress_begin(ctx, s);
	r = decree_checkpoint_create_ext(&res, s, &o);
	cli_progress_end(s);
	if (r == 0)
		cli_notices(ctx, s, ctx->json ? &notes : NULL);
	close_store(s);
	if (r < 0) {
		r = lib_fail(r);
		goto done;
	}
	if (res.created)
		cli_did("checkpoint %s was created", res.id);
	if (ctx->json) {
		buf b = BUF_INIT;
		buf_printf(&b,
			   "{\"id\":\"%s\",\"created\":%s,\"tree\":\"%s\","
			   "\"notices\":%s}\n",
			   res.id, res.created ? "true" : "false", res.tree,
			   notes.ptr);
		emit(&b);
	} else {
		/* the id is what was asked for: -q keeps it (scripts do
		 * id=$(decree -q checkpoint create)) */
		printf("%s\n", res.id);
	}
	r = EXIT_OK;
done:
	buf_release(&notes);
	free(excludes);
	return r;
}

/* --- list
 * --------------------------------------------------------------------- */

/* ,"key":N, or "key":null for -1 (unknown) */
static void json_kv_count(buf *b, const char *key, int64_t v)
{
	if (v < 0)
		buf_printf(b, ",\"%s\":null", key);
	else
		buf_printf(b, ",\"%s\":%" PRId64, key, v);
}

/* has_changes: 0 leave it out, 1 the value, -1 null (the root is gone:
 * there is no working tree to compare the newest checkpoint with) */
static void info_json(buf *b, const decree_checkpoint_info *c, int has_changes)
{
	buf_printf(b, "{\"id\":\"%s\"", c->id);
	json_kv_str(b, "session", c->session, true);
	json_kv_str(b, "message", c->message, true);
	json_kv_str(b, "label", c->label, true);
	buf_printf(
		b,
		",\"created_at\":\"%s\",\"tree\":\"%s\",\"file_count\":%" PRIu64
		",\"total_bytes\":%" PRIu64,
		c->created_at, c->tree, c->file_count, c->total_bytes);
	/* against the session's previous checkpoint; null: made before
	 * decree counted them */
	json_kv_count(b, "files_changed", c->files_changed);
	json_kv_count(b, "insertions", c->insertions);
	json_kv_count(b, "deletions", c->deletions);
	if (has_changes)
		buf_printf(b, ",\"has_changes\":%s",
			   has_changes < 0  ? "null"
			   : c->has_changes ? "true"
					    : "false");
	buf_puts(b, "}");
}

static int ck_list(cli_ctx *ctx)
{
	const char *session = NULL;
	opt_spec specs[] = {
		{ "session", 's', true, &session, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_checkpoint_list *l;
	decree_store *s;
	buf b = BUF_INIT;
	bool here;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'checkpoint list' takes no arguments");
	if ((r = open_store_any_root(&s, ctx)) != 0)
		return r;
	/* a root that is gone has no working tree to compare with */
	here = decree_store_root_exists(s);
	r = decree_checkpoint_list_get(&l, s, session,
				       here ? DECREE_LIST_HAS_CHANGES : 0);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json) {
		buf_puts(&b, "{\"checkpoints\":[");
		for (size_t i = 0; i < decree_checkpoint_list_count(l); i++) {
			if (i)
				buf_putc(&b, ',');
			info_json(&b, decree_checkpoint_list_at(l, i),
				  here ? 1 : -1);
		}
		buf_puts(&b, "]}\n");
	} else {
		for (size_t i = 0; i < decree_checkpoint_list_count(l); i++) {
			const decree_checkpoint_info *c =
				decree_checkpoint_list_at(l, i);
			char counts[64] = "";
			if (c->insertions >= 0 && c->deletions >= 0)
				snprintf(counts, sizeof(counts),
					 "+%" PRId64 " -%" PRId64,
					 c->insertions, c->deletions);
			buf_printf(&b,
				   "%s%.12s%s  %s  %-10s %6" PRIu64
				   " files %-15s %s",
				   cli_color(CLI_YELLOW), c->id,
				   cli_color(CLI_RESET), c->created_at,
				   cli_q(c->session), c->file_count, counts,
				   here && c->has_changes ? "changed"
							  : "       ");
			if (c->label)
				buf_printf(&b, "  [%s]", cli_q(c->label));
			if (c->message)
				buf_printf(&b, "  %s", cli_q(c->message));
			buf_putc(&b, '\n');
		}
		if (!decree_checkpoint_list_count(l) && !ctx->quiet)
			fputs("no checkpoints yet ('decree checkpoint create' makes one)\n",
			      stderr);
	}
	decree_checkpoint_list_free(l);
	emit(&b);
	return EXIT_OK;
}

/* --- show
 * ----------------------------------------------------------------------- */

static int ck_show(cli_ctx *ctx)
{
	decree_snapshot *sn;
	decree_checkpoint_info info;
	decree_store *s;
	buf b = BUF_INIT;
	bool first = true;
	size_t n;
	int r;

	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree checkpoint show REF");
	if ((r = open_store_any_root(&s, ctx)) != 0)
		return r;
	r = decree_checkpoint_show(&sn, &info, s, ctx->argv[0]);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	n = decree_snapshot_count(sn);
	if (ctx->json) {
		info_json(&b, &info, 0);
		buf_truncate(&b, b.len - 1);
		buf_puts(&b, ",\"files\":[");
		for (size_t i = 0; i < n; i++) {
			decree_file_info f;
			char ms[8];
			decree_snapshot_at(&f, sn, i);
			if (f.skip_reason)
				continue;
			buf_puts(&b, first ? "{" : ",{");
			first = false;
			json_kv_path(&b, "path", f.path, false);
			buf_printf(&b,
				   ",\"sha256\":\"%s\",\"size\":%" PRIu64
				   ",\"mode\":\"%s\"}",
				   f.sha256, f.size, mode_str(ms, f.mode));
		}
		buf_puts(&b, "],\"skipped\":[");
		first = true;
		for (size_t i = 0; i < n; i++) {
			decree_file_info f;
			decree_snapshot_at(&f, sn, i);
			if (!f.skip_reason)
				continue;
			buf_puts(&b, first ? "{" : ",{");
			first = false;
			json_kv_path(&b, "path", f.path, false);
			buf_printf(&b, ",\"size\":%" PRIu64, f.size);
			json_kv_str(&b, "reason", f.skip_reason, true);
			buf_putc(&b, '}');
		}
		buf_puts(&b, "]}\n");
	} else {
		cli_pager_start();
		buf_printf(&b,
			   "%scheckpoint %s%s\nsession    %s\ncreated    %s\n",
			   cli_color(CLI_YELLOW), info.id, cli_color(CLI_RESET),
			   cli_q(info.session), info.created_at);
		if (info.message)
			buf_printf(&b, "message    %s\n", cli_q(info.message));
		if (info.label)
			buf_printf(&b, "label      %s\n", cli_q(info.label));
		buf_printf(&b, "files      %" PRIu64 " (%" PRIu64 " bytes)\n\n",
			   info.file_count, info.total_bytes);
		for (size_t i = 0; i < n; i++) {
			decree_file_info f;
			char ms[8];
			decree_snapshot_at(&f, sn, i);
			if (f.skip_reason)
				buf_printf(&b,
					   "skipped %-57s %10" PRIu64
					   " %s (%s)\n",
					   "", f.size, cli_q(f.path),
					   f.skip_reason);
			else
				buf_printf(&b, "%-6s %s %10" PRIu64 " %s\n",
					   mode_str(ms, f.mode), f.sha256,
					   f.size, cli_q(f.path));
		}
	}
	decree_snapshot_free(sn);
	emit(&b);
	return EXIT_OK;
}

/* --- restore, rollback, undo, redo -------------------------------------------
 */

/* What a restore, rewind, undo or redo reports: the plan as it comes
 * (human: one line per path; --json: "changes" and one list of paths per
 * kind of action, "replace" counted as restored). */
enum { PL_CREATED, PL_RESTORED, PL_DELETED, PL_SKIPPED, PL_KINDS };
typedef struct {
	const cli_ctx *ctx;
	buf json;
	buf lists[PL_KINDS];
	size_t n, counts[PL_KINDS];
	bool dry;
} plan_out;
#define PLAN_OUT_INIT(ctx, dry)                                               \
	{                                                                     \
		ctx, BUF_INIT, { BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT }, 0, \
			{ 0, 0, 0, 0 }, dry                                   \
	}

static void plan_release(plan_out *p)
{
	buf_release(&p->json);
	for (int k = 0; k < PL_KINDS; k++)
		buf_release(&p->lists[k]);
}

static void on_plan(void *payload, const char *path, decree_action a)
{
	plan_out *p = payload;
	int k = a == DECREE_ACTION_CREATE	    ? PL_CREATED
		: a == DECREE_ACTION_DELETE	    ? PL_DELETED
		: a == DECREE_ACTION_SKIP_USER_EDIT ? PL_SKIPPED
						    : PL_RESTORED;
	if (p->ctx->json) {
		if (k != PL_SKIPPED) {
			buf_puts(&p->json, p->n ? ",{" : "{");
			json_kv_path(&p->json, "path", path, false);
			json_kv_str(&p->json, "action", decree_action_name(a),
				    true);
			buf_putc(&p->json, '}');
		}
		if (p->counts[k])
			buf_putc(&p->lists[k], ',');
		json_str(&p->lists[k], path);
	} else if ((!p->ctx->quiet && (p->ctx->verbose || k == PL_SKIPPED)) ||
		   p->dry) {
		/* the plan: per path with --dry-run (what was asked for: -q
		 * keeps it) or -v (the user's edits left alone always); else
		 * the summary says it */
		const char *act = decree_action_name(a);

		cli_progress_clear();
		printf("%s%s%s %s\n", cli_action_color(act), act,
		       cli_color(CLI_RESET), cli_q(path));
		fflush(stdout);
	}
	p->counts[k]++;
	p->n += k != PL_SKIPPED;
}

static void on_progress(void *payload, decree_phase ph, const char *path,
			const char *action)
{
	plan_out *p = payload;
	/* Only roll-back steps are news to the user; the plan was printed.
	 * After Ctrl-C, one line says it all (cli_cancel_report). */
	if (ph == DECREE_PHASE_ROLLING_BACK && !p->ctx->quiet &&
	    p->ctx->verbose && !cli_cancelled()) {
		cli_progress_clear();
		fprintf(stderr, "%s: %s %s\n", decree_phase_name(ph),
			action ? action : "", path ? cli_q(path) : "");
	}
}

/* The result of a restore, rewind, undo or redo that returned r, with the
 * notices it left on s. */
/* The notice of an undo or redo of a workspace discard, or NULL. */
static const decree_notice *workspace_notice(const decree_store *s)
{
	for (size_t i = 0; i < decree_notice_count(s); i++)
		if (decree_notice_at(s, i)->kind == DECREE_NOTICE_WORKSPACE)
			return decree_notice_at(s, i);
	return NULL;
}

static int finish_restore(const cli_ctx *ctx, plan_out *po, int r,
			  const decree_restore_result *res, const char *verb,
			  const char *target, const decree_store *s)
{
	buf notes = BUF_INIT;

	cli_progress_end(NULL);
	if (r == DECREE_ECANCELLED) {
		plan_release(po);
		return cli_cancel_report(r, verb);
	}
	if (r < 0) {
		plan_release(po);
		return lib_fail_hint(r, fsck_hint(r));
	}
	if (!po->dry)
		cli_cancel_report(r, verb);
	if (!po->dry && po->n)
		cli_did("%s done: created %zu, restored %zu, deleted %zu "
			"file(s)",
			verb, res->created, res->restored, res->deleted);
	cli_notices(ctx, s, ctx->json ? &notes : NULL);
	if (ctx->json) {
		static const char *const names[PL_KINDS] = {
			"created", "restored", "deleted", "skipped_user_edits"
		};
		buf b = BUF_INIT;
		buf_printf(&b, "{\"operation\":\"%s\"", verb);
		json_kv_str(&b, "checkpoint", target, true);
		buf_printf(&b, ",\"dry_run\":%s", po->dry ? "true" : "false");
		json_kv_str(&b, "pre_checkpoint",
			    res->pre_checkpoint[0] ? res->pre_checkpoint : NULL,
			    true);
		for (int k = 0; k < PL_KINDS; k++)
			buf_printf(&b, ",\"%s\":[%s]", names[k],
				   po->lists[k].ptr ? po->lists[k].ptr : "");
		buf_printf(&b, ",\"changes\":[%s],\"notices\":%s}\n",
			   po->json.ptr ? po->json.ptr : "", notes.ptr);
		emit(&b);
	} else if (!ctx->quiet) {
		if (po->dry)
			printf("dry run: would create %zu, restore %zu, delete %zu file(s)\n",
			       res->created, res->restored, res->deleted);
		else if (!po->n && workspace_notice(s))
			printf("%s: %s\n", verb, workspace_notice(s)->message);
		else if (!po->n)
			printf("nothing to %s: the tree already matches\n",
			       verb);
		else
			printf("%s: created %zu, restored %zu, deleted %zu file(s)%s\n",
			       verb, res->created, res->restored, res->deleted,
			       strcmp(verb, "undo") && strcmp(verb, "redo")
				       ? "; 'decree undo' reverts this"
				       : "");
		if (res->skipped_user_edits)
			printf("left %zu file(s) as the user edited them after "
			       "the agent (see 'skip-user-edit' above)\n",
			       res->skipped_user_edits);
	}
	buf_release(&notes);
	plan_release(po);
	return EXIT_OK;
}

static int do_restore(cli_ctx *ctx, decree_store *s, const char *ref, bool dry,
		      bool agent_only)
{
	decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;
	decree_restore_result res;
	plan_out po = PLAN_OUT_INIT(ctx, dry);
	char id[DECREE_ID_HEXLEN + 1];
	char **paths = NULL;
	int r;

	if ((r = cli_paths(&paths, ctx, s)) != 0)
		return r;
	o.paths = (const char *const *)paths;
	o.dry_run = dry;
	o.agent_only = agent_only;
	o.plan = on_plan;
	o.progress = on_progress;
	o.payload = &po;
	if (!dry)
		o.cancel = cli_cancel_catch();
	cli_progress_begin(ctx, s);
	if ((r = decree_checkpoint_resolve(id, s, ref)) == 0)
		r = decree_checkpoint_restore(&res, s, id, &o);
	cli_progress_end(s);
	cli_cancel_release();
	cli_paths_free(paths);
	return finish_restore(ctx, &po, r, &res, "restore", r == 0 ? id : NULL,
			      s);
}

static int ck_restore(cli_ctx *ctx)
{
	bool dry = false, agent_only = false;
	opt_spec specs[] = {
		{ "dry-run", 'n', false, NULL, &dry, NULL },
		{ "agent-only", 0, false, NULL, &agent_only, NULL },
		{ "verbose", 'v', false, NULL, &ctx->verbose, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_store *s;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 1)
		return usage_error(
			ctx,
			"usage: decree checkpoint restore REF [--dry-run] [--agent-only] [-v] [-- PATH...]");
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	r = do_restore(ctx, s, ctx->argv[0], dry, agent_only);
	close_store(s);
	return r;
}

/* undo/redo --drop-damaged: the way past a damaged history entry. */
static int drop_damaged(const cli_ctx *ctx, decree_store *s)
{
	size_t n;
	int r = decree_history_drop_damaged(&n, s);

	decree_store_free(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json)
		printf("{\"dropped\":%zu}\n", n);
	else if (!ctx->quiet && n)
		printf("dropped %zu damaged history entr%s; 'decree undo' now "
		       "undoes the last intact one\n",
		       n, n == 1 ? "y" : "ies");
	else if (!ctx->quiet)
		puts("the undo/redo history has no damaged entry");
	return EXIT_OK;
}

static const char undo_help[] =
	"usage: decree undo [--dry-run | --drop-damaged] [-v]\n\n"
	"Put back the files the last restore, apply or revert changed, exactly\n"
	"as they were before it.  Edits made since are captured first (a\n"
	"checkpoint labelled pre-undo), so nothing is lost: a notice names the\n"
	"edited files it replaced and the command that brings them back.\n"
	"'decree redo' re-applies it.  Prints one summary line.\n\n"
	"  -n, --dry-run   print the plan (also with -q), change nothing\n"
	"  -v, --verbose   print one line per path too\n"
	"  --drop-damaged  drop the damaged entries of the undo/redo history (the\n"
	"                  intact ones stay); nothing else changes";

static const char redo_help[] =
	"usage: decree redo [--dry-run | --drop-damaged] [-v]\n\n"
	"Re-apply what the last 'decree undo' reverted.  Edits made since are\n"
	"captured first (pre-redo), as for undo.  Prints one summary line.\n\n"
	"  -n, --dry-run   print the plan (also with -q), change nothing\n"
	"  -v, --verbose   print one line per path too\n"
	"  --drop-damaged  drop the damaged entries of the undo/redo history (the\n"
	"                  intact ones stay); nothing else changes";

static int replay_cmd(cli_ctx *ctx, bool undo)
{
	bool dry = false, drop = false;
	opt_spec specs[] = {
		{ "dry-run", 'n', false, NULL, &dry, NULL },
		{ "drop-damaged", 0, false, NULL, &drop, NULL },
		{ "verbose", 'v', false, NULL, &ctx->verbose, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;
	decree_restore_result res;
	plan_out po = PLAN_OUT_INIT(ctx, false);
	decree_store *s;
	int r;

	r = start_plain(&s, ctx, specs, undo ? undo_help : redo_help);
	if (r != PROCEED)
		return r;
	if (drop && dry) {
		decree_store_free(s);
		return usage_error(ctx, "--drop-damaged takes no --dry-run");
	}
	if (drop)
		return drop_damaged(ctx, s);
	po.dry = dry;
	o.dry_run = dry;
	o.plan = on_plan;
	o.progress = on_progress;
	o.payload = &po;
	if (!dry)
		o.cancel = cli_cancel_catch();
	cli_progress_begin(ctx, s);
	r = undo ? decree_undo(&res, s, &o) : decree_redo(&res, s, &o);
	cli_progress_end(s);
	cli_cancel_release();
	if (r == DECREE_ECORRUPT) {
		/* a damaged object, or a damaged history entry */
		close_store(s);
		plan_release(&po);
		return lib_fail_hint(r,
				     undo ? "run 'decree fsck'; 'decree undo "
					    "--drop-damaged' drops damaged "
					    "history entries"
					  : "run 'decree fsck'; 'decree redo "
					    "--drop-damaged' drops damaged "
					    "history entries");
	}
	r = finish_restore(ctx, &po, r, &res, undo ? "undo" : "redo", NULL, s);
	close_store(s);
	return r;
}

int cmd_undo(cli_ctx *ctx)
{
	return replay_cmd(ctx, true);
}

int cmd_redo(cli_ctx *ctx)
{
	return replay_cmd(ctx, false);
}

/* --- rollback
 * --------------------------------------------------------------------- */

static int count_change(void *payload, const char *path, char status)
{
	(void)path;
	(void)status;
	(*(size_t *)payload)++;
	return 0;
}

static int parse_number(long *out, const char *s)
{
	char *end;
	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || end == s || *end || *out < 0 ? -1 : 0;
}

int cli_rollback_refs(cli_ref **out, const decree_checkpoint_list *l)
{
	size_t n = decree_checkpoint_list_count(l), user = 0, captures = 0;

	/* one more, so that an empty list still allocates */
	if (!(*out = calloc(n + 1, sizeof(**out))))
		return fail("out of memory");
	for (size_t k = n; k-- > 0;) {
		if (decree_checkpoint_is_capture(
			    decree_checkpoint_list_at(l, k)))
			snprintf((*out)[k].s, sizeof((*out)[k].s), "u%zu",
				 ++captures);
		else
			snprintf((*out)[k].s, sizeof((*out)[k].s), "%zu",
				 ++user);
	}
	return 0;
}

void cli_checkpoint_json(buf *b, const decree_checkpoint_info *c)
{
	info_json(b, c, 0);
}

static const char rollback_help[] =
	"usage: decree rollback [--session S]\n"
	"       decree rollback [--session S] N|uN [--dry-run] [-v] [-- PATH...]\n\n"
	"Without N: the checkpoints of this project (all sessions, or one with\n"
	"--session), newest first, with time, id, session, how many files differ\n"
	"from the working tree, label and message.  The checkpoints you (or an\n"
	"agent hook, or a pipeline run) made are numbered 1, 2, ... from the\n"
	"newest; the captures decree makes itself before changing the tree\n"
	"(pre-restore, pre-undo, pre-redo, exec-failed) are listed among them\n"
	"as u1, u2, ... and never take a number, so a rollback does not\n"
	"renumber the list you read.\n\n"
	"With N (or uN): restore that checkpoint exactly as 'decree checkpoint\n"
	"restore' does (cascading, one transaction, undoable with 'decree undo').\n\n"
	"  -n, --dry-run    print the plan (restore/create/delete per path; also\n"
	"                   with -q), change nothing\n"
	"  -v, --verbose    print one line per path as well as the summary\n"
	"  -s, --session S  only the checkpoints of session S (numbered among\n"
	"                   them)\n\n"
	"--json: {\"checkpoints\":[{\"n\",\"kind\",\"ref\",\"id\",...,\"files_differ\"}]};\n"
	"with N, what 'checkpoint restore --json' prints.";

/* "3" or "u3" as a rollback ref (its canonical form in out): 0, or -1. */
static int parse_rollback_ref(cli_ref *out, const char *arg)
{
	bool capture = arg[0] == 'u';
	long num;

	if (arg[capture] < '0' || arg[capture] > '9' ||
	    parse_number(&num, arg + capture) < 0 || num < 1)
		return -1;
	snprintf(out->s, sizeof(out->s), "%s%ld", capture ? "u" : "", num);
	return 0;
}

int cmd_rollback(cli_ctx *ctx)
{
	const char *session = NULL;
	bool dry = false;
	opt_spec specs[] = {
		{ "session", 's', true, &session, NULL, NULL },
		{ "dry-run", 'n', false, NULL, &dry, NULL },
		{ "verbose", 'v', false, NULL, &ctx->verbose, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_checkpoint_list *l;
	decree_store *s;
	cli_ref want, *refs;
	buf b = BUF_INIT;
	size_t n;
	int r;

	if (ctx->help) {
		puts(rollback_help);
		return EXIT_OK;
	}
	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 ||
	    (ctx->argc == 1 && parse_rollback_ref(&want, ctx->argv[0]) < 0))
		return usage_error(ctx,
				   "usage: decree rollback [N|uN [--dry-run] "
				   "[-- PATH...]] (N >= 1)");
	if (!ctx->argc && (ctx->rest_argc || dry))
		return usage_error(ctx, "--dry-run and paths need a checkpoint "
					"number: decree rollback N [--dry-run] "
					"[-- PATH...]");
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	if ((r = decree_checkpoint_list_get(&l, s, session, 0)) < 0) {
		close_store(s);
		return lib_fail(r);
	}
	if ((r = cli_rollback_refs(&refs, l)) != 0) {
		decree_checkpoint_list_free(l);
		close_store(s);
		return r;
	}
	n = decree_checkpoint_list_count(l);
	if (ctx->argc) {
		char id[DECREE_ID_HEXLEN + 1] = "";
		size_t have = 0;
		for (size_t k = 0; k < n; k++) {
			if (!strcmp(refs[k].s, want.s))
				memcpy(id, decree_checkpoint_list_at(l, k)->id,
				       sizeof(id));
			have += (refs[k].s[0] == 'u') == (want.s[0] == 'u');
		}
		free(refs);
		decree_checkpoint_list_free(l);
		if (!id[0]) {
			close_store(s);
			return want.s[0] == 'u'
				       ? fail_code(DECREE_ENOTFOUND,
						   "no capture %s (there are "
						   "%zu)",
						   want.s, have)
				       : fail_code(DECREE_ENOTFOUND,
						   "no checkpoint number %s "
						   "(there are %zu)",
						   want.s, have);
		}
		r = do_restore(ctx, s, id, dry, false);
		close_store(s);
		return r;
	}
	if (ctx->json)
		buf_puts(&b, "{\"checkpoints\":[");
	for (size_t k = 0; k < n; k++) {
		const decree_checkpoint_info *c =
			decree_checkpoint_list_at(l, n - 1 - k);
		const char *ref = refs[n - 1 - k].s;
		bool capture = ref[0] == 'u';
		size_t differ = 0;
		if ((r = decree_checkpoint_compare(s, c->id, NULL, count_change,
						   &differ)) < 0) {
			free(refs);
			decree_checkpoint_list_free(l);
			close_store(s);
			buf_release(&b);
			return lib_fail(r);
		}
		if (ctx->json) {
			/* a checkpoint object with its number, kind, ref
			 * and how many files differ */
			buf e = BUF_INIT;
			info_json(&e, c, 0);
			buf_printf(&b,
				   "%s{\"n\":%s,\"kind\":\"%s\",\"ref\":\"%s\"",
				   k ? "," : "", capture ? "null" : ref,
				   capture ? "capture" : "checkpoint", ref);
			buf_printf(&b, ",%.*s,\"files_differ\":%zu}",
				   (int)(e.len - 2), e.ptr + 1, differ);
			buf_release(&e);
		} else {
			buf_printf(&b, "%4s  %s  %s%.12s%s  %-10s %5zu differ",
				   ref, c->created_at, cli_color(CLI_YELLOW),
				   c->id, cli_color(CLI_RESET),
				   cli_q(c->session), differ);
			if (c->label)
				buf_printf(&b, "  [%s]", cli_q(c->label));
			if (c->message)
				buf_printf(&b, "  %s", cli_q(c->message));
			buf_putc(&b, '\n');
		}
	}
	if (ctx->json)
		buf_puts(&b, "]}\n");
	else if (!n && !ctx->quiet)
		buf_puts(
			&b,
			"no checkpoints yet ('decree checkpoint create' makes one)\n");
	free(refs);
	decree_checkpoint_list_free(l);
	close_store(s);
	emit(&b);
	return EXIT_OK;
}

/* --- prune, drop
 * ------------------------------------------------------------------- */

static int ck_prune(cli_ctx *ctx)
{
	const char *session = NULL, *keep_s = NULL, *older_s = NULL;
	opt_spec specs[] = {
		{ "session", 's', true, &session, NULL, NULL },
		{ "keep", 0, true, &keep_s, NULL, NULL },
		{ "older-than", 0, true, &older_s, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	long keep = 0, older = -1;
	decree_store *s;
	size_t removed;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc || (!keep_s == !older_s))
		return usage_error(
			ctx,
			"usage: decree checkpoint prune [--session S] --keep N | --older-than DAYS");
	if (keep_s && (parse_number(&keep, keep_s) < 0 || keep < 1))
		return usage_error(ctx, "--keep needs a number >= 1");
	if (older_s && parse_number(&older, older_s) < 0)
		return usage_error(ctx,
				   "--older-than needs a number of days >= 0");
	if ((r = open_store_any_root(&s, ctx)) != 0)
		return r;
	r = decree_checkpoint_prune(&removed, s, session, keep, older);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json)
		printf("{\"removed\":%zu}\n", removed);
	else if (!ctx->quiet)
		printf("pruned %zu checkpoint(s); 'decree gc' frees their storage\n",
		       removed);
	return EXIT_OK;
}

static int ck_drop(cli_ctx *ctx)
{
	const char *session = NULL;
	bool all = false;
	opt_spec specs[] = {
		{ "session", 's', true, &session, NULL, NULL },
		{ "all", 0, false, NULL, &all, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_store *s;
	size_t removed;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc || (!session == !all))
		return usage_error(
			ctx,
			"usage: decree checkpoint drop --session S | --all");
	if ((r = open_store_any_root(&s, ctx)) != 0)
		return r;
	r = decree_checkpoint_drop(&removed, s, all ? NULL : session);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json)
		printf("{\"removed\":%zu}\n", removed);
	else if (!ctx->quiet)
		printf("dropped %zu checkpoint(s)%s; 'decree gc' frees their storage\n",
		       removed, all ? " and the undo history" : "");
	return EXIT_OK;
}

/* --- rewind
 * ---------------------------------------------------------------------- */

static const char rewind_help[] =
	"usage: decree rewind [--session S] [N] [--agent-only] [--dry-run] [-v] [-- PATH...]\n\n"
	"The turns of an agent session recorded by 'decree hook' (the most recent\n"
	"session unless --session names one), numbered from 1, with the time, the\n"
	"prompt's first line and the files the agent changed in each turn.\n\n"
	"With N: restore the tree to how it was before turn N, as 'decree\n"
	"checkpoint restore' does (cascading, one transaction, undoable).\n\n"
	"  --agent-only      revert only the paths the agent changed since turn N;\n"
	"                    a path the user edited after the agent's last write\n"
	"                    there is left as the user has it and reported\n"
	"                    (skip-user-edit)\n"
	"  -n, --dry-run     print the plan (also with -q), change nothing\n"
	"  -v, --verbose     print one line per path as well as the summary\n"
	"  -s, --session S   the agent's session id (see 'decree hook status')";

static void turns_json(buf *b, const decree_rewind_list *l)
{
	buf_puts(b, "{");
	json_kv_str(b, "session", decree_rewind_list_session(l), false);
	json_kv_str(b, "agent", decree_rewind_list_agent(l), true);
	buf_puts(b, ",\"turns\":[");
	for (size_t i = 0; i < decree_rewind_list_count(l); i++) {
		const decree_turn_info *t = decree_rewind_list_at(l, i);
		buf_printf(b, "%s{\"turn\":%u", i ? "," : "", t->turn);
		json_kv_str(b, "message", t->message, true);
		json_kv_str(b, "prompt", t->prompt, true);
		json_kv_str(b, "checkpoint", t->checkpoint, true);
		buf_printf(b, ",\"checkpoint_exists\":%s,\"created_at\":\"%s\"",
			   t->checkpoint_exists ? "true" : "false",
			   t->created_at);
		buf_puts(b, ",\"files\":[");
		for (size_t k = 0; k < decree_rewind_list_file_count(l, i);
		     k++) {
			if (k)
				buf_putc(b, ',');
			json_str(b, decree_rewind_list_file(l, i, k));
		}
		buf_puts(b, "]}");
	}
	buf_printf(b, "],\"damaged_records\":%zu}\n",
		   decree_rewind_list_damaged(l));
}

static void turns_text(buf *b, const decree_rewind_list *l)
{
	const char *agent = decree_rewind_list_agent(l);

	buf_printf(b, "session %s", cli_q(decree_rewind_list_session(l)));
	if (agent)
		buf_printf(b, " (%s)", cli_q(agent));
	buf_printf(b, ", %zu turn(s)\n", decree_rewind_list_count(l));
	for (size_t i = 0; i < decree_rewind_list_count(l); i++) {
		const decree_turn_info *t = decree_rewind_list_at(l, i);
		size_t nf = decree_rewind_list_file_count(l, i);
		buf_printf(b, "%3u  %s  %3zu file(s)  %s%s\n", t->turn,
			   t->created_at, nf, t->prompt ? cli_q(t->prompt) : "",
			   t->checkpoint_exists ? ""
						: "  (checkpoint deleted)");
		for (size_t k = 0; k < nf; k++)
			buf_printf(b, "       %s\n",
				   cli_q(decree_rewind_list_file(l, i, k)));
	}
	if (decree_rewind_list_damaged(l))
		buf_printf(b, "(%zu damaged journal record(s) skipped)\n",
			   decree_rewind_list_damaged(l));
}

int cmd_rewind(cli_ctx *ctx)
{
	const char *session = NULL;
	bool dry = false, agent_only = false;
	opt_spec specs[] = {
		{ "session", 's', true, &session, NULL, NULL },
		{ "dry-run", 'n', false, NULL, &dry, NULL },
		{ "agent-only", 0, false, NULL, &agent_only, NULL },
		{ "verbose", 'v', false, NULL, &ctx->verbose, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;
	decree_restore_result res;
	plan_out po = PLAN_OUT_INIT(ctx, false);
	decree_rewind_list *l;
	decree_store *s;
	char **paths = NULL;
	char target[DECREE_ID_HEXLEN + 1] = "";
	long num = 0;
	int r;

	if (ctx->help) {
		puts(rewind_help);
		return EXIT_OK;
	}
	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 ||
	    (ctx->argc == 1 &&
	     (parse_number(&num, ctx->argv[0]) < 0 || num < 1)))
		return usage_error(ctx,
				   "usage: decree rewind [--session S] [N] "
				   "[--agent-only] [--dry-run] (N >= 1)");
	if (!ctx->argc && (ctx->rest_argc || dry || agent_only))
		return usage_error(ctx,
				   "--agent-only, --dry-run and paths need "
				   "a turn number: decree rewind N");
	if (session && !*session)
		return usage_error(ctx, "--session needs a non-empty id");
	if ((r = ctx->argc ? open_store(&s, ctx)
			   : open_store_any_root(&s, ctx)) != 0)
		return r;
	if ((r = decree_rewind_list_get(&l, s, session)) < 0) {
		close_store(s);
		return lib_fail(r);
	}
	if (!ctx->argc) {
		buf b = BUF_INIT;
		if (ctx->json)
			turns_json(&b, l);
		else
			turns_text(&b, l);
		decree_rewind_list_free(l);
		close_store(s);
		emit(&b);
		return EXIT_OK;
	}
	if ((size_t)num <= decree_rewind_list_count(l))
		memcpy(target,
		       decree_rewind_list_at(l, (size_t)num - 1)->checkpoint,
		       sizeof(target));
	{
		/* the session listed (the most recent one by default) */
		char *sess = strdup(decree_rewind_list_session(l));
		decree_rewind_list_free(l);
		if (!sess) {
			close_store(s);
			return fail("out of memory");
		}
		if ((r = cli_paths(&paths, ctx, s)) != 0) {
			free(sess);
			close_store(s);
			return r;
		}
		po.dry = dry;
		o.paths = (const char *const *)paths;
		o.dry_run = dry;
		o.agent_only = agent_only;
		o.plan = on_plan;
		o.progress = on_progress;
		o.payload = &po;
		if (!dry)
			o.cancel = cli_cancel_catch();
		cli_progress_begin(ctx, s);
		r = decree_rewind(&res, s, sess, (unsigned)num, &o);
		cli_progress_end(s);
		cli_cancel_release();
		free(sess);
	}
	cli_paths_free(paths);
	r = finish_restore(ctx, &po, r, &res, "rewind", r == 0 ? target : NULL,
			   s);
	close_store(s);
	return r;
}

static int ck_delete(cli_ctx *ctx)
{
	char id[DECREE_ID_HEXLEN + 1];
	decree_store *s;
	int r;

	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree checkpoint delete REF");
	if ((r = open_store_any_root(&s, ctx)) != 0)
		return r;
	/* the full id, for the report; delete resolves it again under the
	 * lock */
	if ((r = decree_checkpoint_resolve(id, s, ctx->argv[0])) == 0)
		r = decree_checkpoint_delete(s, id);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json)
		printf("{\"deleted\":\"%s\"}\n", id);
	else if (!ctx->quiet)
		printf("deleted checkpoint %s; 'decree gc' frees its storage\n",
		       id);
	return EXIT_OK;
}

/* --- the "checkpoint" command
 * ------------------------------------------------------ */

/* What `decree checkpoint create --help` says after the usage line. */
static const char create_help[] =
	"\nSnapshot the project and print the checkpoint's id (also with -q).\n\n"
	"  -s, --session S         the session, a timeline (default: default)\n"
	"  -m, --message M         the turn's id: a second create for the same\n"
	"                          session and message prints the first's id\n"
	"  -l, --label TEXT        a label for list, rollback and rewind\n"
	"  --if-changed            create nothing when the tree equals (same tree\n"
	"                          id) the session's latest checkpoint: print that\n"
	"  --exclude PATTERN       an ignore pattern (gitignore syntax), repeatable\n"
	"  --max-file-size BYTES   store no file above this size (K, M, G suffixes)\n\n"
	"The checkpoint keeps --exclude and --max-file-size: every later restore,\n"
	"diff and has_changes of it scans with them, so a restore never deletes\n"
	"what they left out.\n\n"
	"A notice on stderr (decree: notice: ...; not with -q) says when the ignore\n"
	"rules left the checkpoint nearly empty, when files above the size limit\n"
	"were not stored, and when --message returned an existing checkpoint.  On\n"
	"a terminal a progress line shows while a big tree is scanned.\n"
	"--json: {\"id\",\"created\",\"tree\",\"notices\"}";

static const char list_help[] =
	"\nThe checkpoints of this project root, oldest first: id, time, session,\n"
	"files, lines inserted and deleted since the previous checkpoint, whether\n"
	"the tree changed after it, label and message.\n\n"
	"  -s, --session S   only this session's checkpoints";

static const char show_help[] =
	"\nA checkpoint's id, session, time, message, label, and every file (mode,\n"
	"SHA-256, size, path), then the files it skipped with the reason.  On a\n"
	"terminal the output goes through a pager (--no-pager: none).";

static const char diff_help[] =
	"\nThe unified diff from checkpoint REF to the working tree, or to\n"
	"checkpoint REF2 (docs/diff-format.md): GNU patch -p1, git apply and\n"
	"decree apply take it.  Exit 0 whether or not there are differences.\n"
	"On a terminal it is colored and goes through a pager.\n\n"
	"  --stat               per file the lines changed and a +/- graph, then\n"
	"                       the totals\n"
	"  --name-status        per file A, D or M and the path (reads no\n"
	"                       contents)\n"
	"  -U N, --unified N    N lines of context around each change (default 3)";

static const char restore_help[] =
	"\nMake the scanned tree (or the PATHs) exactly checkpoint REF: changed\n"
	"files are restored, deleted ones re-created, files created since are\n"
	"deleted.  The state before is captured first (label pre-restore), and\n"
	"'decree undo' brings it back.  Prints one summary line; a terminal shows\n"
	"a progress line while it works.\n\n"
	"  -n, --dry-run   print the plan (also with -q), change nothing\n"
	"  -v, --verbose   print one line per path too: restore, create, delete\n"
	"                  or replace\n"
	"  --agent-only    only the paths an agent changed after REF; a path the\n"
	"                  user edited after the agent is left (skip-user-edit)";

static const char prune_help[] =
	"\nDelete old checkpoint records; the newest of a session is never\n"
	"pruned.  'decree gc' then frees their storage.\n\n"
	"  -s, --session S     only this session (default: every session)\n"
	"  --keep N            keep the newest N checkpoints of each session\n"
	"  --older-than DAYS   delete the checkpoints older than DAYS days";

static const char drop_help[] =
	"\nDelete a session's checkpoint records of this project root, or all of\n"
	"them; 'decree gc' then frees their storage.\n\n"
	"  -s, --session S   that session's records and its agent journal\n"
	"  --all             every record, the undo/redo history and every\n"
	"                    agent journal of this project root";

static const char delete_help[] =
	"\nDelete one checkpoint record (all or nothing; 'decree gc' frees its\n"
	"storage).  --json: {\"deleted\":\"<id>\"}";

static const cli_sub subs[] = {
	{ "create", ck_create,
	  "checkpoint create [--session S] [--message M] [--label TEXT]\n"
	  "         [--if-changed] [--exclude PATTERN]... "
	  "[--max-file-size BYTES]",
	  "checkpoint create", create_help },
	{ "list", ck_list, "checkpoint list [--session S]", "checkpoint list",
	  list_help },
	{ "show", ck_show, "checkpoint show REF", "checkpoint show",
	  show_help },
	{ "diff", cmd_checkpoint_diff,
	  "checkpoint diff REF [REF2] [--stat | --name-status] [-U N]\n"
	  "         [-- PATH...]",
	  "checkpoint diff", diff_help },
	{ "restore", ck_restore,
	  "checkpoint restore REF [--dry-run] [--agent-only] [-v] [-- PATH...]",
	  "checkpoint restore", restore_help },
	{ "prune", ck_prune,
	  "checkpoint prune [--session S] --keep N | --older-than DAYS",
	  "checkpoint prune", prune_help },
	{ "drop", ck_drop, "checkpoint drop --session S | --all",
	  "checkpoint drop", drop_help },
	{ "delete", ck_delete, "checkpoint delete REF", "checkpoint delete",
	  delete_help },
	{ NULL, NULL, NULL, NULL, NULL },
};

static const char checkpoint_about[] =
	"REF is a checkpoint id, a unique prefix of 4+ hex digits, or SESSION:MESSAGE.\n"
	"create prints the new id; with --message, a second create for the same\n"
	"(session, message) returns the existing id.  restore is cascading: the\n"
	"scanned tree becomes exactly the checkpoint (files created since are\n"
	"deleted); the state before is captured (label pre-restore) and\n"
	"'decree undo' brings it back.  Ignored and too-large files are never\n"
	"deleted, nor files a checkpoint's own --exclude or --max-file-size\n"
	"left out.  drop --all, then 'decree gc', forgets this project.\n";

int cmd_checkpoint(cli_ctx *ctx)
{
	return cli_subcommand(ctx, subs, "checkpoint", checkpoint_about);
}

/* --- recover, gc, fsck
 * --------------------------------------------------------------- */

int cmd_recover(cli_ctx *ctx)
{
	decree_recover_options o = DECREE_RECOVER_OPTIONS_INIT;
	opt_spec specs[] = {
		{ "rollback", 0, false, NULL, &o.rollback, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_recover_result res;
	decree_store *s;
	int r;

	if ((r = start_plain(
		     &s, ctx, specs,
		     "usage: decree recover [--rollback]\n\nFinish or roll back a "
		     "transaction that was interrupted (crash, kill,\npower loss).  Every "
		     "mutating command does this first.\n\n"
		     "  --rollback  the transaction log is damaged: roll back every path "
		     "it still\n              names and remove every decree temp file in "
		     "the tree\n              (paths only the lost records named stay as "
		     "they are)")) != PROCEED)
		return r;
	r = decree_recover_ext(&res, s, &o);
	close_store(s);
	if (r < 0)
		return lib_fail(r);
	if (ctx->json)
		printf("{\"recovered\":%s,\"left_alone\":%zu}\n",
		       res.recovered ? "true" : "false", res.left_alone);
	else if (!ctx->quiet && res.left_alone)
		printf("recovered an interrupted transaction; %zu path(s) changed after the "
		       "interruption were left as they are\n",
		       res.left_alone);
	else if (!ctx->quiet)
		puts(res.recovered ? "recovered an interrupted transaction"
				   : "nothing to recover");
	return EXIT_OK;
}

int cmd_gc(cli_ctx *ctx)
{
	bool dry = false;
	opt_spec specs[] = {
		{ "dry-run", 'n', false, NULL, &dry, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_gc_stats st;
	decree_store *s;
	int r;

	if ((r = start_plain(
		     &s, ctx, specs,
		     "usage: decree gc [--dry-run]\n\nDelete stored objects that no "
		     "checkpoint record, undo/redo entry or\nunfinished transaction of "
		     "any project in this store references.\n\n"
		     "  -n, --dry-run   report what would be freed (also with -q), "
		     "delete nothing")) != PROCEED)
		return r;
	r = decree_gc(&st, s, dry);
	close_store(s);
	if (r < 0)
		return lib_fail_hint(r, fsck_hint(r));
	if (ctx->json)
		printf("{\"dry_run\":%s,\"objects_freed\":%" PRIu64
		       ",\"bytes_freed\":%" PRIu64 ",\"objects_kept\":%" PRIu64
		       "}\n",
		       dry ? "true" : "false", st.objects_freed, st.bytes_freed,
		       st.objects_kept);
	else if (!ctx->quiet || dry) /* what --dry-run asked for */
		printf("%s %" PRIu64 " object(s), %" PRIu64
		       " bytes; kept %" PRIu64 "\n",
		       dry ? "would free" : "freed", st.objects_freed,
		       st.bytes_freed, st.objects_kept);
	return EXIT_OK;
}

struct fsck_out {
	const cli_ctx *ctx;
	buf json[4]; /* problems, repaired, lost, remaining */
	size_t n[4];
};

static void on_problem(void *payload, decree_fsck_problem kind,
		       const char *what, const char *problem)
{
	struct fsck_out *f = payload;
	int k = kind == DECREE_FSCK_REPAIRED	 ? 1
		: kind == DECREE_FSCK_LOST	 ? 2
		: kind == DECREE_FSCK_UNREPAIRED ? 3
						 : 0;
	static const char *const human[] = { "damaged", "repaired", "lost",
					     "not repaired" };
	static const char *const key[] = { "problem", "action", "detail",
					   "problem" };

	if (f->ctx->json) {
		buf *b = &f->json[k];
		buf_puts(b, f->n[k] ? ",{" : "{");
		json_kv_str(b, "object", what, false);
		json_kv_str(b, key[k], problem, true);
		buf_putc(b, '}');
	} else {
		buf q = BUF_INIT;
		cli_progress_clear();
		cli_sanitize(&q, problem);
		printf("%s: %s: %s%s\n", human[k], cli_q(what), q.ptr,
		       kind == DECREE_FSCK_UNFINISHED ? "; run 'decree recover'"
						      : "");
		buf_release(&q);
	}
	f->n[k]++;
}

int cmd_fsck(cli_ctx *ctx)
{
	bool repair = false;
	opt_spec specs[] = {
		{ "repair", 0, false, NULL, &repair, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	struct fsck_out fo;
	decree_fsck_options o = DECREE_FSCK_OPTIONS_INIT;
	decree_store *s;
	int r;

	memset(&fo, 0, sizeof(fo));
	fo.ctx = ctx;
	for (int k = 0; k < 4; k++)
		buf_init(&fo.json[k]);
	if ((r = start_plain(
		     &s, ctx, specs,
		     "usage: decree fsck [--repair]\n\nCheck the header of every store "
		     "file, re-hash every object, parse every\nrecord and resolve every "
		     "reference; exit 1 naming what is damaged.\n\n"
		     "  --repair  rewrite damaged packs with their intact objects, "
		     "store again\n            from the working tree what is damaged "
		     "or missing, remove\n            damaged caches, and remove the "
		     "checkpoints that are beyond\n            saving, saying exactly "
		     "what is lost; exit 1 if damage remains")) != PROCEED)
		return r;
	o.flags = repair ? DECREE_FSCK_REPAIR : 0;
	o.cb = on_problem;
	o.payload = &fo;
	cli_progress_begin(ctx, s);
	r = decree_fsck_ext(s, &o);
	cli_progress_end(s);
	close_store(s);
	/* --json: the report, with the failure as its "error" member when
	 * it names what is damaged; a failure to check at all (no store)
	 * is the plain error document */
	if (ctx->json && (r == 0 || fo.n[0] || fo.n[3])) {
		buf err = BUF_INIT;
		int rc = EXIT_OK;
		if (r < 0) {
			cli_error_capture(&err);
			rc = lib_fail(r);
			cli_error_capture(NULL);
		}
		printf("{\"ok\":%s,\"problems\":[%s]",
		       r == 0 ? "true" : "false", fo.json[0].ptr);
		if (repair)
			printf(",\"repaired\":[%s],\"lost\":[%s],"
			       "\"remaining\":[%s]",
			       fo.json[1].ptr, fo.json[2].ptr, fo.json[3].ptr);
		if (err.len)
			printf(",\"error\":%s", err.ptr);
		puts("}");
		buf_release(&err);
		r = rc;
	} else if (r < 0) {
		r = lib_fail(r);
	}
	for (int k = 0; k < 4; k++)
		buf_release(&fo.json[k]);
	if (ctx->json || r)
		return r;
	if (!ctx->quiet)
		puts(repair && (fo.n[1] || fo.n[2]) ? "store ok (repaired)"
						    : "store ok");
	return EXIT_OK;
}
