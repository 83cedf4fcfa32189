/*
 * cmd_pipeline.c - decree init, run, process, status, log, diff, revert
 * (docs/pipeline.md, docs/cli/pipeline.md): arguments and output over
 * decree/project.h and decree/pipeline.h.
 */
#include "util/common.h"
#include "interactive.h"
#include "util/json.h"
#include "util/utc.h"

#include <signal.h>
#include <time.h>

/* --- init
 * -------------------------------------------------------------------------
 */

typedef struct {
	const cli_ctx *ctx;
	buf json; /* --json: the paths created */
	size_t n;
} init_out;

static void print_created(void *payload, const char *path, bool is_dir)
{
	init_out *o = payload;
	if (o->ctx->json) {
		buf p = BUF_INIT;
		buf_printf(&p, "%s%s", path, is_dir ? "/" : "");
		if (o->n++)
			buf_putc(&o->json, ',');
		json_str(&o->json, p.ptr);
		buf_release(&p);
	} else if (!o->ctx->quiet) {
		printf("created %s%s\n", cli_q(path), is_dir ? "/" : "");
	}
}

int cmd_init(cli_ctx *ctx)
{
	char root[PATH_MAX], abs[PATH_MAX];
	init_out o = { ctx, BUF_INIT, 0 };
	size_t made = 0;
	int r;

	if (ctx->help) {
		puts("usage: decree init\n\nMake the project root a decree project: "
		     ".decree/config.yml (documented\ndefaults), .decree/.gitignore, "
		     ".decree/routines/develop.sh (an example\nroutine), "
		     ".decree/inbox/{,done/,dead/}, .decree/runs/ and\n"
		     "specs/processed-spec.md.  Existing files are never "
		     "overwritten; running it\ntwice is harmless.");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'init' takes no arguments");
	if (ctx->root_opt)
		snprintf(root, sizeof(root), "%s", ctx->root_opt);
	else if (!getcwd(root, sizeof(root)))
		return fail("cannot get the current directory: %s",
			    strerror(errno));
	if (decree_project_init(&made, root, print_created, &o) < 0) {
		buf_release(&o.json);
		return lib_fail(-1);
	}
	if (!realpath(root, abs)) {
		r = fail("cannot use '%s' as project root: %s", root,
			 strerror(errno));
		buf_release(&o.json);
		return r;
	}
	if (ctx->json) {
		buf b = BUF_INIT;
		buf_puts(&b, "{");
		json_kv_path(&b, "root", abs, false);
		buf_printf(&b, ",\"created\":[%s]}\n", o.json.ptr);
		fwrite(b.ptr, 1, b.len, stdout);
		buf_release(&b);
	} else if (!ctx->quiet) {
		printf(made ? "decree project ready in %s\n"
			    : "%s is already a decree project; nothing to do\n",
		       cli_q(abs));
	}
	buf_release(&o.json);
	return EXIT_OK;
}

/* Take the repeatable -v KEY=VALUE options out of argv. */
static int take_vars(cli_ctx *ctx, run_request *rq, bool *any)
{
	int out = 0;

	for (int i = 0; i < ctx->argc; i++) {
		const char *a = ctx->argv[i], *kv = NULL, *eq;
		char key[128];
		int r;
		if (!strcmp(a, "-v") || !strcmp(a, "--var")) {
			if (i + 1 >= ctx->argc)
				return usage_error(
					ctx, "option '%s' needs KEY=VALUE", a);
			kv = ctx->argv[++i];
		} else if (!strncmp(a, "-v", 2) && a[2]) {
			kv = a + 2;
		} else if (!strncmp(a, "--var=", 6)) {
			kv = a + 6;
		} else {
			ctx->argv[out++] = ctx->argv[i];
			continue;
		}
		if (!(eq = strchr(kv, '=')) || eq == kv ||
		    (size_t)(eq - kv) >= sizeof(key))
			return usage_error(ctx, "-v needs KEY=VALUE, not '%s'",
					   kv);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		if ((r = run_request_set(rq, key, eq + 1)) != 0)
			return r;
		*any = true;
	}
	ctx->argc = out;
	return 0;
}

/* Is the request one the library accepts?  Its refusals are usage
 * errors here. */
static int check_request(const cli_ctx *ctx, const run_request *rq)
{
	decree_run_request v;
	decree_field *f;
	int r;

	if ((r = run_request_view(&v, &f, rq)) != 0)
		return r;
	r = decree_run_request_check(&v) < 0
		    ? usage_error(ctx, "-v: %s", decree_error_last())
		    : 0;
	free(f);
	return r;
}

/* --- processing: events, signals, the result
 * ------------------------------------------------------------
 */

/* Unix seconds as RFC 3339 UTC; NULL for 0 (not known). */
static const char *rfc3339(char out[UTC_TEXT_MAX], int64_t t)
{
	return t > 0 ? utc_format(out, t) : NULL;
}

/* A run as --json shows it: the members of a run object
 * (docs/schema/README.md), from a run directory (run_info_members) or
 * from the events of a run just processed (ri: its directory, for the
 * times and the reason, or NULL). */
static void run_members(buf *b, const char *id, decree_run_outcome outcome,
			const char *routine, const char *message, int attempts,
			const decree_run_info *ri)
{
	char t1[UTC_TEXT_MAX], t2[UTC_TEXT_MAX];

	json_kv_str(b, "id", id, false);
	json_kv_str(b, "outcome", decree_run_outcome_name(outcome), true);
	json_kv_str(b, "routine", routine, true);
	json_kv_path(b, "message", message, true);
	buf_printf(b, ",\"attempts\":%d", attempts);
	json_kv_str(b, "started_at", ri ? rfc3339(t1, ri->started) : NULL,
		    true);
	json_kv_str(b, "finished_at", ri ? rfc3339(t2, ri->finished) : NULL,
		    true);
	json_kv_str(b, "reason", ri ? ri->reason : NULL, true);
}

static void run_info_members(buf *b, const decree_run_info *ri)
{
	run_members(b, ri->id, ri->outcome, ri->routine, ri->message,
		    ri->attempts, ri);
}

/* A run that finished during this command (DECREE_EVENT_FINISHED). */
typedef struct {
	char *id, *message, *routine;
	decree_run_outcome outcome;
	int attempts;
} finished_run;

typedef struct {
	const cli_ctx *ctx;
	finished_run *runs; /* --json: the runs processed */
	size_t nruns, cap;
	bool oom;
	bool dead_unrun; /* a message dead-lettered without an attempt */
	buf partial;	 /* streaming: the routine's line not yet ended */
} run_output;

static void run_output_release(run_output *o)
{
	buf_release(&o->partial);
	for (size_t i = 0; i < o->nruns; i++) {
		free(o->runs[i].id);
		free(o->runs[i].message);
		free(o->runs[i].routine);
	}
	free(o->runs);
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = true;
	return d;
}

static void keep_finished(run_output *o, const decree_pipeline_event *ev)
{
	finished_run *f;

	if (o->nruns == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 16;
		finished_run *a = realloc(o->runs, cap * sizeof(*a));
		if (!a) {
			o->oom = true;
			return;
		}
		o->runs = a;
		o->cap = cap;
	}
	f = &o->runs[o->nruns++];
	f->id = dup_or_null(ev->id, &o->oom);
	f->message = dup_or_null(ev->file, &o->oom);
	f->routine = dup_or_null(ev->routine, &o->oom);
	f->outcome = ev->outcome;
	f->attempts = ev->attempt;
}

static void say(const run_output *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One progress line on stderr; names in it (message files, routines,
 * reasons) have their control bytes escaped (quote.c). */
static void say(const run_output *o, const char *fmt, ...)
{
	buf line = BUF_INIT, safe = BUF_INIT;
	va_list ap;

	if (o->ctx->quiet)
		return;
	va_start(ap, fmt);
	buf_vprintf(&line, fmt, ap);
	va_end(ap);
	cli_sanitize(&safe, line.ptr);
	fprintf(stderr, "%s\n", safe.ptr);
	buf_release(&line);
	buf_release(&safe);
}

/* --- streaming a routine's output ------------------------------------------
 *
 * While a routine runs, each line it writes (stdout and stderr, as they
 * reach its log) is printed on stderr as "  | LINE" (docs/cli/pipeline.md
 * "Watching a routine").  Only the terminal sees the changes made for
 * reading: control bytes are escaped as in names (quote.c), except tabs;
 * of a line rewritten with carriage returns (a progress bar) only its
 * last state is shown; a "\r\n" ending is an ending; a line longer than
 * 64 KiB is shown in pieces.  The log keeps the bytes as written.
 */

#define STREAM_PREFIX	"  | "
#define STREAM_LINE_MAX 65536 /* a longer line is shown in pieces */

/* Append s[0..n) with control bytes escaped but tabs kept. */
static void stream_escape(buf *out, const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '\t' && s[i] != '\0')
			continue;
		if (i > start) {
			char *seg = strndup(s + start, i - start);
			if (seg)
				cli_sanitize(out, seg);
			free(seg);
		}
		if (i < n)
			buf_puts(out, s[i] == '\t' ? "\t" : "\\000");
		start = i + 1;
	}
}

