/*
 * test_journal.c - the agent-write journal file (src/lib/journal).
 *
 * Every record type is appended and read back field by field (a path
 * that is not UTF-8 travels in path_base64, a long prompt whole); a
 * record too large for a line is refused with nothing written.  Damage
 * is contained to its line: the last line cut at every byte offset is
 * skipped and counted while every earlier record reads, and the next
 * append still starts a line of its own; a byte flipped anywhere in a
 * line drops that line only; lines of unknown types, or of known types
 * without the fields they need, are skipped even with a right checksum.
 * Several processes appending at once (journal_open's flock) leave only
 * whole lines, each process's records in its order.  A failing write
 * (fs_fault_hook) fails the append cleanly and leaves the journal
 * readable.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "decree/decree.h"
#include "journal/journal.h"
#include "store/repo.h"
#include "store/snap.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include <fcntl.h>
#include <sys/wait.h>

typedef struct {
	char dir[PATH_MAX];
	char root[PATH_MAX + 8], store[PATH_MAX + 8];
	decree_store *s;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	char real[PATH_MAX];

	if (!f || testutil_mkdtemp(f->dir, sizeof(f->dir), "journal") < 0 ||
	    !realpath(f->dir, real))
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", real);
	snprintf(f->root, sizeof(f->root), "%s/root", real);
	snprintf(f->store, sizeof(f->store), "%s/st", real);
	if (mkdir(f->root, 0755) < 0)
		return -1;
	o.root = f->root;
	o.store_path = f->store;
	o.threads = 1;
	o.lock_timeout_ms = 2000;
	if (decree_store_open(&f->s, &o) < 0 || repo_ensure(f->s) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	fs_fault_hook = NULL;
	decree_store_free(f->s);
	testutil_rm_rf(f->dir);
	free(f);
	return 0;
}

/* --- records ---------------------------------------------------------------
 */

static const char *const HEX_A =
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
static const char *const HEX_B =
	"fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

static jr_record rec_session(const char *session, const char *agent)
{
	jr_record r;

	memset(&r, 0, sizeof(r));
	r.type = JR_SESSION;
	r.session = session;
	r.agent = agent;
	r.time_ns = 1700000000123456789ll;
	return r;
}

static jr_record rec_turn(unsigned turn, const char *message,
			  const char *prompt, const char *checkpoint)
{
	jr_record r;

	memset(&r, 0, sizeof(r));
	r.type = JR_TURN;
	r.turn = turn;
	r.message = message;
	r.prompt = prompt;
	snprintf(r.checkpoint, sizeof(r.checkpoint), "%s", checkpoint);
	r.time_ns = 1700000001000000000ll + turn;
	return r;
}

static jr_record rec_start(unsigned turn, const char *tool, const char *id)
{
	jr_record r;

	memset(&r, 0, sizeof(r));
	r.type = JR_START;
	r.turn = turn;
	r.tool = tool;
	r.tool_id = id;
	r.time_ns = -5; /* any integer reads back */
	return r;
}

static jr_record rec_write(unsigned turn, const char *path, bool present,
			   uint32_t mode, const char *idhex)
{
	jr_record r;

	memset(&r, 0, sizeof(r));
	r.type = JR_WRITE;
	r.turn = turn;
	r.tool = "Edit";
	r.tool_id = "toolu_01";
	r.path = path;
	r.present = present;
	if (present) {
		r.mode = mode;
		assert_int_equal(oid_from_hex(&r.id, idhex), 0);
	}
	r.time_ns = 42;
	return r;
}

static void same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_true(a == b);
	else
		assert_string_equal(a, b);
}

static void same_record(const jr_record *a, const jr_record *b)
{
	assert_int_equal(a->type, b->type);
	assert_true(a->time_ns == b->time_ns);
	switch (a->type) {
	case JR_SESSION:
		same_str(a->session, b->session);
		same_str(a->agent, b->agent);
		break;
	case JR_TURN:
		assert_int_equal(a->turn, b->turn);
		same_str(a->message, b->message);
		same_str(a->prompt, b->prompt);
		assert_string_equal(a->checkpoint, b->checkpoint);
		break;
	case JR_START:
	case JR_WRITE:
		assert_int_equal(a->turn, b->turn);
		same_str(a->tool, b->tool);
		same_str(a->tool_id, b->tool_id);
		if (a->type == JR_START)
			break;
		same_str(a->path, b->path);
		assert_int_equal(a->present, b->present);
		if (a->present) {
			assert_int_equal(a->mode, b->mode);
			assert_int_equal(oid_cmp(&a->id, &b->id), 0);
		}
		break;
	}
}

