/*
 * restore.c - cascading restore, undo and redo (decree/restore.h).
 *
 * Restore plans per path against a fresh scan of the working tree:
 *   in checkpoint only           -> create (or overwrite an ignored file,
 *                                   whose bytes are captured first)
 *   in working tree only         -> delete, unless the file is skipped
 *                                   (too large) or ignored under the
 *                                   *checkpoint's* ignore rules
 *   in both, different           -> restore bytes and mode
 * The scan stores every current file (the "pre-restore" checkpoint), so
 * every byte the transaction overwrites or deletes is in the store first.
 * The change list becomes an undo entry; undo/redo replay it backwards or
 * forwards through the same transaction engine.  A damaged entry of the
 * history (oplog.h) blocks only its own replay: restores push past it,
 * undo/redo refuse it before touching anything, and
 * decree_history_drop_damaged drops it when the user says so.
 */
#include "util/common.h"
#include "util/trace.h"
#include "decree/restore.h"
#include "util/alloc.h"
#include "ops/agent.h"
#include "ops/checkpoint.h"
#include "ops/workspace.h"
#include "store/record.h"
#include "scan/worktree.h"
#include "util/error.h"
#include "util/fs.h"
#include "scan/ignore.h"
#include "store/repo.h"
#include "scan/statcache.h"
#include "txn/txn.h"

typedef struct {
	txn_change *v;
	size_t n, cap;
} change_list;

static void changes_release(change_list *c)
{
	for (size_t i = 0; i < c->n; i++)
		decree_free(c->v[i].path);
	decree_free(c->v);
	memset(c, 0, sizeof(*c));
}

static txn_change *change_add(change_list *c, const char *path)
{
	txn_change *t;
	if (GROW(c->v, c->cap, c->n + 1) < 0)
		return NULL;
	t = &c->v[c->n];
	memset(t, 0, sizeof(*t));
	if (!(t->path = decree_strdup(path)))
		return NULL;
	c->n++;
	return t;
}

static void set_old(txn_change *t, const snap_entry *e)
{
	t->has_old = true;
	t->old_mode = e->mode;
	t->old_size = e->size;
	t->old_id = e->id;
}

static void set_new(txn_change *t, const snap_entry *e)
{
	t->has_new = true;
	t->new_mode = e->mode;
	t->new_size = e->size;
	t->new_id = e->id;
}

/* Each of `paths` must name something of the checkpoint's or the working
 * tree's: a path of the checkpoint's the walk does not have is among the
 * differences. */
static int check_paths(const char *const *paths, const worktree_cmp *cmp)
{
	if (!paths)
		return 0;
	for (size_t i = 0; paths[i]; i++) {
		const char *const one[2] = { paths[i], NULL };
		bool hit = false;
		if (!fs_path_is_safe(paths[i], true))
			return DECREE_EINVALID;
		for (size_t k = 0; k < cmp->walk.n && !hit; k++)
			hit = snap_path_selected(one, cmp->walk.v[k].path);
		for (size_t k = 0; k < cmp->n && !hit; k++)
			hit = cmp->v[k].a &&
			      snap_path_selected(one, cmp->v[k].path);
		if (!hit)
			return decree_error_set(
				DECREE_ENOTFOUND,
				"path '%s' is neither in the checkpoint nor in the working tree",
				paths[i]);
	}
	return 0;
}

static int cmp_path_ptr(const void *a, const void *b)
{
	return path_cmp(*(char *const *)a, *(char *const *)b);
}

/* in_way: a directory or special file stands at a path the change
 * creates (restore's plan names it; undo and redo do not look). */
static void report(const decree_restore_options *o, decree_restore_result *res,
		   const txn_change *t, bool in_way)
{
	decree_action a = !t->has_new  ? DECREE_ACTION_DELETE
			  : t->has_old ? DECREE_ACTION_RESTORE
			  : in_way     ? DECREE_ACTION_REPLACE
				       : DECREE_ACTION_CREATE;
	if (a == DECREE_ACTION_DELETE)
		res->deleted++;
	else if (a == DECREE_ACTION_CREATE)
		res->created++;
	else
		res->restored++;
	if (o->plan)
		o->plan(o->payload, t->path, a);
}

