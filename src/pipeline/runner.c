/*
 * runner.c - processing messages (docs/pipeline.md), decree/pipeline.h.
 *
 * One message (process_message):
 *   job_prepare      parse -> normalize (id, chain, seq, type, routine; the
 *                    inbox file is rewritten only if something was missing)
 *                    -> run directory .decree/runs/<id>/ with message.md
 *   job_blocked      dead-letter at once what cannot run (max_depth, no
 *                    such routine, no papermill, no AI command)
 *   job_checkpoint   engine checkpoint (session "decree", message = id) and
 *                    manifest.json
 *   job_attempts     1..max_retries keep each other's changes; a failed
 *                    attempt k leaves changes-<k>.diff and routine[-k].log;
 *                    when all failed: revert to the checkpoint,
 *                    failure-context.md, one clean-slate attempt
 *   job_finish       success: changes.diff, message to done/, spec name
 *                    appended to specs/processed-spec.md; failure: revert,
 *                    message to dead/ with dead-letter.md, and the
 *                    follow-ups it left in the inbox with it; outcome.json
 * A chain is processed depth-first: after a message, the inbox message of
 * the same chain with the lowest seq comes next.
 *
 * In a workspace (workspace: true in config.yml or the message): after
 * job_checkpoint, job_ws_open makes a workspace of that checkpoint
 * (decree/workspace.h) and a checkpoint of its own root; the attempts run
 * there, and everything job_attempts does to "the tree" (diffs, the
 * clean-slate revert) is done to the workspace through a handle on its
 * root, so the project is never written while a routine runs.  Success:
 * changes.diff is the workspace's net change, job_finish applies it to the
 * project (a three-way merge with what changed there meanwhile; a
 * conflict dead-letters the message with conflicts.md, the project
 * untouched and the workspace kept) and discards the workspace.  Failure,
 * cancellation or a hard error before the apply: the workspace is
 * discarded (undoable), the project was never touched.  The routine's
 * run-directory variables are absolute (they point into the project);
 * follow-ups it writes to .decree/inbox/ (in the workspace) are moved to
 * the project's inbox after each attempt.
 *
 * Before anything is queued or run (check.c): the routine of a run's
 * request, and of every message waiting (and, for process, every spec to
 * queue), must exist and find the AI command if it calls it; otherwise
 * the call fails and nothing happens.  What only shows later (a routine
 * the router picks, a follow-up a routine writes) is dead-lettered at
 * once by job_blocked, without an attempt.
 *
 * Cancellation (*opts->cancel set by the host): a running routine's
 * process group is terminated, its partial work diffed, the tree reverted,
 * the message stays in the inbox, and processing stops with
 * DECREE_ECANCELLED.  The library installs no signal handler.
 *
 * The whole call holds .decree/pipeline.lock (flock): two pipelines never
 * work on one tree at once.  Nothing here prints: progress and warnings
 * are events.
 */
#include "util/common.h"
#include "decree/checkpoint.h"
#include "decree/workspace.h"
#include "pipeline/check.h"
#include "pipeline/inbox.h"
#include "pipeline/message.h"
#include "pipeline/project.h"
#include "pipeline/routine.h"
#include "pipeline/runs.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/trace.h"

#include <dirent.h>
#include <sys/file.h>
#include <time.h>

#define SESSION "decree"

typedef struct {
	decree_project *p;
	decree_store *s;
	decree_routine_list *routines;
	const decree_pipeline_options *o; /* &opts */
	decree_pipeline_options opts;	  /* the caller's, made version 2 */
	decree_pipeline_result *res;
	int lockfd;
} runner;

static bool cancelled(const runner *r)
{
	return r->o->cancel && *r->o->cancel;
}

static void emit(const runner *r, const decree_pipeline_event *ev)
{
	if (r->o->events)
		r->o->events(r->o->payload, ev);
}

/* Tell the host about a failure that does not stop processing. */
static void warn_last_error(const runner *r)
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_WARNING };
	ev.reason = decree_error_last();
	emit(r, &ev);
	decree_error_clear();
}

/* --- dead letters -----------------------------------------------------------
 */

/* Dead-letter inbox file `file`: a note in its run directory (if it has
 * one), the file to dead/. */
static int dead_letter(runner *r, const char *file, const char *rundir,
		       const char *why)
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_DEAD_LETTERED };
	int ret;

	if (rundir) {
		char path[PATH_MAX + 32];
		buf note = BUF_INIT;
		snprintf(path, sizeof(path), "%s/dead-letter.md", rundir);
		if (buf_printf(&note,
			       "# Dead-lettered\n\n%s\n\nMove "
			       "`.decree/inbox/dead/%s` back to "
			       "`.decree/inbox/` to process it again.\n",
			       why, file) < 0 ||
		    fs_write_atomic(path, note.ptr, note.len, 0644) < 0)
			warn_last_error(r);
		buf_release(&note);
	}
	if ((ret = inbox_move(r->p, file, "dead")) < 0)
		return ret;
	r->res->dead++;
	ev.file = file;
	ev.reason = why;
	emit(r, &ev);
	return 0;
}

/* Dead-letter the follow-ups of `chain` after seq `after` that a message
 * which was dead-lettered left in the inbox. */
static void dead_letter_followups(runner *r, const char *chain, long after,
				  const char *id)
{
	char dir[PATH_MAX];
	inbox_item *v;
	size_t n;

	project_path(dir, r->p, ".decree/inbox");
	if (inbox_list(&v, &n, dir) < 0) {
		warn_last_error(r);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char why[160];
		if (!v[i].has_id || strcmp(v[i].chain, chain) ||
		    v[i].seq <= after)
			continue;
		snprintf(why, sizeof(why),
			 "follow-up of %s, which was dead-lettered", id);
		if (dead_letter(r, v[i].file, NULL, why) < 0)
			warn_last_error(r);
	}
	inbox_items_free(v, n);
}

/* --- one message: normalizing
 * ------------------------------------------------- */

