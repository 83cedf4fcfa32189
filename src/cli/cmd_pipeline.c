/*
 * cmd_pipeline.c - decree init, run, process, status, log, diff, revert
 * (docs/pipeline.md, docs/cli/pipeline.md): arguments and output over
 * decree/project.h and decree/pipeline.h.
 */
#include "util/common.h"
#include "interactive.h"
#include "util/json.h"

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
static const char *rfc3339(char out[32], int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t <= 0 || !gmtime_r(&tt, &tm))
		return NULL;
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return out;
}

/* A run as --json shows it: the members of a run object
 * (docs/schema/README.md), from a run directory (run_info_members) or
 * from the events of a run just processed (ri: its directory, for the
 * times and the reason, or NULL). */
static void run_members(buf *b, const char *id, decree_run_outcome outcome,
			const char *routine, const char *message, int attempts,
			const decree_run_info *ri)
{
	char t1[32], t2[32];

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
	"  -m NAME         message name (kebab-cased, 50 chars); default: the\n"
	"                  router names it, or the spec's file stem, or run-<chain>\n"
	"  -p PROMPT       the message body (else stdin when it is not a terminal)\n"
	"  -v KEY=VALUE    a frontmatter field: routine, input_file, or a custom\n"
	"                  variable of the routine; repeatable\n"
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

/* --- status
 * --------------------------------------------------------------------------
 */

int cmd_status(cli_ctx *ctx)
{
	decree_project *p = NULL;
	decree_run_list *l = NULL;
	decree_pipeline_status st;
	size_t n, show;
	buf j = BUF_INIT;
	int r;

	if (ctx->help) {
		puts("usage: decree status\n\nSpecs processed and pending, messages "
		     "waiting, done and dead, and the\nrecent runs with their "
		     "outcome.");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'status' takes no arguments");
	if ((r = cli_open_project(&p, ctx)) != 0)
		return r;
	if (decree_pipeline_status_get(&st, p) < 0 ||
	    decree_run_list_get(&l, p) < 0) {
		decree_project_free(p);
		return lib_fail(-1);
	}
	n = decree_run_list_count(l);
	show = n < 10 ? n : 10;
	if (ctx->json)
		buf_printf(
			&j,
			"{\"specs\":{\"processed\":%zu,\"pending\":%zu},"
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
		const decree_run_info *ri = decree_run_list_at(l, i);
		const char *out = decree_run_outcome_name(ri->outcome);
		if (ctx->json) {
			buf_puts(&j, i > n - show ? ",{" : "{");
			run_info_members(&j, ri);
			buf_putc(&j, '}');
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
	if (ctx->json) {
		buf_puts(&j, "]}\n");
		fwrite(j.ptr, 1, j.len, stdout);
	}
	buf_release(&j);
	decree_run_list_free(l);
	decree_project_free(p);
	return EXIT_OK;
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

/* The runs a command works on: its ID argument resolved. */
typedef struct {
	decree_project *p;
	decree_run_list *l;
	size_t first, count;
} run_sel;

static int run_sel_open(run_sel *rs, cli_ctx *ctx, bool id_required)
{
	int r;

	memset(rs, 0, sizeof(*rs));
	if (opt_parse(ctx, NULL) != 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 || ctx->rest_argc || (id_required && !ctx->argc))
		return usage_error(ctx, "see --help for the usage");
	if ((r = cli_open_project(&rs->p, ctx)) != 0)
		return r;
	if (decree_run_list_get(&rs->l, rs->p) < 0 ||
	    decree_run_list_select(&rs->first, &rs->count, rs->l,
				   ctx->argc ? ctx->argv[0] : NULL) < 0)
		return lib_fail(-1);
	return 0;
}

static void run_sel_close(run_sel *rs)
{
	decree_run_list_free(rs->l);
	decree_project_free(rs->p);
}

/* Print `help`, or call fn for each selected run, in order, until one
 * fails; with --json, fn appends the run's object to `json` (its members
 * and a leading ',' for every run but the first it appends), and the
 * document {"runs":[...]} is printed when all succeeded. */
static int each_run(cli_ctx *ctx, const char *help,
		    int (*fn)(const run_sel *rs, const decree_run_info *ri,
			      buf *json))
{
	buf json = BUF_INIT;
	run_sel rs;
	int r;

	if (ctx->help) {
		puts(help);
		return EXIT_OK;
	}
	r = run_sel_open(&rs, ctx, false);
	for (size_t i = rs.first; r == 0 && i < rs.first + rs.count; i++)
		r = fn(&rs, decree_run_list_at(rs.l, i),
		       ctx->json ? &json : NULL);
	run_sel_close(&rs);
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

int cmd_log(cli_ctx *ctx)
{
	return each_run(ctx,
			"usage: decree log [ID]\n\nThe logs of every attempt "
			"of a run (default: the latest run); a chain\nid shows "
			"each of its runs in order.",
			show_log);
}

typedef struct {
	buf *json;
	size_t n;
	uint64_t insertions, deletions;
} run_diff_out;

static int on_run_diff_file(void *payload, const decree_diff_file *f)
{
	run_diff_out *d = payload;

	if (d->n++ && buf_putc(d->json, ',') < 0)
		return -1;
	d->insertions += f->added;
	d->deletions += f->removed;
	return cli_diff_file_json(d->json, f, true);
}

static int show_diff(const run_sel *rs, const decree_run_info *ri, buf *json)
{
	const char *root = decree_project_root(rs->p);
	char path[PATH_MAX + 100];
	run_diff_out d = { json, 0, 0, 0 };
	buf text = BUF_INIT;
	int r;

	snprintf(path, sizeof(path), "%s/changes.diff", ri->dir);
	if (!json) {
		if (cat_file(path, NULL) == 0 || rs->count > 1)
			return 0; /* in a chain, runs without a diff print
				     nothing */
	} else if (cli_read_file(&text, path) == 0) {
		/* the records of changes.diff, as checkpoint diff gives
		 * them */
		buf_puts(json, json->len ? ",{" : "{");
		run_info_members(json, ri);
		buf_puts(json, ",\"files\":[");
		r = decree_patch_files(path + strlen(root) + 1, text.ptr,
				       text.len, -1, on_run_diff_file, &d);
		buf_release(&text);
		if (r < 0)
			return lib_fail(r);
		buf_printf(json,
			   "],\"files_changed\":%zu,\"insertions\":%" PRIu64
			   ",\"deletions\":%" PRIu64 "}",
			   d.n, d.insertions, d.deletions);
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

int cmd_diff(cli_ctx *ctx)
{
	return each_run(
		ctx,
		"usage: decree diff [ID]\n\nThe changes.diff of a run "
		"(default: the latest run): its net change.\nA chain id "
		"prints every run of the chain in seq order.",
		show_diff);
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
