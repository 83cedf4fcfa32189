/*
 * cmd_patch.c - "decree checkpoint diff" and "decree apply".
 *
 * diff writes the records of docs/diff-format.md to stdout as they come
 * (one file at a time, so a huge diff never sits in memory), or a --stat /
 * --name-status summary, or one JSON document.  On a terminal the text is
 * colored (color.c) and goes through a pager started at its first byte
 * (pager.c); when the user quits the pager, the diff stops at the next
 * file and the command succeeds.  apply prints conflicts and a summary on
 * stdout, with -v also one stderr line per file as it is staged, applied
 * or rolled back (a terminal gets a progress line); with --json it prints
 * one event object per line on stdout instead (docs/cli/apply.md).
 */
#include "util/common.h"
#include "cli.h"
#include "util/json.h"

/* --- checkpoint diff
 * -----------------------------------------------------------
 */

typedef struct {
	const cli_ctx *ctx;
	bool stat, name_status;
	buf json;
	size_t n;
	uint64_t added, removed;
	/* --stat rows, printed at the end when the widths are known */
	char **rows_path;
	char **rows_text;
	size_t nrows, cap;
	size_t width;
	uint64_t most;
	cli_diff_writer writer;
} diff_out;

static int keep_row(diff_out *d, const char *path, const char *text)
{
	if (d->nrows == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		char **a = realloc(d->rows_path, cap * sizeof(char *));
		if (!a)
			return -1;
		d->rows_path = a;
		a = realloc(d->rows_text, cap * sizeof(char *));
		if (!a)
			return -1;
		d->rows_text = a;
		d->cap = cap;
	}
	d->rows_path[d->nrows] = strdup(path);
	d->rows_text[d->nrows] = strdup(text);
	if (!d->rows_path[d->nrows] || !d->rows_text[d->nrows])
		return -1;
	d->nrows++;
	if (strlen(path) > d->width)
		d->width = strlen(path);
	return 0;
}

static int on_diff_file(void *payload, const decree_diff_file *f)
{
	diff_out *d = payload;
	char row[128];

	if (!d->ctx->json) {
		if (cli_output_closed())
			return 1; /* the pager was quit: stop, no failure */
		cli_pager_start();
	}
	d->added += f->added;
	d->removed += f->removed;
	if (f->skipped && !d->ctx->json && !d->ctx->quiet)
		cli_note("'%s' is larger than the size limit and was never "
			 "stored; not diffed",
			 f->path);
	if (d->ctx->json) {
		if (d->n && buf_putc(&d->json, ',') < 0)
			return -1;
		if (cli_diff_file_json(&d->json, f,
				       !d->stat && !d->name_status) < 0)
			return -1;
	} else if (d->name_status) {
		printf("%s%c%s\t%s\n",
		       cli_action_color(f->status == 'A'   ? "create"
					: f->status == 'D' ? "delete"
							   : "modify"),
		       f->status, cli_color(CLI_RESET), cli_q(f->path));
	} else if (d->stat) {
		if (f->binary || f->skipped)
			snprintf(row, sizeof(row), "%s",
				 f->skipped ? "not stored (size limit)"
					    : "Bin");
		else
			snprintf(row, sizeof(row), "%" PRIu64 " %" PRIu64,
				 f->added, f->removed);
		if (f->added + f->removed > d->most)
			d->most = f->added + f->removed;
		if (keep_row(d, cli_q(f->path), row) < 0)
			return -1;
	} else if (f->text) {
		cli_diff_write(&d->writer, f->text, f->len);
		cli_diff_end(&d->writer);
	}
	d->n++;
	return 0;
}