/* The routine of a message: its own, else its spec's frontmatter, else
 * the router's pick, else default_routine. */
static int pick_routine(char **out, runner *r, const message *m)
{
	const decree_config *cfg = r->p->cfg;
	const char *v = message_get(m, "routine");
	const char *input = message_get(m, "input_file");

	*out = NULL;
	if (v && *v)
		return (*out = decree_strdup(v)) ? 0 : -1;
	if (spec_routine(out, r->p->root, input) < 0)
		return -1;
	if (*out)
		return 0;
	if (cfg->router && r->routines->n) {
		buf q = BUF_INIT;
		char *ans = NULL;
		buf_puts(&q, "Choose the routine for this task from: ");
		for (size_t i = 0; i < r->routines->n; i++)
			buf_printf(&q, "%s%s", i ? ", " : "",
				   r->routines->v[i].name);
		buf_puts(&q, ". Respond with ONLY the routine name.\n\n");
		buf_put(&q, m->body, m->body_len);
		if (router_ask(&ans, r->p->root, cfg->router, q.ptr) == 0) {
			char k[64];
			kebab_case(k, sizeof(k), ans, 50);
			if (decree_routine_list_find(r->routines, k))
				*out = decree_strdup(k);
		}
		decree_free(ans);
		buf_release(&q);
		if (*out)
			return 0;
	}
	return (*out = decree_strdup(cfg->default_routine)) ? 0 : -1;
}

/* Fill the standard fields; *changed when the file must be rewritten.  A
 * complete message (*changed false) keeps its bytes. */
static int normalize(runner *r, message *out, const message *in,
		     const inbox_item *it, bool *changed)
{
	static const char *const std[] = { "id", "chain", "seq", "type",
					   "routine" };
	char chain[17], seqs[24], id[48], *routine = NULL;
	const char *input = message_get(in, "input_file");
	const char *type = message_get(in, "type");
	size_t il = input ? strlen(input) : 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	*changed = false;
	if (it->has_id) {
		memcpy(chain, it->chain, 17);
		snprintf(seqs, sizeof(seqs), "%ld", it->seq);
	} else {
		if ((ret = inbox_new_chain(chain, r->p)) < 0)
			return ret;
		snprintf(seqs, sizeof(seqs), "0");
	}
	snprintf(id, sizeof(id), "%s-%s", chain, seqs);
	if (pick_routine(&routine, r, in) < 0)
		return -1;
	if (!type || !*type)
		type = il > 8 && !strcmp(input + il - 8, ".spec.md") ? "spec"
								     : "task";
	{
		const char *vals[] = { id, chain, seqs, type, routine };
		for (size_t i = 0; i < 5 && !ret; i++) {
			const char *have = message_get(in, std[i]);
			if (!have || strcmp(have, vals[i]))
				*changed = true;
			ret = message_set(out, std[i], vals[i]);
		}
	}
	for (size_t i = 0; i < in->fm.n && !ret; i++) {
		bool is_std = false;
		for (size_t k = 0; k < 5; k++)
			is_std |= !strcmp(in->fm.v[i].key, std[k]);
		if (!is_std)
			ret = message_set(out, in->fm.v[i].key,
					  in->fm.v[i].value);
	}
	decree_free(routine);
	if (ret == 0 && !(out->body = decree_malloc(in->body_len + 1)))
		ret = -1;
	if (ret == 0) {
		memcpy(out->body, in->body, in->body_len + 1);
		out->body_len = in->body_len;
	}
	return ret;
}

/* --- one message: the job
 * ------------------------------------------------------ */

typedef struct {
	char file[NAME_MAX + 1]; /* in the inbox */
	message m;		 /* normalized */
	const char *id, *routine, *input, *chain;
	char seqs[24];
	char rundir[PATH_MAX], rel[PATH_MAX];
	char ck[DECREE_ID_HEXLEN + 1];
	const decree_routine_info *ri;
	int attempts;
	decree_run_outcome outcome;
	int64_t started;
	buf failures; /* failure-context.md, as the attempts fail */
	buf text;     /* message.md */
	/* in a workspace: its handle and info, the checkpoint of its root
	 * the attempts are diffed and reverted against, and whether its
	 * changes reached the project */
	bool ws;
	decree_workspace_info wi;
	decree_store *wss;
	char wck[DECREE_ID_HEXLEN + 1];
	bool applied;
	/* manifest.json, durable before the first diff is written */
	run_manifest man;
} job;

/* The tree the attempts change, and the checkpoint of it before them:
 * the workspace's in a workspace, else the project's. */
static decree_store *job_store(const job *j, const runner *r)
{
	return j->ws ? j->wss : r->s;
}

static const char *job_ck(const job *j)
{
	return j->ws ? j->wck : j->ck;
}

/*
 * Read, normalize (rewriting the inbox file when a field was missing) and
 * open the run directory with message.md.  *dead: the message could not
 * be parsed and was dead-lettered instead.
 */