/* A set of records of every kind, into v (returns how many). */
static size_t sample(jr_record *v, buf *long_prompt)
{
	size_t n = 0;

	buf_clear(long_prompt);
	for (int i = 0; i < 1500; i++) /* ~40 KB */
		buf_printf(long_prompt, "w\xc3\xa9rd %d \"q\" \\ \t", i);
	v[n++] = rec_session("sess-\xe2\x82\xac", "claude-code");
	v[n++] = rec_turn(1, "prompt-1", "Fix the \"bug\" in caf\xc3\xa9",
			  HEX_A);
	v[n++] = rec_start(1, "Bash", "toolu_01");
	v[n++] = rec_start(1, "Task", NULL);
	v[n++] = rec_write(1, "src/a.c", true, MODE_FILE, HEX_B);
	v[n++] = rec_write(1, "bin/run", true, MODE_EXEC, HEX_A);
	v[n++] = rec_write(1, "secret", true, MODE_REG | 0600, HEX_A);
	v[n++] = rec_write(1, "link", true, MODE_LINK, HEX_B);
	v[n++] = rec_write(1, "gone.txt", false, 0, NULL);
	v[n++] = rec_write(1, "d\xffir/f\xfe\xc3", true, MODE_FILE, HEX_B);
	v[n++] = rec_write(1, "\xc0\xaf", false, 0, NULL);
	v[n++] = rec_write(1, "new\nline \"q\" \x01", true, MODE_FILE, HEX_A);
	v[n++] = rec_turn(2, "turn-2", NULL, HEX_B);
	v[n++] = rec_turn(3, "m3", long_prompt->ptr, HEX_A);
	v[n++] = rec_session("s", NULL);
	return n;
}

static void read_file(buf *out, const char *path)
{
	buf_clear(out);
	assert_int_equal(fs_read_path(path, out), 0);
}

static void write_raw(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, data, len), 0);
	assert_int_equal(close(fd), 0);
}

/* A journal line with a right checksum around `json`. */
static void put_line(buf *b, const char *json)
{
	char hex[SHA256_HEXLEN + 1];
	oid sum;

	sha256_buf(&sum, json, strlen(json));
	oid_to_hex(hex, &sum);
	buf_printf(b, "%.16s %s\n", hex, json);
}

static void open_journal(journal_file *jf, fixture *f, const char *session)
{
	assert_int_equal(journal_open(jf, f->s, session, true), 0);
}

/* --- round trips -------------------------------------------------------------
 */

static void test_round_trip(void **state)
{
	fixture *f = *state;
	jr_record v[32];
	buf lp = BUF_INIT, text = BUF_INIT;
	journal_file jf;
	journal j = JOURNAL_INIT, j2 = JOURNAL_INIT;
	size_t n = sample(v, &lp);

	assert_int_equal(journal_open(&jf, f->s, "s1", false),
			 DECREE_ENOTFOUND);
	open_journal(&jf, f, "s1");
	/* one record, then several in one append, then the rest one by one */
	assert_int_equal(journal_append(&jf, v, 1, true), 0);
	assert_int_equal(journal_append(&jf, v + 1, 5, false), 0);
	for (size_t i = 6; i < n; i++)
		assert_int_equal(journal_append(&jf, v + i, 1, false), 0);
	assert_int_equal(journal_append(&jf, v, 0, false), 0); /* nothing */
	assert_int_equal(journal_read(&j, &jf), 0);
	assert_int_equal(j.n, n);
	assert_int_equal(j.damaged, 0);
	for (size_t i = 0; i < n; i++)
		same_record(&v[i], &j.v[i]);
	assert_ptr_equal(journal_last_turn(&j), &j.v[13]);
	/* the same without the lock, by path */
	assert_int_equal(journal_read_path(&j2, jf.path), 0);
	assert_int_equal(j2.n, n);
	for (size_t i = 0; i < n; i++)
		same_record(&v[i], &j2.v[i]);
	/* one line per record; the bytes that are not UTF-8 went to base64 */
	read_file(&text, jf.path);
	{
		size_t lines = 0;
		for (size_t i = 0; i < text.len; i++)
			lines += text.ptr[i] == '\n';
		assert_int_equal(lines, n);
		assert_int_equal(text.ptr[text.len - 1], '\n');
	}
	assert_non_null(strstr(text.ptr, "\"path_base64\":\""));
	assert_null(strstr(text.ptr, "\xff"));
	journal_close(&jf);
	journal_release(&j);
	journal_release(&j2);
	assert_null(journal_last_turn(&j));
	buf_release(&lp);
	buf_release(&text);
}

