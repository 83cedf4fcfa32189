/*
 * worktree.c - the working tree of a store's project root, scanned with
 * the store's settings (size limit, excludes, threads, the store's own
 * directory skipped) and its stat cache (see worktree.h).
 */
#include "util/common.h"
#include "scan/worktree.h"
#include "scan/ignore.h"
#include "scan/scan.h"
#include "scan/statcache.h"
#include "store/repo.h"
#include "store/tree.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/trace.h"

int worktree_rules_init(worktree_rules *r, const snap *s, odb *db)
{
	memset(r, 0, sizeof(*r));
	r->db = db;
	for (size_t i = 0; i < s->n; i++) {
		const char *p = s->v[i].path, *slash = strrchr(p, '/');
		const char *bn = slash ? slash + 1 : p;
		if (ignore_is_rules_file(bn, strlen(bn)) &&
		    snap_push(&r->files, &s->v[i]) < 0) {
			worktree_rules_release(r);
			return -1;
		}
	}
	return 0;
}

void worktree_rules_release(worktree_rules *r)
{
	snap_release(&r->files); /* (its arena is empty: paths are s's) */
	memset(r, 0, sizeof(*r));
}

/* Is `e` read as a rules file (worktree_rules_load)?  Not when skipped as
 * too large, nor a symlink. */
static bool rules_entry(const snap_entry *e)
{
	return e && e->mode != MODE_SKIP && e->mode != MODE_LINK;
}

const snap_entry *worktree_rules_file(const worktree_rules *r, const char *path)
{
	const snap_entry *e = snap_find(&r->files, path);

	return rules_entry(e) ? e : NULL;
}

/* The rules file dir/name as `lookup` finds it, read from db (an
 * ignore_load_fn's work). */
static int load_rules_file(odb *db, worktree_lookup_fn lookup, void *payload,
			   const char *dir, const char *name, buf *out,
			   bool *found)
{
	char path[PATH_MAX];
	const snap_entry *e;

	*found = false;
	snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", name);
	if (!rules_entry(e = lookup(payload, path)))
		return 0;
	*found = true;
	return odb_read(out, NULL, db, &e->id);
}

/* worktree_lookup_fn of a worktree_rules */
static const snap_entry *rules_file_of(void *payload, const char *path)
{
	return worktree_rules_file(payload, path);
}

int worktree_rules_load(void *payload, const char *dir, const char *name,
			buf *out, bool *found)
{
	const worktree_rules *l = payload;

	return load_rules_file(l->db, rules_file_of, payload, dir, name, out,
			       found);
}

const char *const *worktree_view_config(const worktree_view *view,
					const decree_store *s)
{
	return view && view->config_known ? view->config
					  : (const char *const *)s->excludes;
}