static int job_prepare(job *j, runner *r, const inbox_item *it, bool *dead)
{
	char path[PATH_MAX + NAME_MAX];
	buf text = BUF_INIT, nb = BUF_INIT;
	message in;
	bool changed = false;
	int ret;

	*dead = false;
	snprintf(j->file, sizeof(j->file), "%s", it->file);
	snprintf(path, sizeof(path), "%s/.decree/inbox/%s", r->p->root,
		 j->file);
	if ((ret = fs_read_path(path, &text)) < 0)
		goto done;
	if ((ret = message_parse(&in, text.ptr, text.len)) < 0) {
		char why[512];
		if (ret != DECREE_EINVALID)
			goto done;
		snprintf(why, sizeof(why), "cannot parse the message: %s",
			 decree_error_last());
		decree_error_clear();
		*dead = true;
		ret = dead_letter(r, j->file, NULL, why);
		goto done;
	}
	ret = normalize(r, &j->m, &in, it, &changed);
	message_release(&in);
	if (ret < 0)
		goto done;
	/* a message missing a standard field is rewritten in the inbox */
	if (changed &&
	    ((ret = message_format(&nb, &j->m)) < 0 ||
	     (ret = fs_write_atomic(path, nb.ptr, nb.len, 0644)) < 0))
		goto done;
	j->id = message_get(&j->m, "id");
	j->chain = message_get(&j->m, "chain");
	j->routine = message_get(&j->m, "routine");
	j->input = message_get(&j->m, "input_file");
	snprintf(j->seqs, sizeof(j->seqs), "%s", message_get(&j->m, "seq"));
	if ((ret = run_dir_make(j->rundir, r->p, j->id)) < 0)
		goto done;
	snprintf(j->rel, sizeof(j->rel), ".decree/runs/%s", j->id);
	/* message.md: the new text, or the bytes of a complete message */
	if (changed) {
		buf_release(&text);
		text = nb;
		buf_init(&nb);
	}
	j->text = text;
	buf_init(&text);
	snprintf(path, sizeof(path), "%s/message.md", j->rundir);
	ret = fs_write_atomic(path, j->text.ptr, j->text.len, 0644);
done:
	buf_release(&nb);
	buf_release(&text);
	return ret;
}

/* Write outcome.json; a failure is a warning (the run itself is over). */
static void job_outcome(job *j, runner *r, decree_run_outcome o,
			const char *reason)
{
	if (run_write_outcome(j->rundir, j->id, j->file, j->routine, o,
			      j->attempts, reason, j->started) < 0)
		warn_last_error(r);
}

/* Why the message cannot run at all (into why), or false. */
static bool job_blocked(job *j, runner *r, char *why, size_t len)
{
	if (strtol(j->seqs, NULL, 10) >= r->p->cfg->max_depth) {
		snprintf(why, len,
			 "MaxDepthExceeded: seq %s is not below max_depth %ld "
			 "(.decree/config.yml)",
			 j->seqs, r->p->cfg->max_depth);
		return true;
	}
	{
		const char *w = message_get(&j->m, "workspace");
		if (w && strcmp(w, "true") && strcmp(w, "yes") &&
		    strcmp(w, "false") && strcmp(w, "no") && *w) {
			snprintf(
				why, len,
				"InvalidWorkspace: 'workspace: %s' must be true "
				"or false",
				w);
			return true;
		}
		j->ws = w && *w ? !strcmp(w, "true") || !strcmp(w, "yes")
				: r->p->cfg->workspace;
	}
	if (!(j->ri = decree_routine_list_find(r->routines, j->routine))) {
		snprintf(
			why, len,
			"RoutineNotFound: no routine '%s' in .decree/routines/",
			j->routine);
		return true;
	}
	{ /* a routine the router picked, or a follow-up's: known only now */
		buf b = BUF_INIT;
		bool blocked = check_runnable(&b, r->p, j->ri);
		if (blocked)
			snprintf(why, len, "%s",
				 b.ptr ? b.ptr : "out of memory");
		buf_release(&b);
		return blocked;
	}
}

/* The checkpoint of the run (one per run id: a re-queued message gets
 * "id.N") and manifest.json. */
static int job_checkpoint(job *j, runner *r)
{
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	char msg[80], probe[120], tmp[DECREE_ID_HEXLEN + 1];
	char mp[PATH_MAX + 16];
	int ret;

	snprintf(msg, sizeof(msg), "%s", j->id);
	for (int k = 2;; k++) {
		snprintf(probe, sizeof(probe), SESSION ":%s", msg);
		if (decree_checkpoint_resolve(tmp, r->s, probe) < 0)
			break;
		snprintf(msg, sizeof(msg), "%s.%d", j->id, k);
	}
	decree_error_clear();
	co.session = SESSION;
	co.message = msg;
	co.label = j->file;
	if ((ret = decree_checkpoint_create(j->ck, NULL, r->s, &co)) < 0)
		return ret;
	snprintf(mp, sizeof(mp), "%s/manifest.json", j->rundir);
	ret = run_write_manifest(r->s, j->ck, mp, &j->man);
	trace_phase("run: manifest written");
	return ret;
}

/* --- one message: in a workspace
 * ----------------------------------------------- */

/*
 * Make the workspace of the run from the run's checkpoint (named after the
 * message id: "run-<id>", "run-<id>.2", ... for a re-run while an earlier
 * one is kept), open a handle on its root and checkpoint that root: the
 * attempts are diffed and reverted against it.
 */
static int job_ws_open(job *j, runner *r)
{
	decree_workspace_create_options wo =
		DECREE_WORKSPACE_CREATE_OPTIONS_INIT;
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_store_options so = DECREE_STORE_OPTIONS_INIT;
	decree_config *cfg = NULL;
	char name[80], inbox[PATH_MAX + 16];
	int ret;

	wo.from = j->ck;
	wo.name = name;
	for (int k = 1;; k++) {
		if (k == 1)
			snprintf(name, sizeof(name), "run-%s", j->id);
		else
			snprintf(name, sizeof(name), "run-%s.%d", j->id, k);
		ret = decree_workspace_create(&j->wi, r->s, &wo);
		if (ret != DECREE_EEXISTS || k == 100)
			break;
		decree_error_clear();
	}
	if (ret < 0)
		return ret;
	/* its config.yml names the store and the project's scan rules */
	if ((ret = decree_config_load(&cfg, j->wi.path)) < 0)
		return ret;
	decree_config_store_options(&so, cfg, j->wi.path);
	so.lock_timeout_ms = r->p->lock_timeout_ms;
	so.threads = r->p->threads;
	ret = decree_store_open(&j->wss, &so);
	decree_config_free(cfg);
	if (ret < 0)
		return ret;
	co.session = SESSION;
	co.message = j->id;
	co.label = j->file;
	if ((ret = decree_checkpoint_create(j->wck, NULL, j->wss, &co)) < 0)
		return ret;
	/* follow-ups written to .decree/inbox/ land here (job_ws_followups) */
	snprintf(inbox, sizeof(inbox), "%s/.decree/inbox", j->wi.path);
	return fs_mkdirs(inbox, 0755);
}

