/*
 * fuzz_pack.c - libFuzzer target for pack files and pack indexes
 * (src/lib/store/odb.c: odb_open/odb_refresh -> pack_load, odb_foreach,
 * odb_has, odb_size, odb_read -> read_stored + zstd, odb_verify,
 * odb_gc -> rewrite_packs).
 *
 *   make fuzz && build/fuzz/fuzz_pack fuzz/corpus/pack
 * `make check` replays fuzz/corpus/pack through fuzz/replay.c.
 *
 * The input is up to two packs: "idx A", "pack A", "idx B", "pack B",
 * separated by FUZZ_SEP (fuzz/common.h).  They are written into an empty
 * packs/ directory on tmpfs as pack-aaaa...{idx,pack} and
 * pack-bbbb...{idx,pack} (a missing part is an empty file) and the
 * directory is opened as an object database, twice: with the indexes as
 * they are, and with each index made well-formed around its entries
 * (header, count, a fanout table built from the entries, the entries
 * sorted, the checksum), so that mutations of the entries reach the object
 * reader instead of stopping at the index checks.  Beyond "no crash, no
 * leak, no undefined behaviour" the target checks:
 *   - open fails only with DECREE_ECORRUPT (or -1);
 *   - a read that succeeds returns bytes whose SHA-256 is the object id
 *     and, for an object listed once, whose length is the size odb_size
 *     reports (a damaged store is an error, never wrong bytes); a failed
 *     read is ENOTFOUND or ECORRUPT (or -1);
 *   - well-formed indexes: every listed object is found, and
 *     odb_verify reports every pack listing an id twice;
 *   - gc keeping exactly the objects that read correctly: afterwards
 *     each of them still reads correctly and nothing else is left.
 */
#include "util/common.h"
#include "store/odb.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/oidset.h"

#include "common.h"

#define IDX_HDR	   24
#define IDX_FANOUT 1024
#define IDX_ENTRY  64
#define MAX_OBJS   64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[2] = {
	"pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"pack-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
};

static char packdir[PATH_MAX];

typedef struct {
	oid id;
	bool ok; /* read correctly before gc */
} seen_obj;

static int collect(void *payload, const oid *id, int type, uint64_t raw_len,
		   const char *pack_name)
{
	buf *ids = payload;
	(void)type;
	(void)raw_len;
	fuzz_check(pack_name && !strncmp(pack_name, "pack-", 5));
	return buf_put(ids, id->b, sizeof(oid)) < 0 ? -1 : 0;
}

static void ignore_damage(void *payload, const char *what, const char *msg)
{
	(void)payload;
	fuzz_check(what && msg);
}

/* Read one object; true when it read correctly.  `single`: the store
 * lists it once (odb_size answers from the newest copy, which a read
 * passes over when it does not verify). */
static bool read_ok(odb *db, const oid *id, bool single)
{
	buf out = BUF_INIT;
	uint64_t size;
	oid sum;
	int type = -1, r;

	r = odb_read(&out, &type, db, id);
	if (r < 0) {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ENOTFOUND ||
			   r == DECREE_ERROR);
		buf_release(&out);
		decree_error_clear();
		return false;
	}
	sha256_buf(&sum, out.ptr, out.len);
	fuzz_check(!oid_cmp(&sum, id));
	fuzz_check(odb_size(&size, db, id) == 0);
	fuzz_check(!single || size == out.len);
	buf_release(&out);
	return true;
}

/* How many times the listing holds id. */
static size_t count_of(const buf *ids, const oid *id)
{
	size_t n = 0;

	for (size_t i = 0; i < ids->len / sizeof(oid); i++)
		n += !memcmp(ids->ptr + i * sizeof(oid), id->b, sizeof(oid));
	return n;
}

static void write_packs(const fuzz_part *p, size_t n)
{
	char path[PATH_MAX];

	fuzz_empty_dir(packdir);
	for (size_t k = 0; k < 2; k++) {
		if (2 * k >= n)
			break;
		snprintf(path, sizeof(path), "%s/%s.idx", packdir, names[k]);
		fuzz_write(path, p[2 * k].ptr, p[2 * k].len);
		snprintf(path, sizeof(path), "%s/%s.pack", packdir, names[k]);
		if (2 * k + 1 < n)
			fuzz_write(path, p[2 * k + 1].ptr, p[2 * k + 1].len);
		else
			fuzz_write(path, "", 0);
	}
}

static int entry_cmp(const void *a, const void *b)
{
	return memcmp(a, b, SHA256_LEN);
}

/* A well-formed index around the entries of `in` (see the head); true
 * when it lists an id twice (odb_verify reports that). */
