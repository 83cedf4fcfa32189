/*
 * cmd_pipeline.c - decree init, run, process, status, log, diff, revert
 * (docs/pipeline.md, docs/cli/pipeline.md).
 */
#include "util/common.h"
#include "pipeline.h"
#include "util/json.h"

#include <dirent.h>
#include <jansson.h>

/* --- init
 * -------------------------------------------------------------------------
 */

static const char config_yml[] =
	"# decree configuration (docs/config.md)\n"
	"commands:\n"
	"  # router: a command line; {prompt} is replaced by the shell-quoted prompt\n"
	"  # and its trimmed stdout is the answer.  Used to name messages (decree run\n"
	"  # without -m) and to pick a routine when a message names none.\n"
	"  # Example: router: claude -p {prompt}\n"
	"  router: \"\"\n"
	"  # ai: the command routines call (the example routine develop.sh gets it as\n"
	"  # $DECREE_AI_COMMAND); {prompt} as above.\n"
	"  ai: \"\"\n"
	"# attempts that keep each other's changes before the clean-slate attempt\n"
	"max_retries: 3\n"
	"# follow-up depth: a message with seq >= max_depth is dead-lettered\n"
	"max_depth: 10\n"
	"# the routine of messages that name none (and the router does not pick)\n"
	"default_routine: develop\n"
	"# run .decree/routines/*.ipynb with papermill\n"
	"notebook_support: false\n"
	"checkpoint:\n"
	"  # files above this size are recorded but not stored\n"
	"  max_file_size: 50M\n"
	"  # extra ignore patterns (gitignore syntax)\n"
	"  exclude: []\n";

static const char gitignore[] = "inbox/\nruns/\nstore/\nlast-run.yml\n"
				"pipeline.lock\n";

static const char develop_sh[] =
	"#!/usr/bin/env bash\n"
	"# Develop: hand the message (and its spec) to the AI command of config.yml.\n"
	"#\n"
	"# decree runs this with bash in the project root and sets spec_file,\n"
	"# message_file, message_id, message_dir, chain, seq, DECREE_ATTEMPT,\n"
	"# DECREE_AI_COMMAND (commands.ai) and, for the clean-slate attempt,\n"
	"# DECREE_FAILURE_CONTEXT.  Custom parameters are leading lines like\n"
	"#   target_branch=\"${target_branch:-main}\"\n"
	"# (message frontmatter overrides the default).  Exit 0 = success.\n"
	"set -euo pipefail\n"
	"\n"
	"if [ -z \"${DECREE_AI_COMMAND:-}\" ]; then\n"
	"\techo \"develop: no AI command is configured.\" >&2\n"
	"\techo \"Set commands.ai in .decree/config.yml, e.g.:  ai: claude -p {prompt}\" >&2\n"
	"\texit 1\n"
	"fi\n"
	"prompt=$(cat \"$message_file\")\n"
	"if [ -n \"${spec_file:-}\" ] && [ -f \"$spec_file\" ]; then\n"
	"\tprompt=\"$prompt\n"
	"\n"
	"$(cat \"$spec_file\")\"\n"
	"fi\n"
	"if [ -n \"${DECREE_FAILURE_CONTEXT:-}\" ] && [ -f \"$DECREE_FAILURE_CONTEXT\" ]; then\n"
	"\tprompt=\"$prompt\n"
	"\n"
	"$(cat \"$DECREE_FAILURE_CONTEXT\")\"\n"
	"fi\n"
	"quoted=$(printf '%q' \"$prompt\")\n"
	"eval \"${DECREE_AI_COMMAND//\\{prompt\\}/$quoted}\"\n";

/* Create a file unless it exists; report what was made. */
static int make_file(const char *root, const char *rel, const char *text,
		     mode_t mode, const cli_ctx *ctx, size_t *made)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno == EEXIST)
			return 0;
		return fail("cannot create '%s': %s", path, strerror(errno));
	}
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		return fail("cannot write '%s': %s", path, strerror(e));
	}
	close(fd);
	if (!ctx->quiet && !ctx->json)
		printf("created %s\n", rel);
	(*made)++;
	return 0;
}

static int make_dir(const char *root, const char *rel, const cli_ctx *ctx,
		    size_t *made)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (mkdir(path, 0755) == 0) {
		if (!ctx->quiet && !ctx->json)
			printf("created %s/\n", rel);
		(*made)++;
		return 0;
	}
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return fail("cannot create '%s': %s", path,
		    errno == EEXIST ? "a file is in the way" : strerror(errno));
}