/* Remove the workspace: captured first (decree undo brings it back),
 * unless it was applied (then the apply is what decree undo undoes). */
static int job_ws_discard(job *j, runner *r)
{
	int ret;

	if (!j->wi.name)
		return 0;
	decree_store_free(j->wss);
	j->wss = NULL;
	if ((ret = decree_workspace_discard_ext(
		     NULL, r->s, j->wi.name,
		     j->applied ? DECREE_WORKSPACE_DISCARD_APPLIED : 0)) < 0)
		return ret;
	decree_workspace_info_release(&j->wi);
	return 0;
}

/* spec_file for a routine: relative to the root it runs in; in a
 * workspace that does not hold it (an ignored spec), the project's. */
static const char *job_spec_file(char *out, size_t len, const job *j,
				 const runner *r)
{
	char probe[PATH_MAX * 2];
	struct stat st;

	if (!j->input)
		return "";
	if (!j->ws || j->input[0] == '/')
		return j->input;
	snprintf(probe, sizeof(probe), "%s/%s", j->wi.path, j->input);
	if (lstat(probe, &st) == 0)
		return j->input;
	snprintf(out, len, "%s/%s", r->p->root, j->input);
	return out;
}

/* Move the follow-ups a routine wrote to the workspace's .decree/inbox/
 * into the project's inbox.  A name taken there is a warning, and the
 * file stays in the workspace. */
static void job_ws_followups(job *j, runner *r)
{
	char dir[PATH_MAX + 16];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/.decree/inbox", j->wi.path);
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d)) != NULL) {
		char from[PATH_MAX * 2], to[PATH_MAX * 2];
		buf text = BUF_INIT;
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(from, sizeof(from), "%s/%s", dir, de->d_name);
		snprintf(to, sizeof(to), "%s/.decree/inbox/%s", r->p->root,
			 de->d_name);
		if (lstat(from, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (lstat(to, &st) == 0) {
			decree_error_set(DECREE_EEXISTS,
					 "follow-up '%s' of workspace '%s' not "
					 "queued: .decree/inbox/%s exists",
					 de->d_name, j->wi.name, de->d_name);
			warn_last_error(r);
			continue;
		}
		/* the store may be on another file system: copy, then remove */
		if (fs_read_path(from, &text) < 0 ||
		    fs_write_atomic(to, text.ptr, text.len, 0644) < 0 ||
		    (unlink(from) < 0 &&
		     decree_error_os("cannot remove '%s'", from) < 0))
			warn_last_error(r);
		buf_release(&text);
	}
	closedir(d);
}

typedef struct {
	buf *out;
	size_t n;
} conflict_report;

static void on_apply_report(void *payload, const char *path,
			    decree_apply_action action, const char *detail)
{
	conflict_report *c = payload;

	if (action != DECREE_APPLY_CONFLICT)
		return;
	c->n++;
	buf_printf(c->out, "- `%s`: %s\n", path, detail ? detail : "conflict");
}

/*
 * Apply the workspace of a successful run to the project.  *conflicted
 * (nothing was written): conflicts.md in the run directory, and the
 * reason in why.
 */
static int job_ws_apply(job *j, runner *r, bool *conflicted, char *why,
			size_t len)
{
	decree_apply_options ao = DECREE_APPLY_OPTIONS_INIT;
	decree_apply_result res;
	buf report = BUF_INIT;
	conflict_report c = { &report, 0 };
	int ret;

	*conflicted = false;
	ao.session = SESSION;
	ao.report = on_apply_report;
	ao.payload = &c;
	/* the workspace's files are read by the apply: no handle writes
	 * to its root meanwhile */
	decree_store_free(j->wss);
	j->wss = NULL;
	ret = decree_workspace_apply(&res, r->s, j->wi.name, &ao);
	if (ret == DECREE_ECONFLICT) {
		char path[PATH_MAX + 32];
		buf doc = BUF_INIT;
		buf_printf(
			&doc,
			"# Conflicts\n\nThe routine succeeded in workspace "
			"`%s`, but its changes conflict with what changed in "
			"the project meanwhile, so nothing was applied.\n\n",
			j->wi.name);
		buf_put(&doc, report.ptr, report.len);
		buf_printf(
			&doc,
			"\nThe workspace is kept: `decree workspace diff "
			"%s`, `decree workspace conflicts %s`; resolve in the "
			"project or the workspace, then `decree workspace "
			"apply %s`, or `decree workspace discard %s`.\n",
			j->wi.name, j->wi.name, j->wi.name, j->wi.name);
		snprintf(path, sizeof(path), "%s/conflicts.md", j->rundir);
		ret = fs_write_atomic(path, doc.ptr, doc.len, 0644);
		buf_release(&doc);
		if (ret == 0) {
			decree_error_clear();
			*conflicted = true;
			snprintf(
				why, len,
				"routine '%s' succeeded in workspace '%s', but "
				"%zu path(s) conflict with changes made in the "
				"project meanwhile; nothing was applied "
				"(conflicts.md in %s)",
				j->routine, j->wi.name, c.n, j->rel);
		}
	} else if (ret == 0) {
		j->applied = true;
		/* the project has its changes: the workspace goes (a failure
		 * to remove it is a warning, the run is done) */
		if (job_ws_discard(j, r) < 0)
			warn_last_error(r);
	}
	buf_release(&report);
	return ret;
}

/*
 * After an attempt (the routine and all it started are gone): if the
 * routine removed its run directory, or .decree/runs, the directory comes
 * back with what a later `decree revert` needs, manifest.json and
 * message.md, both rebuilt from what the runner holds (the checkpoint in
 * the store, the message in memory).
 */
static int job_restore_dir(job *j, runner *r)
{
	char path[PATH_MAX + 16];
	struct stat st;
	int ret;

	if ((ret = fs_mkdirs(j->rundir, 0755)) < 0)
		return ret;
	snprintf(path, sizeof(path), "%s/manifest.json", j->rundir);
	if (lstat(path, &st) < 0 &&
	    (ret = run_write_manifest(r->s, j->ck, path, NULL)) < 0)
		return ret;
	snprintf(path, sizeof(path), "%s/message.md", j->rundir);
	if (lstat(path, &st) < 0 &&
	    (ret = fs_write_atomic(path, j->text.ptr, j->text.len, 0644)) < 0)
		return ret;
	return 0;
}

/* routine.log, routine-2.log, ... (papermill*.log) */
static void log_path(char *out, size_t len, const job *j, int k)
{
	const char *base = j->ri->notebook ? "papermill" : "routine";
	if (k == 1)
		snprintf(out, len, "%s/%s.log", j->rundir, base);
	else
		snprintf(out, len, "%s/%s-%d.log", j->rundir, base, k);
}

/* Every attempt failed: revert, write failure-context.md; its relative
 * path into fc. */
static int job_clean_slate(job *j, runner *r, char *fc, size_t len)
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_CLEAN_SLATE };
	char path[PATH_MAX + 32];
	int ret;

	if ((ret = run_revert_to(job_store(j, r), job_ck(j))) < 0)
		return ret;
	snprintf(path, sizeof(path), "%s/failure-context.md", j->rundir);
	if ((ret = fs_write_atomic(path, j->failures.ptr, j->failures.len,
				   0644)) < 0)
		return ret;
	/* a routine in a workspace is told where it is in the project */
	snprintf(fc, len, "%s/failure-context.md", j->ws ? j->rundir : j->rel);
	ev.id = j->id;
	ev.file = j->file;
	ev.attempt = j->attempts;
	ev.path = fc;
	emit(r, &ev);
	return 0;
}

