/*
 * check.c - before the pipeline queues or runs anything (check.h,
 * decree_pipeline_check in decree/pipeline.h, docs/pipeline.md "Checks
 * before a run").
 *
 * The routine a message will run is found as the runner finds it
 * (runner.c pick_routine): its own `routine:`, else the `routine:` of its
 * input file's frontmatter, else the router's pick, else default_routine.
 * The router is not asked here (it may be an AI call): when it would be,
 * the routine is not known yet and only its fallback, default_routine,
 * must exist; whether the picked routine calls the AI command is checked
 * when the message is processed (runner.c job_blocked).
 *
 * A routine needs the AI command when it names DECREE_AI_COMMAND outside
 * a comment (decree_routine_info.needs_ai): that variable is how a
 * routine gets commands.ai (routine.c attempt_env).  A notebook needs
 * papermill.
 */
#include "util/common.h"
#include "pipeline/check.h"
#include "pipeline/inbox.h"
#include "pipeline/message.h"
#include "pipeline/project.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/suggest.h"

#define LIST_MAX  12 /* routines named in "the routines are: ..." */
#define FILES_MAX 4  /* messages named per problem */

int spec_routine(char **out, const char *root, const char *input_file)
{
	char path[PATH_MAX];
	message sm;

	*out = NULL;
	if (!input_file || !*input_file)
		return 0;
	if (input_file[0] == '/')
		snprintf(path, sizeof(path), "%s", input_file);
	else
		snprintf(path, sizeof(path), "%s/%s", root, input_file);
	if (message_load(&sm, path) == 0) {
		const char *sr = message_get(&sm, "routine");
		if (sr && *sr && !(*out = decree_strdup(sr))) {
			message_release(&sm);
			return -1;
		}
		message_release(&sm);
	}
	decree_error_clear();
	return 0;
}

bool check_runnable(buf *why, const decree_project *p,
		    const decree_routine_info *ri)
{
	const char *ai = p->cfg->ai;
	char prog[256];

	if (ri->notebook && !routine_program_found("papermill", p->root)) {
		buf_printf(why,
			   "routine '%s' is a notebook, and papermill is not "
			   "installed (pip install papermill ipykernel)",
			   ri->name);
		return true;
	}
	if (!ri->needs_ai)
		return false;
	if (!ai || !*ai) {
		buf_printf(why,
			   "routine '%s' calls the AI command "
			   "($DECREE_AI_COMMAND), but commands.ai is not set: "
			   "set it in .decree/config.yml, for example "
			   "'ai: claude -p {prompt}' under 'commands:'",
			   ri->name);
		return true;
	}
	if (routine_command_found(prog, sizeof(prog), ai, p->root))
		return false;
	if (prog[0])
		buf_printf(why,
			   "routine '%s' calls the AI command, but '%s' "
			   "(commands.ai in .decree/config.yml) is %s",
			   ri->name, prog,
			   strchr(prog, '/') ? "not an executable file"
					     : "not found on PATH");
	else
		buf_printf(why,
			   "routine '%s' calls the AI command, but "
			   "commands.ai in .decree/config.yml names no "
			   "program",
			   ri->name);
	return true;
}

int check_input(char *fixed, size_t len, const decree_project *p,
		const char *input)
{
	char abs[PATH_MAX];
	size_t n = strlen(p->root);
	struct stat st;

	fixed[0] = '\0';
	if (!input)
		return 0;
	if (input[0] == '/') {
		if (!realpath(input, abs))
			return decree_error_set(
				DECREE_EINVALID,
				"input file '%s' does not exist", input);
		if (strncmp(abs, p->root, n) || abs[n] != '/')
			return decree_error_set(
				DECREE_EINVALID,
				"input file '%s' is outside the project %s",
				input, p->root);
		snprintf(fixed, len, "%s", abs + n + 1);
		return 0;
	}
	project_path(abs, p, input);
	if (lstat(abs, &st) < 0)
		return decree_error_set(DECREE_EINVALID,
					"input file '%s' does not exist",
					input);
	return 0;
}