/* Print one line of routine output (without its "\n"). */
static void stream_line(const char *s, size_t n)
{
	buf line = BUF_INIT;
	const char *cr;

	while (n && s[n - 1] == '\r')
		n--;
	while ((cr = memchr(s, '\r', n))) { /* what the terminal would show */
		n -= (size_t)(cr + 1 - s);
		s = cr + 1;
	}
	buf_puts(&line, STREAM_PREFIX);
	stream_escape(&line, s, n);
	buf_putc(&line, '\n');
	if (line.ptr)
		fwrite(line.ptr, 1, line.len, stderr);
	buf_release(&line);
}

/* End a line the routine left open (before decree says anything). */
static void stream_flush(run_output *o)
{
	if (o->partial.len)
		stream_line(o->partial.ptr, o->partial.len);
	buf_clear(&o->partial);
}

static void on_output(void *payload, const char *id, int attempt,
		      const char *data, size_t len)
{
	run_output *o = payload;
	size_t done = 0;

	(void)id;
	(void)attempt;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		if (o->partial.len) {
			buf_put(&o->partial, data + done, i - done);
			stream_flush(o);
		} else {
			stream_line(data + done, i - done);
		}
		done = i + 1;
	}
	if (done < len)
		buf_put(&o->partial, data + done, len - done);
	if (o->partial.len >= STREAM_LINE_MAX)
		stream_flush(o);
}

static void on_event(void *payload, const decree_pipeline_event *ev)
{
	run_output *o = payload;

	stream_flush(o);

	switch (ev->kind) {
	case DECREE_EVENT_WAITING:
		say(o, "waiting for another decree run in this project...");
		break;
	case DECREE_EVENT_QUEUED:
		say(o, "queued .decree/inbox/%s", ev->file);
		break;
	case DECREE_EVENT_STARTED:
		say(o, "processing %s (%s) with routine %s", ev->id, ev->file,
		    ev->routine);
		break;
	case DECREE_EVENT_ATTEMPT_FAILED:
		say(o, "  attempt %d%s failed with status %d (log: %s)",
		    ev->attempt, ev->clean_slate ? " (clean slate)" : "",
		    ev->status, ev->path);
		break;
	case DECREE_EVENT_CLEAN_SLATE:
		say(o,
		    "  %d attempt(s) failed: tree reverted, clean-slate "
		    "attempt with %s",
		    ev->attempt, ev->path);
		break;
	case DECREE_EVENT_SUCCEEDED:
		say(o, "  attempt %d succeeded: %zu file(s) changed (%s)",
		    ev->attempt, ev->files, ev->path);
		break;
	case DECREE_EVENT_INTERRUPTED:
		say(o,
		    "  interrupted: partial work in %s, tree reverted; %s "
		    "stays in the inbox",
		    ev->path, ev->file);
		break;
	case DECREE_EVENT_DEAD_LETTERED:
		say(o, "dead-lettered %s: %s", ev->file, ev->reason);
		break;
	case DECREE_EVENT_SPEC_SKIPPED:
		say(o, "skipping %s: %s", ev->path, ev->reason);
		break;
	case DECREE_EVENT_WARNING:
		cli_note("%s", ev->reason);
		break;
	case DECREE_EVENT_FINISHED:
		if (ev->outcome == DECREE_RUN_DEAD && !ev->attempt)
			o->dead_unrun = true;
		if (o->ctx->json)
			keep_finished(o, ev);
		break;
	}
}

/* Set by SIGINT, SIGTERM and SIGHUP while the pipeline runs: the library
 * polls it, stops the routine, reverts and returns DECREE_ECANCELLED. */
static volatile sig_atomic_t cancel_flag;

