/*
 * fuzz_statcache.c - libFuzzer target for the stat cache
 * (src/lib/scan/statcache.c: statcache_load, statcache_lookup,
 * statcache_dir_open, statcache_verify).
 *
 *   make fuzz && build/fuzz/fuzz_statcache fuzz/corpus/statcache
 * `make check` replays fuzz/corpus/statcache through fuzz/replay.c.
 *
 * The input is the base file, optionally followed by FUZZ_SEP and the
 * delta file (fuzz/common.h).  They are written as <scratch>/statcache and
 * <scratch>/statcache.delta and loaded twice: as they are, and with the
 * header's and every record's check recomputed (where the record lengths
 * allow), so that mutations reach the parser instead of the checks.
 *
 * A scan trusts the id and the directory listing the cache returns, so
 * beyond "no crash, no leak, no undefined behaviour" the target compares
 * every answer with a reference model of docs/format.md ("Stat cache",
 * version 2), written here independently of statcache.c:
 *
 *   - a file is usable when its magic, version 2 and header check are
 *     right and its ndirs records tile the rest exactly; otherwise it
 *     answers nothing;
 *   - a record is sound when its check is right, its names fit, each is
 *     non-empty, NUL-terminated, free of '/' and NUL, and they are in
 *     strictly increasing strcmp order;
 *   - a directory's answer comes from the delta's first record of that
 *     path when it is sound, else from the base's first record of it
 *     (when that one is sound);
 *   - a name's facts vouch for an id only when mode, size, mtime, ctime,
 *     inode and device equal the probe and the mtime is settled (more
 *     than 1 s, for a whole second 3 s, before the file's scan_ns);
 *   - a listing is trusted only for the recorded stat data, with the
 *     "stat known" flag, and a settled ctime.
 *
 * statcache_verify must call a file sound exactly when the model finds it
 * usable with every record sound.
 */
#include "util/common.h"
#include "scan/statcache.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include "common.h"

#include <sys/stat.h>

#define HDR	32
#define REC_HDR 44
#define ENT	84
#define CHECK	8
#define SEC	1000000000LL
#define PROBE	64 /* records and names probed per file */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
	const uint8_t *p; /* the record */
	size_t len, plen;
	uint32_t n;
	bool sound;
} ref_rec;

typedef struct {
	bool usable;
	int64_t scan_ns;
	ref_rec *v;
	size_t n;
	bool all_sound;
} ref_table;

static const uint8_t *ent(const ref_rec *r, uint32_t i)
{
	return r->p + REC_HDR + r->plen + (size_t)i * ENT;
}

static const char *names(const ref_rec *r)
{
	return (const char *)(r->p + REC_HDR + r->plen + (size_t)r->n * ENT);
}

/* Flag 2: the directory's tree id ends the record, before its check. */
static size_t tail(const ref_rec *r)
{
	return CHECK + (r->p[10] & 2 ? SHA256_LEN : 0);
}

static bool rec_sound(ref_rec *r)
{
	size_t room, nlen;
	const char *nm, *prev = NULL;

	r->n = get_u32le(r->p + 4);
	if (r->len - REC_HDR - r->plen < tail(r))
		return false;
	room = r->len - REC_HDR - r->plen - tail(r);
	if ((uint64_t)r->n * ENT > room)
		return false;
	nlen = room - (size_t)r->n * ENT;
	if (statcache_check64(r->p, r->len - CHECK) !=
	    get_u64le(r->p + r->len - CHECK))
		return false;
	nm = names(r);
	for (uint32_t i = 0; i < r->n; i++) {
		size_t off = get_u32le(ent(r, i)), l = get_u16le(ent(r, i) + 4);
		if (l == 0 || off + l >= nlen || nm[off + l] != '\0')
			return false;
		for (size_t k = 0; k < l; k++)
			if (nm[off + k] == '\0' || nm[off + k] == '/')
				return false;
		if (prev && strcmp(prev, nm + off) >= 0)
			return false;
		prev = nm + off;
	}
	return true;
}

static void ref_parse(ref_table *t, const uint8_t *p, size_t len)
{
	uint64_t ndirs;
	size_t off = HDR;

	free(t->v);
	memset(t, 0, sizeof(*t));
	if (len < HDR || memcmp(p, "DSTC", 4) || get_u32le(p + 4) != 2 ||
	    statcache_check64(p, 24) != get_u64le(p + 24))
		return;
	ndirs = get_u64le(p + 16);
	if (ndirs > (len - HDR) / (REC_HDR + CHECK))
		return;
	t->v = calloc(ndirs ? ndirs : 1, sizeof(*t->v));
	fuzz_check(t->v != NULL);
	t->all_sound = true;
	for (uint64_t k = 0; k < ndirs; k++) {
		ref_rec r;
		if (len - off < REC_HDR + CHECK)
			return;
		memset(&r, 0, sizeof(r));
		r.p = p + off;
		r.len = get_u32le(r.p);
		r.plen = get_u16le(r.p + 8);
		if (r.len > len - off || r.len < REC_HDR + r.plen + CHECK)
			return;
		r.sound = rec_sound(&r);
		t->all_sound &= r.sound;
		t->v[t->n++] = r;
		off += r.len;
	}
	if (off != len)
		return;
	t->scan_ns = (int64_t)get_u64le(p + 8);
	t->usable = true;
}

