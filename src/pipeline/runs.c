/*
 * runs.c - run directories (docs/pipeline.md "The run directory"):
 * writing a run's artifacts, listing runs, and reverting one.
 *
 *	.decree/runs/<id>/
 *	  message.md          the message as processed
 *	  manifest.json       the tree before the first attempt
 *	  routine[-k].log     each attempt's output (papermill[-k].log)
 *	  changes.diff        the net change of a successful run
 *	  changes-<k>.diff    the tree after failed attempt k
 *	  failure-context.md  what the clean-slate attempt is told
 *	  dead-letter.md      why it was dead-lettered
 *	  outcome.json        written last
 */
#include "util/common.h"
#include "pipeline/runs.h"
#include "decree/checkpoint.h"
#include "decree/diff.h"
#include "decree/restore.h"
#include "pipeline/project.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/trace.h"
#include "util/json.h"

#include <dirent.h>
#include <jansson.h>
#include <time.h>

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int run_dir_make(char *out, const decree_project *p, const char *id)
{
	char aside[PATH_MAX + 32], runs[PATH_MAX];

	snprintf(out, PATH_MAX, "%s/.decree/runs/%s", p->root, id);
	if (exists(out)) {
		for (int k = 1;; k++) {
			snprintf(aside, sizeof(aside), "%s.old-%d", out, k);
			if (!exists(aside))
				break;
		}
		if (rename(out, aside) < 0)
			return decree_error_os("cannot move '%s' aside", out);
	}
	project_path(runs, p, ".decree/runs");
	mkdir(runs, 0755);
	if (mkdir(out, 0755) < 0)
		return decree_error_os("cannot create '%s'", out);
	return 0;
}

static void *manifest_sync(void *arg)
{
	fs_pending_sync(arg);
	return NULL;
}

int run_manifest_wait(run_manifest *m)
{
	if (m->syncing)
		pthread_join(m->thread, NULL);
	m->syncing = false;
	return fs_pending_finish(&m->file);
}

/*
 * The manifest goes to its file in chunks, built by the caller and
 * written by a thread of their own: writing 11 MB (the Linux tree) into
 * the page cache costs about as much as building it, so the two overlap,
 * and two small buffers stay in the CPU cache where one of 11 MB would be
 * fresh memory, page-faulted in.  Slot i alternates 0, 1, 0, ... on both
 * sides.
 */
enum { MANIFEST_CHUNK = 256 * 1024 };
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	buf b[2];
	bool full[2], done, threaded;
	int fd;
	int err; /* errno of the first failed write (the writer's), or 0 */
} chunk_pipe;

/* Write one chunk, unless a write failed already (that errno is kept). */
static void chunk_write(chunk_pipe *c, const buf *b)
{
	if (!c->err && fs_write_all(c->fd, b->ptr, b->len) < 0)
		c->err = errno ? errno : EIO;
}