/* Cancelled during attempt k: diff the partial work, revert. */
static int job_interrupted(job *j, runner *r, int k)
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_INTERRUPTED };
	char diffp[PATH_MAX + 32], rel[PATH_MAX + 32];
	int ret;

	snprintf(diffp, sizeof(diffp), "%s/changes-%d.diff", j->rundir, k);
	if (run_write_diff(job_store(j, r), job_ck(j), diffp, NULL, &j->man) <
	    0)
		warn_last_error(r);
	if ((ret = j->ws ? job_ws_discard(j, r) : run_revert_to(r->s, j->ck)) <
	    0)
		return ret;
	j->outcome = DECREE_RUN_INTERRUPTED;
	job_outcome(j, r, j->outcome,
		    "interrupted by a signal; the message stays in the inbox");
	snprintf(rel, sizeof(rel), "%s/changes-%d.diff", j->rel, k);
	ev.id = j->id;
	ev.file = j->file;
	ev.attempt = k;
	ev.path = rel;
	emit(r, &ev);
	return decree_error_set(DECREE_ECANCELLED, "interrupted");
}

/* Attempt k failed with `status`: its diff and a section of the failure
 * context. */
static int job_attempt_failed(job *j, runner *r, int k, int status,
			      const char *logp)
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_ATTEMPT_FAILED };
	const char *logrel = logp + strlen(r->p->root) + 1;
	char diffp[PATH_MAX + 32];
	int ret;

	snprintf(diffp, sizeof(diffp), "%s/changes-%d.diff", j->rundir, k);
	if ((ret = run_write_diff(job_store(j, r), job_ck(j), diffp, NULL,
				  &j->man)) < 0)
		return ret;
	ev.id = j->id;
	ev.file = j->file;
	ev.attempt = k;
	ev.status = status;
	ev.clean_slate = k == (int)r->p->cfg->max_retries + 1;
	ev.path = logrel;
	emit(r, &ev);
	buf_printf(
		&j->failures,
		"%s## Attempt %d: exit status %d\n\nLog tail (`%s`):\n\n```\n",
		j->failures.len ? "\n"
				: "# Failure context\n\nEvery attempt so "
				  "far failed; the tree was reverted to the "
				  "state before the first one.\n\n",
		k, status, logrel);
	run_log_tail(&j->failures, logp, 4000);
	return buf_puts(&j->failures, "```\n");
}

/* The host's output callback, for one attempt. */
typedef struct {
	const runner *r;
	const char *id;
	int attempt;
} attempt_output;

static void on_output(void *payload, const char *data, size_t len)
{
	const attempt_output *a = payload;
	a->r->o->output(a->r->o->payload, a->id, a->attempt, data, len);
}

/* The attempts; *ok when one succeeded. */
static int job_attempts(job *j, runner *r, bool *ok)
{
	int max = (int)r->p->cfg->max_retries;
	char fc[PATH_MAX + 32], spec[PATH_MAX];
	int ret;

	*ok = false;
	for (int k = 1; k <= max + 1; k++) {
		routine_attempt x = {
			.root = j->ws ? j->wi.path : r->p->root,
			.id = j->id,
			.dir_rel = j->ws ? j->rundir : j->rel,
			.chain = j->chain,
			.seq = j->seqs,
			.spec_file = job_spec_file(spec, sizeof(spec), j, r),
			.m = &j->m,
			.ri = j->ri,
			.attempt = k,
			.ai = r->p->cfg->ai,
			.cancel = r->o->cancel,
		};
		attempt_output ao = { r, j->id, k };
		char logp[PATH_MAX + 32];
		int status = 0;
		bool interrupted = false;
		if (k == max + 1) {
			if ((ret = job_clean_slate(j, r, fc, sizeof(fc))) < 0)
				return ret;
			x.failure_context = fc;
		}
		if (r->o->output) {
			x.output = on_output;
			x.output_payload = &ao;
		}
		log_path(logp, sizeof(logp), j, k);
		j->attempts = k;
		if (cancelled(r)) /* before the routine even started */
			interrupted = true;
		else if ((ret = routine_run(&status, &interrupted, &x, logp)) <
			 0)
			return ret;
		trace_phase("run: routine done");
		if ((ret = job_restore_dir(j, r)) < 0)
			return ret;
		if (j->ws)
			job_ws_followups(j, r);
		if (interrupted)
			return job_interrupted(j, r, k);
		if (status == 0) {
			decree_pipeline_event ev = {
				.kind = DECREE_EVENT_SUCCEEDED
			};
			char diffp[PATH_MAX + 32], rel[PATH_MAX + 32];
			snprintf(diffp, sizeof(diffp), "%s/changes.diff",
				 j->rundir);
			if ((ret = run_write_diff(job_store(j, r), job_ck(j),
						  diffp, &ev.files, &j->man)) <
			    0)
				return ret;
			trace_phase("run: diff written");
			*ok = true;
			snprintf(rel, sizeof(rel), "%s/changes.diff", j->rel);
			ev.id = j->id;
			ev.file = j->file;
			ev.attempt = k;
			ev.path = rel;
			emit(r, &ev);
			return 0;
		}
		if ((ret = job_attempt_failed(j, r, k, status, logp)) < 0)
			return ret;
	}
	return 0;
}