static void on_signal(int sig)
{
	cancel_flag = sig;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: waits wake up */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The --json document of run and process: the runs processed (with
 * their times from the run directories), the counts, and the failure as
 * its "error" member (err: the object, or empty). */
static void print_runs(run_output *o, decree_project *p,
		       const decree_pipeline_result *res, bool interrupted,
		       const buf *err)
{
	decree_run_list *l = NULL;
	buf b = BUF_INIT;

	if (decree_run_list_get(&l, p) < 0)
		l = NULL; /* no times then */
	buf_puts(&b, "{\"runs\":[");
	for (size_t i = 0; i < o->nruns; i++) {
		const finished_run *f = &o->runs[i];
		const decree_run_info *ri = NULL;
		for (size_t k = 0; l && f->id && k < decree_run_list_count(l);
		     k++)
			if (!strcmp(decree_run_list_at(l, k)->id, f->id))
				ri = decree_run_list_at(l, k);
		buf_puts(&b, i ? ",{" : "{");
		run_members(&b, f->id, f->outcome, f->routine, f->message,
			    f->attempts, ri);
		buf_putc(&b, '}');
	}
	buf_printf(&b, "],\"done\":%zu,\"dead\":%zu,\"interrupted\":%s",
		   res->done, res->dead, interrupted ? "true" : "false");
	if (err->len)
		buf_printf(&b, ",\"error\":%s", err->ptr);
	buf_puts(&b, "}\n");
	fwrite(b.ptr, 1, b.len, stdout);
	buf_release(&b);
	decree_run_list_free(l);
}

/* --stream and --no-stream of run and process. */
typedef struct {
	bool on, off;
} stream_opts;

/* Stream the routines' output?  Asked with --stream; by default when
 * stderr is a terminal, without -q or --json. */
static bool streaming(const cli_ctx *ctx, const stream_opts *so)
{
	if (so->on || so->off)
		return so->on;
	return !ctx->quiet && !ctx->json && isatty(STDERR_FILENO);
}

/* Run `process` (rq NULL) or `run`; print --json; the exit code. */
static int pipeline(const cli_ctx *ctx, decree_project *p,
		    const run_request *rq, const stream_opts *so)
{
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	decree_pipeline_result res = { 0, 0 };
	run_output o;
	buf err = BUF_INIT;
	int r, rc;

	memset(&o, 0, sizeof(o));
	o.ctx = ctx;
	buf_init(&o.partial);
	po.events = on_event;
	po.payload = &o;
	if (streaming(ctx, so))
		po.output = on_output;
	po.cancel = (const volatile int *)&cancel_flag;
	cancel_flag = 0;
	catch_signals();
	if (rq) {
		decree_run_request v;
		decree_field *f;
		if ((r = run_request_view(&v, &f, rq)) != 0)
			return r;
		r = decree_pipeline_run(&res, p, &v, &po);
		free(f);
	} else {
		r = decree_pipeline_process(&res, p, &po);
	}
	stream_flush(&o);
	/* --json: the failure goes into the document (opt.c) */
	if (ctx->json)
		cli_error_capture(&err);
	if (r == DECREE_ECANCELLED)
		rc = fail_interrupted(
			"interrupted; nothing was left half-done: a routine "
			"that was running was stopped and its changes "
			"reverted, and its message stays in the inbox");
	else if (r < 0)
		rc = lib_fail(r);
	else if (o.oom)
		rc = fail("out of memory");
	else if (res.dead)
		/* a routine that failed every attempt is a command decree
		 * ran that failed; a chain too deep is not */
		rc = fail_code(o.dead_unrun ? DECREE_ERROR : DECREE_EEXEC,
			       "%zu message%s dead-lettered (see "
			       ".decree/inbox/dead/)",
			       res.dead, res.dead == 1 ? " was" : "s were");
	else
		rc = EXIT_OK;
	cli_error_capture(NULL);
	if (ctx->json)
		print_runs(&o, p, &res, r == DECREE_ECANCELLED, &err);
	buf_release(&err);
	run_output_release(&o);
	return rc;
}

/* --- run, process
 * ---------------------------------------------------------------
 */

static const char run_help[] =
	"usage: decree run [-m NAME] [-p PROMPT] [-v KEY=VALUE]... [--[no-]stream]\n"
	"       echo BODY | decree run [-m NAME] [-v KEY=VALUE]...\n"
	"       decree run                      (interactive, on a terminal)\n"
	"\n"
	"Queue a message in .decree/inbox/ and process it now, with its follow-ups\n"
	"(depth-first), then whatever else waits in the inbox.\n"
	"\n"
	"  -m, --message NAME   message name (kebab-cased, 50 chars); default:\n"
	"                       the router names it, or the spec's file stem, or\n"
	"                       run-<chain>\n"
	"  -p, --prompt PROMPT  the message body (else stdin when it is not a\n"
	"                       terminal)\n"
	"  -v, --var KEY=VALUE  a frontmatter field: routine, input_file, or a\n"
	"                       custom variable of the routine; repeatable\n"
	"  --stream        show the routine's output (\"  | LINE\" on stderr) while it\n"
	"                  runs; the default when stderr is a terminal, without -q\n"
	"                  and --json\n"
	"  --no-stream     do not; the logs in .decree/runs/<id>/ have it all anyway\n"
	"\n"
	"Nothing is queued when the message is empty (no prompt, no input file) or\n"
	"its routine does not exist (exit 2, with the closest routine's name), or\n"
	"when a routine that calls the AI command finds no commands.ai in\n"
	"config.yml, or a message already waiting cannot run (exit 1).\n"
	"\n"
	"Every attempt runs under a checkpoint; failures are retried (max_retries),\n"
	"then the tree is reverted for one clean-slate attempt, then the message\n"
	"is dead-lettered (.decree/inbox/dead/) with the tree reverted.  Exit 1 when\n"
	"a message was dead-lettered, 130 when interrupted.  See docs/pipeline.md.";

/* The body from -p, else from stdin when it is not a terminal. */
static int take_body(run_request *rq, const char *prompt, bool *any)
{
	if (prompt) {
		if (!(rq->body = strdup(prompt)))
			return fail("out of memory");
		return 0;
	}
	if (!isatty(0)) {
		buf in = BUF_INIT;
		if (cli_read_file(&in, "-") < 0) {
			buf_release(&in);
			return fail("cannot read the body from stdin: %s",
				    strerror(errno));
		}
		if (in.len)
			rq->body = buf_detach(&in, NULL);
		buf_release(&in);
		*any = true;
	}
	return 0;
}

/* No flag and no piped body: the interactive form on the terminal. */
static int take_interactive(const cli_ctx *ctx, run_request *rq,
			    decree_project *p)
{
	int tty = open("/dev/tty", O_RDWR | O_CLOEXEC), r;

	if (tty < 0)
		return usage_error(ctx, "no terminal for the interactive form; "
					"give -p PROMPT or -v input_file=...");
	r = interactive_request(rq, p, tty);
	close(tty);
	if (r == EXIT_CANCELLED)
		return fail_code(DECREE_ECANCELLED,
				 "cancelled; nothing was created");
	return r;
}

/* Is s empty or only white space? */
static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (!strchr(" \t\r\n\v\f", *s))
			return false;
	return true;
}

/*
 * Before anything is queued: a message needs a task (a body that is not
 * blank, or an input file), and its routine must exist (a usage error,
 * exit 2, with the library's did-you-mean).  What the configuration
 * lacks (commands.ai) is left to the run, which fails the same way before
 * queueing, exit 1, with the --json run document.
 */
static int check_run(const cli_ctx *ctx, decree_project *p,
		     const run_request *rq)
{
	const char *input = run_request_get(rq, "input_file");
	decree_run_request v;
	decree_field *f;
	int r;

	if (blank(rq->body) && (!input || !*input))
		return usage_error(ctx, "the message is empty: give the task "
					"with -p PROMPT or on stdin, or a spec "
					"with -v input_file=FILE");
	if ((r = run_request_view(&v, &f, rq)) != 0)
		return r;
	r = decree_pipeline_check(p, &v);
	free(f);
	if (r == DECREE_ENOTFOUND)
		return fail_usage("%s", decree_error_last());
	decree_error_clear();
	return 0;
}