static void *chunk_writer(void *arg)
{
	chunk_pipe *c = arg;

	for (int i = 0;; i ^= 1) {
		pthread_mutex_lock(&c->mu);
		while (!c->full[i] && !c->done)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
		if (!c->full[i])
			break; /* done, and nothing left */
		chunk_write(c, &c->b[i]);
		pthread_mutex_lock(&c->mu);
		c->full[i] = false;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

/* Hand slot *cur to the writer; *cur becomes the other slot, once free. */
static void chunk_pass(chunk_pipe *c, int *cur)
{
	if (!c->threaded) {
		chunk_write(c, &c->b[*cur]);
		buf_clear(&c->b[*cur]);
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->full[*cur] = true;
	pthread_cond_broadcast(&c->cv);
	*cur ^= 1;
	while (c->full[*cur])
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	buf_clear(&c->b[*cur]);
}

/* Append s (n bytes) at *p. */
static char *put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* One manifest entry, `,` first unless it is the first: written straight
 * into the buffer (a function call per piece was most of the cost). */
static int manifest_entry(buf *b, const decree_file_info *fi, bool first)
{
	static const char key_sha[] = ":{\"sha256\":\"",
			  key_size[] = "\",\"size\":",
			  key_mode[] = ",\"mode\":\"";
	size_t plen = strlen(fi->path), i, len;
	char num[24], *p;

	/* the path, the longest fixed part and two numbers (by hand:
	 * snprintf twice per file was a fifth of a Linux-sized manifest) */
	if (buf_grow(b, plen + 160) < 0)
		return -1;
	p = b->ptr + b->len;
	if (!first)
		*p++ = ',';
	for (i = 0; i < plen; i++) {
		unsigned char c = (unsigned char)fi->path[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			break;
	}
	if (i == plen) { /* plain printable ASCII, as nearly every path */
		*p++ = '"';
		p = put(p, fi->path, plen);
		*p++ = '"';
	} else {
		b->len = (size_t)(p - b->ptr);
		if (json_str(b, fi->path) < 0 || buf_grow(b, 160) < 0)
			return -1;
		p = b->ptr + b->len;
	}
	p = put(p, key_sha, sizeof(key_sha) - 1);
	p = put(p, fi->sha256, 64);
	p = put(p, key_size, sizeof(key_size) - 1);
	len = fmt_uint(num, fi->size, 10);
	p = put(p, num + sizeof(num) - len, len);
	/* every permission bit: "600", "755"; "120000" for a link */
	p = put(p, key_mode, sizeof(key_mode) - 1);
	len = fmt_uint(num, fi->mode, 8);
	p = put(p, num + sizeof(num) - len, len);
	p = put(p, "\"}", 2);
	*p = '\0';
	b->len = (size_t)(p - b->ptr);
	return 0;
}

/* The manifest of sn into c, chunk by chunk. */
static int manifest_build(chunk_pipe *c, const decree_snapshot *sn)
{
	size_t n = decree_snapshot_count(sn);
	int cur = 0;
	buf *b = &c->b[0];

	buf_puts(b, "{\"files\":{");
	for (size_t i = 0, k = 0; i < n; i++) {
		decree_file_info fi;
		decree_snapshot_at(&fi, sn, i);
		if (fi.skip_reason)
			continue; /* above the size limit: not stored */
		if (manifest_entry(b, &fi, k++ == 0) < 0)
			return -1;
		if (b->len >= MANIFEST_CHUNK) {
			chunk_pass(c, &cur);
			b = &c->b[cur];
		}
	}
	if (buf_puts(b, "}}\n") < 0)
		return -1;
	chunk_pass(c, &cur);
	return 0;
}

int run_write_manifest(decree_store *s, const char *ck, const char *path,
		       run_manifest *later)
{
	fs_pending f = FS_PENDING_INIT;
	decree_snapshot *sn;
	pthread_t writer;
	chunk_pipe c;
	int r;

	if ((r = decree_checkpoint_show(&sn, NULL, s, ck)) < 0)
		return r;
	trace_phase("manifest: shown");
	if ((r = fs_pending_create(&f, path, 0644)) < 0) {
		decree_snapshot_free(sn);
		return r;
	}
	memset(&c, 0, sizeof(c));
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	buf_init(&c.b[0]);
	buf_init(&c.b[1]);
	c.fd = f.fd;
	if (buf_grow(&c.b[0], MANIFEST_CHUNK + 4096) < 0 ||
	    buf_grow(&c.b[1], MANIFEST_CHUNK + 4096) < 0)
		r = -1;
	else
		c.threaded = pthread_create(&writer, NULL, chunk_writer, &c) ==
			     0;
	if (r == 0)
		r = manifest_build(&c, sn);
	if (c.threaded) {
		pthread_mutex_lock(&c.mu);
		c.done = true;
		pthread_cond_broadcast(&c.cv);
		pthread_mutex_unlock(&c.mu);
		pthread_join(writer, NULL);
	}
	trace_phase("manifest: built");
	if (r == 0 && c.err) {
		errno = c.err;
		r = decree_error_os("cannot write '%s'", path);
	}
	/* without `later`, durable before it is visible, as
	 * fs_write_atomic does it */
	if (r == 0 && !later)
		r = fs_fsync(f.fd, path);
	if (r == 0)
		r = fs_pending_publish(&f);
	else
		fs_pending_abort(&f);
	if (r == 0 && !later) {
		r = fs_pending_finish(&f);
	} else if (r == 0) {
		/* an 11 MB manifest takes ~40 ms to fsync: on a thread, it
		 * overlaps the routine and the scan after it */
		later->file = f;
		later->syncing = pthread_create(&later->thread, NULL,
						manifest_sync,
						&later->file) == 0;
	}
	decree_snapshot_free(sn);
	buf_release(&c.b[0]);
	buf_release(&c.b[1]);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
	return r;
}

static int diff_to_buf(void *payload, const decree_diff_file *f)
{
	if (f->text)
		return buf_put(payload, f->text, f->len) < 0 ? -1 : 0;
	return 0;
}

int run_write_diff(decree_store *s, const char *ck, const char *path,
		   size_t *nfiles, run_manifest *man)
{
	buf text = BUF_INIT;
	int r;

	if ((r = decree_checkpoint_diff(s, ck, NULL, NULL, diff_to_buf,
					&text)) < 0) {
		buf_release(&text);
		return r;
	}
	if (nfiles) {
		*nfiles = 0;
		for (size_t i = 0; i + 11 <= text.len; i++)
			if ((i == 0 || text.ptr[i - 1] == '\n') &&
			    !memcmp(text.ptr + i, "diff --git ", 11))
				(*nfiles)++;
	}
	if (!man || (r = run_manifest_wait(man)) == 0)
		r = fs_write_atomic(path, text.ptr, text.len, 0644);
	buf_release(&text);
	return r;
}

int run_write_outcome(const char *dir, const char *id, const char *file,
		      const char *routine, decree_run_outcome o, int attempts,
		      const char *reason, int64_t started)
{
	char path[PATH_MAX + 16];
	buf b = BUF_INIT;
	int r;

	buf_puts(&b, "{");
	json_kv_str(&b, "id", id, false);
	json_kv_path(&b, "message", file, true);
	json_kv_str(&b, "routine", routine, true);
	json_kv_str(&b, "outcome", decree_run_outcome_name(o), true);
	buf_printf(&b,
		   ",\"attempts\":%d,\"started\":%" PRId64
		   ",\"finished\":%" PRId64,
		   attempts, started, (int64_t)time(NULL));
	json_kv_str(&b, "reason", reason, true);
	r = buf_puts(&b, "}\n");
	snprintf(path, sizeof(path), "%s/outcome.json", dir);
	if (r == 0)
		r = fs_write_atomic(path, b.ptr, b.len, 0644);
	buf_release(&b);
	return r;
}

void run_log_tail(buf *out, const char *path, size_t max)
{
	buf all = BUF_INIT;

	if (fs_read_path(path, &all) == 0 && all.len) {
		size_t from = all.len > max ? all.len - max : 0;
		while (from && from < all.len && all.ptr[from - 1] != '\n')
			from++;
		buf_put(out, all.ptr + from, all.len - from);
		if (all.ptr[all.len - 1] != '\n')
			buf_putc(out, '\n');
	} else {
		decree_error_clear();
		buf_puts(out, "(no output)\n");
	}
	buf_release(&all);
}

static int note_path(void *payload, const char *path, char status)
{
	buf *b = payload;
	(void)status;
	if (b->len < 400)
		buf_printf(b, "%s'%s'", b->len ? ", " : "", path);
	return 0;
}

int run_revert_to(decree_store *s, const char *ck)
{
	decree_restore_result res;
	buf left = BUF_INIT;
	int r;

	if ((r = decree_checkpoint_restore(&res, s, ck, NULL)) < 0)
		return r;
	if ((r = decree_checkpoint_compare(s, ck, NULL, note_path, &left)) ==
		    0 &&
	    left.len)
		r = decree_error_set(DECREE_EVERIFY,
				     "revert verification failed: %s differ(s) "
				     "from the manifest",
				     left.ptr);
	buf_release(&left);
	return r;
}

/* --- listing
 * ------------------------------------------------------------------ */

const char *decree_run_outcome_name(decree_run_outcome o)
{
	switch (o) {
	case DECREE_RUN_DONE:
		return "done";
	case DECREE_RUN_DEAD:
		return "dead";
	case DECREE_RUN_INTERRUPTED:
		return "interrupted";
	case DECREE_RUN_ERROR:
		return "error";
	case DECREE_RUN_UNFINISHED:
		break;
	}
	return "unfinished";
}

static decree_run_outcome outcome_of(const char *name)
{
	for (int o = DECREE_RUN_DONE; name && o <= DECREE_RUN_ERROR; o++)
		if (!strcmp(name, decree_run_outcome_name(o)))
			return (decree_run_outcome)o;
	return DECREE_RUN_UNFINISHED;
}

struct decree_run_list {
	decree_run_info *v; /* owns the strings */
	size_t n;
};

static void info_release(decree_run_info *ri)
{
	decree_free((char *)ri->id);
	decree_free((char *)ri->chain);
	decree_free((char *)ri->dir);
	decree_free((char *)ri->message);
	decree_free((char *)ri->routine);
	decree_free((char *)ri->reason);
}

void decree_run_list_free(decree_run_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		info_release(&l->v[i]);
	decree_free(l->v);
	decree_free(l);
}

size_t decree_run_list_count(const decree_run_list *l)
{
	return l->n;
}

const decree_run_info *decree_run_list_at(const decree_run_list *l, size_t i)
{
	return i < l->n ? &l->v[i] : NULL;
}

static int cmp_run(const void *a, const void *b)
{
	const decree_run_info *x = a, *y = b;
	int c = strcmp(x->chain, y->chain);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* A copy of a string member of o, or NULL (0) / allocation failure (-1). */
static int json_dup(const char **out, json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	*out = NULL;
	return v && !(*out = decree_strdup(v)) ? -1 : 0;
}

/* outcome.json, when the run has one. */
static int load_outcome(decree_run_info *ri)
{
	char path[PATH_MAX + 16];
	json_error_t e;
	json_t *o;
	int r;

	snprintf(path, sizeof(path), "%s/outcome.json", ri->dir);
	if (!(o = json_load_file(path, 0, &e)))
		return 0;
	ri->outcome =
		outcome_of(json_string_value(json_object_get(o, "outcome")));
	ri->attempts = (int)json_integer_value(json_object_get(o, "attempts"));
	ri->started = json_integer_value(json_object_get(o, "started"));
	ri->finished = json_integer_value(json_object_get(o, "finished"));
	r = json_dup(&ri->message, o, "message") < 0 ||
			    json_dup(&ri->routine, o, "routine") < 0 ||
			    json_dup(&ri->reason, o, "reason") < 0
		    ? -1
		    : 0;
	json_decref(o);
	return r;
}

/* "<16 digits>-<digits>" */
static bool is_run_id(const char *s)
{
	size_t len = strlen(s);
	bool ok = len >= 18 && len < 40 && s[16] == '-';
	for (size_t i = 0; ok && i < len; i++)
		ok = i == 16 || (s[i] >= '0' && s[i] <= '9');
	return ok;
}

static int add_run(decree_run_list *l, size_t *cap, const char *dir,
		   const char *id)
{
	decree_run_info *ri;
	char *d;
	size_t dl = strlen(dir) + strlen(id) + 2;

	if (GROW(l->v, *cap, l->n + 1) < 0)
		return -1;
	ri = &l->v[l->n++];
	memset(ri, 0, sizeof(*ri));
	if ((d = decree_malloc(dl)))
		snprintf(d, dl, "%s/%s", dir, id);
	ri->dir = d;
	ri->id = decree_strdup(id);
	ri->chain = decree_strndup(id, 16);
	ri->seq = strtol(id + 17, NULL, 10);
	if (!ri->dir || !ri->id || !ri->chain)
		return -1;
	return load_outcome(ri);
}

int decree_run_list_get(decree_run_list **out, decree_project *p)
{
	char dir[PATH_MAX];
	decree_run_list *l;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	project_path(dir, p, ".decree/runs");
	if ((d = opendir(dir))) {
		while (r == 0 && (de = readdir(d)))
			if (is_run_id(de->d_name))
				r = add_run(l, &cap, dir, de->d_name);
		closedir(d);
	}
	if (r < 0) {
		decree_run_list_free(l);
		return r;
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_run);
	*out = l;
	return 0;
}

int decree_run_list_select(size_t *first, size_t *count,
			   const decree_run_list *l, const char *id)
{
	size_t hits = 0, at = 0, n = l->n;
	const decree_run_info *v = l->v;
	buf b = BUF_INIT;

	*first = *count = 0;
	if (!n)
		return decree_error_set(DECREE_ENOTFOUND,
					"no runs yet (.decree/runs/ is empty)");
	*count = 1;
	if (!id) { /* the most recently started: highest chain, then seq */
		*first = n - 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id)) {
			*first = i;
			return 0;
		}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].chain, id) && !hits++)
			at = i;
	if (hits) {
		*first = at;
		*count = hits;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strncmp(v[i].id, id, strlen(id)) && !hits++)
			at = i;
	if (hits == 1) {
		*first = at;
		return 0;
	}
	*count = 0;
	if (!hits)
		return decree_error_set(DECREE_ENOTFOUND, "no run matches '%s'",
					id);
	for (size_t i = 0, shown = 0; i < n && shown < 10; i++)
		if (!strncmp(v[i].id, id, strlen(id)))
			buf_printf(&b, "%s%s", shown++ ? ", " : "", v[i].id);
	decree_error_set(DECREE_EAMBIGUOUS, "'%s' is ambiguous: %s%s", id,
			 b.ptr, hits > 10 ? ", ..." : "");
	buf_release(&b);
	return DECREE_EAMBIGUOUS;
}

/* --- revert
 * --------------------------------------------------------------------- */

typedef struct {
	json_t *files; /* manifest "files" object */
	size_t checked;
} manifest_check;

static const char *member_str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "";
}