/* Done: processed-spec.md, done/.  Failed: revert, dead/. */
static int job_finish(job *j, runner *r, bool ok)
{
	char why[512];
	int ret;

	if (ok && j->ws) {
		bool conflicted;
		if ((ret = job_ws_apply(j, r, &conflicted, why, sizeof(why))) <
		    0)
			return ret;
		if (conflicted) {
			job_outcome(j, r, DECREE_RUN_DEAD, why);
			if ((ret = dead_letter(r, j->file, j->rundir, why)) < 0)
				return ret;
			dead_letter_followups(r, j->chain,
					      strtol(j->seqs, NULL, 10), j->id);
			return 0;
		}
	}
	if (ok) {
		j->outcome = DECREE_RUN_DONE;
		if (!strcmp(message_get(&j->m, "type"), "spec") && j->input &&
		    (ret = spec_mark_processed(r->p, j->input)) < 0)
			return ret;
		if ((ret = inbox_move(r->p, j->file, "done")) < 0)
			return ret;
		r->res->done++;
		job_outcome(j, r, j->outcome, NULL);
		return 0;
	}
	if ((ret = j->ws ? job_ws_discard(j, r) : run_revert_to(r->s, j->ck)) <
	    0)
		return ret;
	if (j->ws)
		snprintf(
			why, sizeof(why),
			"routine '%s' failed %d time(s), the last with a clean "
			"slate, in a workspace; the project was not touched "
			"(logs and diffs in %s)",
			j->routine, j->attempts, j->rel);
	else
		snprintf(
			why, sizeof(why),
			"routine '%s' failed %d time(s), the last with a clean "
			"slate; the tree was reverted (logs and diffs in %s)",
			j->routine, j->attempts, j->rel);
	job_outcome(j, r, DECREE_RUN_DEAD, why);
	if ((ret = dead_letter(r, j->file, j->rundir, why)) < 0)
		return ret;
	dead_letter_followups(r, j->chain, strtol(j->seqs, NULL, 10), j->id);
	return 0;
}

/*
 * A hard error after a routine ran (a disk full, an inbox file the
 * routine deleted): the message is not processed, so the tree goes back
 * to the checkpoint; the routine's work is captured by the restore and
 * `decree undo` brings it back.  The state this needs is the checkpoint
 * in the store and its id in memory, nothing a routine can remove from
 * .decree/runs or .decree/inbox.
 */
static void job_put_back(job *j, runner *r)
{
	char msg[1024];
	int code = error_last_code();

	snprintf(msg, sizeof(msg), "%s", error_last());
	if (j->ws && !j->applied) {
		/* the project was never written: the workspace goes */
		char name[80];
		snprintf(name, sizeof(name), "%s",
			 j->wi.name ? j->wi.name : "");
		if (job_ws_discard(j, r) < 0) {
			warn_last_error(r);
			decree_error_set(code, "%s", msg);
			return;
		}
		decree_error_set(code,
				 "%s; the project was not touched (run %s ran "
				 "in workspace '%s', discarded: decree undo "
				 "brings it back)",
				 msg, j->id, name);
		return;
	}
	if (run_revert_to(r->s, j->ck) < 0) {
		warn_last_error(r);
		decree_error_set(code, "%s", msg);
		return;
	}
	decree_error_set(code,
			 "%s; the tree was put back as before run %s (the "
			 "routine's changes are in the undo history)",
			 msg, j->id);
}

/*
 * Process one inbox message.  Returns 0 (processed: done or dead),
 * DECREE_ECANCELLED, or another error.  chain_out: the message's chain
 * ("" if it had none).
 */
static int process_message(runner *r, const inbox_item *it, char chain_out[17])
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_STARTED };
	char why[512];
	job j;
	bool dead, ok = false;
	int ret;

	memset(&j, 0, sizeof(j));
	j.man = (run_manifest)RUN_MANIFEST_INIT;
	buf_init(&j.failures);
	buf_init(&j.text);
	j.started = (int64_t)time(NULL);
	j.outcome = DECREE_RUN_DEAD;
	chain_out[0] = '\0';
	if ((ret = job_prepare(&j, r, it, &dead)) < 0 || dead)
		goto done;
	snprintf(chain_out, 17, "%s", j.chain);
	if (job_blocked(&j, r, why, sizeof(why))) {
		job_outcome(&j, r, DECREE_RUN_DEAD, why);
		ret = dead_letter(r, j.file, j.rundir, why);
		goto done;
	}
	if ((ret = job_checkpoint(&j, r)) < 0 ||
	    (j.ws && (ret = job_ws_open(&j, r)) < 0))
		goto done;
	ev.id = j.id;
	ev.file = j.file;
	ev.routine = j.routine;
	emit(r, &ev);
	if ((ret = job_attempts(&j, r, &ok)) == 0)
		ret = job_finish(&j, r, ok);
	if (ret < 0 && ret != DECREE_ECANCELLED && j.attempts)
		job_put_back(&j, r);
