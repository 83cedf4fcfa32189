/*
 * test_pipeline.c - the pipeline driven from C through the public API
 * alone (decree/project.h, decree/pipeline.h): no program, no CLI.
 *
 * Each test makes a project in a scratch directory with
 * decree_project_init, writes small bash routines and specs, and checks
 * what the library reports (results, events, run list) against what is on
 * disk.  Cancellation is tested the way a host does it: another thread
 * sets the flag while a routine runs.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "decree/decree.h"
#include "testutil.h"

typedef struct {
	char dir[PATH_MAX];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	if (!f || testutil_mkdtemp(f->dir, sizeof(f->dir), "pipeline") < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	testutil_rm_rf(f->dir);
	free(f);
	return 0;
}

static void write_file(const char *dir, const char *rel, const char *text,
		       mode_t mode)
{
	char path[PATH_MAX + 64];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static bool exists(const char *dir, const char *rel)
{
	char path[PATH_MAX + 64];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return lstat(path, &st) == 0;
}

/* The text of a file ("" if none), in a static buffer. */
static const char *slurp(const char *dir, const char *rel)
{
	static char text[8192];
	char path[PATH_MAX + 64];
	FILE *fp;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	text[0] = '\0';
	if ((fp = fopen(path, "r"))) {
		n = fread(text, 1, sizeof(text) - 1, fp);
		fclose(fp);
	}
	text[n] = '\0';
	return text;
}

/* --- events -----------------------------------------------------------------
 */

typedef struct {
	int count[16]; /* per decree_pipeline_event_kind */
	char queued[256], finished_id[64], dead_reason[512];
	decree_run_outcome outcome;
	int attempts;
	size_t files;
	char clean_slate_path[256];
} events;

static void on_event(void *payload, const decree_pipeline_event *ev)
{
	events *e = payload;

	assert_true(ev->kind >= 1 && ev->kind < 16);
	e->count[ev->kind]++;
	switch (ev->kind) {
	case DECREE_EVENT_QUEUED:
		snprintf(e->queued, sizeof(e->queued), "%s", ev->file);
		break;
	case DECREE_EVENT_STARTED:
		assert_non_null(ev->id);
		assert_non_null(ev->routine);
		break;
	case DECREE_EVENT_SUCCEEDED:
		e->files = ev->files;
		break;
	case DECREE_EVENT_CLEAN_SLATE:
		snprintf(e->clean_slate_path, sizeof(e->clean_slate_path), "%s",
			 ev->path);
		break;
	case DECREE_EVENT_DEAD_LETTERED:
		snprintf(e->dead_reason, sizeof(e->dead_reason), "%s",
			 ev->reason);
		break;
	case DECREE_EVENT_FINISHED:
		snprintf(e->finished_id, sizeof(e->finished_id), "%s", ev->id);
		e->outcome = ev->outcome;
		e->attempts = ev->attempt;
		break;
	default:
		break;
	}
}

/* A project with routines ok.sh (writes out.txt from $who) and bad.sh
 * (writes junk.txt, fails). */
static decree_project *make_project(const fixture *f)
{
	decree_project_options o = DECREE_PROJECT_OPTIONS_INIT;
	decree_project *p = NULL;
	size_t made = 0;

	assert_int_equal(decree_project_init(&made, f->dir, NULL, NULL), 0);
	assert_true(made > 5);
	write_file(f->dir, ".decree/routines/ok.sh",
		   "#!/usr/bin/env bash\n# Say hello.\nwho=\"${who:-world}\"\n"
		   "echo \"hello $who\" > out.txt\n",
		   0755);
	write_file(f->dir, ".decree/routines/bad.sh",
		   "#!/usr/bin/env bash\necho junk > junk.txt\n"
		   "echo failing >&2\nexit 3\n",
		   0755);
	write_file(f->dir, "keep.txt", "kept\n", 0644);
	o.root = f->dir;
	assert_int_equal(decree_project_open(&p, &o), 0);
	return p;
}