/* git's layout: " path | 12 ++++----" scaled to 50 columns of graph. */
static void print_stat(diff_out *d)
{
	int w = (int)d->width;
	int digits = snprintf(NULL, 0, "%" PRIu64, d->most);

	for (size_t i = 0; i < d->nrows; i++) {
		uint64_t a, r;
		const char *t = d->rows_text[i];
		if (sscanf(t, "%" SCNu64 " %" SCNu64, &a, &r) != 2) {
			printf(" %-*s | %s\n", w, d->rows_path[i], t);
			continue;
		}
		uint64_t na = a, nr = r;
		if (d->most > 50) {
			na = (a * 50 + d->most - 1) / d->most;
			nr = (r * 50 + d->most - 1) / d->most;
		}
		printf(" %-*s | %*" PRIu64 " ", w, d->rows_path[i], digits,
		       a + r);
		fputs(na ? cli_color(CLI_GREEN) : "", stdout);
		for (uint64_t k = 0; k < na; k++)
			putchar('+');
		fputs(nr ? cli_color(CLI_RED) : "", stdout);
		for (uint64_t k = 0; k < nr; k++)
			putchar('-');
		printf("%s\n", na || nr ? cli_color(CLI_RESET) : "");
	}
	printf(" %zu file%s changed, %" PRIu64 " insertion%s(+), %" PRIu64
	       " deletion%s(-)\n",
	       d->n, d->n == 1 ? "" : "s", d->added, d->added == 1 ? "" : "s",
	       d->removed, d->removed == 1 ? "" : "s");
}

static void diff_out_release(diff_out *d)
{
	for (size_t i = 0; i < d->nrows; i++) {
		free(d->rows_path[i]);
		free(d->rows_text[i]);
	}
	free(d->rows_path);
	free(d->rows_text);
	buf_release(&d->json);
}

int cli_diff_show(const cli_ctx *ctx, cli_diff_mode mode, buf *json,
		  cli_diff_source produce, void *arg)
{
	diff_out d;
	int r;

	memset(&d, 0, sizeof(d));
	d.writer = (cli_diff_writer)CLI_DIFF_WRITER_INIT;
	d.ctx = ctx;
	d.stat = mode == CLI_DIFF_STAT;
	d.name_status = mode == CLI_DIFF_NAME_STATUS;
	if ((r = produce(arg, on_diff_file, &d)) < 0) {
		diff_out_release(&d);
		return r;
	}
	r = 0; /* > 0: on_diff_file stopped it, the pager was quit */
	if (ctx->json) {
		if (buf_printf(json,
			       "\"files\":[%s],\"files_changed\":%zu,"
			       "\"insertions\":%" PRIu64
			       ",\"deletions\":%" PRIu64,
			       d.json.ptr ? d.json.ptr : "", d.n, d.added,
			       d.removed) < 0)
			r = -1;
	} else if (d.stat && d.n && !cli_output_closed()) {
		print_stat(&d);
	}
	diff_out_release(&d);
	return r;
}

/* The diff of checkpoint diff: decree_checkpoint_diff with these. */
typedef struct {
	decree_store *s;
	const char *ref, *ref2;
	const decree_diff_options *o;
} ck_diff_args;

static int ck_diff_source(void *arg, decree_diff_cb cb, void *payload)
{
	const ck_diff_args *a = arg;
	return decree_checkpoint_diff(a->s, a->ref, a->ref2, a->o, cb, payload);
}

int cli_checkpoint_diff_show(const cli_ctx *ctx, cli_diff_mode mode, buf *json,
			     decree_store *s, const char *ref, const char *ref2,
			     unsigned context)
{
	decree_diff_options o = DECREE_DIFF_OPTIONS_INIT;
	ck_diff_args a = { s, ref, ref2, &o };
	char **paths = NULL;
	int r;

	if ((r = cli_paths(&paths, ctx, s)) != 0)
		return r;
	o.paths = (const char *const *)paths;
	o.context = context;
	o.no_text = mode == CLI_DIFF_NAME_STATUS;
	r = cli_diff_show(ctx, mode, json, ck_diff_source, &a);
	cli_paths_free(paths);
	return r;
}