done:
	if (ret < 0) {
		/* an error before any diff waited for the manifest: wait
		 * here, the error stays the one to report */
		char msg[1024];
		int code = error_last_code();
		snprintf(msg, sizeof(msg), "%s", error_last());
		if (run_manifest_wait(&j.man) < 0)
			decree_error_set(code, "%s", msg);
	} else {
		ret = run_manifest_wait(&j.man); /* (0: waited already) */
	}
	if (ret < 0 && j.ws && j.wi.name && !j.applied &&
	    ret != DECREE_ECANCELLED && !j.attempts) {
		/* made, but no routine ran in it: nothing worth keeping */
		char msg[1024];
		int code = error_last_code();
		snprintf(msg, sizeof(msg), "%s", error_last());
		if (job_ws_discard(&j, r) < 0)
			decree_error_clear();
		decree_error_set(code, "%s", msg);
	}
	decree_store_free(j.wss);
	decree_workspace_info_release(&j.wi);
	if (j.m.fm.n) {
		decree_pipeline_event fin = { .kind = DECREE_EVENT_FINISHED };
		fin.id = message_get(&j.m, "id");
		fin.file = j.file;
		fin.routine = message_get(&j.m, "routine");
		fin.outcome = ret == 0 ? j.outcome
			      : ret == DECREE_ECANCELLED
				      ? DECREE_RUN_INTERRUPTED
				      : DECREE_RUN_ERROR;
		fin.attempt = j.attempts;
		emit(r, &fin);
	}
	buf_release(&j.failures);
	buf_release(&j.text);
	message_release(&j.m);
	return ret;
}

/* --- the loop
 * ------------------------------------------------------------------ */

/* Is inbox item a processed before b?  Messages with an id first, by
 * chain; then by seq; then by file name. */
static bool comes_first(const inbox_item *a, const inbox_item *b)
{
	int c = a->has_id != b->has_id ? (a->has_id ? -1 : 1)
		: a->has_id	       ? strcmp(a->chain, b->chain)
				       : strcmp(a->file, b->file);
	return c < 0 ||
	       (c == 0 && (a->seq < b->seq ||
			   (a->seq == b->seq && strcmp(a->file, b->file) < 0)));
}

/* Process every inbox message of `chain`, lowest seq first, listing the
 * inbox again after each message (follow-ups appear).  chain NULL: the
 * first chain waiting (messages without an id count as chains of their
 * own), then that chain's follow-ups.  *any: something was processed. */
static int process_chain(runner *r, const char *chain, bool *any)
{
	char dir[PATH_MAX], c[17];
	project_path(dir, r->p, ".decree/inbox");
	*any = false;
	for (;;) {
		inbox_item *v;
		size_t n, best = SIZE_MAX;
		bool more;
		int ret;
		if ((ret = inbox_list(&v, &n, dir)) < 0)
			return ret;
		for (size_t i = 0; i < n; i++) {
			if (chain &&
			    (!v[i].has_id || strcmp(v[i].chain, chain)))
				continue;
			if (best == SIZE_MAX || comes_first(&v[i], &v[best]))
				best = i;
		}
		if (best == SIZE_MAX) {
			inbox_items_free(v, n);
			return 0;
		}
		*any = true;
		ret = process_message(r, &v[best], c);
		inbox_items_free(v, n);
		if (ret < 0)
			return ret;
		if (cancelled(r))
			return decree_error_set(DECREE_ECANCELLED,
						"interrupted");
		/* stay on this chain for the follow-ups */
		if (!chain)
			return c[0] ? process_chain(r, c, &more) : 0;
	}
}

static int drain_inbox(runner *r)
{
	for (;;) {
		bool any;
		int ret = process_chain(r, NULL, &any);
		if (ret < 0 || !any)
			return ret;
	}
}

/* The pid of a process's parent (0 when unknown). */
static pid_t parent_of(pid_t pid)
{
	long ppid, pgrp, sess;
	char state;

	return fs_proc_stat(pid, &state, &ppid, &pgrp, &sess) < 0 ? 0
								  : (pid_t)ppid;
}

/* Is the process that holds the lock (its pid is in the lock file) one of
 * ours: are we running inside it, as a routine's child? */
static bool held_by_ancestor(int lockfd)
{
	char text[32];
	ssize_t n = pread(lockfd, text, sizeof(text) - 1, 0);
	long holder;

	if (n <= 0)
		return false;
	text[n] = '\0';
	if ((holder = strtol(text, NULL, 10)) <= 1)
		return false;
	for (pid_t p = getppid(); p > 1; p = parent_of(p))
		if (p == holder)
			return true;
	return false;
}

/*
 * Take .decree/pipeline.lock, waiting (and watching *cancel) while another
 * process holds it.  The holder writes its pid into the file, so that a
 * routine calling `decree run` or `process` on its own project is told at
 * once instead of waiting forever for its own pipeline.
 */