static const ref_rec *ref_dir(const ref_table *t, const char *dir, size_t dl)
{
	if (!t->usable)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].plen == dl && !memcmp(t->v[i].p + REC_HDR, dir, dl))
			return t->v[i].sound ? &t->v[i] : NULL;
	return NULL;
}

static bool settled(int64_t scan_ns, int64_t time_ns)
{
	int64_t margin = time_ns % SEC ? SEC : 3 * SEC, sum;

	/* time + margin < scan, where the sum does not overflow (when it
	 * does, nothing is larger) */
	if (__builtin_add_overflow(time_ns, margin, &sum))
		return false;
	return sum < scan_ns;
}

/* Which table answers for directory dir (the delta first). */
static const ref_rec *ref_pick(const ref_table *base, const ref_table *delta,
			       const char *dir, size_t dl,
			       const ref_table **from)
{
	const ref_rec *r = ref_dir(delta, dir, dl);

	*from = delta;
	if (!r) {
		r = ref_dir(base, dir, dl);
		*from = base;
	}
	return r;
}

static int ref_lookup(const ref_table *base, const ref_table *delta,
		      const char *path, const snap_entry *e, oid *id)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	size_t dl = slash ? (size_t)(slash - path) : 0;
	const ref_table *t;
	const ref_rec *r = ref_pick(base, delta, path, dl, &t);

	if (!r)
		return 0;
	for (uint32_t i = 0; i < r->n; i++) {
		const uint8_t *f = ent(r, i);
		if (strcmp(names(r) + get_u32le(f), name))
			continue;
		if (f[7] != 1 || get_u32le(f + 8) != e->mode ||
		    get_u64le(f + 12) != e->size ||
		    (int64_t)get_u64le(f + 20) != e->mtime_ns ||
		    (int64_t)get_u64le(f + 28) != e->ctime_ns ||
		    get_u64le(f + 36) != e->ino ||
		    get_u64le(f + 44) != e->dev ||
		    !settled(t->scan_ns, e->mtime_ns))
			return 0;
		memcpy(id->b, f + 52, SHA256_LEN);
		return t == delta ? STATCACHE_DELTA : STATCACHE_BASE;
	}
	return 0;
}

static void probe(statcache *c, const ref_table *base, const ref_table *delta,
		  const char *path, const snap_entry *e)
{
	oid got, want;
	int r = statcache_lookup(c, path, e, &got);
	int w = ref_lookup(base, delta, path, e, &want);

	fuzz_check(r == w);
	if (r)
		fuzz_check(!oid_cmp(&got, &want));
}

/* The listing of a record's directory, for its own stat data and for
 * changed ones. */
static void probe_listing(statcache *c, const ref_table *base,
			  const ref_table *delta, const ref_rec *r)
{
	char dir[REC_HDR + 65536];
	const ref_table *t;
	const ref_rec *want;
	struct stat st;
	statcache_dir d;

	if (memchr(r->p + REC_HDR, '\0', r->plen))
		return; /* a scan never asks for such a directory */
	memcpy(dir, r->p + REC_HDR, r->plen);
	dir[r->plen] = '\0';
	want = ref_pick(base, delta, dir, r->plen, &t);
	memset(&st, 0, sizeof(st));
	if (want) {
		int64_t mt = (int64_t)get_u64le(want->p + 12);
		int64_t ct = (int64_t)get_u64le(want->p + 20);
		st.st_mtim.tv_sec = (time_t)(mt / SEC);
		st.st_mtim.tv_nsec = (long)(mt % SEC);
		st.st_ctim.tv_sec = (time_t)(ct / SEC);
		st.st_ctim.tv_nsec = (long)(ct % SEC);
		st.st_ino = (ino_t)get_u64le(want->p + 28);
		st.st_dev = (dev_t)get_u64le(want->p + 36);
	}
	for (int k = 0; k < 2; k++) {
		bool trusted;
		statcache_dir_open(c, &d, dir, r->plen, &st);
		fuzz_check((d.rec != NULL) == (want != NULL));
		if (!want)
			return;
		fuzz_check(d.n == want->n);
		/* its tree id, and its names with facts and subdirectories
		 * marked as in that tree (kinds 1 and 2) */
		fuzz_check(d.tree_known == ((want->p[10] & 2) != 0));
		if (d.tree_known)
			fuzz_check(!memcmp(d.tree.b,
					   want->p + want->len - CHECK -
						   SHA256_LEN,
					   SHA256_LEN));
		{
			uint32_t facts = 0, subs = 0;
			for (uint32_t i = 0; i < want->n; i++) {
				facts += ent(want, i)[7] == 1;
				subs += ent(want, i)[7] == 2;
			}
			fuzz_check(d.facts == facts && d.subs == subs);
		}
		trusted =
			k == 0 && (want->p[10] & 1) &&
			(int64_t)get_u64le(want->p + 12) == st_mtime_ns(&st) &&
			(int64_t)get_u64le(want->p + 20) == st_ctime_ns(&st) &&
			settled(t->scan_ns, st_ctime_ns(&st));
		fuzz_check(d.listing == trusted);
		for (uint32_t i = 0; i < d.n && i < PROBE; i++) {
			statcache_name nm = statcache_dir_name(&d, i);
			fuzz_check(
				!strcmp(nm.name,
					names(want) + get_u32le(ent(want, i))));
			fuzz_check(nm.type == ent(want, i)[6]);
		}
		st.st_ino++; /* another directory in its place */
	}
}