int cmd_init(cli_ctx *ctx)
{
	char root[PATH_MAX], abs[PATH_MAX];
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
	if (opt_parse(ctx, NULL) < 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'init' takes no arguments");
	if (ctx->root_opt)
		snprintf(root, sizeof(root), "%s", ctx->root_opt);
	else if (!getcwd(root, sizeof(root)))
		return fail("cannot get the current directory: %s",
			    strerror(errno));
	if (!realpath(root, abs))
		return fail("cannot use '%s' as project root: %s", root,
			    strerror(errno));
	static const char *const dirs[] = { ".decree",
					    ".decree/routines",
					    ".decree/inbox",
					    ".decree/inbox/done",
					    ".decree/inbox/dead",
					    ".decree/runs",
					    "specs" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if ((r = make_dir(abs, dirs[i], ctx, &made)) != 0)
			return r;
	if ((r = make_file(abs, ".decree/config.yml", config_yml, 0644, ctx,
			   &made)) ||
	    (r = make_file(abs, ".decree/.gitignore", gitignore, 0644, ctx,
			   &made)) ||
	    (r = make_file(abs, ".decree/routines/develop.sh", develop_sh, 0755,
			   ctx, &made)) ||
	    (r = make_file(abs, "specs/processed-spec.md", "", 0644, ctx,
			   &made)))
		return r;
	if (ctx->json) {
		buf b = BUF_INIT;
		buf_puts(&b, "{");
		json_kv_path(&b, "root", abs, false);
		buf_printf(&b, ",\"created\":%zu}\n", made);
		fwrite(b.ptr, 1, b.len, stdout);
		buf_release(&b);
	} else if (!ctx->quiet) {
		printf(made ? "decree project ready in %s\n"
			    : "%s is already a decree project; nothing to do\n",
		       abs);
	}
	return EXIT_OK;
}

/* --- run, process
 * ---------------------------------------------------------------
 */

static bool valid_key(const char *k, size_t n)
{
	if (!n || !((k[0] >= 'a' && k[0] <= 'z') ||
		    (k[0] >= 'A' && k[0] <= 'Z') || k[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
		      k[i] == '-'))
			return false;
	return true;
}

/* Take the repeatable -v KEY=VALUE options out of argv. */
static int take_vars(cli_ctx *ctx, run_request *rq, bool *any)
{
	int out = 0;

	for (int i = 0; i < ctx->argc; i++) {
		const char *a = ctx->argv[i], *kv = NULL;
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
		const char *eq = strchr(kv, '=');
		if (!eq || !valid_key(kv, (size_t)(eq - kv)))
			return usage_error(
				ctx,
				"-v needs KEY=VALUE with a key of letters, "
				"digits, '_' or '-', not '%s'",
				kv);
		if (!json_is_utf8(eq + 1, strlen(eq + 1)))
			return usage_error(
				ctx,
				"-v %.*s: the value is not valid UTF-8 "
				"(frontmatter is YAML)",
				(int)(eq - kv), kv);
		{
			char key[128];
			snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
			if (!strcmp(key, "id") || !strcmp(key, "chain") ||
			    !strcmp(key, "seq"))
				return usage_error(
					ctx, "'%s' is set by decree, not by -v",
					key);
			if (run_request_set(rq, key, eq + 1) != 0)
				return EXIT_FAIL;
		}
		*any = true;
	}
	ctx->argc = out;
	return 0;
}

static const char run_help[] =
	"usage: decree run [-m NAME] [-p PROMPT] [-v KEY=VALUE]...\n"
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
	"\n"
	"Every attempt runs under a checkpoint; failures are retried (max_retries),\n"
	"then the tree is reverted for one clean-slate attempt, then the message\n"
	"is dead-lettered (.decree/inbox/dead/) with the tree reverted.  Exit 1 when\n"
	"a message was dead-lettered, 130 when interrupted.  See docs/pipeline.md.";

int cmd_run(cli_ctx *ctx)
{
	const char *name = NULL, *prompt = NULL;
	opt_spec specs[] = {
		{ "message", 'm', true, &name, NULL, NULL },
		{ "prompt", 'p', true, &prompt, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	run_request rq;
	project p;
	bool any = false;
	int r;

	if (ctx->help) {
		puts(run_help);
		return EXIT_OK;
	}
	memset(&rq, 0, sizeof(rq));
	if ((r = take_vars(ctx, &rq, &any)) != 0 ||
	    (opt_parse(ctx, specs) < 0 && (r = EXIT_USAGE))) {
		run_request_release(&rq);
		return r;
	}
	if (ctx->argc || ctx->rest_argc) {
		run_request_release(&rq);
		return usage_error(ctx,
				   "'run' takes no arguments (the prompt goes "
				   "after -p)");
	}
	if ((r = project_open(&p, ctx)) != 0) {
		run_request_release(&rq);
		project_release(&p);
		return r;
	}
	any = any || name || prompt;
	/* an absolute input_file inside the project becomes relative */
	if (!r && run_request_get(&rq, "input_file") &&
	    run_request_get(&rq, "input_file")[0] == '/') {
		const char *in = run_request_get(&rq, "input_file");
		char abs[PATH_MAX];
		size_t n = strlen(p.root);
		if (!realpath(in, abs))
			r = fail("input file '%s' does not exist", in);
		else if (strncmp(abs, p.root, n) || abs[n] != '/')
			r = fail("input file '%s' is outside the project %s",
				 in, p.root);
		else
			r = run_request_set(&rq, "input_file", abs + n + 1);
	}
	if (name && !(rq.name = strdup(name)))
		r = fail("out of memory");
	if (!r && prompt && !(rq.body = strdup(prompt)))
		r = fail("out of memory");
	if (!r && !prompt && !isatty(0)) {
		buf in = BUF_INIT;
		char chunk[65536];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
			buf_put(&in, chunk, n);
		if (in.len)
			rq.body = buf_detach(&in, NULL);
		buf_release(&in);
		any = true;
	}
	if (!r && !any) {
		int tty = open("/dev/tty", O_RDWR | O_CLOEXEC);
		if (tty < 0) {
			r = usage_error(ctx,
					"no terminal for the interactive form; "
					"give -p PROMPT or -v input_file=...");
		} else {
			r = interactive_request(&rq, &p, tty);
			close(tty);
			if (r == 1) { /* cancelled */
				if (!ctx->quiet)
					fputs("cancelled; nothing was created\n",
					      stderr);
				r = 130;
			} else if (r != 0) {
				r = EXIT_FAIL;
			}
		}
	}
	if (!r) {
		r = pipeline_run(&p, &rq);
		if (r == 0 && rq.interactive)
			last_run_save(&p, &rq);
	}
	run_request_release(&rq);
	project_release(&p);
	return r;
}

int cmd_process(cli_ctx *ctx)
{
	project p;
	int r;

	if (ctx->help) {
		puts("usage: decree process\n\nProcess what waits in .decree/inbox/, "
		     "then every spec (specs/*.spec.md)\nnot listed in "
		     "specs/processed-spec.md, alphabetically, each as a new\n"
		     "chain.  A spec that exhausts its retries is dead-lettered and "
		     "processing\ncontinues.  Exit 1 if anything was dead-lettered.");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) < 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'process' takes no arguments");
	if ((r = project_open(&p, ctx)) == 0)
		r = pipeline_process(&p);
	project_release(&p);
	return r;
}

/* --- runs: listing and resolving ids
 * ----------------------------------------------
 */

typedef struct {
	char id[48];
	char chain[17];
	long seq;
} run_ref;

static int cmp_run(const void *a, const void *b)
{
	const run_ref *x = a, *y = b;
	int c = strcmp(x->chain, y->chain);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int list_runs(run_ref **out, size_t *nout, const project *p)
{
	char dir[PATH_MAX];
	run_ref *v = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*nout = 0;
	project_path(dir, p, ".decree/runs");
	if (!(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		size_t len = strlen(s);
		run_ref *nv;
		bool ok = len >= 18 && len < 40 && s[16] == '-';
		for (size_t i = 0; ok && i < len; i++)
			ok = i == 16 || (s[i] >= '0' && s[i] <= '9');
		if (!ok)
			continue;
		if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
			closedir(d);
			free(v);
			return fail("out of memory");
		}
		v = nv;
		snprintf(v[n].id, sizeof(v[n].id), "%s", s);
		memcpy(v[n].chain, s, 16);
		v[n].chain[16] = '\0';
		v[n].seq = strtol(s + 17, NULL, 10);
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_run);
	*out = v;
	*nout = n;
	return 0;
}

/* Resolve ID: a run id or unique prefix (one run), or a chain id (all its
 * runs, in seq order).  NULL: the latest run.  [*first, *first + *count). */
static int resolve_runs(size_t *first, size_t *count, const run_ref *v,
			size_t n, const char *id)
{
	size_t hits = 0, at = 0;

	if (!n)
		return fail("no runs yet (.decree/runs/ is empty)");
	if (!id) {
		/* the most recently started: highest chain, then seq */
		*first = n - 1;
		*count = 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id)) {
			*first = i;
			*count = 1;
			return 0;
		}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].chain, id)) {
			if (!hits++)
				at = i;
		}
	if (hits) {
		*first = at;
		*count = hits;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strncmp(v[i].id, id, strlen(id))) {
			if (!hits++)
				at = i;
		}
	if (hits == 1) {
		*first = at;
		*count = 1;
		return 0;
	}
	if (!hits)
		return fail("no run matches '%s'", id);
	{
		buf b = BUF_INIT;
		size_t shown = 0;
		for (size_t i = 0; i < n && shown < 10; i++)
			if (!strncmp(v[i].id, id, strlen(id)))
				buf_printf(&b, "%s%s", shown++ ? ", " : "",
					   v[i].id);
		fail("'%s' is ambiguous: %s%s", id, b.ptr,
		     hits > 10 ? ", ..." : "");
		buf_release(&b);
	}
	return EXIT_FAIL;
}

static json_t *load_json(const char *path)
{
	json_error_t e;
	return json_load_file(path, 0, &e);
}

static const char *run_outcome(const project *p, const char *id,
			       json_t **holder)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/.decree/runs/%s/outcome.json", p->root,
		 id);
	*holder = load_json(path);
	return *holder ? json_string_value(json_object_get(*holder, "outcome"))
		       : NULL;
}