static void test_init_twice(void **state)
{
	fixture *f = *state;
	size_t made = 99;

	assert_int_equal(decree_project_init(&made, f->dir, NULL, NULL), 0);
	assert_int_equal(made, 11); /* 7 directories, 4 files */
	assert_true(exists(f->dir, ".decree/config.yml"));
	assert_true(exists(f->dir, ".decree/routines/develop.sh"));
	assert_true(exists(f->dir, "specs/processed-spec.md"));
	write_file(f->dir, ".decree/config.yml", "max_retries: 5\n", 0644);
	assert_int_equal(decree_project_init(&made, f->dir, NULL, NULL), 0);
	assert_int_equal(made, 0);
	assert_string_equal(slurp(f->dir, ".decree/config.yml"),
			    "max_retries: 5\n");
}

static void test_not_a_project(void **state)
{
	fixture *f = *state;
	decree_project_options o = DECREE_PROJECT_OPTIONS_INIT;
	decree_project *p = (decree_project *)&o;

	o.root = f->dir;
	assert_int_equal(decree_project_open(&p, &o), DECREE_ENOTFOUND);
	assert_null(p);
	assert_non_null(strstr(decree_error_last(), "not a decree project"));
}

static void test_config(void **state)
{
	fixture *f = *state;
	decree_config *c = NULL;
	char path[PATH_MAX + 16];

	assert_int_equal(decree_config_load(&c, f->dir), 0); /* no file */
	assert_int_equal(c->max_retries, 3);
	assert_string_equal(c->default_routine, "develop");
	assert_null(c->excludes[0]);
	decree_config_free(c);
	snprintf(path, sizeof(path), "%s/.decree", f->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	write_file(f->dir, ".decree/config.yml",
		   "checkpoint:\n  exclude: [build/, '*.o']\n  max_file_size: "
		   "2M\nmax_depth: 4\ncommands:\n  router: echo x\n",
		   0644);
	assert_int_equal(decree_config_load(&c, f->dir), 0);
	assert_string_equal(c->excludes[0], "build/");
	assert_string_equal(c->excludes[1], "*.o");
	assert_null(c->excludes[2]);
	assert_int_equal(c->max_file_size, 2 << 20);
	assert_int_equal(c->max_depth, 4);
	assert_string_equal(c->router, "echo x");
	assert_null(c->ai);
	decree_config_free(c);
	write_file(f->dir, ".decree/config.yml", "max_retries: lots\n", 0644);
	c = (decree_config *)f;
	assert_int_equal(decree_config_load(&c, f->dir), DECREE_EINVALID);
	assert_null(c);
	assert_non_null(strstr(decree_error_last(), "config.yml:1:"));
	assert_non_null(strstr(decree_error_last(), "max_retries"));
}

static void test_request_check(void **state)
{
	decree_field bad_key[] = { { "1a", "x" } };
	decree_field reserved[] = { { "routine", "ok" }, { "seq", "3" } };
	decree_field not_utf8[] = { { "who", "\xff\xfe" } };
	decree_field good[] = { { "routine", "ok" },
				{ "target-branch", "a b" } };
	decree_run_request rq = DECREE_RUN_REQUEST_INIT;

	(void)state;
	rq.fields = bad_key;
	rq.nfields = 1;
	assert_int_equal(decree_run_request_check(&rq), DECREE_EINVALID);
	rq.fields = reserved;
	rq.nfields = 2;
	assert_int_equal(decree_run_request_check(&rq), DECREE_EINVALID);
	assert_non_null(strstr(decree_error_last(), "'seq'"));
	rq.fields = not_utf8;
	rq.nfields = 1;
	assert_int_equal(decree_run_request_check(&rq), DECREE_EINVALID);
	rq.fields = good;
	rq.nfields = 2;
	assert_int_equal(decree_run_request_check(&rq), 0);
}

/* process: a spec runs with the routine its frontmatter names, is
 * marked processed, and a second process does nothing. */
static void test_process_spec(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	decree_pipeline_result res;
	decree_run_list *l;
	const decree_run_info *ri;
	events ev;

	write_file(f->dir, "specs/01-hello.spec.md",
		   "---\nroutine: ok\nwho: spec\n---\nSay hello.\n", 0644);
	memset(&ev, 0, sizeof(ev));
	po.events = on_event;
	po.payload = &ev;
	assert_int_equal(decree_pipeline_process(&res, p, &po), 0);
	assert_int_equal(res.done, 1);
	assert_int_equal(res.dead, 0);
	assert_int_equal(ev.count[DECREE_EVENT_QUEUED], 1);
	assert_string_equal(ev.queued, "01-hello.md");
	assert_int_equal(ev.count[DECREE_EVENT_STARTED], 1);
	assert_int_equal(ev.count[DECREE_EVENT_SUCCEEDED], 1);
	assert_int_equal(ev.files, 1);
	assert_int_equal(ev.outcome, DECREE_RUN_DONE);
	assert_int_equal(ev.attempts, 1);
	/* the routine's declared parameter is not set by the spec's own
	 * frontmatter (only the message's): its default applies */
	assert_string_equal(slurp(f->dir, "out.txt"), "hello world\n");
	assert_string_equal(slurp(f->dir, "specs/processed-spec.md"),
			    "01-hello.spec.md\n");
	assert_true(exists(f->dir, ".decree/inbox/done/01-hello.md"));

	assert_int_equal(decree_run_list_get(&l, p), 0);
	assert_int_equal(decree_run_list_count(l), 1);
	ri = decree_run_list_at(l, 0);
	assert_string_equal(ri->id, ev.finished_id);
	assert_int_equal(ri->outcome, DECREE_RUN_DONE);
	assert_string_equal(ri->routine, "ok");
	assert_string_equal(ri->message, "01-hello.md");
	assert_int_equal(ri->attempts, 1);
	assert_true(ri->finished >= ri->started && ri->started > 0);
	assert_non_null(strstr(ri->dir, "/.decree/runs/"));
	decree_run_list_free(l);

	memset(&ev, 0, sizeof(ev));
	assert_int_equal(decree_pipeline_process(&res, p, &po), 0);
	assert_int_equal(res.done + res.dead, 0);
	assert_int_equal(ev.count[DECREE_EVENT_STARTED], 0);
	decree_project_free(p);
}

/* run: a request with fields; then the run is reverted, verified against
 * its manifest, and the revert is undone. */
static void test_run_and_revert(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_field fields[] = { { "routine", "ok" }, { "who", "Ada" } };
	decree_run_request rq = DECREE_RUN_REQUEST_INIT;
	decree_pipeline_result res;
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	decree_revert_result rv;
	decree_restore_result ur;
	decree_store *s;
	events ev;

	memset(&ev, 0, sizeof(ev));
	po.events = on_event;
	po.payload = &ev;
	rq.name = "Greet Ada!";
	rq.body = "greet Ada";
	rq.fields = fields;
	rq.nfields = 2;
	assert_int_equal(decree_pipeline_run(&res, p, &rq, &po), 0);
	assert_int_equal(res.done, 1);
	assert_string_equal(ev.queued, "greet-ada.md");
	assert_string_equal(slurp(f->dir, "out.txt"), "hello Ada\n");
	assert_non_null(strstr(slurp(f->dir, ".decree/inbox/done/greet-ada.md"),
			       "\nwho: Ada\n---\ngreet Ada\n"));

	assert_int_equal(decree_run_revert(&rv, p, ev.finished_id), 0);
	assert_string_equal(rv.id, ev.finished_id);
	assert_false(rv.empty);
	assert_int_equal(rv.apply.deleted, 1);
	assert_true(rv.verified >= 1);
	assert_false(exists(f->dir, "out.txt"));
	assert_string_equal(slurp(f->dir, "keep.txt"), "kept\n");
	/* the revert is an ordinary undoable transaction */
	assert_int_equal(decree_project_store(&s, p), 0);
	assert_int_equal(decree_undo(&ur, s, NULL), 0);
	assert_string_equal(slurp(f->dir, "out.txt"), "hello Ada\n");

	assert_int_equal(decree_run_revert(&rv, p, "0000"), DECREE_ENOTFOUND);
	decree_project_free(p);
}

/* A routine that always fails: retries, a clean slate, dead-letter, and
 * the tree exactly as before. */
static void test_dead_letter(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_field fields[] = { { "routine", "bad" } };
	decree_run_request rq = DECREE_RUN_REQUEST_INIT;
	decree_pipeline_result res;
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	decree_run_list *l;
	size_t first, count;
	events ev;

	memset(&ev, 0, sizeof(ev));
	po.events = on_event;
	po.payload = &ev;
	rq.name = "doomed";
	rq.fields = fields;
	rq.nfields = 1;
	assert_int_equal(decree_pipeline_run(&res, p, &rq, &po), 0);
	assert_int_equal(res.done, 0);
	assert_int_equal(res.dead, 1);
	assert_int_equal(ev.count[DECREE_EVENT_ATTEMPT_FAILED], 4);
	assert_int_equal(ev.count[DECREE_EVENT_CLEAN_SLATE], 1);
	assert_int_equal(ev.count[DECREE_EVENT_DEAD_LETTERED], 1);
	assert_int_equal(ev.outcome, DECREE_RUN_DEAD);
	assert_int_equal(ev.attempts, 4);
	assert_non_null(strstr(ev.dead_reason, "routine 'bad' failed 4"));
	assert_false(exists(f->dir, "junk.txt"));
	assert_string_equal(slurp(f->dir, "keep.txt"), "kept\n");
	assert_true(exists(f->dir, ".decree/inbox/dead/doomed.md"));
	assert_non_null(strstr(slurp(f->dir, ev.clean_slate_path),
			       "## Attempt 3: exit status 3"));

	assert_int_equal(decree_run_list_get(&l, p), 0);
	assert_int_equal(decree_run_list_select(&first, &count, l, NULL), 0);
	assert_int_equal(count, 1);
	assert_int_equal(decree_run_list_at(l, first)->outcome,
			 DECREE_RUN_DEAD);
	assert_non_null(decree_run_list_at(l, first)->reason);
	/* a chain id selects its runs */
	assert_int_equal(
		decree_run_list_select(&first, &count, l,
				       decree_run_list_at(l, 0)->chain),
		0);
	assert_int_equal(count, 1);
	decree_run_list_free(l);
	decree_project_free(p);
}

/* --- cancellation
 * ------------------------------------------------------------- */

typedef struct {
	const char *dir;
	volatile int *flag;
} canceller;

/* Set the flag once the routine has started (its marker file exists). */
static void *cancel_later(void *arg)
{
	canceller *c = arg;
	for (int i = 0; i < 3000 && !exists(c->dir, "started"); i++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	*c->flag = 1;
	return NULL;
}

static void test_cancel(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_field fields[] = { { "routine", "slow" } };
	decree_run_request rq = DECREE_RUN_REQUEST_INIT;
	decree_pipeline_result res;
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	volatile int flag = 0;
	canceller c = { f->dir, &flag };
	struct timespec t0, t1;
	pthread_t th;
	events ev;

	write_file(f->dir, ".decree/routines/slow.sh",
		   "#!/usr/bin/env bash\necho partial > partial.txt\n"
		   "touch started\nsleep 30\n",
		   0755);
	memset(&ev, 0, sizeof(ev));
	po.events = on_event;
	po.payload = &ev;
	po.cancel = &flag;
	rq.name = "slow";
	rq.fields = fields;
	rq.nfields = 1;
	assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(decree_pipeline_run(&res, p, &rq, &po),
			 DECREE_ECANCELLED);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(th, NULL);
	assert_true(t1.tv_sec - t0.tv_sec < 10); /* not the 30 s sleep */
	assert_int_equal(ev.count[DECREE_EVENT_INTERRUPTED], 1);
	assert_int_equal(ev.outcome, DECREE_RUN_INTERRUPTED);
	/* the partial work is in the run's diff; the tree is as before */
	assert_false(exists(f->dir, "partial.txt"));
	assert_false(exists(f->dir, "started"));
	assert_string_equal(slurp(f->dir, "keep.txt"), "kept\n");
	assert_true(exists(f->dir, ".decree/inbox/slow.md"));
	assert_int_equal(res.done + res.dead, 0);
	decree_project_free(p);
}

/* A flag set before the call: nothing runs. */
static void test_cancel_before(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_pipeline_result res;
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	volatile int flag = 1;

	write_file(f->dir, "specs/a.spec.md", "---\nroutine: ok\n---\n", 0644);
	po.cancel = &flag;
	assert_int_equal(decree_pipeline_process(&res, p, &po),
			 DECREE_ECANCELLED);
	assert_false(exists(f->dir, "out.txt"));
	decree_project_free(p);
}

static void test_routines(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_routine_list *l;
	const decree_routine_info *ri;

	assert_int_equal(decree_routine_list_get(&l, p), 0);
	assert_int_equal(decree_routine_list_count(l), 3);
	assert_string_equal(decree_routine_list_at(l, 0)->name, "bad");
	assert_string_equal(decree_routine_list_at(l, 1)->name, "develop");
	ri = decree_routine_list_find(l, "ok");
	assert_non_null(ri);
	assert_false(ri->notebook);
	assert_string_equal(ri->summary, "Say hello.");
	assert_int_equal(ri->nparams, 1);
	assert_string_equal(ri->params[0].name, "who");
	assert_string_equal(ri->params[0].def, "world");
	assert_null(decree_routine_list_find(l, "nope"));
	decree_routine_list_free(l);
	decree_project_free(p);
}

/* --- checks before a run (docs/pipeline.md "Checks before a run") ------ */

/* How many entries a directory holds ("." and ".." aside). */
static int entries(const char *dir, const char *rel)
{
	char path[PATH_MAX + 64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_non_null(d = opendir(path));
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void test_checks(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_field typo[] = { { "routine", "okk" } };
	decree_field ai[] = { { "routine", "develop" } };
	decree_field fine[] = { { "routine", "ok" } };
	decree_run_request rq = DECREE_RUN_REQUEST_INIT;
	decree_pipeline_result res = { 7, 7 };
	decree_routine_list *l;

	write_file(f->dir, ".decree/routines/mention.sh",
		   "#!/usr/bin/env bash\n# not DECREE_AI_COMMAND: a comment\n"
		   "  # DECREE_AI_COMMAND again\nexit 0\n",
		   0755);
	assert_int_equal(decree_routine_list_get(&l, p), 0);
	assert_true(decree_routine_list_find(l, "develop")->needs_ai);
	assert_false(decree_routine_list_find(l, "ok")->needs_ai);
	assert_false(decree_routine_list_find(l, "mention")->needs_ai);
	decree_routine_list_free(l);

	rq.body = "x";
	rq.fields = typo;
	rq.nfields = 1;
	assert_int_equal(decree_pipeline_check(p, &rq), DECREE_ENOTFOUND);
	assert_string_equal(decree_error_last(),
			    "unknown routine 'okk'; did you mean 'ok'?");
	rq.fields = ai;
	assert_int_equal(decree_pipeline_check(p, &rq), DECREE_EINVALID);
	assert_non_null(strstr(decree_error_last(), "commands.ai is not set"));
	/* run refuses it the same way, and writes nothing */
	assert_int_equal(decree_pipeline_run(&res, p, &rq, NULL),
			 DECREE_EINVALID);
	assert_int_equal(res.done + res.dead, 0);
	assert_false(exists(f->dir, ".decree/pipeline.lock"));
	assert_int_equal(entries(f->dir, ".decree/runs"), 0);
	assert_int_equal(entries(f->dir, ".decree/inbox"), 2); /* done, dead */
	rq.fields = fine;
	assert_int_equal(decree_pipeline_check(p, &rq), 0);

	/* what waits: every message named */
	write_file(f->dir, ".decree/inbox/w1.md", "---\nroutine: okk\n---\nx\n",
		   0644);
	write_file(f->dir, ".decree/inbox/w2.md", "---\nroutine: ok\n---\nx\n",
		   0644);
	assert_int_equal(decree_pipeline_check(p, NULL), DECREE_ENOTFOUND);
	assert_non_null(strstr(decree_error_last(),
			       "unknown routine 'okk' for .decree/inbox/w1.md "
			       "(did you mean 'ok'?)"));
	assert_int_equal(decree_pipeline_process(&res, p, NULL),
			 DECREE_ENOTFOUND);
	assert_true(exists(f->dir, ".decree/inbox/w1.md"));
	assert_true(exists(f->dir, ".decree/inbox/w2.md"));
	assert_false(exists(f->dir, "out.txt")); /* w2 did not run either */
	/* a request that could run is refused while they wait */
	assert_int_equal(decree_pipeline_run(&res, p, &rq, NULL),
			 DECREE_ENOTFOUND);
	assert_false(exists(f->dir, "out.txt"));
	decree_project_free(p);
}

/* --- the output of a running routine ------------------------------------ */

typedef struct {
	char data[4096];
	size_t len;
	int calls, attempt;
	char id[64];
} output;

static void on_output(void *payload, const char *id, int attempt,
		      const char *data, size_t len)
{
	output *o = payload;

	assert_true(o->len + len <= sizeof(o->data));
	memcpy(o->data + o->len, data, len);
	o->len += len;
	o->calls++;
	o->attempt = attempt;
	snprintf(o->id, sizeof(o->id), "%s", id);
}

static void never_called(void *payload, const char *id, int attempt,
			 const char *data, size_t len)
{
	(void)payload, (void)id, (void)attempt, (void)data, (void)len;
	fail_msg("a version-1 options struct has no output member");
}

static void test_output(void **state)
{
	fixture *f = *state;
	decree_project *p = make_project(f);
	decree_field fields[] = { { "routine", "talk" } };
	decree_run_request rq = DECREE_RUN_REQUEST_INIT;
	decree_pipeline_options po = DECREE_PIPELINE_OPTIONS_INIT;
	decree_pipeline_result res;
	decree_run_list *l;
	char log[PATH_MAX];
	const char *want = "one\ntwo on stderr\n\001\002 three";
	output o;

	memset(&o, 0, sizeof(o));
	write_file(f->dir, ".decree/routines/talk.sh",
		   "#!/usr/bin/env bash\necho one\necho 'two on stderr' >&2\n"
		   "printf '\\001\\002 three'\n",
		   0755);
	po.output = on_output;
	po.payload = &o;
	rq.name = "talk";
	rq.body = "talk";
	rq.fields = fields;
	rq.nfields = 1;
	assert_int_equal(decree_pipeline_run(&res, p, &rq, &po), 0);
	assert_int_equal(res.done, 1);
	assert_true(o.calls >= 1);
	assert_int_equal(o.attempt, 1);
	assert_int_equal(o.len, strlen(want));
	assert_memory_equal(o.data, want, o.len);
	/* the chunks are the log, byte for byte */
	assert_int_equal(decree_run_list_get(&l, p), 0);
	assert_string_equal(o.id, decree_run_list_at(l, 0)->id);
	snprintf(log, sizeof(log), ".decree/runs/%s/routine.log", o.id);
	assert_string_equal(slurp(f->dir, log), want);
	decree_run_list_free(l);

	/* a version-1 struct ends before `output`: it is never read */
	po.version = 1;
	po.output = never_called;
	rq.name = "talk again";
	assert_int_equal(decree_pipeline_run(&res, p, &rq, &po), 0);
	assert_int_equal(res.done, 1);
	po.version = 99;
	assert_int_equal(decree_pipeline_run(&res, p, &rq, &po),
			 DECREE_EINVALID);
	decree_project_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_twice, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_not_a_project, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test(test_request_check),
		cmocka_unit_test_setup_teardown(test_routines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_process_spec, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_run_and_revert, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dead_letter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_before, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
