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
#include "util/alloc.h"
#include "util/error.h"
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

const snap_entry *worktree_rules_file(const worktree_rules *r, const char *path)
{
	const snap_entry *e = snap_find(&r->files, path);

	return e && e->mode != MODE_SKIP && e->mode != MODE_LINK ? e : NULL;
}

int worktree_rules_load(void *payload, const char *dir, const char *name,
			buf *out, bool *found)
{
	const worktree_rules *l = payload;
	char path[PATH_MAX];
	const snap_entry *e;

	*found = false;
	snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", name);
	if (!(e = worktree_rules_file(l, path)))
		return 0;
	*found = true;
	return odb_read(out, NULL, l->db, &e->id);
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

int worktree_scan_seen(snap *out, decree_store *s, odb_writer *w,
		       statcache **cache_out, const worktree_view *view,
		       ignore_seen_fn seen, void *payload)
{
	return scan_worktree(out, s, w, cache_out, NULL, false, view, seen,
			     payload);
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