static size_t strv_len(const char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

static bool strv_same(const char *const *a, const char *const *b)
{
	size_t n = strv_len(a);

	if (n != strv_len(b))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return true;
}

int worktree_excludes(const char ***out, const decree_store *s,
		      const worktree_view *view)
{
	const char *const *cfg = worktree_view_config(view, s);
	size_t ns = strv_len(cfg), nv = view ? strv_len(view->excludes) : 0;
	const char **v;

	*out = NULL;
	if (!ns && !nv)
		return 0;
	if (!(v = decree_calloc(ns + nv + 1, sizeof(*v))))
		return -1;
	for (size_t i = 0; i < ns; i++)
		v[i] = cfg[i];
	for (size_t i = 0; i < nv; i++)
		v[ns + i] = view->excludes[i];
	*out = v;
	return 0;
}

bool worktree_view_same(const worktree_view *a, const worktree_view *b)
{
	static const worktree_view none = { NULL, 0, NULL, false };

	a = a ? a : &none;
	b = b ? b : &none;
	if (a->max_file_size != b->max_file_size ||
	    a->config_known != b->config_known ||
	    !strv_same(a->excludes, b->excludes))
		return false;
	return !a->config_known || strv_same(a->config, b->config);
}

int worktree_scan(snap *out, decree_store *s, odb_writer *w,
		  statcache **cache_out, const snap *rules, bool lazy_hash)
{
	return worktree_scan_view(out, s, w, cache_out, rules, lazy_hash, NULL);
}

static int scan_worktree(snap *out, decree_store *s, odb_writer *w,
			 statcache **cache_out, const snap *rules,
			 bool lazy_hash, const worktree_view *view,
			 ignore_seen_fn seen, void *seen_payload)
{
	char path[PATH_MAX];
	statcache *cache = NULL;
	const char **excludes = NULL;
	worktree_rules cr;
	scan_opts o;
	int r;

	if (cache_out)
		*cache_out = NULL;
	if ((r = repo_need_root(s)) < 0)
		return r;
	memset(&o, 0, sizeof(o));
	if ((r = worktree_excludes(&excludes, s, view)) < 0)
		return r;
	repo_file(path, s, "statcache");
	trace_phase("scan: excludes");
	if ((r = statcache_load(&cache, path)) < 0) {
		decree_free(excludes);
		return r;
	}
	o.max_file_size = view && view->max_file_size ? view->max_file_size
						      : s->max_file_size;
	o.excludes = excludes;
	o.threads = s->threads;
	o.store = w;
	o.cache = cache;
	o.skip_dir = s->store_rel;
	o.lazy_hash = lazy_hash;
	o.stats = &s->last_scan;
	o.progress = s->progress;
	o.progress_payload = s->progress_payload;
	o.ignore_seen = seen;
	o.ignore_seen_payload = seen_payload;
	if (rules) {
		odb *db;
		if ((r = repo_odb(&db, s, false)) < 0 ||
		    (r = worktree_rules_init(&cr, rules, db)) < 0) {
			statcache_free(cache);
			decree_free(excludes);
			return r;
		}
		o.ignore_load = worktree_rules_load;
		o.ignore_payload = &cr;
	}
	trace_phase("scan: statcache loaded");
	r = scan_tree(out, s->rootfd, &o);
	trace_phase("scan: walked");
	if (rules)
		worktree_rules_release(&cr);
	decree_free(excludes);
	if (r == 0 && cache_out)
		*cache_out = cache;
	else
		statcache_free(cache);
	return r;
}

int worktree_scan_view(snap *out, decree_store *s, odb_writer *w,
		       statcache **cache_out, const snap *rules, bool lazy_hash,
		       const worktree_view *view)
{
	return scan_worktree(out, s, w, cache_out, rules, lazy_hash, view, NULL,
			     NULL);
}

/* --- the rules files a walk looked for (worktree_seen) -------------------- */

void worktree_seen_init(worktree_seen *ws)
{
	memset(ws, 0, sizeof(*ws));
	pthread_mutex_init(&ws->mu, NULL);
}

void worktree_seen_release(worktree_seen *ws)
{
	arena_release(&ws->paths);
	decree_free(ws->v);
	pthread_mutex_destroy(&ws->mu);
	memset(ws, 0, sizeof(*ws));
}

/* scan_opts.ignore_seen: note one rules file (from any walk thread). */
static int note_seen(void *payload, const char *dir, const char *name,
		     const buf *content, bool found)
{
	worktree_seen *ws = payload;
	worktree_seen_file f;
	size_t len = strlen(dir) + strlen(name) + 2;
	int r = 0;

	memset(&f, 0, sizeof(f));
	f.found = found;
	if (found && content)
		sha256_buf(&f.id, content->ptr, content->len);
	pthread_mutex_lock(&ws->mu);
	if (!content) {
		ws->unreadable = true;
	} else if (!(f.path = arena_alloc(&ws->paths, len)) ||
		   GROW(ws->v, ws->cap, ws->n + 1) < 0) {
		r = DECREE_ERROR; /* (out of memory, said) */
	} else {
		snprintf(f.path, len, "%s%s%s", dir, *dir ? "/" : "", name);
		ws->v[ws->n++] = f;
	}
	pthread_mutex_unlock(&ws->mu);
	return r;
}

int worktree_scan_seen(snap *out, decree_store *s, odb_writer *w,
		       statcache **cache_out, const worktree_view *view,
		       bool lazy_hash, worktree_seen *seen)
{
	return scan_worktree(out, s, w, cache_out, NULL, lazy_hash, view,
			     note_seen, seen);
}

bool worktree_seen_match(const worktree_seen *ws, worktree_lookup_fn lookup,
			 void *payload)
{
	if (ws->unreadable)
		return false;
	for (size_t i = 0; i < ws->n; i++) {
		const worktree_seen_file *f = &ws->v[i];
		const snap_entry *e = lookup(payload, f->path);
		if (!rules_entry(e))
			e = NULL;
		if (!e != !f->found || (e && oid_cmp(&e->id, &f->id)))
			return false;
	}
	return true;
}

/* --- a tree against the working tree (worktree_compare) ------------------ */

static int note_change(void *payload, const char *path, const snap_entry *a,
		       const snap_entry *b)
{
	worktree_cmp *c = payload;
	const char *slash = strrchr(path, '/');
	const char *bn = slash ? slash + 1 : path;
	worktree_change t = { path, a, b };

	if (ignore_is_rules_file(bn, strlen(bn))) {
		if (GROW(c->rules, c->rulescap, c->nrules + 1) < 0)
			return DECREE_ERROR;
		c->rules[c->nrules++] = t;
	}
	if (GROW(c->v, c->cap, c->n + 1) < 0)
		return DECREE_ERROR;
	c->v[c->n++] = t;
	return 0;
}

static int change_cmp(const void *a, const void *b)
{
	return path_cmp(((const worktree_change *)a)->path,
			((const worktree_change *)b)->path);
}

static const worktree_change *find_change(const worktree_change *v, size_t n,
					  const char *path)
{
	worktree_change key = { path, NULL, NULL };

	return n ? bsearch(&key, v, n, sizeof(key), change_cmp) : NULL;
}

const snap_entry *worktree_cmp_tree_entry(const worktree_cmp *c,
					  const char *path)
{
	const worktree_change *d = find_change(c->v, c->n, path);

	return d ? d->a : snap_find(&c->walk, path);
}

/* worktree_lookup_fn: the tree's rules file at `path`: the one noted as
 * different, or, not noted, the walk's (the same; looked up among its
 * rules files only, which costs no cache miss per step of a search of the
 * whole walk). */
static const snap_entry *tree_rules_file(void *payload, const char *path)
{
	const worktree_cmp *c = payload;
	const worktree_change *d = find_change(c->rules, c->nrules, path);

	return d ? d->a : worktree_rules_file(&c->walk_rules, path);
}

int worktree_cmp_rules_load(void *payload, const char *dir, const char *name,
			    buf *out, bool *found)
{
	const worktree_cmp *c = payload;

	return load_rules_file(c->db, tree_rules_file, payload, dir, name, out,
			       found);
}

/* Walk with the rules on disk and note what differs from `tree`, reading
 * only its directories whose ids differ from the walk's.  *same: every
 * rules file the walk used is the tree's (else the notes mean nothing). */
static int diff_like(worktree_cmp *c, bool *same, decree_store *s,
		     odb_writer *w, statcache **cache_out, const oid *tree,
		     const worktree_view *view, bool lazy_hash)
{
	worktree_seen seen;
	statcache *cache = NULL;
	tree_ids ids = TREE_IDS_INIT;
	oid root;
	int r;

	*same = false;
	worktree_seen_init(&seen);
	r = worktree_scan_seen(&c->walk, s, w, &cache, view, lazy_hash, &seen);
	/* the walk's tree ids: those its cache vouches for, the rest hashed
	 * (nothing stored; a directory with an unhashed file has none) */
	if (r == 0)
		r = tree_write_known(&root, NULL, &c->walk, &ids,
				     cache ? statcache_tree_hints(cache)
					   : NULL);
	if (r == 0)
		r = tree_diff_like(&c->keep, c->db, tree, &c->walk, &ids,
				   note_change, c);
	if (r == 0)
		r = worktree_rules_init(&c->walk_rules, &c->walk, c->db);
	if (r == 0)
		*same = worktree_seen_match(&seen, tree_rules_file, c);
	trace_phase("scan: tree compared");
	if (r == 0 && *same && cache_out)
		*cache_out = cache;
	else
		statcache_free(cache);
	tree_ids_release(&ids);
	worktree_seen_release(&seen);
	return r;
}

/* Start again: nothing noted, nothing walked. */
static void cmp_clear(worktree_cmp *c)
{
	worktree_rules_release(&c->walk_rules);
	snap_release(&c->keep);
	snap_release(&c->walk);
	c->n = c->nrules = 0;
}

int worktree_compare(worktree_cmp *c, decree_store *s, odb_writer *w,
		     statcache **cache_out, const oid *tree,
		     const worktree_view *view, bool lazy_hash)
{
	const snap *sa;
	bool same = false;
	int r;

	memset(c, 0, sizeof(*c));
	if (cache_out)
		*cache_out = NULL;
	if ((r = repo_odb(&c->db, s, false)) < 0)
		return r;
	if (!repo_tree_cached(s, tree) &&
	    (r = diff_like(c, &same, s, w, cache_out, tree, view, lazy_hash)) <
		    0)
		return r;
	if (same)
		return 0;
	/* other rules on disk (or the tree at hand): the tree whole, and the
	 * walk with its rules */
	cmp_clear(c);
	if ((r = repo_tree(&sa, s, tree)) < 0 ||
	    (r = worktree_scan_view(&c->walk, s, w, cache_out, sa, lazy_hash,
				    view)) < 0 ||
	    (r = snap_diff(sa, &c->walk, note_change, c)) < 0 ||
	    (r = worktree_rules_init(&c->walk_rules, &c->walk, c->db)) < 0)
		return r;
	return 0;
}

void worktree_cmp_release(worktree_cmp *c)
{
	cmp_clear(c);
	decree_free(c->v);
	decree_free(c->rules);
	memset(c, 0, sizeof(*c));
}

int worktree_diff_tree(snap *keep, snap *walk, decree_store *s, const oid *tree,
		       const worktree_view *view, bool lazy_hash,
		       snap_diff_fn fn, void *payload)
{
	worktree_cmp c;
	int r;

	snap_release(keep);
	snap_release(walk);
	r = worktree_compare(&c, s, NULL, NULL, tree, view, lazy_hash);
	for (size_t i = 0; i < c.n && r == 0; i++)
		r = fn(payload, c.v[i].path, c.v[i].a, c.v[i].b);
	/* the entries fn saw stay where they are: their snapshots go to the
	 * caller */
	*keep = c.keep;
	*walk = c.walk;
	c.keep = (snap)SNAP_INIT;
	c.walk = (snap)SNAP_INIT;
	worktree_cmp_release(&c);
	return r;
}

int worktree_save_statcache(decree_store *s, const snap *cur, statcache *cache)
{
	char path[PATH_MAX];
	int r;

	repo_file(path, s, "statcache");
	r = statcache_update(path, cur, cache);
	trace_phase("statcache: updated");
	statcache_free(cache);
	return r;
}

static void *saver_main(void *arg)
{
	worktree_saver *sv = arg;

	if ((sv->r = statcache_update(sv->path, sv->cur, sv->cache)) < 0) {
		snprintf(sv->msg, sizeof(sv->msg), "%s", error_last());
		error_clear(); /* (this thread's) */
	}
	statcache_free(sv->cache);
	sv->cache = NULL;
	return NULL;
}

void worktree_save_statcache_start(worktree_saver *sv, decree_store *s,
				   const snap *cur, statcache *cache)
{
	repo_file(sv->path, s, "statcache");
	sv->cur = cur;
	sv->cache = cache;
	sv->r = 0;
	sv->running = pthread_create(&sv->thread, NULL, saver_main, sv) == 0;
	if (!sv->running)
		saver_main(sv);
}

int worktree_save_statcache_wait(worktree_saver *sv)
{
	int r;

	if (sv->running)
		pthread_join(sv->thread, NULL);
	if (sv->cur)
		trace_phase("statcache: saved (thread joined)");
	r = sv->r;
	sv->running = false;
	sv->cur = NULL;
	sv->r = 0;
	return r;
}