static bool fix_index(buf *out, const fuzz_part *in)
{
	bool dup = false;
	size_t n = 0;
	uint32_t fan[256] = { 0 };
	unsigned char *ents;
	oid sum;

	buf_clear(out);
	if (in->len > IDX_HDR + IDX_FANOUT + SHA256_LEN)
		n = (in->len - IDX_HDR - IDX_FANOUT - SHA256_LEN) / IDX_ENTRY;
	fuzz_check(buf_put(out, "DECRIDX\0", 8) == 0 &&
		   buf_put_u32(out, 1) == 0 && buf_put_u32(out, 0) == 0 &&
		   buf_put_u64(out, n) == 0);
	fuzz_check(buf_grow(out, IDX_FANOUT + n * IDX_ENTRY + SHA256_LEN) == 0);
	ents = (unsigned char *)out->ptr + IDX_HDR + IDX_FANOUT;
	if (n)
		memcpy(ents, in->ptr + IDX_HDR + IDX_FANOUT, n * IDX_ENTRY);
	qsort(ents, n, IDX_ENTRY, entry_cmp);
	for (size_t i = 0; i < n; i++) {
		fan[ents[i * IDX_ENTRY]]++;
		dup |= i && !entry_cmp(ents + (i - 1) * IDX_ENTRY,
				       ents + i * IDX_ENTRY);
	}
	for (int i = 1; i < 256; i++)
		fan[i] += fan[i - 1];
	for (int i = 0; i < 256; i++)
		put_u32le((unsigned char *)out->ptr + IDX_HDR + 4 * i, fan[i]);
	out->len = IDX_HDR + IDX_FANOUT + n * IDX_ENTRY;
	sha256_buf(&sum, out->ptr, out->len);
	memcpy(out->ptr + out->len, sum.b, SHA256_LEN);
	out->len += SHA256_LEN;
	out->ptr[out->len] = '\0';
	return dup;
}

/* well_formed: the indexes went through fix_index, `damaged` of them list
 * an id twice. */
static void run(const fuzz_part *p, size_t n, bool well_formed, int damaged)
{
	odb *db = NULL;
	buf ids = BUF_INIT;
	seen_obj objs[MAX_OBJS];
	size_t nobj;
	oidset keep = OIDSET_INIT;
	uint64_t freed, bytes;
	int r;

	write_packs(p, n);
	r = odb_open(&db, packdir);
	if (r < 0) {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
		fuzz_check(db == NULL);
		decree_error_clear();
		return;
	}
	fuzz_check(odb_foreach(db, collect, &ids) == 0);
	nobj = ids.len / sizeof(oid);
	if (nobj > MAX_OBJS)
		nobj = MAX_OBJS; /* the first ones are read */
	for (size_t i = 0; i < nobj; i++) {
		memcpy(objs[i].id.b, ids.ptr + i * sizeof(oid), sizeof(oid));
		if (well_formed)
			fuzz_check(odb_has(db, &objs[i].id));
		objs[i].ok = read_ok(db, &objs[i].id,
				     count_of(&ids, &objs[i].id) == 1);
		if (objs[i].ok)
			fuzz_check(oidset_add(&keep, &objs[i].id, NULL) == 0);
	}
	/* every pack listing an id twice is damaged, and maybe others (their
	 * objects fail to verify); packs whose index cannot be loaded count
	 * too, but a well-formed index always loads */
	r = odb_verify(db, ignore_damage, NULL);
	fuzz_check(r >= 0 && (size_t)r <= 2);
	if (well_formed)
		fuzz_check(r >= damaged);

	r = odb_gc(db, &keep, false, &freed, &bytes);
	if (r == 0) {
		for (size_t i = 0; i < nobj; i++) {
			if (objs[i].ok)
				fuzz_check(read_ok(db, &objs[i].id, false));
			else
				fuzz_check(!odb_has(db, &objs[i].id));
		}
	} else {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
	}
	decree_error_clear();
	oidset_release(&keep);
	buf_release(&ids);
	odb_free(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_part parts[4], fixed[4];
	buf fb[2] = { BUF_INIT, BUF_INIT };
	size_t n = fuzz_split(parts, 4, data, size);
	int damaged = 0;

	if (!packdir[0]) {
		fuzz_mkdirs("packs");
		fuzz_path(packdir, "packs");
	}
	run(parts, n, false, 0);
	for (size_t i = 0; i < n; i++) {
		fixed[i] = parts[i];
		if (i % 2 == 0) {
			damaged += fix_index(&fb[i / 2], &parts[i]);
			fixed[i].ptr = (const uint8_t *)fb[i / 2].ptr;
			fixed[i].len = fb[i / 2].len;
		}
	}
	run(fixed, n, true, damaged);
	buf_release(&fb[0]);
	buf_release(&fb[1]);
	return 0;
}