int cmd_checkpoint_diff(cli_ctx *ctx)
{
	bool stat = false, name_status = false;
	const char *unified = NULL;
	opt_spec specs[] = {
		{ "stat", 0, false, NULL, &stat, NULL },
		{ "name-status", 0, false, NULL, &name_status, NULL },
		{ "unified", 'U', true, &unified, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_diff_options defaults = DECREE_DIFF_OPTIONS_INIT;
	unsigned context = defaults.context;
	decree_store *s;
	buf json = BUF_INIT;
	int r;

	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc < 1 || ctx->argc > 2)
		return usage_error(
			ctx,
			"usage: decree checkpoint diff REF [REF2] [--stat | --name-status] "
			"[-U N] [-- PATH...]");
	if (stat && name_status)
		return usage_error(
			ctx, "--stat and --name-status exclude each other");
	if (unified) {
		char *end;
		long n = strtol(unified, &end, 10);
		if (*end || end == unified || n < 0 || n > 100000)
			return usage_error(
				ctx, "-U needs a number of lines, not '%s'",
				unified);
		context = (unsigned)n;
	}
	if ((r = open_store(&s, ctx)) != 0)
		return r;
	r = cli_checkpoint_diff_show(ctx,
				     stat	   ? CLI_DIFF_STAT
				     : name_status ? CLI_DIFF_NAME_STATUS
						   : CLI_DIFF_TEXT,
				     &json, s, ctx->argv[0],
				     ctx->argc > 1 ? ctx->argv[1] : NULL,
				     context);
	close_store(s);
	if (r < 0)
		r = lib_fail(r);
	if (r == 0 && ctx->json)
		printf("{%s}\n", json.ptr);
	buf_release(&json);
	return r;
}

/* --- apply
 * ---------------------------------------------------------------------
 */

typedef struct {
	const cli_ctx *ctx;
	bool check;
} apply_out;

static void event(const char *phase, const char *path, const char *action,
		  const char *detail)
{
	buf b = BUF_INIT;
	json_kv_str(&b, "phase", phase, false);
	json_kv_path(&b, "path", path, true);
	json_kv_str(&b, "action", action, true);
	if (detail)
		json_kv_str(&b, "detail", detail, true);
	printf("{%s}\n", b.ptr);
	buf_release(&b);
}

static void on_report(void *payload, const char *path, decree_apply_action a,
		      const char *detail)
{
	apply_out *o = payload;
	const char *act = decree_apply_action_name(a);

	if (o->ctx->json) {
		if (o->check || a == DECREE_APPLY_CONFLICT)
			event("checking", path, act, detail);
		else if (a == DECREE_APPLY_SKIP)
			event("staging", path, act, NULL);
		return;
	}
	cli_progress_clear();
	if (a == DECREE_APPLY_CONFLICT) {
		buf q = BUF_INIT;
		if (detail)
			cli_sanitize(&q, detail);
		fprintf(stderr, "conflict: %s\n", detail ? q.ptr : cli_q(path));
		buf_release(&q);
	} else if (o->check) {
		/* the list --check asks for: -q keeps it */
		printf("%s%s%s %s\n", cli_action_color(act), act,
		       cli_color(CLI_RESET), cli_q(path));
	} else if (a == DECREE_APPLY_SKIP && !o->ctx->quiet &&
		   o->ctx->verbose) {
		fprintf(stderr, "skip %s (already as the patch leaves it)\n",
			cli_q(path));
	}
}

static void on_apply_progress(void *payload, decree_phase ph, const char *path,
			      const char *action)
{
	apply_out *o = payload;

	if (ph == DECREE_PHASE_DONE) {
		/* the writes are over: --exec's command may print now */
		cli_progress_clear();
		return; /* the summary is the last event */
	}
	if (o->ctx->json) {
		event(decree_phase_name(ph), path, action, NULL);
	} else if (path && !o->ctx->quiet && o->ctx->verbose &&
		   !(ph == DECREE_PHASE_ROLLING_BACK && cli_cancelled())) {
		cli_progress_clear();
		fprintf(stderr, "%s %s %s\n", decree_phase_name(ph),
			action ? action : "", cli_q(path));
	}
}

/* The exit status of an apply that returned r, after reporting a
 * failure (or a signal that came after the commit). */
static int apply_status(int r, const decree_apply_result *res, bool check)
{
	if (r == DECREE_ECANCELLED)
		return cli_cancel_report(r, "apply");
	if (r == 0 && !check)
		return cli_cancel_report(r, "apply");
	if (r < 0 && res->exec_ran && res->exec_status && r != DECREE_EEXEC)
		/* the command failed, and so did putting the tree back */
		return lib_fail_hint(r,
				     r == DECREE_EUNFINISHED
					     ? "run 'decree recover', then "
					       "'decree undo' reverts the patch"
					     : "'decree undo' reverts it");
	if (r < 0)
		return lib_fail_hint(r, fsck_hint(r));
	return EXIT_OK;
}

/* decree_apply of the patch text `arg` (a buf). */
static int patch_source(void *arg, decree_apply_result *res, decree_store *s,
			const char *name, const decree_apply_options *o)
{
	const buf *text = arg;
	return decree_apply(res, s, name, text->ptr, text->len, o);
}

int cli_apply_run(cli_ctx *ctx, decree_store *s,
		  const decree_apply_options *base, const char *name,
		  bool check, const char *exec, const char *session,
		  cli_apply_source produce, void *arg)
{
	decree_apply_options opts = *base, *o = &opts;
	decree_apply_result res;
	apply_out ao = { ctx, false };
	int r;

	memset(&res, 0, sizeof(res));
	ao.check = check;
	o->check_only = check;
	o->exec = exec;
	o->exec_stdout_to_stderr = ctx->json;
	o->session = session;
	o->report = on_report;
	o->progress = on_apply_progress;
	o->payload = &ao;
	if (!check)
		o->cancel = cli_cancel_catch();
	cli_progress_begin(ctx, s);
	r = produce(arg, &res, s, name, o);
	cli_progress_end(s);
	cli_cancel_release();
	close_store(s);
	if (r == 0 && !check && (res.created || res.modified || res.deleted))
		cli_did("%s was applied: created %zu, modified %zu, deleted "
			"%zu file(s)",
			name, res.created, res.modified, res.deleted);
	if (ctx->json) {
		/* the "done" event is the last line; a failure is its
		 * "error" member (opt.c) */
		buf b = BUF_INIT, err = BUF_INIT;
		int rc;
		cli_error_capture(&err);
		rc = apply_status(r, &res, check);
		cli_error_capture(NULL);
		buf_printf(
			&b,
			"{\"phase\":\"done\",\"path\":null,\"action\":null,"
			"\"ok\":%s,\"check\":%s,\"created\":%zu,\"modified\":%zu,"
			"\"deleted\":%zu,\"skipped\":%zu,\"conflicts\":%zu",
			r == 0 ? "true" : "false", check ? "true" : "false",
			res.created, res.modified, res.deleted, res.skipped,
			res.conflicts);
		if (res.exec_ran)
			buf_printf(&b,
				   ",\"exec_status\":%d,\"restored\":%zu,"
				   "\"removed\":%zu,\"swept\":%zu",
				   res.exec_status, res.restored, res.removed,
				   res.swept);
		json_kv_str(&b, "exec_checkpoint",
			    res.exec_checkpoint[0] ? res.exec_checkpoint : NULL,
			    true);
		buf_printf(&b, ",\"error\":%s}\n", err.len ? err.ptr : "null");
		fwrite(b.ptr, 1, b.len, stdout);
		buf_release(&b);
		buf_release(&err);
		return rc;
	}
	if (r < 0)
		return apply_status(r, &res, check);
	apply_status(r, &res, check); /* a signal after the commit: a note */
	if (ctx->quiet)
		return EXIT_OK;
	if (check)
		printf("%s applies cleanly: would create %zu, modify %zu, delete %zu; "
		       "%zu already done\n",
		       cli_q(name), res.created, res.modified, res.deleted,
		       res.skipped);
	else if (!res.created && !res.modified && !res.deleted)
		printf("nothing to apply: every file is already as %s leaves it\n",
		       cli_q(name));
	else
		printf("applied %s: created %zu, modified %zu, deleted %zu, skipped %zu; "
		       "'decree undo' reverts this\n",
		       cli_q(name), res.created, res.modified, res.deleted,
		       res.skipped);
	if (res.exec_ran) {
		buf q = BUF_INIT;
		cli_sanitize(&q, exec);
		printf("'%s' succeeded\n", q.ptr);
		buf_release(&q);
	}
	return EXIT_OK;
}

static const char apply_help[] =
	"usage: decree apply PATCH|- [--check] [-R|--reverse] [--exec CMD] [-p N]\n"
	"                    [--session S] [-v]\n"
	"\n"
	"Apply a unified diff (decree's own, diff -u, diff -ruN, git diff, also\n"
	"git diff --binary) to the working tree as one transaction.  Every file\n"
	"is checked against its current bytes first (a git binary patch against\n"
	"its index line's blob ids); on any conflict each one is reported and\n"
	"nothing is written.  Files already as the patch leaves them are\n"
	"skipped.  The writes are all-or-nothing and survive a crash; 'decree\n"
	"undo' reverts them.\n"
	"\n"
	"  --check             only check and list what would change (also with\n"
	"                      -q)\n"
	"  -R, --reverse       apply the patch backwards\n"
	"  -p N, --strip N     strip N leading path components (default: a/ b/)\n"
	"  --exec CMD          run CMD (/bin/sh -c, in the project root) after the\n"
	"                      writes; if it fails, put the tree back: restore\n"
	"                      changed files, remove created ones, sweep files that\n"
	"                      appeared while CMD ran.  CMD's effects outside the\n"
	"                      project's files (processes, network, ignored files)\n"
	"                      are NOT undone.\n"
	"  -s, --session S     session of the safety checkpoint taken when CMD fails\n"
	"\n"
	"  -v, --verbose   one stderr line per file and step (staging, applying,\n"
	"                  rolling_back, skip): always when stderr is not a\n"
	"                  terminal, with -v on one\n"
	"\n"
	"Conflicts go to stderr, the summary to stdout; a terminal shows a progress\n"
	"line while files are written.  With --json, stdout carries one event per\n"
	"line: {\"phase\",\"path\",\"action\"}.";

int cmd_apply(cli_ctx *ctx)
{
	bool check = false, reverse = false;
	const char *exec = NULL, *strip = NULL, *session = NULL;
	opt_spec specs[] = {
		{ "check", 0, false, NULL, &check, NULL },
		{ "reverse", 'R', false, NULL, &reverse, NULL },
		{ "exec", 0, true, &exec, NULL, NULL },
		{ "strip", 'p', true, &strip, NULL, NULL },
		{ "session", 's', true, &session, NULL, NULL },
		{ "verbose", 'v', false, NULL, &ctx->verbose, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_apply_options o = DECREE_APPLY_OPTIONS_INIT;
	decree_store *s;
	buf text = BUF_INIT;
	const char *name;
	int r;

	if (ctx->help) {
		puts(apply_help);
		return EXIT_OK;
	}
	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	/* DESIGN.md: progress lines per file on stderr.  A terminal gets a
	 * progress line and the summary instead (issue 11: thousands of
	 * lines scroll past nobody), and the per-file lines with -v; a log
	 * or an agent reading stderr gets them as the contract says. */
	if (!isatty(STDERR_FILENO))
		ctx->verbose = true;
	if (ctx->argc != 1 || ctx->rest_argc)
		return usage_error(
			ctx,
			"usage: decree apply PATCH|- [--check] [--reverse] [--exec CMD]");
	if (check && exec)
		return usage_error(ctx, "--check runs no command; drop --exec");
	if (exec && !*exec)
		return usage_error(ctx, "--exec needs a command");
	if (strip) {
		char *end;
		long n = strtol(strip, &end, 10);
		if (*end || end == strip || n < 0 || n > 1000)
			return usage_error(ctx, "-p needs a number, not '%s'",
					   strip);
		o.strip = (int)n;
	}
	name = strcmp(ctx->argv[0], "-") ? ctx->argv[0] : "<stdin>";
	if (cli_read_file(&text, ctx->argv[0]) < 0) {
		r = fail("cannot read '%s': %s", ctx->argv[0], strerror(errno));
		buf_release(&text);
		return r;
	}
	if ((r = open_store(&s, ctx)) != 0) {
		buf_release(&text);
		return r;
	}
	o.reverse = reverse;
	r = cli_apply_run(ctx, s, &o, name, check, exec, session, patch_source,
			  &text);
	buf_release(&text);
	return r;
}