/* --- what runs a message -------------------------------------------------- */

typedef enum {
	FROM_MESSAGE, /* its own routine: (or -v routine=) */
	FROM_SPEC,    /* its input file's frontmatter */
	FROM_DEFAULT, /* default_routine, the router being off */
	FROM_ROUTER,  /* the router picks; default_routine is its fallback */
} routine_from;

/* The routine of a message with these routine: and input_file: values;
 * *name owned. */
static int routine_of(char **name, routine_from *from, const decree_project *p,
		      const decree_routine_list *l, const char *routine,
		      const char *input)
{
	const decree_config *cfg = p->cfg;

	if (routine && *routine) {
		*from = FROM_MESSAGE;
		return (*name = decree_strdup(routine)) ? 0 : -1;
	}
	if (spec_routine(name, p->root, input) < 0)
		return -1;
	if (*name) {
		*from = FROM_SPEC;
		return 0;
	}
	*from = cfg->router && l->n ? FROM_ROUTER : FROM_DEFAULT;
	return (*name = decree_strdup(cfg->default_routine)) ? 0 : -1;
}

/* ".decree/routines/NAME.ipynb" exists while notebooks are off? */
static bool notebook_off(const decree_project *p, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (p->cfg->notebook_support || strchr(name, '/'))
		return false;
	snprintf(path, sizeof(path), "%s/.decree/routines/%s.ipynb", p->root,
		 name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* What to tell about an unknown routine: the closest name, or the list. */
static void unknown_hint(buf *b, const decree_project *p,
			 const decree_routine_list *l, const char *name)
{
	const char **names = decree_calloc(l->n ? l->n : 1, sizeof(char *));
	const char *best;

	if (notebook_off(p, name)) {
		buf_printf(b,
			   ".decree/routines/%s.ipynb is a notebook, and "
			   "notebook_support is off in .decree/config.yml",
			   name);
	} else if (!l->n) {
		buf_puts(b, "there is no routine in .decree/routines/");
	} else if (names) {
		for (size_t i = 0; i < l->n; i++)
			names[i] = l->v[i].name;
		if ((best = suggest_closest(name, names, l->n))) {
			buf_printf(b, "did you mean '%s'?", best);
		} else {
			buf_puts(b, "the routines are: ");
			for (size_t i = 0; i < l->n && i < LIST_MAX; i++)
				buf_printf(b, "%s%s", i ? ", " : "", names[i]);
			if (l->n > LIST_MAX)
				buf_printf(b, " and %zu more", l->n - LIST_MAX);
		}
	}
	decree_free(names);
}

static const char *from_note(routine_from from)
{
	return from == FROM_DEFAULT || from == FROM_ROUTER
		       ? " (default_routine in .decree/config.yml)"
		       : "";
}

/* --- a request ----------------------------------------------------------- */

int check_request(const decree_project *p, const decree_routine_list *l,
		  const decree_run_request *rq)
{
	const decree_routine_info *ri;
	const char *input = inbox_request_field(rq, "input_file");
	routine_from from;
	buf why = BUF_INIT;
	char fixed[PATH_MAX];
	char *name;
	int ret = 0;

	/* a missing input file is the first thing to say */
	if ((ret = check_input(fixed, sizeof(fixed), p, input)) < 0)
		return ret;
	if (routine_of(&name, &from, p, l, inbox_request_field(rq, "routine"),
		       input) < 0)
		return -1;
	if (!(ri = decree_routine_list_find(l, name))) {
		buf_printf(&why, "unknown routine '%s'%s", name,
			   from == FROM_SPEC ? "" : from_note(from));
		if (from == FROM_SPEC)
			buf_printf(&why, " (the routine: of %s)", input);
		buf_puts(&why, notebook_off(p, name) ? ": " : "; ");
		unknown_hint(&why, p, l, name);
		ret = decree_error_set(DECREE_ENOTFOUND, "%s", why.ptr);
	} else if (from != FROM_ROUTER && check_runnable(&why, p, ri)) {
		ret = decree_error_set(DECREE_EINVALID, "%s", why.ptr);
	}
	buf_release(&why);
	decree_free(name);
	return ret;
}

/* --- what waits ---------------------------------------------------------- */

/* One routine that cannot run, and the messages that would run it. */
typedef struct {
	char *name;
	routine_from from;
	bool unknown; /* else: lacks papermill or the AI command */
	char *files[FILES_MAX];
	size_t nfiles;
} problem;

typedef struct {
	problem *v;
	size_t n, cap;
} problems;

static void problems_release(problems *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		decree_free(ps->v[i].name);
		for (size_t k = 0; k < ps->v[i].nfiles && k < FILES_MAX; k++)
			decree_free(ps->v[i].files[k]);
	}
	decree_free(ps->v);
}

/* Note that `file` (a message or spec, relative to the root) would run
 * routine `name`, which cannot run. */
static int problem_add(problems *ps, const char *name, routine_from from,
		       bool unknown, const char *file)
{
	problem *pr = NULL;

	/* one entry per routine; an unknown default_routine apart from the
	 * same name given by messages (its note differs) */
	for (size_t i = 0; i < ps->n && !pr; i++)
		if (!strcmp(ps->v[i].name, name) &&
		    ps->v[i].unknown == unknown &&
		    (!unknown || *from_note(ps->v[i].from) == *from_note(from)))
			pr = &ps->v[i];
	if (!pr) {
		if (GROW(ps->v, ps->cap, ps->n + 1) < 0)
			return -1;
		pr = &ps->v[ps->n++];
		memset(pr, 0, sizeof(*pr));
		pr->from = from;
		pr->unknown = unknown;
		if (!(pr->name = decree_strdup(name)))
			return -1;
	}
	if (pr->nfiles < FILES_MAX &&
	    !(pr->files[pr->nfiles] = decree_strdup(file)))
		return -1;
	pr->nfiles++;
	return 0;
}

/* Check the routine of one message or spec. */
static int check_one(problems *ps, const decree_project *p,
		     const decree_routine_list *l, const char *file,
		     const char *routine, const char *input)
{
	const decree_routine_info *ri;
	routine_from from;
	buf why = BUF_INIT;
	char *name;
	int ret = 0;

	if (routine_of(&name, &from, p, l, routine, input) < 0)
		return -1;
	if (!(ri = decree_routine_list_find(l, name)))
		ret = problem_add(ps, name, from, true, file);
	else if (from != FROM_ROUTER && check_runnable(&why, p, ri))
		ret = problem_add(ps, name, from, false, file);
	buf_release(&why);
	decree_free(name);
	return ret;
}

static void files_list(buf *b, const problem *pr)
{
	for (size_t k = 0; k < pr->nfiles && k < FILES_MAX; k++)
		buf_printf(b, "%s%s",
			   !k			 ? ""
			   : k + 1 == pr->nfiles ? " and "
						 : ", ",
			   pr->files[k]);
	if (pr->nfiles > FILES_MAX)
		buf_printf(b, " and %zu more", pr->nfiles - FILES_MAX);
}

/* The one-line message: the unknown routines first (DECREE_ENOTFOUND),
 * else the routines that lack papermill or the AI command
 * (DECREE_EINVALID). */
static int problems_report(const problems *ps, const decree_project *p,
			   const decree_routine_list *l)
{
	bool unknown = false;
	buf b = BUF_INIT;
	size_t shown = 0;
	int ret;

	for (size_t i = 0; i < ps->n; i++)
		unknown |= ps->v[i].unknown;
	buf_puts(&b, "cannot process the queue (nothing was run): ");
	for (size_t i = 0; i < ps->n; i++) {
		const problem *pr = &ps->v[i];
		if (pr->unknown != unknown)
			continue;
		if (shown++)
			buf_puts(&b, "; ");
		if (unknown) {
			buf_printf(&b, "unknown routine '%s'%s for ", pr->name,
				   from_note(pr->from));
			files_list(&b, pr);
			buf_puts(&b, " (");
			unknown_hint(&b, p, l, pr->name);
			buf_putc(&b, ')');
		} else {
			const decree_routine_info *ri =
				decree_routine_list_find(l, pr->name);
			buf_puts(&b, "for ");
			files_list(&b, pr);
			buf_puts(&b, ", ");
			check_runnable(&b, p, ri);
		}
	}
	if (unknown)
		buf_puts(&b, "; correct their routine: lines, or move those "
			     "messages to .decree/inbox/dead/");
	ret = decree_error_set(unknown ? DECREE_ENOTFOUND : DECREE_EINVALID,
			       "%s", b.ptr ? b.ptr : "out of memory");
	buf_release(&b);
	return ret;
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const inbox_item *)a)->file,
		      ((const inbox_item *)b)->file);
}