/* --- status
 * --------------------------------------------------------------------------
 */

static size_t count_md(const project *p, const char *rel)
{
	char dir[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	project_path(dir, p, rel);
	if (!(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] != '.' && len > 3 &&
		    !strcmp(de->d_name + len - 3, ".md") &&
		    de->d_type != DT_DIR)
			n++;
	}
	closedir(d);
	return n;
}

static void count_specs(const project *p, size_t *done, size_t *pending)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	*done = *pending = 0;
	project_path(dir, p, "specs");
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= 8 || strcmp(de->d_name + len - 8, ".spec.md"))
			continue;
		if (spec_processed(p, de->d_name))
			(*done)++;
		else
			(*pending)++;
	}
	closedir(d);
}

int cmd_status(cli_ctx *ctx)
{
	project p;
	run_ref *v = NULL;
	size_t n = 0, sd, sp, show;
	buf j = BUF_INIT;
	int r;

	if (ctx->help) {
		puts("usage: decree status\n\nSpecs processed and pending, messages "
		     "waiting, done and dead, and the\nrecent runs with their "
		     "outcome.");
		return EXIT_OK;
	}
	if (opt_parse(ctx, NULL) < 0)
		return EXIT_USAGE;
	if (ctx->argc || ctx->rest_argc)
		return usage_error(ctx, "'status' takes no arguments");
	if ((r = project_open(&p, ctx)) != 0 ||
	    (r = list_runs(&v, &n, &p)) != 0) {
		project_release(&p);
		return r;
	}
	count_specs(&p, &sd, &sp);
	size_t wait = count_md(&p, ".decree/inbox"),
	       done = count_md(&p, ".decree/inbox/done"),
	       dead = count_md(&p, ".decree/inbox/dead");
	show = n < 10 ? n : 10;
	if (ctx->json)
		buf_printf(
			&j,
			"{\"specs\":{\"processed\":%zu,\"pending\":%zu},"
			"\"inbox\":{\"waiting\":%zu,\"done\":%zu,\"dead\":%zu},"
			"\"runs\":[",
			sd, sp, wait, done, dead);
	else
		printf("specs: %zu processed, %zu pending\n"
		       "inbox: %zu waiting, %zu done, %zu dead\n"
		       "runs: %zu%s\n",
		       sd, sp, wait, done, dead, n,
		       show ? " (most recent last)" : "");
	for (size_t i = n - show; i < n; i++) {
		json_t *o = NULL;
		const char *out = run_outcome(&p, v[i].id, &o);
		const char *rt =
			o ? json_string_value(json_object_get(o, "routine"))
			  : NULL;
		const char *msg =
			o ? json_string_value(json_object_get(o, "message"))
			  : NULL;
		json_int_t att =
			o ? json_integer_value(json_object_get(o, "attempts"))
			  : 0;
		if (ctx->json) {
			buf_puts(&j, i > n - show ? ",{" : "{");
			json_kv_str(&j, "id", v[i].id, false);
			json_kv_str(&j, "outcome", out ? out : "unfinished",
				    true);
			json_kv_str(&j, "routine", rt, true);
			json_kv_path(&j, "message", msg, true);
			buf_printf(&j, ",\"attempts\":%lld}", (long long)att);
		} else {
			printf("  %-20s %-11s %-12s %s%s", v[i].id,
			       out ? out : "unfinished", rt ? rt : "-",
			       msg ? msg : "", att ? "" : "\n");
			if (att)
				printf(" (%lld attempt%s)\n", (long long)att,
				       att == 1 ? "" : "s");
		}
		json_decref(o);
	}
	if (ctx->json) {
		buf_puts(&j, "]}\n");
		fwrite(j.ptr, 1, j.len, stdout);
	}
	buf_release(&j);
	free(v);
	project_release(&p);
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

/* The runs a command works on: ID resolved (resolve_runs). */
typedef struct {
	project p;
	run_ref *v;
	size_t n, first, count;
} run_sel;

/* run_sel_open printed the help: the command returns EXIT_OK */
#define HELP_SHOWN 1000

static int run_sel_open(run_sel *rs, cli_ctx *ctx, const char *help,
			bool id_required)
{
	int r;

	memset(rs, 0, sizeof(*rs));
	if (ctx->help) {
		puts(help);
		return HELP_SHOWN;
	}
	if (opt_parse(ctx, NULL) < 0)
		return EXIT_USAGE;
	if (ctx->argc > 1 || ctx->rest_argc || (id_required && !ctx->argc))
		return usage_error(ctx, "see --help for the usage");
	if ((r = project_open(&rs->p, ctx)) != 0 ||
	    (r = list_runs(&rs->v, &rs->n, &rs->p)) != 0 ||
	    (r = resolve_runs(&rs->first, &rs->count, rs->v, rs->n,
			      ctx->argc ? ctx->argv[0] : NULL)) != 0)
		return r;
	return 0;
}

static int run_sel_close(run_sel *rs, int r)
{
	free(rs->v);
	project_release(&rs->p);
	return r == HELP_SHOWN ? EXIT_OK : r;
}

/* Call fn for each selected run, in order, until one fails. */
static int each_run(cli_ctx *ctx, const char *help,
		    int (*fn)(run_sel *rs, size_t i))
{
	run_sel rs;
	int r = run_sel_open(&rs, ctx, help, false);

	for (size_t i = rs.first; r == 0 && i < rs.first + rs.count; i++)
		r = fn(&rs, i);
	return run_sel_close(&rs, r);
}

static int show_log(run_sel *rs, size_t i)
{
	char dir[PATH_MAX + 64], path[PATH_MAX + 100], head[PATH_MAX + 200];
	json_t *o = NULL;
	const char *out = run_outcome(&rs->p, rs->v[i].id, &o);

	printf("%s== run %s: %s ==\n", i > rs->first ? "\n" : "", rs->v[i].id,
	       out ? out : "unfinished");
	json_decref(o);
	snprintf(dir, sizeof(dir), "%s/.decree/runs/%s", rs->p.root,
		 rs->v[i].id);
	for (int k = 1; k < 1000; k++) {
		bool any = false;
		for (int nb = 0; nb < 2; nb++) {
			const char *base = nb ? "papermill" : "routine";
			if (k == 1)
				snprintf(path, sizeof(path), "%s/%s.log", dir,
					 base);
			else
				snprintf(path, sizeof(path), "%s/%s-%d.log",
					 dir, base, k);
			snprintf(head, sizeof(head), "-- attempt %d (%s) --\n",
				 k, path + strlen(rs->p.root) + 1);
			if (cat_file(path, head) == 0)
				any = true;
		}
		if (!any)
			break;
	}
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

static int show_diff(run_sel *rs, size_t i)
{
	char path[PATH_MAX + 100];
	json_t *o = NULL;
	const char *out;
	int r;

	snprintf(path, sizeof(path), "%s/.decree/runs/%s/changes.diff",
		 rs->p.root, rs->v[i].id);
	if (cat_file(path, NULL) == 0 || rs->count > 1)
		return 0; /* in a chain, runs without a diff print nothing */
	out = run_outcome(&rs->p, rs->v[i].id, &o);
	r = fail("run %s has no changes.diff (%s); the diffs of failed "
		 "attempts are changes-<k>.diff in its directory",
		 rs->v[i].id, out ? out : "unfinished");
	json_decref(o);
	return r;
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

typedef struct {
	json_t *files; /* manifest "files" object */
	size_t checked;
} manifest_check;

static int check_manifest(void *payload, const char *path, bool exists,
			  unsigned mode, const char *sha256_hex)
{
	manifest_check *mc = payload;
	json_t *e = json_object_get(mc->files, path);
	char want_mode[16];

	mc->checked++;
	if (!e)
		return exists; /* not in the manifest: must be gone */
	if (!exists)
		return 1;
	snprintf(want_mode, sizeof(want_mode), "%o", mode);
	return strcmp(json_string_value(json_object_get(e, "sha256"))
			      ? json_string_value(json_object_get(e, "sha256"))
			      : "",
		      sha256_hex) ||
	       strcmp(json_string_value(json_object_get(e, "mode"))
			      ? json_string_value(json_object_get(e, "mode"))
			      : "",
		      want_mode);
}

int cmd_revert(cli_ctx *ctx)
{
	run_sel rs;
	decree_store *s = NULL;
	char dir[PATH_MAX + 64], path[PATH_MAX + 100];
	buf text = BUF_INIT;
	json_t *man = NULL;
	int r;

	r = run_sel_open(
		&rs, ctx,
		"usage: decree revert ID\n\nApply the run's changes.diff "
		"in reverse as one transaction and verify\nevery affected "
		"file against the run's manifest.json; a mismatch is an\n"
		"error naming the paths, and nothing is written.  'decree "
		"undo' reverts\nthe revert.",
		true);
	if (r == 0 && rs.count != 1)
		r = fail(
			"'%s' is a chain of %zu runs; revert one run at a time "
			"(the last first)",
			ctx->argv[0], rs.count);
	if (r)
		goto done;
	snprintf(dir, sizeof(dir), "%s/.decree/runs/%s", rs.p.root,
		 rs.v[rs.first].id);
	snprintf(path, sizeof(path), "%s/changes.diff", dir);
	if (cli_read_file(&text, path) < 0) {
		r = errno == ENOENT
			    ? fail("run %s has no changes.diff: nothing to revert",
				   rs.v[rs.first].id)
			    : fail("cannot read '%s': %s", path,
				   strerror(errno));
		goto done;
	}
	if (!text.len) {
		if (!ctx->quiet)
			printf("run %s changed nothing; nothing to revert\n",
			       rs.v[rs.first].id);
		goto done;
	}
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	if (!(man = load_json(path)) ||
	    !json_is_object(json_object_get(man, "files"))) {
		r = fail("cannot read %s/manifest.json", rs.v[rs.first].id);
		goto done;
	}
	if ((r = open_store(&s, ctx)) != 0)
		goto done;
	{
		decree_apply_options o = DECREE_APPLY_OPTIONS_INIT;
		decree_apply_result res;
		manifest_check mc = { json_object_get(man, "files"), 0 };
		char name[PATH_MAX];
		snprintf(name, sizeof(name), ".decree/runs/%s/changes.diff",
			 rs.v[rs.first].id);
		o.reverse = true;
		o.verify = check_manifest;
		o.payload = &mc;
		o.session = "decree";
		if (decree_apply(&res, s, name, text.ptr, text.len, &o) < 0) {
			r = lib_fail(-1);
			goto done;
		}
		if (ctx->json)
			printf("{\"id\":\"%s\",\"restored\":%zu,\"created\":%zu,"
			       "\"deleted\":%zu,\"unchanged\":%zu}\n",
			       rs.v[rs.first].id, res.modified, res.created,
			       res.deleted, res.skipped);
		else if (!ctx->quiet)
			printf("reverted run %s: %zu restored, %zu re-created, %zu "
			       "removed; %zu file(s) verified against manifest.json; "
			       "'decree undo' brings the changes back\n",
			       rs.v[rs.first].id, res.modified, res.created,
			       res.deleted, mc.checked);
	}
done:
	json_decref(man);
	buf_release(&text);
	decree_store_free(s);
	return run_sel_close(&rs, r);
}