/* --- restore -----------------------------------------------------------------
 */

/* The changes that make the working tree the checkpoint's: one per path
 * where they differ (cmp), except what the checkpoint's rules left out. */
static int plan_restore(change_list *out, decree_store *s, odb_writer *w,
			const worktree_cmp *cmp, ignore_matcher *rules,
			const char *const *paths, const strset *only)
{
	int r;

	for (size_t k = 0; k < cmp->n; k++) {
		const char *path = cmp->v[k].path;
		const snap_entry *a = cmp->v[k].b; /* the working tree's */
		const snap_entry *b = cmp->v[k].a; /* the checkpoint's */
		txn_change *t;
		bool excluded, present;

		if (!snap_path_selected(paths, path) ||
		    (only && !strset_has(only, path)) ||
		    repo_path_in_store(s, path))
			continue; /* the store: never scanned, never restored */
		if (a && b && snap_entry_same(a, b))
			continue;
		if (b && b->mode == MODE_SKIP)
			continue; /* never stored: cannot be restored, never
				     deleted */
		if (!b) {
			if (a->mode == MODE_SKIP)
				continue;
			if ((r = ignore_matcher_excluded(rules, path,
							 strlen(path), false,
							 &excluded)) < 0)
				return r;
			if (excluded)
				continue; /* ignored back then: not ours to
					     delete */
			if (!(t = change_add(out, path)))
				return -1;
			set_old(t, a);
			continue;
		}
		if (!(t = change_add(out, path)))
			return -1;
		set_new(t, b);
		if (a && a->mode != MODE_SKIP) {
			set_old(t, a);
		} else if ((r = txn_capture_old(t, s, w, &present)) < 0) {
			return r; /* absent, ignored now, or too large: read it
				   */
		}
		if (t->has_old && t->old_mode == t->new_mode &&
		    !oid_cmp(&t->old_id, &t->new_id)) {
			decree_free(t->path);
			out->n--;
		}
	}
	return 0;
}

/*
 * agent_only: of the paths the agent of the checkpoint's session changed
 * since the checkpoint, select (into *only) those still exactly as the
 * agent's last write left them; the others the user changed after that
 * write, and go to *user (left alone, reported).  A path in neither the
 * tree nor the checkpoint, one already as the checkpoint has it, or one
 * above the size limit, is nothing to do.
 */
static int select_agent_paths(strset *only, strset *user, decree_store *s,
			      const record *rec, const worktree_cmp *cmp,
			      const char *const *paths)
{
	agent_writes aw;
	int r;

	if ((r = agent_writes_since(&aw, s, rec->session, rec->info.id,
				    rec->info.created_ns)) < 0)
		return r;
	for (size_t i = 0; i < aw.n && r == 0; i++) {
		const agent_write *a = &aw.v[i];
		const snap_entry *now = snap_find(&cmp->walk, a->path);
		const snap_entry *then = worktree_cmp_tree_entry(cmp, a->path);
		bool as_left;
		if (!snap_path_selected(paths, a->path) || (!now && !then) ||
		    (now && now->mode == MODE_SKIP) ||
		    (now && then && snap_entry_same(now, then)))
			continue; /* nothing to do (as the checkpoint has it) */
		as_left = now ? a->present && now->mode == a->mode &&
					  !oid_cmp(&now->id, &a->id)
			      : !a->present;
		r = strset_put(as_left ? only : user, a->path, 1);
	}
	agent_writes_release(&aw);
	return r;
}