int cmd_run(cli_ctx *ctx)
{
	const char *name = NULL, *prompt = NULL;
	stream_opts so = { false, false };
	opt_spec specs[] = {
		{ "message", 'm', true, &name, NULL, NULL },
		{ "prompt", 'p', true, &prompt, NULL, NULL },
		{ "stream", 0, false, NULL, &so.on, NULL },
		{ "no-stream", 0, false, NULL, &so.off, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	run_request rq;
	decree_project *p = NULL;
	bool any = false;
	int r;

	if (ctx->help) {
		puts(run_help);
		return EXIT_OK;
	}
	memset(&rq, 0, sizeof(rq));
	if ((r = take_vars(ctx, &rq, &any)) != 0)
		goto done;
	if (opt_parse(ctx, specs) != 0) {
		r = EXIT_USAGE;
		goto done;
	}
	if (ctx->argc || ctx->rest_argc) {
		r = usage_error(ctx,
				"'run' takes no arguments (the prompt goes "
				"after -p)");
		goto done;
	}
	if ((r = check_request(ctx, &rq)) != 0 ||
	    (r = cli_open_project(&p, ctx)) != 0)
		goto done;
	any = any || name || prompt;
	if (name && !(rq.name = strdup(name))) {
		r = fail("out of memory");
		goto done;
	}
	if (so.on && so.off) {
		r = usage_error(ctx, "--stream and --no-stream exclude each "
				     "other");
		goto done;
	}
	if ((r = take_body(&rq, prompt, &any)) != 0 ||
	    (!any && (r = take_interactive(ctx, &rq, p)) != 0) ||
	    (r = check_run(ctx, p, &rq)) != 0)
		goto done;
	r = pipeline(ctx, p, &rq, &so);
	if (r == 0 && rq.interactive) {
		/* the run happened: not saving the form's values is a note
		 * on stderr, no failure of the command (nor a document) */
		buf ignored = BUF_INIT;
		cli_error_capture(&ignored);
		last_run_save(p, &rq);
		cli_error_capture(NULL);
		buf_release(&ignored);
	}
done:
	run_request_release(&rq);
	decree_project_free(p);
	return r;
}

int cmd_process(cli_ctx *ctx)
{
	stream_opts so = { false, false };
	opt_spec specs[] = {
		{ "stream", 0, false, NULL, &so.on, NULL },
		{ "no-stream", 0, false, NULL, &so.off, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	decree_project *p;
	int r;

	if (ctx->help) {
		puts("usage: decree process [--stream | --no-stream]\n\n"
		     "Process what waits in .decree/inbox/, then every spec "
		     "(specs/*.spec.md)\nnot listed in specs/processed-spec.md, "
		     "alphabetically, each as a new\nchain.  A spec that exhausts "
		     "its retries is dead-lettered and processing\ncontinues.  "
		     "Exit 1 if anything was dead-lettered.\n\n"
		     "Nothing runs (exit 1) when a waiting message or spec names a "
		     "routine that\ndoes not exist, or one that calls the AI "
		     "command while commands.ai is unset\nor not found: the error "
		     "lists them.\n\n"
		     "  --stream      show each routine's output (\"  | LINE\" on "
		     "stderr) while it\n"
		     "                runs; the default when stderr is a terminal, "
		     "without -q and\n                --json\n"
		     "  --no-stream   do not (the logs have it all anyway)");
		return EXIT_OK;
	}
	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'process' takes no arguments");
	if (so.on && so.off)
		return usage_error(ctx, "--stream and --no-stream exclude each "
					"other");
	if ((r = cli_open_project(&p, ctx)) == 0)
		r = pipeline(ctx, p, NULL, &so);
	decree_project_free(p);
	return r;
}

/* --- what status, log and diff look at
 * ----------------------------------------------------------
 */

/*
 * status, log and diff work in every project root: on its checkpoints
 * always (none yet when there is no store), and on its runs when it is a
 * pipeline project (docs/cli/status.md).  "The last checkpoint" is the
 * newest checkpoint of the root, of any session, that is not a capture
 * (decree_checkpoint_is_capture): the one `decree rollback` numbers 1.
 * Captures are decree's copies of the tree before it changed it; a
 * restore makes one, and comparing with it would say what the restore
 * changed, not what changed since the user's last checkpoint.
 */
typedef struct {
	decree_store *s;
	decree_checkpoint_list *l;	    /* every checkpoint of the root */
	cli_ref *refs;			    /* rollback's number of each */
	const decree_checkpoint_info *last; /* NULL: none */
	const char *last_ref;
	decree_project *p;     /* NULL: not a pipeline project */
	decree_run_list *runs; /* with p */
} project_view;

static int view_open(project_view *v, const cli_ctx *ctx)
{
	size_t n;
	int r;

	memset(v, 0, sizeof(*v));
	if ((r = cli_open_project_if_any(&v->p, ctx)) != 0)
		return r;
	if (v->p && decree_run_list_get(&v->runs, v->p) < 0)
		return lib_fail(-1);
	if ((r = open_store(&v->s, ctx)) != 0)
		return r;
	if ((r = decree_checkpoint_list_get(&v->l, v->s, NULL, 0)) < 0)
		return lib_fail(r);
	if ((r = cli_rollback_refs(&v->refs, v->l)) != 0)
		return r;
	n = decree_checkpoint_list_count(v->l);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v->refs[i].s, "1")) {
			v->last = decree_checkpoint_list_at(v->l, i);
			v->last_ref = v->refs[i].s;
		}
	return 0;
}

/* How many runs (0 outside a pipeline project). */
static size_t view_runs(const project_view *v)
{
	return v->runs ? decree_run_list_count(v->runs) : 0;
}

static void view_close(project_view *v)
{
	free(v->refs);
	decree_checkpoint_list_free(v->l);
	close_store(v->s);
	decree_run_list_free(v->runs);
	decree_project_free(v->p);
}

/* "just now", "5 minutes ago", "3 days ago": how long ago Unix time
 * t_ns was. */
static const char *age_text(char out[48], int64_t t_ns)
{
	int64_t sec = (int64_t)time(NULL) - t_ns / 1000000000;
	static const struct {
		int64_t unit;
		const char *name;
		int64_t below; /* use it below this many seconds */
	} steps[] = {
		{ 1, "second", 60 },
		{ 60, "minute", 3600 },
		{ 3600, "hour", 2 * 86400 },
		{ 86400, "day", INT64_MAX },
	};

	if (sec < 1) {
		snprintf(out, 48, "just now");
		return out;
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int64_t k = sec / steps[i].unit;
		if (sec >= steps[i].below)
			continue;
		snprintf(out, 48, "%" PRId64 " %s%s ago", k, steps[i].name,
			 k == 1 ? "" : "s");
		break;
	}
	return out;
}

/* The words of a checkpoint after its id on a human line: session,
 * label, message. */
static void checkpoint_words(const decree_checkpoint_info *c)
{
	printf("  %s", cli_q(c->session));
	if (c->label)
		printf("  [%s]", cli_q(c->label));
	if (c->message)
		printf("  %s", cli_q(c->message));
}

/* --- status
 * --------------------------------------------------------------------------
 */

typedef struct {
	const cli_ctx *ctx;
	buf json;  /* --json: the changes */
	buf lines; /* human: "  M path" each */
	size_t n;
} status_out;

static int on_status_change(void *payload, const char *path, char status)
{
	status_out *o = payload;
	char st[2] = { status, 0 };

	if (o->ctx->json) {
		buf_puts(&o->json, o->n ? ",{" : "{");
		json_kv_path(&o->json, "path", path, false);
		json_kv_str(&o->json, "status", st, true);
		buf_putc(&o->json, '}');
	} else {
		buf_printf(&o->lines, "  %c %s\n", status, cli_q(path));
	}
	o->n++;
	return 0;
}

/* The pipeline's part: specs, inbox and the last 10 runs (--json: their
 * members in j). */
static int pipeline_status(const cli_ctx *ctx, const project_view *v, buf *j)
{
	decree_pipeline_status st;
	size_t n = decree_run_list_count(v->runs), show = n < 10 ? n : 10;

	if (decree_pipeline_status_get(&st, v->p) < 0)
		return lib_fail(-1);
	if (ctx->json)
		buf_printf(
			j,
			"\"specs\":{\"processed\":%zu,\"pending\":%zu},"
			"\"inbox\":{\"waiting\":%zu,\"done\":%zu,\"dead\":%zu},"
			"\"runs\":[",
			st.specs_processed, st.specs_pending, st.inbox_waiting,
			st.inbox_done, st.inbox_dead);
	else
		printf("specs: %zu processed, %zu pending\n"
		       "inbox: %zu waiting, %zu done, %zu dead\n"
		       "runs: %zu%s\n",
		       st.specs_processed, st.specs_pending, st.inbox_waiting,
		       st.inbox_done, st.inbox_dead, n,
		       show ? " (most recent last)" : "");
	for (size_t i = n - show; i < n; i++) {
		const decree_run_info *ri = decree_run_list_at(v->runs, i);
		const char *out = decree_run_outcome_name(ri->outcome);
		if (ctx->json) {
			buf_puts(j, i > n - show ? ",{" : "{");
			run_info_members(j, ri);
			buf_putc(j, '}');
		} else {
			printf("  %-20s %-11s %-12s %s%s", cli_q(ri->id), out,
			       ri->routine ? cli_q(ri->routine) : "-",
			       ri->message ? cli_q(ri->message) : "",
			       ri->attempts ? "" : "\n");
			if (ri->attempts)
				printf(" (%d attempt%s)\n", ri->attempts,
				       ri->attempts == 1 ? "" : "s");
		}
	}
	if (ctx->json)
		buf_puts(j, "]");
	return 0;
}

int cmd_status(cli_ctx *ctx)
{
	project_view v;
	status_out o = { ctx, BUF_INIT, BUF_INIT, 0 };
	buf j = BUF_INIT;
	char age[48];
	int r;

	if (ctx->help) {
		puts("usage: decree status\n\n"
		     "What changed since the last checkpoint (the newest one of "
		     "this project\nthat is not a capture: 'decree rollback' "
		     "numbers it 1): the checkpoint,\nhow long ago it was made, "
		     "and one line per path, M (modified), A (added)\nor D "
		     "(deleted).  In a pipeline project, first the specs "
		     "processed and\npending, the messages waiting, done and "
		     "dead, and the recent runs.\n\n"
		     "--json: {\"specs\",\"inbox\",\"runs\",\"checkpoint\","
		     "\"changes\":[{\"path\",\"status\"}]}\n"
		     "(specs and inbox null outside a pipeline project).");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'status' takes no arguments");
	if ((r = view_open(&v, ctx)) != 0)
		goto done;
	if (v.p && (r = pipeline_status(ctx, &v, &j)) != 0)
		goto done;
	if (ctx->json && !v.p)
		buf_puts(&j, "\"specs\":null,\"inbox\":null,\"runs\":[]");
	if (v.last &&
	    (r = decree_checkpoint_compare(v.s, v.last->id, NULL,
					   on_status_change, &o)) < 0) {
		r = lib_fail_hint(r, fsck_hint(r));
		goto done;
	}
	r = EXIT_OK;
	if (ctx->json) {
		buf_puts(&j, ",\"checkpoint\":");
		if (v.last)
			cli_checkpoint_json(&j, v.last);
		else
			buf_puts(&j, "null");
		printf("{%s,\"changes\":[%s]}\n", j.ptr,
		       o.json.ptr ? o.json.ptr : "");
		goto done;
	}
	if (v.p)
		putchar('\n');
	if (!v.last) {
		puts("no checkpoints yet ('decree checkpoint create' makes one)");
		goto done;
	}
	printf("last checkpoint: %.12s, %s (%s)", v.last->id,
	       age_text(age, v.last->created_ns), v.last->created_at);
	checkpoint_words(v.last);
	printf("\n%s", o.lines.ptr);
	if (!o.n)
		puts("no changes since");
	else
		printf("%zu file%s changed since; 'decree diff' shows how, "
		       "'decree rollback %s' puts %s back\n",
		       o.n, o.n == 1 ? "" : "s", v.last_ref,
		       o.n == 1 ? "it" : "them");
done:
	buf_release(&o.json);
	buf_release(&o.lines);
	buf_release(&j);
	view_close(&v);
	return r;
}

/* --- log, diff
 * -------------------------------------------------------------------------
 */

static int cat_file(const char *path, const char *header)
{
	FILE *f = fopen(path, "rb");
	char chunk[65536];
	size_t n;

	if (!f)
		return -1;
	if (header)
		printf("%s", header);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, stdout);
	fclose(f);
	return 0;
}

/* The runs a command works on: its ID argument resolved (borrowed). */
typedef struct {
	const cli_ctx *ctx;
	decree_project *p;
	const decree_run_list *l;
	size_t first, count;
	cli_diff_mode mode; /* diff */
} run_sel;

/* Call fn for each selected run, in order, until one fails; with --json,
 * fn appends the run's object to `json` (its members and a leading ','
 * for every run but the first it appends), and the document
 * {"runs":[...]} is printed when all succeeded. */
static int each_run(const cli_ctx *ctx, run_sel *rs,
		    int (*fn)(const run_sel *rs, const decree_run_info *ri,
			      buf *json))
{
	buf json = BUF_INIT;
	int r = 0;

	for (size_t i = rs->first; r == 0 && i < rs->first + rs->count; i++)
		r = fn(rs, decree_run_list_at(rs->l, i),
		       ctx->json ? &json : NULL);
	if (r == 0 && ctx->json)
		printf("{\"runs\":[%s]}\n", json.ptr);
	buf_release(&json);
	return r;
}

/* The path of attempt k's log (base "routine" or "papermill"). */
static void log_path(char *out, size_t len, const decree_run_info *ri,
		     const char *base, int k)
{
	if (k == 1)
		snprintf(out, len, "%s/%s.log", ri->dir, base);
	else
		snprintf(out, len, "%s/%s-%d.log", ri->dir, base, k);
}

static int show_log(const run_sel *rs, const decree_run_info *ri, buf *json)
{
	const char *root = decree_project_root(rs->p);
	char path[PATH_MAX + 100], head[PATH_MAX + 200];
	size_t nlogs = 0;

	if (json) {
		buf_puts(json, json->len ? ",{" : "{");
		run_info_members(json, ri);
		buf_puts(json, ",\"logs\":[");
	} else {
		cli_pager_start();
		printf("%s== run %s: %s ==\n",
		       ri != decree_run_list_at(rs->l, rs->first) ? "\n" : "",
		       ri->id, decree_run_outcome_name(ri->outcome));
	}
	for (int k = 1; k < 1000; k++) {
		bool any = false;
		for (int nb = 0; nb < 2; nb++) {
			const char *rel;
			buf text = BUF_INIT;
			log_path(path, sizeof(path), ri,
				 nb ? "papermill" : "routine", k);
			rel = path + strlen(root) + 1;
			if (!json) {
				snprintf(head, sizeof(head),
					 "-- attempt %d (%s) --\n", k, rel);
				if (cat_file(path, head) == 0)
					any = true;
				continue;
			}
			if (cli_read_file(&text, path) < 0) {
				int e = errno;
				buf_release(&text);
				if (e == ENOENT)
					continue;
				return fail("cannot read '%s': %s", rel,
					    strerror(e));
			}
			any = true;
			buf_printf(json, "%s{\"attempt\":%d",
				   nlogs++ ? "," : "", k);
			json_kv_path(json, "path", rel, true);
			json_kv_bytes(json, "text", text.ptr, text.len, true);
			buf_putc(json, '}');
			buf_release(&text);
		}
		if (!any)
			break;
	}
	if (json)
		buf_puts(json, "]}");
	return 0;
}

/* --- log: the timeline of checkpoints and runs ---------------------------
 */

/* One line of the log: a checkpoint (ck) or a run (ri). */
typedef struct {
	int64_t t_ns; /* when: the checkpoint's time, a run's checkpoint's or
			 its start */
	size_t order; /* ties keep the order they were gathered in */
	const decree_checkpoint_info *ck;
	const char *ref; /* rollback's argument (a run: its checkpoint's) */
	const decree_run_info *ri;
	const decree_checkpoint_info *run_ck; /* a run's own checkpoint */
} log_entry;

static int newest_first(const void *a, const void *b)
{
	const log_entry *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns > y->t_ns ? -1 : 1;
	return x->order > y->order ? -1 : x->order < y->order;
}

/* Is c the checkpoint a pipeline run made before it ran (session
 * "decree", message its id, or "<id>.N" when its message was queued
 * again; decree/pipeline.h)?  Then the log shows it as the run. */
static bool is_run_checkpoint(const decree_checkpoint_info *c,
			      const decree_run_info *ri)
{
	size_t n = strlen(ri->id);

	return !strcmp(c->session, "decree") && c->message &&
	       !strncmp(c->message, ri->id, n) &&
	       (c->message[n] == '\0' || c->message[n] == '.');
}

static int count_file(void *payload, const decree_diff_file *f)
{
	(void)f;
	(*(size_t *)payload)++;
	return 0;
}

/* How many files a run's changes.diff changes; -1: it has none (or it
 * cannot be read: the log is no place to fail for it). */
static int64_t run_files_changed(const decree_run_info *ri)
{
	char path[PATH_MAX + 100];
	buf text = BUF_INIT;
	size_t n = 0;
	int r;

	snprintf(path, sizeof(path), "%s/changes.diff", ri->dir);
	if (cli_read_file(&text, path) < 0) {
		buf_release(&text);
		return -1;
	}
	r = decree_patch_files("changes.diff", text.ptr, text.len, -1,
			       count_file, &n);
	buf_release(&text);
	decree_error_clear();
	return r < 0 ? -1 : (int64_t)n;
}

static void log_entry_json(buf *b, const log_entry *e, int64_t files)
{
	if (e->ck) {
		buf e2 = BUF_INIT;
		cli_checkpoint_json(&e2, e->ck);
		buf_printf(b, "{\"kind\":\"%s\",\"ref\":\"%s\",%s",
			   e->ref[0] == 'u' ? "capture" : "checkpoint", e->ref,
			   e2.ptr + 1);
		buf_release(&e2);
		return;
	}
	buf_puts(b, "{\"kind\":\"run\"");
	json_kv_str(b, "ref", e->ref, true);
	buf_putc(b, ',');
	run_info_members(b, e->ri);
	json_kv_str(b, "checkpoint", e->run_ck ? e->run_ck->id : NULL, true);
	if (files < 0)
		buf_puts(b, ",\"files_changed\":null}");
	else
		buf_printf(b, ",\"files_changed\":%" PRId64 "}", files);
}

static void log_entry_text(buf *b, const log_entry *e, int64_t files)
{
	char t[UTC_TEXT_MAX];
	const char *when = e->ck ? e->ck->created_at
				 : rfc3339(t, e->t_ns / 1000000000);

	buf_printf(b, "%4s  %-20s  ", e->ref ? e->ref : "", when ? when : "-");
	if (e->ck) {
		buf_printf(b, "%-10s  %-18.12s  %s",
			   e->ref[0] == 'u' ? "capture" : "checkpoint",
			   e->ck->id, cli_q(e->ck->session));
		if (files >= 0)
			buf_printf(b, "  %" PRId64 " file%s", files,
				   files == 1 ? "" : "s");
		if (e->ck->label)
			buf_printf(b, "  [%s]", cli_q(e->ck->label));
		if (e->ck->message)
			buf_printf(b, "  %s", cli_q(e->ck->message));
	} else {
		buf_printf(b, "%-10s  %-18s  %s  %s", "run", cli_q(e->ri->id),
			   decree_run_outcome_name(e->ri->outcome),
			   e->ri->routine ? cli_q(e->ri->routine) : "-");
		if (files >= 0)
			buf_printf(b, "  %" PRId64 " file%s", files,
				   files == 1 ? "" : "s");
		if (e->ri->message)
			buf_printf(b, "  %s", cli_q(e->ri->message));
	}
	buf_putc(b, '\n');
}

/* `decree log` without ID: every checkpoint and run, newest first. */
static int show_timeline(const cli_ctx *ctx)
{
	project_view v;
	log_entry *e = NULL;
	size_t nck, nruns, n = 0;
	bool *folded = NULL;
	buf b = BUF_INIT;
	int r;

	if ((r = view_open(&v, ctx)) != 0)
		goto done;
	nck = decree_checkpoint_list_count(v.l);
	nruns = view_runs(&v);
	if (!(e = calloc(nck + nruns + 1, sizeof(*e))) ||
	    !(folded = calloc(nck + 1, sizeof(*folded)))) {
		r = fail("out of memory");
		goto done;
	}
	for (size_t i = 0; i < nruns; i++) {
		log_entry *x = &e[n];
		x->ri = decree_run_list_at(v.runs, i);
		x->order = n;
		x->t_ns = x->ri->started * 1000000000;
		/* its own checkpoint (the newest if it ran more than once) */
		for (size_t k = 0; k < nck; k++) {
			const decree_checkpoint_info *c =
				decree_checkpoint_list_at(v.l, k);
			if (!is_run_checkpoint(c, x->ri))
				continue;
			folded[k] = true;
			x->run_ck = c;
			x->ref = v.refs[k].s;
			x->t_ns = c->created_ns;
		}
		n++;
	}
	for (size_t k = 0; k < nck; k++) {
		if (folded[k])
			continue;
		e[n].ck = decree_checkpoint_list_at(v.l, k);
		e[n].ref = v.refs[k].s;
		e[n].t_ns = e[n].ck->created_ns;
		e[n].order = n;
		n++;
	}
	qsort(e, n, sizeof(*e), newest_first);
	if (ctx->json)
		buf_puts(&b, "{\"log\":[");
	for (size_t i = 0; i < n; i++) {
		int64_t files = e[i].ck ? e[i].ck->files_changed
					: run_files_changed(e[i].ri);
		if (ctx->json) {
			if (i)
				buf_putc(&b, ',');
			log_entry_json(&b, &e[i], files);
		} else {
			log_entry_text(&b, &e[i], files);
		}
	}
	if (ctx->json)
		buf_puts(&b, "]}\n");
	else if (!n && !ctx->quiet)
		fputs("no checkpoints or runs yet ('decree checkpoint create' "
		      "makes a checkpoint)\n",
		      stderr);
	if (b.len && !ctx->json)
		cli_pager_start(); /* LESS=FRX: only a long one stays */
	fwrite(b.ptr, 1, b.len, stdout);
	r = EXIT_OK;
done:
	buf_release(&b);
	free(e);
	free(folded);
	view_close(&v);
	return r;
}

int cmd_log(cli_ctx *ctx)
{
	decree_project *p;
	decree_run_list *l = NULL;
	run_sel rs;
	int r;

	if (ctx->help) {
		puts("usage: decree log [ID]\n\n"
		     "Without ID: every checkpoint of this project and every "
		     "pipeline run,\nnewest first, with the time, the kind "
		     "(checkpoint, capture, run), the\nid, how many files it "
		     "changed, and its session, label and message (a\nrun: its "
		     "outcome, routine and message).  The first column is "
		     "what\n'decree rollback' takes to go back to it (a run: "
		     "to before the run).\n\n"
		     "With ID: the logs of every attempt of a run; a chain id "
		     "shows each of\nits runs in order.");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree log [ID]");
	if (!ctx->argc)
		return show_timeline(ctx);
	if ((r = cli_open_project(&p, ctx)) != 0)
		return r;
	memset(&rs, 0, sizeof(rs));
	rs.ctx = ctx;
	rs.p = p;
	if (decree_run_list_get(&l, p) < 0 ||
	    decree_run_list_select(&rs.first, &rs.count, l, ctx->argv[0]) < 0)
		r = lib_fail(-1);
	rs.l = l;
	if (r == 0)
		r = each_run(ctx, &rs, show_log);
	decree_run_list_free(l);
	decree_project_free(p);
	return r;
}

/* --- diff
 * ---------------------------------------------------------------------------
 */

/* A run's changes.diff through decree_patch_files. */
typedef struct {
	const char *name, *text;
	size_t len;
} run_diff_args;

static int run_diff_source(void *arg, decree_diff_cb cb, void *payload)
{
	const run_diff_args *a = arg;
	return decree_patch_files(a->name, a->text, a->len, -1, cb, payload);
}

static int show_diff(const run_sel *rs, const decree_run_info *ri, buf *json)
{
	const char *root = decree_project_root(rs->p);
	char path[PATH_MAX + 100];
	buf text = BUF_INIT;
	int r;

	snprintf(path, sizeof(path), "%s/changes.diff", ri->dir);
	if (!json && rs->mode == CLI_DIFF_TEXT) {
		if (access(path, F_OK) == 0)
			cli_pager_start();
		if (cli_diff_cat(path) == 0 || rs->count > 1)
			return 0; /* in a chain, runs without a diff print
				     nothing */
	} else if (cli_read_file(&text, path) == 0) {
		/* the records of changes.diff, as checkpoint diff gives
		 * them */
		run_diff_args a = { path + strlen(root) + 1, text.ptr,
				    text.len };
		if (json) {
			buf_puts(json, json->len ? ",{" : "{");
			run_info_members(json, ri);
			buf_putc(json, ',');
		} else if (rs->count > 1) {
			printf("%s== run %s ==\n",
			       ri != decree_run_list_at(rs->l, rs->first) ? "\n"
									  : "",
			       ri->id);
		}
		r = cli_diff_show(rs->ctx, rs->mode, json, run_diff_source, &a);
		buf_release(&text);
		if (r < 0)
			return lib_fail(r);
		if (json)
			buf_putc(json, '}');
		return 0;
	} else {
		int e = errno;
		buf_release(&text);
		if (e != ENOENT)
			return fail("cannot read '%s': %s",
				    path + strlen(root) + 1, strerror(e));
		if (rs->count > 1)
			return 0;
	}
	return fail_code(DECREE_ENOTFOUND,
			 "run %s has no changes.diff (%s); the diffs of failed "
			 "attempts are changes-<k>.diff in its directory",
			 ri->id, decree_run_outcome_name(ri->outcome));
}

static const char diff_help[] =
	"usage: decree diff [ID] [--stat | --name-status]\n\n"
	"Without ID: in a pipeline project whose last checkpoint is a run's\n"
	"own (nothing was checkpointed since the latest run started), that\n"
	"run's changes.diff, its net change; otherwise the changes from the\n"
	"last checkpoint (the newest one that is not a capture: 'decree\n"
	"rollback' numbers it 1) to the working tree.  A note on stderr says\n"
	"which.\n\n"
	"ID is a run id, a unique prefix of one or a chain id (every run of the\n"
	"chain in seq order), or a checkpoint: an id, a unique prefix of 4+ hex\n"
	"digits, or SESSION:MESSAGE (the changes from it to the working tree).\n"
	"An ID that names both a run and a checkpoint is refused as ambiguous.\n\n"
	"  --stat         git's summary: path | N ++--, and the totals\n"
	"  --name-status  A|D|M<TAB>path per file\n\n"
	"--json: a run: {\"runs\":[run + \"files\",...]}; a checkpoint:\n"
	"{\"checkpoint\",\"files\",\"files_changed\",\"insertions\",\"deletions\"}.";

/* `decree diff` of checkpoint `id` (a full id of v's list) to the working
 * tree. */
static int diff_checkpoint(const cli_ctx *ctx, project_view *v,
			   cli_diff_mode mode, const char *id)
{
	const decree_checkpoint_info *c = NULL;
	decree_diff_options defaults = DECREE_DIFF_OPTIONS_INIT;
	buf json = BUF_INIT;
	int r;

	for (size_t i = 0; i < decree_checkpoint_list_count(v->l); i++)
		if (!strcmp(decree_checkpoint_list_at(v->l, i)->id, id))
			c = decree_checkpoint_list_at(v->l, i);
	if (!c) /* deleted meanwhile */
		return fail_code(DECREE_ENOTFOUND, "no checkpoint matches '%s'",
				 id);
	if (ctx->json) {
		buf_puts(&json, "\"checkpoint\":");
		cli_checkpoint_json(&json, c);
		buf_putc(&json, ',');
	}
	r = cli_checkpoint_diff_show(ctx, mode, &json, v->s, id, NULL,
				     defaults.context);
	if (r < 0)
		r = lib_fail_hint(r, fsck_hint(r));
	if (r == 0 && ctx->json)
		printf("{%s}\n", json.ptr);
	buf_release(&json);
	return r;
}

/* What ID names: a run selection (*first, *count) and/or a checkpoint
 * (ck).  0 when exactly one of them, else the exit code after saying
 * why. */
static int diff_target(const project_view *v, const char *id, size_t *first,
		       size_t *count, char ck[DECREE_ID_HEXLEN + 1])
{
	int run_r = DECREE_ENOTFOUND, ck_r;
	char *run_err = NULL;

	ck[0] = '\0';
	if (v->p) {
		run_r = decree_run_list_select(first, count, v->runs, id);
		if (run_r < 0 && !(run_err = strdup(decree_error_last())))
			return fail("out of memory");
	}
	ck_r = decree_checkpoint_resolve(ck, v->s, id);
	if (ck_r == 0 && (run_r == 0 || run_r == DECREE_EAMBIGUOUS)) {
		free(run_err);
		return fail_code(DECREE_EAMBIGUOUS,
				 "'%s' names both a run and checkpoint %.12s; "
				 "give the run's whole id or more digits of "
				 "the checkpoint's",
				 id, ck);
	}
	if (run_r == 0 || ck_r == 0) {
		if (ck_r < 0)
			ck[0] = '\0';
		free(run_err);
		decree_error_clear();
		return 0;
	}
	if (run_r == DECREE_EAMBIGUOUS) {
		int r = fail_code(run_r, "%s", run_err);
		free(run_err);
		return r;
	}
	free(run_err);
	if (ck_r == DECREE_EAMBIGUOUS || !v->p)
		return lib_fail(ck_r);
	return fail_code(DECREE_ENOTFOUND, "no run or checkpoint matches '%s'",
			 id);
}

int cmd_diff(cli_ctx *ctx)
{
	bool stat = false, name_status = false;
	opt_spec specs[] = {
		{ "stat", 0, false, NULL, &stat, NULL },
		{ "name-status", 0, false, NULL, &name_status, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	char ck[DECREE_ID_HEXLEN + 1] = "";
	project_view v;
	run_sel rs;
	char age[48];
	int r;

	if (ctx->help) {
		puts(diff_help);
		return EXIT_OK;
	}
	if (opt_parse(ctx, specs) != 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 || ctx->rest_argc)
		return usage_error(ctx, "usage: decree diff [ID] [--stat | "
					"--name-status]");
	if (stat && name_status)
		return usage_error(
			ctx, "--stat and --name-status exclude each other");
	memset(&rs, 0, sizeof(rs));
	rs.ctx = ctx;
	rs.mode = stat		? CLI_DIFF_STAT
		  : name_status ? CLI_DIFF_NAME_STATUS
				: CLI_DIFF_TEXT;
	if ((r = view_open(&v, ctx)) != 0)
		goto done;
	rs.p = v.p;
	rs.l = v.runs;
	if (ctx->argc) {
		if ((r = diff_target(&v, ctx->argv[0], &rs.first, &rs.count,
				     ck)) != 0)
			goto done;
	} else if (view_runs(&v) &&
		   (!v.last || !strcmp(v.last->session, "decree"))) {
		/* the last checkpoint is a run's own: that run is the last
		 * thing that happened */
		if (decree_run_list_select(&rs.first, &rs.count, v.runs, NULL) <
		    0) {
			r = lib_fail(-1);
			goto done;
		}
		if (!ctx->json && !ctx->quiet)
			cli_note("the changes of the latest run, %s",
				 decree_run_list_at(v.runs, rs.first)->id);
	} else if (v.last) {
		memcpy(ck, v.last->id, sizeof(ck));
		if (!ctx->json && !ctx->quiet)
			cli_note("the changes since checkpoint %s (%.12s, %s)",
				 v.last_ref, v.last->id,
				 age_text(age, v.last->created_ns));
	} else {
		r = fail_code(DECREE_ENOTFOUND,
			      v.p ? "nothing to diff: no runs and no "
				    "checkpoints yet"
				  : "nothing to diff: no checkpoints yet "
				    "('decree checkpoint create' makes one)");
		goto done;
	}
	if (ck[0])
		r = diff_checkpoint(ctx, &v, rs.mode, ck);
	else
		r = each_run(ctx, &rs, show_diff);
done:
	view_close(&v);
	return r;
}

/* --- revert
 * ------------------------------------------------------------------------------
 */

int cmd_revert(cli_ctx *ctx)
{
	decree_project *p;
	decree_revert_result res;
	const char *id;
	int r;

	if (ctx->help) {
		puts("usage: decree revert ID\n\nApply the run's changes.diff "
		     "in reverse as one transaction and verify\nevery affected "
		     "file against the run's manifest.json; a mismatch is an\n"
		     "error naming the paths, and nothing is written.  'decree "
		     "undo' reverts\nthe revert.");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc != 1 || ctx->rest_argc)
		return usage_error(ctx, "see --help for the usage");
	id = ctx->argv[0];
	if ((r = cli_open_project(&p, ctx)) != 0)
		return r;
	if (decree_run_revert(&res, p, id) < 0) {
		decree_project_free(p);
		return lib_fail(-1);
	}
	if (ctx->json)
		printf("{\"run\":\"%s\",\"created\":%zu,\"restored\":%zu,"
		       "\"deleted\":%zu,\"skipped\":%zu,\"verified\":%zu}\n",
		       res.id, res.apply.created, res.apply.modified,
		       res.apply.deleted, res.apply.skipped, res.verified);
	else if (res.empty && !ctx->quiet)
		printf("run %s changed nothing; nothing to revert\n", res.id);
	else if (!ctx->quiet)
		printf("reverted run %s: %zu restored, %zu re-created, %zu "
		       "removed; %zu file(s) verified against manifest.json; "
		       "'decree undo' brings the changes back\n",
		       res.id, res.apply.modified, res.apply.created,
		       res.apply.deleted, res.verified);
	decree_project_free(p);
	return EXIT_OK;
}