static void test_too_large_refused(void **state)
{
	fixture *f = *state;
	buf big = BUF_INIT, before = BUF_INIT, after = BUF_INIT;
	jr_record v[2];
	journal_file jf;
	journal j = JOURNAL_INIT;

	assert_int_equal(buf_grow(&big, 1100000), 0);
	memset(big.ptr, 'x', 1100000);
	big.len = 1100000;
	big.ptr[big.len] = '\0';
	open_journal(&jf, f, "big");
	v[0] = rec_session("big", NULL);
	assert_int_equal(journal_append(&jf, v, 1, false), 0);
	read_file(&before, jf.path);
	/* a record of more than a line's limit: nothing of the call lands */
	v[0] = rec_turn(1, "m", NULL, HEX_A);
	v[1] = rec_turn(2, "m2", big.ptr, HEX_A);
	assert_int_equal(journal_append(&jf, v, 2, false), DECREE_EINVALID);
	read_file(&after, jf.path);
	assert_int_equal(after.len, before.len);
	assert_int_equal(journal_read(&j, &jf), 0);
	assert_int_equal(j.n, 1);
	assert_int_equal(j.damaged, 0);
	journal_close(&jf);
	journal_release(&j);
	buf_release(&big);
	buf_release(&before);
	buf_release(&after);
}

/* --- damage ------------------------------------------------------------------
 */

/* Write the sample journal; its bytes into text, line starts into at[]
 * (at[n] = text.len). */
static size_t write_sample(fixture *f, journal_file *jf, jr_record *v, buf *lp,
			   buf *text, size_t *at)
{
	size_t n = sample(v, lp), k = 0;

	open_journal(jf, f, "dmg");
	for (size_t i = 0; i < n; i++)
		assert_int_equal(journal_append(jf, v + i, 1, false), 0);
	read_file(text, jf->path);
	at[k++] = 0;
	for (size_t i = 0; i < text->len; i++)
		if (text->ptr[i] == '\n')
			at[k++] = i + 1;
	assert_int_equal(k, n + 1);
	return n;
}

static void test_torn_last_line(void **state)
{
	fixture *f = *state;
	jr_record v[32], extra = rec_write(9, "after/torn", false, 0, NULL);
	size_t at[33], n;
	buf lp = BUF_INIT, text = BUF_INIT;
	journal_file jf;

	n = write_sample(f, &jf, v, &lp, &text, at);
	/* every cut inside the last record (its newline included) */
	for (size_t cut = at[n - 1]; cut < at[n]; cut++) {
		journal j = JOURNAL_INIT;
		size_t whole;
		assert_int_equal(ftruncate(jf.fd, 0), 0);
		assert_int_equal(fs_write_all(jf.fd, text.ptr, cut), 0);
		assert_int_equal(journal_read(&j, &jf), 0);
		assert_int_equal(j.n, n - 1);
		assert_int_equal(j.damaged, cut > at[n - 1] ? 1 : 0);
		for (size_t i = 0; i < n - 1; i++)
			same_record(&v[i], &j.v[i]);
		journal_release(&j);
		/* the next append is a line of its own (a record that lacked
		 * only its newline is whole again) */
		whole = cut == at[n] - 1;
		assert_int_equal(journal_append(&jf, &extra, 1, false), 0);
		assert_int_equal(journal_read(&j, &jf), 0);
		assert_int_equal(j.n, n + whole);
		assert_int_equal(j.damaged, cut > at[n - 1] && !whole ? 1 : 0);
		for (size_t i = 0; i < n - 1 + whole; i++)
			same_record(&v[i], &j.v[i]);
		same_record(&extra, &j.v[n - 1 + whole]);
		journal_release(&j);
	}
	/* also through journal_read_path */
	assert_int_equal(ftruncate(jf.fd, (off_t)(at[n] - 2)), 0);
	{
		journal j = JOURNAL_INIT;
		assert_int_equal(journal_read_path(&j, jf.path), 0);
		assert_int_equal(j.n, n - 1);
		assert_int_equal(j.damaged, 1);
		journal_release(&j);
	}
	journal_close(&jf);
	buf_release(&lp);
	buf_release(&text);
}