static void probe_table(statcache *c, const ref_table *t, const ref_table *base,
			const ref_table *delta)
{
	buf path = BUF_INIT;

	for (size_t k = 0; k < t->n && k < PROBE; k++) {
		const ref_rec *r = &t->v[k];
		probe_listing(c, base, delta, r);
		if (!r->sound || memchr(r->p + REC_HDR, '\0', r->plen))
			continue;
		for (uint32_t i = 0; i < r->n && i < PROBE; i++) {
			const uint8_t *f = ent(r, i);
			snap_entry e;
			buf_clear(&path);
			fuzz_check(buf_put(&path, r->p + REC_HDR, r->plen) ==
				   0);
			if (r->plen)
				fuzz_check(buf_putc(&path, '/') == 0);
			fuzz_check(buf_puts(&path, names(r) + get_u32le(f)) ==
				   0);
			memset(&e, 0, sizeof(e));
			e.mode = get_u32le(f + 8);
			e.size = get_u64le(f + 12);
			e.mtime_ns = (int64_t)get_u64le(f + 20);
			e.ctime_ns = (int64_t)get_u64le(f + 28);
			e.ino = get_u64le(f + 36);
			e.dev = get_u64le(f + 44);
			probe(c, base, delta, path.ptr, &e);
			e.mtime_ns ^= 1;
			probe(c, base, delta, path.ptr, &e);
			e.mtime_ns ^= 1;
			e.ino++;
			probe(c, base, delta, path.ptr, &e);
		}
	}
	buf_release(&path);
}

static void load(const fuzz_part *base, const fuzz_part *delta)
{
	static char path[PATH_MAX], dpath[PATH_MAX];
	static ref_table rb, rd;
	statcache *c = NULL;
	snap_entry e;

	if (!path[0]) {
		fuzz_path(path, "statcache");
		fuzz_path(dpath, "statcache.delta");
	}
	fuzz_write(path, base->ptr, base->len);
	if (delta)
		fuzz_write(dpath, delta->ptr, delta->len);
	else
		unlink(dpath);
	fuzz_check(statcache_load(&c, path) == 0 && c != NULL);
	ref_parse(&rb, base->ptr, base->len);
	if (delta) {
		ref_parse(&rd, delta->ptr, delta->len);
	} else {
		free(rd.v);
		memset(&rd, 0, sizeof(rd));
	}
	/* fsck's verdict: sound exactly when usable with every record sound
	 * (a version 1 file aside: checked by its own rule) */
	if (base->len >= 8 && get_u32le(base->ptr + 4) != 1)
		fuzz_check((statcache_verify(base->ptr, base->len) == NULL) ==
			   (rb.usable && rb.all_sound));

	probe_table(c, &rb, &rb, &rd);
	probe_table(c, &rd, &rb, &rd);
	memset(&e, 0, sizeof(e));
	e.mode = MODE_FILE;
	probe(c, &rb, &rd, "a", &e);
	probe(c, &rb, &rd, "", &e);
	statcache_free(c);
	decree_error_clear();
}

/* The part with its header's check and, while its records tile it, each
 * record's check recomputed. */
static void reseal(buf *b, const fuzz_part *p)
{
	unsigned char *q;
	size_t off = HDR;

	buf_clear(b);
	fuzz_check(buf_put(b, p->ptr, p->len) == 0);
	if (p->len < HDR)
		return;
	q = (unsigned char *)b->ptr;
	put_u64le(q + 24, statcache_check64(q, 24));
	while (b->len - off >= REC_HDR + CHECK) {
		size_t len = get_u32le(q + off);
		if (len < REC_HDR + CHECK || len > b->len - off)
			break;
		put_u64le(q + off + len - CHECK,
			  statcache_check64(q + off, len - CHECK));
		off += len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_part parts[2], fixed[2];
	buf fb = BUF_INIT, fd = BUF_INIT;
	size_t n = fuzz_split(parts, 2, data, size);

	load(&parts[0], n > 1 ? &parts[1] : NULL);
	reseal(&fb, &parts[0]);
	fixed[0].ptr = (const uint8_t *)fb.ptr;
	fixed[0].len = fb.len;
	if (n > 1) {
		reseal(&fd, &parts[1]);
		fixed[1].ptr = (const uint8_t *)fd.ptr;
		fixed[1].len = fd.len;
	}
	load(&fixed[0], n > 1 ? &fixed[1] : NULL);
	buf_release(&fb);
	buf_release(&fd);
	return 0;
}