static int check_inbox(problems *ps, const decree_project *p,
		       const decree_routine_list *l)
{
	char dir[PATH_MAX];
	inbox_item *v;
	size_t n;
	int ret;

	project_path(dir, p, ".decree/inbox");
	if ((ret = inbox_list(&v, &n, dir)) < 0)
		return ret;
	if (n > 1) /* name them in order */
		qsort(v, n, sizeof(*v), cmp_item);
	for (size_t i = 0; i < n && ret == 0; i++) {
		char path[PATH_MAX + NAME_MAX], rel[NAME_MAX + 32];
		message m;
		snprintf(path, sizeof(path), "%s/%s", dir, v[i].file);
		if (message_load(&m, path) < 0) { /* dead-lettered later */
			decree_error_clear();
			continue;
		}
		snprintf(rel, sizeof(rel), ".decree/inbox/%s", v[i].file);
		ret = check_one(ps, p, l, rel, message_get(&m, "routine"),
				message_get(&m, "input_file"));
		message_release(&m);
	}
	inbox_items_free(v, n);
	return ret;
}

/* The specs decree_pipeline_process would queue (runner.c
 * process_specs). */
static int check_specs(problems *ps, const decree_project *p,
		       const decree_routine_list *l)
{
	char **specs;
	size_t n;
	int ret;

	if ((ret = spec_list(&specs, &n, p)) < 0)
		return ret;
	for (size_t i = 0; i < n && ret == 0; i++) {
		char rel[PATH_MAX];
		if (spec_processed(p, specs[i]))
			continue;
		snprintf(rel, sizeof(rel), "specs/%s", specs[i]);
		if (!spec_is_dead(p, rel))
			ret = check_one(ps, p, l, rel, NULL, rel);
	}
	spec_list_free(specs, n);
	return ret;
}

int check_queue(const decree_project *p, const decree_routine_list *l,
		bool specs)
{
	problems ps = { NULL, 0, 0 };
	int ret;

	if ((ret = check_inbox(&ps, p, l)) == 0 && specs)
		ret = check_specs(&ps, p, l);
	if (ret == 0 && ps.n)
		ret = problems_report(&ps, p, l);
	problems_release(&ps);
	return ret;
}

int check_before(const decree_project *p, const decree_routine_list *l,
		 const decree_run_request *rq)
{
	int ret;

	if (!rq)
		return check_queue(p, l, true);
	if ((ret = check_request(p, l, rq)) == 0)
		ret = check_queue(p, l, false);
	return ret;
}

int decree_pipeline_check(decree_project *p, const decree_run_request *rq)
{
	decree_routine_list *l;
	int ret;

	if ((ret = routine_list_load(&l, p->root, p->cfg->notebook_support)) <
	    0)
		return ret;
	ret = rq ? check_request(p, l, rq) : check_queue(p, l, true);
	decree_routine_list_free(l);
	return ret;
}