static void test_flipped_byte(void **state)
{
	fixture *f = *state;
	jr_record v[32];
	size_t at[33], n;
	buf lp = BUF_INIT, text = BUF_INIT;
	journal_file jf;

	n = write_sample(f, &jf, v, &lp, &text, at);
	journal_close(&jf);
	for (size_t line = 0; line < n; line++) {
		size_t end = at[line + 1] - 1; /* its newline */
		/* the long prompt's line: a sample of its bytes */
		size_t step = end - at[line] > 4096 ? 997 : 1;
		for (size_t p = at[line]; p < end; p += step) {
			journal j = JOURNAL_INIT;
			size_t k = 0;
			text.ptr[p] ^= 0x20;
			write_raw(jf.path, text.ptr, text.len);
			text.ptr[p] ^= 0x20;
			assert_int_equal(journal_read_path(&j, jf.path), 0);
			assert_int_equal(j.damaged, 1);
			assert_int_equal(j.n, n - 1);
			for (size_t i = 0; i < n; i++)
				if (i != line)
					same_record(&v[i], &j.v[k++]);
			journal_release(&j);
		}
	}
	/* a newline that became something else joins two lines: both go,
	 * counted once; an empty line counts as one */
	{
		journal j = JOURNAL_INIT;
		text.ptr[at[2] - 1] = ' ';
		write_raw(jf.path, text.ptr, text.len);
		assert_int_equal(journal_read_path(&j, jf.path), 0);
		assert_int_equal(j.n, n - 2);
		assert_int_equal(j.damaged, 1);
		same_record(&v[3], &j.v[1]);
		journal_release(&j);
		text.ptr[at[2] - 1] = '\n';
		assert_int_equal(buf_put(&text, "\n", 1), 0);
		write_raw(jf.path, text.ptr, text.len);
		assert_int_equal(journal_read_path(&j, jf.path), 0);
		assert_int_equal(j.n, n);
		assert_int_equal(j.damaged, 1);
		journal_release(&j);
	}
	buf_release(&lp);
	buf_release(&text);
}

