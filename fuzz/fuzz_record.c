/*
 * fuzz_record.c - libFuzzer target for checkpoint records and the record
 * cache (src/lib/store/record.c: record_load_file, record_load_all with
 * its checkpoints.cache reader, record_resolve).
 *
 *   make fuzz && build/fuzz/fuzz_record fuzz/corpus/record
 * `make check` replays fuzz/corpus/record through fuzz/replay.c.
 *
 * The input is a checkpoints.cache file, then up to eight record files,
 * separated by FUZZ_SEP (fuzz/common.h).  A store is opened once on
 * tmpfs; before each input its checkpoints/ directory is emptied, every
 * record part is written as checkpoints/<SHA-256 of the part> (its valid
 * name) and the cache part as checkpoints.cache.  Then, beyond "no crash,
 * no leak, no undefined behaviour":
 *   - each record file is read alone under its name (accepted or
 *     DECREE_ECORRUPT; accepted means a version 1, 2 or 3 object with a
 *     session and a well-formed tree id, and the info names the same id
 *     and tree; its excludes and config excludes, if any, are
 *     NULL-terminated lists of at least one pattern, and config excludes
 *     only when the record says it knows them)
 *     and under a wrong name (always DECREE_ECORRUPT: the id is the hash);
 *   - the listing is read with the given cache, and with the cache's
 *     checksum made right (so mutations reach the cache parser): it is
 *     sorted by created_ns then id, and lists only ids that are files;
 *   - without a cache the listing is read from the records, which writes
 *     the cache; read again, now from that cache, it must be the same
 *     listing field by field (the cache is only a cache);
 *   - each listed record resolves by its full id to itself, by
 *     SESSION:MESSAGE to a record with that session and message, and by
 *     a 4-digit prefix to a record with that prefix (or an ambiguity).
 */
#include "util/common.h"
#include "store/record.h"
#include "store/repo.h"
#include "util/buf.h"
#include "util/error.h"

#include "common.h"

#define MAX_RECORDS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static decree_store *store;
static char ckdir[PATH_MAX], cache[PATH_MAX];

static void setup(void)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	char root[PATH_MAX], sdir[PATH_MAX];

	fuzz_mkdirs("root");
	fuzz_mkdirs("store");
	fuzz_path(root, "root");
	fuzz_path(sdir, "store");
	o.root = root;
	o.store_path = sdir;
	fuzz_check(decree_store_open(&store, &o) == 0);
	fuzz_check(repo_ensure(store) == 0);
	repo_file(ckdir, store, "checkpoints");
	repo_file(cache, store, "checkpoints.cache");
}

static bool same_str(const char *a, const char *b)
{
	return !a == !b && (!a || !strcmp(a, b));
}

static void same_strv(char *const *a, char *const *b)
{
	fuzz_check(!a == !b);
	for (size_t i = 0; a && b; i++) {
		fuzz_check(same_str(a[i], b[i]));
		if (!a[i])
			break;
	}
}

static void same_record(const record *a, const record *b)
{
	fuzz_check(!strcmp(a->info.id, b->info.id));
	fuzz_check(!strcmp(a->info.tree, b->info.tree));
	fuzz_check(!oid_cmp(&a->tree, &b->tree));
	fuzz_check(a->info.created_ns == b->info.created_ns);
	fuzz_check(!strcmp(a->info.created_at, b->info.created_at));
	fuzz_check(a->info.file_count == b->info.file_count);
	fuzz_check(a->info.total_bytes == b->info.total_bytes);
	fuzz_check(a->info.skipped_count == b->info.skipped_count);
	fuzz_check(same_str(a->session, b->session));
	fuzz_check(same_str(a->message, b->message));
	fuzz_check(same_str(a->label, b->label));
	fuzz_check(same_str(a->root, b->root));
	fuzz_check(a->info.files_changed == b->info.files_changed);
	fuzz_check(a->info.insertions == b->info.insertions);
	fuzz_check(a->info.deletions == b->info.deletions);
	fuzz_check(a->max_file_size == b->max_file_size);
	same_strv(a->excludes, b->excludes);
	fuzz_check(a->config_known == b->config_known);
	same_strv(a->config_excludes, b->config_excludes);
}

/* What every accepted record, from a file or from the cache, holds. */
static void check_record(const record *r)
{
	char hex[SHA256_HEXLEN + 1];

	fuzz_check(strlen(r->info.id) == SHA256_HEXLEN);
	fuzz_check(r->session != NULL && r->info.session == r->session);
	fuzz_check(r->info.message == r->message && r->info.label == r->label);
	oid_to_hex(hex, &r->tree);
	fuzz_check(!strcmp(hex, r->info.tree));
	fuzz_check(strlen(r->info.created_at) < sizeof(r->info.created_at));
	/* a list that is there holds at least one pattern */
	fuzz_check(!r->excludes || r->excludes[0]);
	fuzz_check(!r->config_excludes || r->config_excludes[0]);
	fuzz_check(r->config_known || !r->config_excludes);
}