/* Report the user's edits agent_only leaves alone, in path order. */
static int report_user_edits(const decree_restore_options *o,
			     decree_restore_result *res, const strset *user)
{
	char **v;
	size_t n = 0;

	if (!user->count)
		return 0;
	if (!(v = decree_calloc(user->count, sizeof(*v))))
		return -1;
	for (size_t i = 0; i < user->cap; i++)
		if (user->keys[i])
			v[n++] = user->keys[i];
	qsort(v, n, sizeof(*v), cmp_path_ptr);
	for (size_t i = 0; i < n; i++) {
		res->skipped_user_edits++;
		if (o->plan)
			o->plan(o->payload, v[i], DECREE_ACTION_SKIP_USER_EDIT);
	}
	decree_free(v);
	return 0;
}

/* The pre-restore capture, whose record is written while the
 * transaction runs (checkpoint_write_begin). */
typedef struct {
	checkpoint_pending pend;
	char *id; /* where its id goes */
} capture;

/* txn_spec.before_commit of a restore: the capture's record is durable
 * before the restore is. */
static int capture_written(void *arg)
{
	capture *c = arg;

	return checkpoint_write_end(&c->pend, c->id);
}

int decree_checkpoint_restore(decree_restore_result *res, decree_store *s,
			      const char *ref, const decree_restore_options *o)
{
	decree_restore_options def = DECREE_RESTORE_OPTIONS_INIT;
	decree_restore_result dummy;
	record rec;
	worktree_cmp cmp;
	snap *cur = &cmp.walk;
	change_list ch = { NULL, 0, 0 };
	ignore_matcher *rules = NULL;
	worktree_view view = { 0 };
	worktree_saver saver = WORKTREE_SAVER_INIT;
	record_meta m = RECORD_META_INIT;
	capture cap;
	odb_writer *w = NULL;
	statcache *cache = NULL;
	odb *db;
	const volatile int *cancel;
	strset only = STRSET_INIT, user = STRSET_INIT;
	bool agent_only;
	int r;

	if (!o)
		o = &def;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	memset(&rec, 0, sizeof(rec));
	memset(&cap, 0, sizeof(cap));
	memset(&cmp, 0, sizeof(cmp));
	repo_notices_clear(s);
	if (o->version < 1 || o->version > DECREE_RESTORE_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid restore options");
	cancel = o->version >= 2 ? o->cancel : NULL;
	agent_only = o->version >= 3 && o->agent_only;
	if ((r = repo_need_root(s)) < 0 ||
	    (r = record_resolve(&rec, s, ref)) < 0)
		return r;
	if (!o->dry_run && (r = txn_lock(NULL, NULL, s)) < 0) {
		record_release(&rec);
		return r;
	}
	trace_phase("restore: locked");
	if ((r = repo_odb(&db, s, false)) < 0)
		goto done;
	{
		const char **excludes = NULL;
		/* the checkpoint's rules: its ignore files, and the excludes
		 * and size limit it was made with (with the store's) */
		checkpoint_view(&view, &rec);
		if (!o->dry_run && (r = odb_writer_new(&w, db)) < 0)
			goto done;
		/* the tree as the checkpoint's ignore rules see it: after the
		 * restore those rules are the tree's again */
		if ((r = worktree_compare(&cmp, s, w, &cache, &rec.tree, &view,
					  false)) < 0 ||
		    (r = worktree_excludes(&excludes, s, &view)) < 0)
			goto done;
		r = ignore_matcher_new(&rules, worktree_cmp_rules_load, &cmp,
				       excludes);
		decree_free(excludes);
		if (r == 0)
			r = check_paths(o->paths, &cmp);
		if (r == 0 && agent_only)
			r = select_agent_paths(&only, &user, s, &rec, &cmp,
					       o->paths);
		if (r == 0)
			r = plan_restore(&ch, s, w, &cmp, rules, o->paths,
					 agent_only ? &only : NULL);
		ignore_matcher_free(rules);
		rules = NULL;
		if (r < 0)
			goto done;
	}
	trace_phase("restore: planned");
	for (size_t i = 0; i < ch.n; i++) {
		const txn_change *t = &ch.v[i];
		struct stat st;
		bool in_way = false;
		if (t->has_new && !t->has_old &&
		    (r = fs_lstat_beneath(&in_way, &st, s->rootfd, t->path)) <
			    0)
			goto done;
		report(o, res, t, in_way);
	}
	if ((r = report_user_edits(o, res, &user)) < 0)
		goto done;
	if (o->dry_run && ch.n) {
		/* refuse what the real run would refuse (a non-empty
		 * directory in the way, ...), so both say the same */
		txn_spec sp;
		memset(&sp, 0, sizeof(sp));
		sp.changes = ch.v;
		sp.n = ch.n;
		r = txn_plan_check(s, &sp);
	}
	if (o->dry_run || ch.n == 0)
		goto done;
	if (cancel && *cancel) {
		r = decree_error_set(DECREE_ECANCELLED,
				     "interrupted; nothing was changed");
		goto done;
	}
	/* Capture the present (every byte we will touch is in w), with the
	 * rules it was scanned with: restoring the capture must not delete
	 * what they leave out either.  Its objects are durable before the
	 * transaction starts; its change counts and record are written while
	 * the transaction runs, and are durable before it commits. */
	m.session = rec.session;
	m.label = CAPTURE_PRE_RESTORE;
	m.excludes = view.excludes;
	m.max_file_size = view.max_file_size;
	m.config = view.config;
	m.config_known = view.config_known;
	/* The cache takes this capture's tree ids, though the restore
	 * changes the tree next: the cache vouches for a directory's id only
	 * when the next scan finds everything below it as the cache has it
	 * (statcache.h), and a file the restore writes or deletes is not (new
	 * inode and ctime, or gone).  The next capture or checkpoint then
	 * builds only the trees the restore and later edits touched. */
	if ((r = checkpoint_write_begin(&cap.pend, s, w, cur, &m, cache)) < 0)
		goto done;
	cap.id = res->pre_checkpoint;
	trace_phase("restore: capture stored");
	/* The cache is saved while the transaction waits on the disk: it
	 * names only what the capture made durable, and it vouches for the
	 * files the transaction writes or deletes no more than it did. */
	worktree_save_statcache_start(&saver, s, cur, cache);
	cache = NULL;
	{
		oplog_entry e;
		txn_spec sp;
		char what[80];
		bool committed = false;
		memset(&e, 0, sizeof(e));
		memset(&sp, 0, sizeof(sp));
		snprintf(what, sizeof(what), "restore %.12s", rec.info.id);
		e.kind = OPLOG_RESTORE;
		e.time_ns = fs_now_ns();
		e.session = rec.session;
		e.what = what;
		e.changes = ch.v;
		e.n = ch.n;
		sp.changes = ch.v;
		sp.n = ch.n;
		sp.history = TXN_HISTORY_PUSH;
		sp.entry = &e;
		sp.progress = o->progress;
		sp.payload = o->payload;
		sp.committed = &committed;
		sp.cancel = cancel;
		sp.before_commit = capture_written;
		sp.before_commit_arg = &cap;
		if ((r = txn_run(s, &sp)) < 0) {
			char msg[1024];
			snprintf(msg, sizeof(msg), "%s", error_last());
			/* failed before its commit: the record, if written */
			if (cap.pend.pending &&
			    checkpoint_write_end(&cap.pend, cap.id) < 0)
				cap.id[0] = '\0';
			/* Nothing changed: drop the capture again, unless the
			 * store is broken and recovery may still need it. */
			if (!committed && !s->broken && cap.id[0]) {
				record_remove(s, cap.id);
				cap.id[0] = '\0';
			}
			decree_error_set(r, "%s", msg);
			goto done;
		}
	}
	trace_phase("restore: transaction done");
	checkpoint_repack_small(s); /* the capture added a pack */
done:
	/* before cur goes; a cache, so failing to save it fails nothing */
	if (worktree_save_statcache_wait(&saver) < 0 && r == 0)
		warning_set(0,
			    "the stat cache could not be saved (%s); that "
			    "only costs speed",
			    saver.msg);
	strset_release(&only);
	strset_release(&user);
	statcache_free(cache);
	ignore_matcher_free(rules);
	odb_writer_free(w);
	changes_release(&ch);
	worktree_cmp_release(&cmp); /* (after the rules that use it) */
	record_release(&rec);
	if (!o->dry_run)
		repo_unlock(s);
	return r;
}

/* --- undo / redo ------------------------------------------------------------
 */

/* Undo or redo overwrote or deleted paths edited after the operation it
 * reverses: their edited state is in the capture `pre` (decree/checkpoint.h,
 * DECREE_NOTICE_EDITS_SAVED). */
static void edits_notice(decree_store *s, bool undo, const char *pre,
			 char **paths, size_t n)
{
	decree_notice no;
	buf msg = BUF_INIT;

	memset(&no, 0, sizeof(no));
	no.kind = DECREE_NOTICE_EDITS_SAVED;
	no.count = n;
	no.paths = (const char *const *)paths;
	no.npaths = n;
	snprintf(no.checkpoint, sizeof(no.checkpoint), "%s", pre);
	no.label = undo ? "pre-undo" : "pre-redo";
	buf_printf(&msg,
		   "%s changed %zu file%s edited after the %s ('%s'%s); the "
		   "edited versions are in checkpoint %.12s (%s)",
		   undo ? "undo" : "redo", n, n == 1 ? "" : "s",
		   undo ? "operation it undid" : "undo it redid", paths[0],
		   n > 1 ? ", ..." : "", pre, undo ? "pre-undo" : "pre-redo");
	no.message = msg.ptr;
	if (repo_notice_add(s, &no) < 0)
		error_clear(); /* only a notice */
	buf_release(&msg);
}

static int replay(decree_restore_result *res, decree_store *s,
		  const decree_restore_options *o, bool undo)
{
	decree_restore_options def = DECREE_RESTORE_OPTIONS_INIT;
	decree_restore_result dummy;
	char path[PATH_MAX];
	oplog l = OPLOG_INIT;
	oplog_entry *e;
	change_list ch = { NULL, 0, 0 };
	odb_writer *w = NULL;
	odb *db;
	bool drifted = false;
	char **edited = NULL; /* paths changed since the operation, written */
	size_t nedited = 0;
	decree_progress meter;
	int r;

	if (!o)
		o = &def;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	repo_notices_clear(s);
	if (o->version < 1 || o->version > DECREE_RESTORE_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid restore options");
	if (!repo_exists(s))
		return decree_error_set(DECREE_ENOTFOUND, "nothing to %s",
					undo ? "undo" : "redo");
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	repo_file(path, s, "oplog");
	/* Damaged entries below the top do not matter here; a damaged top
	 * entry cannot be replayed, and nothing is touched. */
	if ((r = oplog_load_all(&l, path)) < 0)
		goto done;
	if (undo ? !l.nundo : !l.nredo) {
		r = decree_error_set(DECREE_ENOTFOUND, "nothing to %s",
				     undo ? "undo" : "redo");
		goto done;
	}
	e = undo ? &l.undo[l.nundo - 1] : &l.redo[l.nredo - 1];
	if (e->damaged) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"cannot %s: the last entry of the %s history in '%s' is "
			"damaged (%s); nothing was changed",
			undo ? "undo" : "redo", undo ? "undo" : "redo", path,
			e->damage);
		goto done;
	}
	if (e->kind == OPLOG_WORKSPACE) {
		/* a discarded workspace: made again, or discarded again */
		if (!o->dry_run)
			r = workspace_replay(s, e, undo, res);
		goto done;
	}
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0)
		goto done;
	if (!(edited = decree_calloc(e->n + 1, sizeof(*edited)))) {
		r = -1;
		goto done;
	}
	memset(&meter, 0, sizeof(meter));
	meter.stage = DECREE_PROGRESS_SCAN;
	meter.files_total = e->n;
	meter.total_known = true;
	for (size_t i = 0; i < e->n; i++) {
		const txn_change *src = &e->changes[i];
		bool want = undo ? src->has_old : src->has_new;
		snap_entry goal;
		txn_change *t;
		bool present, expected, moved;

		meter.files = i;
		repo_progress(s, &meter);
		if (!snap_path_selected(o->paths, src->path))
			continue;
		memset(&goal, 0, sizeof(goal));
		goal.mode = undo ? src->old_mode : src->new_mode;
		goal.size = undo ? src->old_size : src->new_size;
		goal.id = undo ? src->old_id : src->new_id;
		if (!(t = change_add(&ch, src->path))) {
			r = -1;
			goto done;
		}
		if ((r = txn_capture_old(t, s, w, &present)) < 0)
			goto done;
		/* did anything change since the operation? */
		expected = undo ? src->has_new : src->has_old;
		moved = present != expected ||
			(present && (t->old_mode != (undo ? src->new_mode
							  : src->old_mode) ||
				     oid_cmp(&t->old_id, undo ? &src->new_id
							      : &src->old_id)));
		drifted |= moved;
		if (want)
			set_new(t, &goal);
		if (t->has_old == t->has_new &&
		    (!t->has_old || (t->old_mode == t->new_mode &&
				     !oid_cmp(&t->old_id, &t->new_id)))) {
			decree_free(t->path);
			ch.n--;
		} else if (moved && present) {
			/* edited since, and about to be overwritten or
			 * deleted (borrowed from ch) */
			edited[nedited++] = t->path;
		}
	}
	meter.files = e->n;
	repo_progress(s, &meter);
	for (size_t i = 0; i < ch.n; i++)
		report(o, res, &ch.v[i], false);
	if (o->dry_run)
		goto done;
	if (drifted) {
		/* Edits made after the operation: keep them reachable. */
		snap cur = SNAP_INIT;
		r = worktree_scan(&cur, s, w, NULL, NULL, false);
		if (r == 0)
			r = checkpoint_write(res->pre_checkpoint, s, w, &cur,
					     e->session, NULL,
					     undo ? CAPTURE_PRE_UNDO
						  : CAPTURE_PRE_REDO);
		snap_release(&cur);
		if (r < 0)
			goto done;
	} else if ((r = odb_writer_commit(w)) < 0) {
		goto done;
	}
	{
		txn_spec sp;
		memset(&sp, 0, sizeof(sp));
		sp.changes = ch.v;
		sp.n = ch.n;
		sp.history = undo ? TXN_HISTORY_UNDO : TXN_HISTORY_REDO;
		sp.moved_id = e->id;
		sp.progress = o->progress;
		sp.payload = o->payload;
		sp.cancel = o->version >= 2 ? o->cancel : NULL;
		if ((r = txn_run(s, &sp)) == 0)
			checkpoint_repack_small(s); /* a capture adds a pack */
	}
	if (r == 0 && nedited && res->pre_checkpoint[0])
		edits_notice(s, undo, res->pre_checkpoint, edited, nedited);
done:
	decree_free(edited);
	odb_writer_free(w);
	changes_release(&ch);
	oplog_release(&l);
	repo_unlock(s);
	return r;
}

int decree_undo(decree_restore_result *res, decree_store *s,
		const decree_restore_options *o)
{
	int r = repo_need_root(s);
	return r < 0 ? r : replay(res, s, o, true);
}

int decree_redo(decree_restore_result *res, decree_store *s,
		const decree_restore_options *o)
{
	int r = repo_need_root(s);
	return r < 0 ? r : replay(res, s, o, false);
}

int decree_history_drop_damaged(size_t *dropped, decree_store *s)
{
	char path[PATH_MAX];
	oplog l = OPLOG_INIT;
	size_t dummy;
	int r;

	if (!dropped)
		dropped = &dummy;
	*dropped = 0;
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	repo_file(path, s, "oplog");
	if ((r = oplog_load_all(&l, path)) == 0 &&
	    (*dropped = oplog_drop_damaged(&l)) > 0)
		r = oplog_save(&l, path);
	if (r < 0)
		*dropped = 0;
	oplog_release(&l);
	repo_unlock(s);
	return r;
}