static void test_unknown_and_incomplete_records(void **state)
{
	fixture *f = *state;
	static const char *const skipped[] = {
		/* another type (a newer decree), no type, not an object */
		"{\"type\":\"rename\",\"turn\":1,\"from\":\"a\",\"to\":\"b\"}",
		"{\"turn\":1,\"time\":3}",
		"[\"type\",\"write\"]",
		"\"write\"",
		"{\"type\":7}",
		/* known types without what they need */
		"{\"type\":\"session\",\"v\":1,\"agent\":\"x\",\"time\":1}",
		"{\"type\":\"turn\",\"turn\":2,\"message\":\"m\",\"checkpoint\":\"abc\",\"time\":1}",
		/* 64 bytes, not an id: a reference would name another one */
		"{\"type\":\"turn\",\"turn\":2,\"message\":\"m\",\"checkpoint\":"
		"\"s:m-------------------------------------------------------------\"}",
		"{\"type\":\"turn\",\"turn\":2,\"checkpoint\":"
		"\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}",
		"{\"type\":\"turn\",\"turn\":0,\"message\":\"m\",\"checkpoint\":"
		"\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"id\":null,\"time\":1}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123\",\"mode\":\"644\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		"\"mode\":\"64x\"}",
		/* a mode that is not a file's or a symlink's, or not octal */
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		"\"mode\":\"060000\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		"\"mode\":\"-1\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		"\"mode\":\" 100644\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		"\"mode\":\"40000100644\"}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"path_base64\":\"YQBi\",\"id\":null}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":\"a\","
		"\"path_base64\":\"%%%\",\"id\":null}",
		"{\"type\":\"start\",\"turn\":1,\"tool\":5}",
		"{\"type\":\"write\",\"turn\":1,\"tool\":\"t\",\"path\":7,\"id\":null}",
		"{\"type\":\"session\",\"session\":\"a\\u0000b\"}",
		"{\"type\":\"session\",\"session\":\"s\"",
	};
	buf b = BUF_INIT;
	journal_file jf;
	journal j = JOURNAL_INIT;
	jr_record w = rec_write(1, "kept", false, 0, NULL);

	open_journal(&jf, f, "unknown");
	put_line(&b, "{\"type\":\"session\",\"v\":1,\"session\":\"unknown\","
		     "\"agent\":null,\"time\":5}");
	for (size_t i = 0; i < sizeof(skipped) / sizeof(*skipped); i++)
		put_line(&b, skipped[i]);
	/* an id in capitals is that id */
	put_line(
		&b,
		"{\"type\":\"turn\",\"turn\":3,\"message\":\"m\",\"checkpoint\":"
		"\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\","
		"\"time\":1}");
	/* members a newer decree may add are ignored */
	put_line(&b,
		 "{\"type\":\"write\",\"turn\":1,\"tool\":\"Edit\",\"tool_id\":"
		 "\"toolu_01\",\"path\":\"x\",\"path_base64\":\"a2VwdA==\","
		 "\"id\":null,\"mode\":null,\"time\":42,\"new\":[1,2]}");
	assert_int_equal(fs_write_all(jf.fd, b.ptr, b.len), 0);
	assert_int_equal(journal_read(&j, &jf), 0);
	assert_int_equal(j.n, 3);
	assert_int_equal(j.damaged, sizeof(skipped) / sizeof(*skipped));
	assert_int_equal(j.v[0].type, JR_SESSION);
	assert_string_equal(j.v[0].session, "unknown");
	assert_string_equal(j.v[1].checkpoint, HEX_A);
	same_record(&w, &j.v[2]); /* path_base64 wins over path */
	journal_close(&jf);
	journal_release(&j);
	buf_release(&b);
}

static void test_too_large_to_read(void **state)
{
	fixture *f = *state;
	journal_file jf;
	journal j = JOURNAL_INIT;

	open_journal(&jf, f, "huge");
	assert_int_equal(ftruncate(jf.fd, (off_t)(257u << 20)), 0); /* sparse */
	assert_int_equal(journal_read(&j, &jf), DECREE_ECORRUPT);
	assert_int_equal(journal_read_path(&j, jf.path), DECREE_ECORRUPT);
	assert_int_equal(j.n, 0);
	journal_close(&jf);
	journal_release(&j);
}

/* --- concurrency -------------------------------------------------------------
 */

#define WRITERS	   6
#define PER_WRITER 120

static void writer(fixture *f, int w)
{
	buf lp = BUF_INIT;

	for (int i = 0; i < PER_WRITER; i++) {
		char path[64];
		journal_file jf;
		jr_record v[3];
		size_t n = 1 + (size_t)(i % 3);
		buf_clear(&lp);
		/* some records longer than a pipe buffer */
		for (int k = 0; k < (i % 7) * 300; k++)
			buf_puts(&lp, "long ");
		snprintf(path, sizeof(path), "w%d/%d", w, i);
		for (size_t k = 0; k < n; k++) {
			v[k] = rec_write((unsigned)w + 1, path, false, 0, NULL);
			v[k].tool = lp.ptr;
			v[k].time_ns = i;
		}
		if (journal_open(&jf, f->s, "shared", true) < 0 ||
		    journal_append(&jf, v, n, false) < 0)
			_exit(1);
		journal_close(&jf);
	}
	buf_release(&lp);
	_exit(0);
}