static void load_one(const fuzz_part *p)
{
	char path[PATH_MAX + 80], id[SHA256_HEXLEN + 1], bad[SHA256_HEXLEN + 1];
	record rec;
	oid sum;
	int r;

	sha256_buf(&sum, p->ptr, p->len);
	oid_to_hex(id, &sum);
	snprintf(path, sizeof(path), "%s/%s", ckdir, id);
	r = record_load_file(&rec, path, id);
	if (r == 0) {
		check_record(&rec);
		fuzz_check(!strcmp(rec.info.id, id));
		record_release(&rec);
	} else {
		fuzz_check(r == DECREE_ECORRUPT);
		fuzz_check(!rec.session && !rec.message && !rec.label &&
			   !rec.root);
	}
	memcpy(bad, id, sizeof(bad));
	bad[0] = bad[0] == '0' ? '1' : '0';
	fuzz_check(record_load_file(&rec, path, bad) == DECREE_ECORRUPT);
	decree_error_clear();
}

/* The listing; -1 if it failed (a damaged record fails it). */
static int list(record **v, size_t *n)
{
	int r = record_load_all(v, n, store);

	if (r < 0) {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
		fuzz_check(*v == NULL && *n == 0);
		decree_error_clear();
		return -1;
	}
	for (size_t i = 0; i < *n; i++) {
		char path[PATH_MAX + 80];
		struct stat st;
		check_record(&(*v)[i]);
		snprintf(path, sizeof(path), "%s/%s", ckdir, (*v)[i].info.id);
		fuzz_check(stat(path, &st) == 0);
		if (i) {
			const record *a = &(*v)[i - 1], *b = &(*v)[i];
			fuzz_check(a->info.created_ns < b->info.created_ns ||
				   (a->info.created_ns == b->info.created_ns &&
				    strcmp(a->info.id, b->info.id) < 0));
		}
	}
	return 0;
}

static void resolve(const record *v, size_t n)
{
	buf ref = BUF_INIT;
	record got;
	int r;

	for (size_t i = 0; i < n && i < 3; i++) {
		fuzz_check(record_resolve(&got, store, v[i].info.id) == 0);
		same_record(&got, &v[i]);
		record_release(&got);

		if (v[i].message && !strchr(v[i].session, ':')) {
			buf_clear(&ref);
			buf_printf(&ref, "%s:%s", v[i].session, v[i].message);
			fuzz_check(record_resolve(&got, store, ref.ptr) == 0);
			fuzz_check(!strcmp(got.session, v[i].session) &&
				   !strcmp(got.message, v[i].message));
			record_release(&got);
		}

		buf_clear(&ref);
		buf_put(&ref, v[i].info.id, 4);
		r = record_resolve(&got, store, ref.ptr);
		if (r == 0) {
			fuzz_check(!strncmp(got.info.id, ref.ptr, 4));
			record_release(&got);
		} else {
			fuzz_check(r == DECREE_EAMBIGUOUS);
		}
	}
	r = record_resolve(&got, store, "zz:top");
	fuzz_check(r == DECREE_ENOTFOUND ||
		   (r == 0 && !strcmp(got.session, "zz")));
	if (r == 0)
		record_release(&got);
	decree_error_clear();
	buf_release(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_part parts[1 + MAX_RECORDS];
	size_t nparts = fuzz_split(parts, ARRAY_SIZE(parts), data, size);
	record *v = NULL, *w = NULL;
	size_t n = 0, m = 0;
	buf fixed = BUF_INIT;
	int r;

	if (!store)
		setup();
	fuzz_empty_dir(ckdir);
	unlink(cache);
	for (size_t i = 1; i < nparts; i++) {
		char path[PATH_MAX + 80], id[SHA256_HEXLEN + 1];
		oid sum;
		sha256_buf(&sum, parts[i].ptr, parts[i].len);
		oid_to_hex(id, &sum);
		snprintf(path, sizeof(path), "%s/%s", ckdir, id);
		fuzz_write(path, parts[i].ptr, parts[i].len);
	}
	for (size_t i = 1; i < nparts; i++)
		load_one(&parts[i]);

	/* the listing through the given cache, as it is and checksummed */
	fuzz_write(cache, parts[0].ptr, parts[0].len);
	if (list(&v, &n) == 0)
		record_free_all(v, n);
	fuzz_check(buf_put(&fixed, parts[0].ptr, parts[0].len) == 0);
	if (fixed.len >= SHA256_LEN) {
		oid sum;
		sha256_buf(&sum, fixed.ptr, fixed.len - SHA256_LEN);
		memcpy(fixed.ptr + fixed.len - SHA256_LEN, sum.b, SHA256_LEN);
		fuzz_write(cache, fixed.ptr, fixed.len);
		if (list(&v, &n) == 0)
			record_free_all(v, n);
	}
	buf_release(&fixed);

	/* from the records (writes the cache), then from the cache */
	unlink(cache);
	if (list(&v, &n) < 0)
		return 0;
	r = list(&w, &m);
	fuzz_check(r == 0 && m == n);
	for (size_t i = 0; i < n; i++)
		same_record(&v[i], &w[i]);
	record_free_all(w, m);
	resolve(v, n);
	record_free_all(v, n);
	return 0;
}
