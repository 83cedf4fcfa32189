/*
 * snap.c - flat snapshots: arena-allocated paths, canonical sort, diff.
 */
#include "util/common.h"
#include "store/snap.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/fs.h"

snap_entry *snap_add(snap *s, const char *path, size_t len)
{
	snap_entry *e;
	char *p;

	if (GROW(s->v, s->cap, s->n + 1) < 0 ||
	    !(p = arena_alloc(&s->paths, len + 1)))
		return NULL;
	memcpy(p, path, len);
	p[len] = '\0';
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	e->path = p;
	return e;
}

void snap_entry_set_stat(snap_entry *e, const struct stat *st)
{
	e->mtime_ns = st_mtime_ns(st);
	e->ctime_ns = st_ctime_ns(st);
	e->ino = st->st_ino;
	e->dev = st->st_dev;
}

int snap_push(snap *s, const snap_entry *e)
{
	if (GROW(s->v, s->cap, s->n + 1) < 0)
		return -1;
	s->v[s->n++] = *e;
	return 0;
}

int snap_reserve(snap *s, size_t n)
{
	size_t want;

	if (decree_add_overflow(&want, s->n, n) < 0)
		return -1;
	return GROW(s->v, s->cap, want);
}

int path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;

	while (*x && *x == *y) {
		x++;
		y++;
	}
	if (*x == *y)
		return 0;
	if (!*x)
		return -1;
	if (!*y)
		return 1;
	if (*x == '/')
		return -1;
	if (*y == '/')
		return 1;
	return *x < *y ? -1 : 1;
}

static int entry_cmp(const void *a, const void *b)
{
	return path_cmp(((const snap_entry *)a)->path,
			((const snap_entry *)b)->path);
}

void snap_sort(snap *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), entry_cmp);
}

void snap_release(snap *s)
{
	arena_release(&s->paths);
	decree_free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

snap_entry *snap_find(const snap *s, const char *path)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = path_cmp(s->v[mid].path, path);
		if (c == 0)
			return &s->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool snap_entry_same(const snap_entry *a, const snap_entry *b)
{
	if (a->mode != b->mode || a->unhashed || b->unhashed)
		return false;
	if (a->mode == MODE_SKIP)
		return a->size == b->size;
	return !oid_cmp(&a->id, &b->id);
}

int snap_diff_skip(const snap *a, const snap *b, const size_t (*skip)[2],
		   size_t nskip, snap_diff_fn fn, void *payload)
{
	size_t i = 0, j = 0, k = 0;
	int r;

	while (i < a->n || j < b->n) {
		int c;
		if (skip && k < nskip && j == skip[k][0]) {
			j = skip[k++][1];
			continue;
		}
		c = i >= a->n	? 1
		    : j >= b->n ? -1
				: path_cmp(a->v[i].path, b->v[j].path);
		if (c < 0) {
			r = fn(payload, a->v[i].path, &a->v[i], NULL);
			i++;
		} else if (c > 0) {
			r = fn(payload, b->v[j].path, NULL, &b->v[j]);
			j++;
		} else {
			r = snap_entry_same(&a->v[i], &b->v[j])
				    ? 0
				    : fn(payload, a->v[i].path, &a->v[i],
					 &b->v[j]);
			i++;
			j++;
		}
		if (r)
			return r;
	}
	return 0;
}

int snap_diff(const snap *a, const snap *b, snap_diff_fn fn, void *payload)
{
	return snap_diff_skip(a, b, NULL, 0, fn, payload);
}

void snap_totals(const snap *s, uint64_t *files, uint64_t *bytes)
{
	*files = *bytes = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!snap_entry_is_stored(&s->v[i]))
			continue;
		(*files)++;
		*bytes += s->v[i].size;
	}
}

bool snap_path_selected(const char *const *paths, const char *p)
{
	if (!paths)
		return true;
	for (size_t i = 0; paths[i]; i++) {
		size_t n = strlen(paths[i]);
		if (!strncmp(p, paths[i], n) && (p[n] == '\0' || p[n] == '/'))
			return true;
	}
	return false;
}

int snap_copy(snap *dst, const snap *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const snap_entry *e = &src->v[i];
		snap_entry *d = snap_add(dst, e->path, strlen(e->path));
		char *path;
		if (!d)
			return -1;
		path = d->path;
		*d = *e;
		d->path = path;
	}
	return 0;
}