static void test_concurrent_appends(void **state)
{
	fixture *f = *state;
	pid_t pid[WRITERS];
	journal_file jf;
	journal j = JOURNAL_INIT;
	int next[WRITERS] = { 0 }, left[WRITERS] = { 0 };
	size_t want = 0;

	for (int w = 0; w < WRITERS; w++) {
		pid[w] = fork();
		assert_true(pid[w] >= 0);
		if (pid[w] == 0)
			writer(f, w);
	}
	for (int w = 0; w < WRITERS; w++) {
		int st;
		assert_int_equal(waitpid(pid[w], &st, 0), pid[w]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (int i = 0; i < PER_WRITER; i++)
		want += 1 + (size_t)(i % 3);
	open_journal(&jf, f, "shared");
	assert_int_equal(journal_read(&j, &jf), 0);
	assert_int_equal(j.damaged, 0);
	assert_int_equal(j.n, want * WRITERS);
	/* each writer's records in its order, each append whole */
	for (size_t i = 0; i < j.n; i++) {
		const jr_record *e = &j.v[i];
		int w = (int)e->turn - 1;
		char path[64];
		assert_true(w >= 0 && w < WRITERS);
		if (!left[w])
			left[w] = 1 + next[w] % 3;
		else
			assert_true(i > 0 && j.v[i - 1].turn == e->turn);
		snprintf(path, sizeof(path), "w%d/%d", w, next[w]);
		assert_string_equal(e->path, path);
		assert_true(e->time_ns == next[w]);
		if (!--left[w])
			next[w]++;
	}
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(next[w], PER_WRITER);
	journal_close(&jf);
	journal_release(&j);
}

/* --- faults ------------------------------------------------------------------
 */

static int fault_n, fault_calls;
static const char *fault_step;

static int nth_fault(const char *step)
{
	if (strcmp(step, fault_step))
		return 0;
	return ++fault_calls == fault_n ? ENOSPC : 0;
}

static void test_write_faults(void **state)
{
	fixture *f = *state;
	jr_record v[32], extra = rec_write(5, "late", false, 0, NULL);
	size_t at[33], n;
	buf lp = BUF_INIT, text = BUF_INIT;
	journal_file jf;

	n = write_sample(f, &jf, v, &lp, &text, at);
	/* with and without a torn last line (two writes then: the newline
	 * that ends it, then the records) */
	for (int torn = 0; torn < 2; torn++) {
		size_t len = torn ? at[n] - 3 : at[n];
		for (fault_n = 1; fault_n <= 3; fault_n++) {
			journal j = JOURNAL_INIT;
			int r;
			assert_int_equal(ftruncate(jf.fd, (off_t)len), 0);
			fault_step = "write";
			fault_calls = 0;
			fs_fault_hook = nth_fault;
			r = journal_append(&jf, &extra, 1, true);
			fs_fault_hook = NULL;
			if (fault_calls < fault_n) {
				assert_int_equal(r, 0); /* fewer writes */
				continue;
			}
			assert_true(r < 0);
			assert_non_null(strstr(decree_error_last(), jf.path));
			assert_non_null(
				strstr(decree_error_last(), "cannot write"));
			/* what is there still reads; the next append lands */
			assert_int_equal(journal_read(&j, &jf), 0);
			assert_int_equal(j.n, n - torn);
			journal_release(&j);
			assert_int_equal(journal_append(&jf, &extra, 1, false),
					 0);
			assert_int_equal(journal_read(&j, &jf), 0);
			assert_int_equal(j.n, n - torn + 1);
			assert_int_equal(j.damaged, (size_t)torn);
			same_record(&extra, &j.v[j.n - 1]);
			journal_release(&j);
		}
	}
	/* no directory for journals: an error, no file open */
	journal_close(&jf);
	{
		char dir[PATH_MAX];
		journal_dir(dir, f->s);
		testutil_rm_rf(dir);
		write_raw(dir, "x", 1);
		assert_int_equal(journal_open(&jf, f->s, "s", true),
				 DECREE_EINVALID);
		assert_int_equal(jf.fd, -1);
	}
	buf_release(&lp);
	buf_release(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_too_large_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_torn_last_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flipped_byte, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_unknown_and_incomplete_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large_to_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_appends, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_faults, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