static int check_manifest(void *payload, const char *path, bool exists_now,
			  unsigned mode, const char *sha256_hex)
{
	manifest_check *mc = payload;
	json_t *e = json_object_get(mc->files, path);
	char want_mode[16];

	mc->checked++;
	if (!e)
		return exists_now; /* not in the manifest: must be gone */
	if (!exists_now)
		return 1;
	snprintf(want_mode, sizeof(want_mode), "%o", mode);
	return strcmp(member_str(e, "sha256"), sha256_hex) ||
	       strcmp(member_str(e, "mode"), want_mode);
}

/* Reverse-apply the changes.diff of the run in `dir`. */
static int revert_run(decree_revert_result *out, decree_project *p,
		      const decree_run_info *ri)
{
	decree_apply_options o = DECREE_APPLY_OPTIONS_INIT;
	manifest_check mc = { NULL, 0 };
	char path[PATH_MAX + 32], name[PATH_MAX];
	buf text = BUF_INIT;
	json_t *man = NULL;
	json_error_t je;
	decree_store *s;
	int r;

	snprintf(path, sizeof(path), "%s/changes.diff", ri->dir);
	if ((r = fs_read_path(path, &text)) < 0) {
		if (r == DECREE_ENOTFOUND)
			r = decree_error_set(
				DECREE_EINVALID,
				"run %s has no changes.diff: nothing to revert",
				ri->id);
		goto done;
	}
	if (!text.len) {
		out->empty = true;
		goto done;
	}
	snprintf(path, sizeof(path), "%s/manifest.json", ri->dir);
	if (!(man = json_load_file(path, 0, &je)) ||
	    !json_is_object(json_object_get(man, "files"))) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "cannot read %s/manifest.json: missing or "
				     "damaged; 'decree checkpoint restore "
				     "decree:%s' restores the tree before the "
				     "run",
				     ri->id, ri->id);
		goto done;
	}
	if ((r = decree_project_store(&s, p)) < 0)
		goto done;
	mc.files = json_object_get(man, "files");
	snprintf(name, sizeof(name), ".decree/runs/%s/changes.diff", ri->id);
	o.reverse = true;
	o.verify = check_manifest;
	o.payload = &mc;
	o.session = "decree";
	r = decree_apply(&out->apply, s, name, text.ptr, text.len, &o);
	out->verified = mc.checked;
done:
	json_decref(man);
	buf_release(&text);
	return r;
}

int decree_run_revert(decree_revert_result *out, decree_project *p,
		      const char *id)
{
	decree_run_list *l;
	size_t first, count;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = decree_run_list_get(&l, p)) < 0)
		return r;
	if (!id)
		r = decree_error_set(DECREE_EINVALID, "which run? (no id)");
	else if ((r = decree_run_list_select(&first, &count, l, id)) == 0 &&
		 count != 1)
		r = decree_error_set(DECREE_EINVALID,
				     "'%s' is a chain of %zu runs; revert one "
				     "run at a time (the last first)",
				     id, count);
	if (r == 0) {
		snprintf(out->id, sizeof(out->id), "%s", l->v[first].id);
		r = revert_run(out, p, &l->v[first]);
	}
	decree_run_list_free(l);
	return r;
}