static int lock_project(runner *r)
{
	char path[PATH_MAX], pid[32];
	bool told = false;
	int n;

	project_path(path, r->p, ".decree/pipeline.lock");
	if ((r->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return decree_error_os("cannot open '%s'", path);
	while (flock(r->lockfd, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { 0, 50000000 };
		if (errno != EWOULDBLOCK && errno != EINTR)
			return decree_error_os("cannot lock '%s'", path);
		if (held_by_ancestor(r->lockfd))
			return decree_error_set(
				DECREE_ELOCKED,
				"the pipeline of this project is running the "
				"routine this was called from; a routine cannot "
				"run or process its own project's pipeline");
		if (cancelled(r))
			return decree_error_set(DECREE_ECANCELLED,
						"interrupted");
		if (!told) {
			decree_pipeline_event ev = {
				.kind = DECREE_EVENT_WAITING
			};
			emit(r, &ev);
			told = true;
		}
		nanosleep(&ts, NULL);
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(r->lockfd, 0) < 0 ||
	    pwrite(r->lockfd, pid, (size_t)n, 0) != n)
		return decree_error_os("cannot write '%s'", path);
	return 0;
}

static int runner_open(runner *r, decree_project *p,
		       const decree_pipeline_options *o,
		       decree_pipeline_result *res)
{
	static const decree_pipeline_options none =
		DECREE_PIPELINE_OPTIONS_INIT;
	int ret;

	memset(r, 0, sizeof(*r));
	memset(res, 0, sizeof(*res));
	r->p = p;
	r->o = &r->opts;
	r->res = res;
	r->lockfd = -1;
	if (!o)
		o = &none;
	if (o->version == 1) /* it ends before `output` */
		memcpy(&r->opts, o, offsetof(decree_pipeline_options, output));
	else if (o->version == DECREE_PIPELINE_OPTIONS_VERSION)
		r->opts = *o;
	else
		return decree_error_set(DECREE_EINVALID,
					"invalid pipeline options");
	if ((ret = lock_project(r)) < 0 ||
	    (ret = decree_project_store(&r->s, p)) < 0 ||
	    (ret = routine_list_load(&r->routines, p->root,
				     p->cfg->notebook_support)) < 0)
		return ret;
	return 0;
}

static void runner_close(runner *r)
{
	decree_routine_list_free(r->routines);
	if (r->lockfd >= 0)
		close(r->lockfd); /* releases the flock */
}

/* Queue rq as a new chain (with input_file made relative). */
static int queue_request(char chain[17], runner *r,
			 const decree_run_request *rq)
{
	decree_pipeline_event ev = { .kind = DECREE_EVENT_QUEUED };
	decree_run_request q = *rq;
	decree_field *f = NULL;
	char fixed[PATH_MAX], file[NAME_MAX + 1];
	const char *input = NULL;
	int ret;

	for (size_t i = 0; i < rq->nfields; i++)
		if (!strcmp(rq->fields[i].key, "input_file"))
			input = rq->fields[i].value;
	if ((ret = check_input(fixed, sizeof(fixed), r->p, input)) < 0)
		return ret;
	if (fixed[0]) {
		if (!(f = decree_calloc(rq->nfields, sizeof(*f))))
			return -1;
		for (size_t i = 0; i < rq->nfields; i++) {
			f[i] = rq->fields[i];
			if (!strcmp(f[i].key, "input_file"))
				f[i].value = fixed;
		}
		q.fields = f;
	}
	ret = inbox_queue(chain, file, r->p, &q);
	decree_free(f);
	if (ret < 0)
		return ret;
	ev.file = file;
	emit(r, &ev);
	return 0;
}

/*
 * The checks before anything is queued or run (check.c), made before the
 * lock is taken, so that a run refused changes nothing at all, not even
 * .decree/pipeline.lock; runner_open's caller makes them again under the
 * lock, on the inbox as it is then.
 */
static int check_unlocked(decree_pipeline_result *out, decree_project *p,
			  const decree_run_request *rq)
{
	decree_routine_list *l;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = routine_list_load(&l, p->root, p->cfg->notebook_support)) <
	    0)
		return ret;
	ret = check_before(p, l, rq);
	decree_routine_list_free(l);
	return ret;
}

int decree_pipeline_run(decree_pipeline_result *out, decree_project *p,
			const decree_run_request *rq,
			const decree_pipeline_options *opts)
{
	runner r;
	char chain[17];
	bool any;
	int ret;

	if ((ret = decree_run_request_check(rq)) < 0) {
		memset(out, 0, sizeof(*out));
		return ret;
	}
	if ((ret = check_unlocked(out, p, rq)) < 0)
		return ret;
	if ((ret = runner_open(&r, p, opts, out)) == 0 &&
	    (ret = check_before(p, r.routines, rq)) == 0 &&
	    (ret = queue_request(chain, &r, rq)) == 0 &&
	    (ret = process_chain(&r, chain, &any)) == 0)
		ret = drain_inbox(&r);
	runner_close(&r);
	return ret;
}

/* Process the specs not yet processed, one chain each. */
static int process_specs(runner *r)
{
	char **specs;
	size_t n;
	int ret;

	if ((ret = spec_list(&specs, &n, r->p)) < 0)
		return ret;
	for (size_t i = 0; i < n && ret == 0; i++) {
		decree_run_request rq = DECREE_RUN_REQUEST_INIT;
		decree_field f = { "input_file", NULL };
		char rel[PATH_MAX], chain[17];
		bool any;
		if (cancelled(r)) {
			ret = decree_error_set(DECREE_ECANCELLED,
					       "interrupted");
			break;
		}
		if (spec_processed(r->p, specs[i]))
			continue;
		snprintf(rel, sizeof(rel), "specs/%s", specs[i]);
		if (spec_is_dead(r->p, rel)) {
			decree_pipeline_event ev = {
				.kind = DECREE_EVENT_SPEC_SKIPPED
			};
			ev.path = rel;
			ev.reason = "dead-lettered earlier (move its message "
				    "back to .decree/inbox/ to retry)";
			emit(r, &ev);
			continue;
		}
		f.value = rel;
		rq.fields = &f;
		rq.nfields = 1;
		if ((ret = queue_request(chain, r, &rq)) == 0)
			ret = process_chain(r, chain, &any);
	}
	spec_list_free(specs, n);
	return ret;
}

int decree_pipeline_process(decree_pipeline_result *out, decree_project *p,
			    const decree_pipeline_options *opts)
{
	runner r;
	int ret;

	if ((ret = check_unlocked(out, p, NULL)) < 0)
		return ret;
	if ((ret = runner_open(&r, p, opts, out)) == 0 &&
	    (ret = check_before(p, r.routines, NULL)) == 0 &&
	    (ret = drain_inbox(&r)) == 0)
		ret = process_specs(&r);
	if (ret == 0 && cancelled(&r))
		ret = decree_error_set(DECREE_ECANCELLED, "interrupted");
	runner_close(&r);
	return ret;
}
