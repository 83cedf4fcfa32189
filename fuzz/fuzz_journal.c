/*
 * fuzz_journal.c - libFuzzer target for the agent-write journal reader
 * (src/lib/journal/journal.c: journal_read_path, journal_append).
 *
 *   make fuzz && build/fuzz/fuzz_journal -dict=fuzz/journal.dict \
 *       fuzz/corpus/journal
 * `make check` replays fuzz/corpus/journal through fuzz/replay.c.
 *
 * The input is written as a journal file and read, twice: as it is, and
 * with the checksum of every line made right (a line without the
 * "<16 hex> " head gets one), so that mutations reach the JSON and the
 * record fields.  What an agent-only restore and decree rewind rely on,
 * beyond "no crash, no leak, no undefined behaviour":
 *   - every line is a record or counted damaged, the torn tail (bytes
 *     after the last newline) once: records + damaged = lines;
 *   - a line reads the same alone as in the file (no record depends on
 *     its neighbours);
 *   - each record has what its type needs: a session names the session;
 *     a turn has a number from 1, a message and a checkpoint id; a write
 *     has a path, NUL-free and byte for byte what the line says
 *     (path_base64 when present), and, when the file is present, a
 *     content id and the mode of a file or a symlink;
 *   - what was read, appended to a new journal, reads back the same with
 *     nothing damaged, and appending that again writes the same bytes.
 */
#include "util/common.h"
#include "journal/journal.h"
#include "store/snap.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include <fcntl.h>
#include <jansson.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SUM_HEX	  16
#define MAX_LINES 64 /* lines read alone, each from its own file */

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void same_record(const jr_record *a, const jr_record *b)
{
	fuzz_check(a->type == b->type && a->time_ns == b->time_ns);
	switch (a->type) {
	case JR_SESSION:
		fuzz_check(same_str(a->session, b->session) &&
			   same_str(a->agent, b->agent));
		break;
	case JR_TURN:
		fuzz_check(a->turn == b->turn &&
			   same_str(a->message, b->message) &&
			   same_str(a->prompt, b->prompt) &&
			   !strcmp(a->checkpoint, b->checkpoint));
		break;
	case JR_START:
	case JR_WRITE:
		fuzz_check(a->turn == b->turn && same_str(a->tool, b->tool) &&
			   same_str(a->tool_id, b->tool_id));
		if (a->type == JR_START)
			break;
		fuzz_check(same_str(a->path, b->path) &&
			   a->present == b->present);
		if (a->present)
			fuzz_check(a->mode == b->mode &&
				   !oid_cmp(&a->id, &b->id));
		break;
	default:
		fuzz_check(false);
	}
}

/* What each type of record needs. */
static void check_record(const jr_record *e)
{
	oid id;

	switch (e->type) {
	case JR_SESSION:
		fuzz_check(e->session != NULL);
		break;
	case JR_TURN:
		fuzz_check(e->turn >= 1 && e->message != NULL);
		fuzz_check(strlen(e->checkpoint) == SHA256_HEXLEN &&
			   oid_from_hex(&id, e->checkpoint) == 0);
		break;
	case JR_START:
		break;
	case JR_WRITE:
		fuzz_check(e->path != NULL);
		if (e->present)
			fuzz_check(mode_is_file(e->mode) ||
				   e->mode == MODE_LINK);
		break;
	default:
		fuzz_check(false);
	}
	decree_error_clear();
}

/* The path a write line states: path_base64's bytes, else path's. */
static void check_path(const jr_record *e, const char *line, size_t len)
{
	json_t *o, *b64;
	buf want = BUF_INIT;

	fuzz_check(len > SUM_HEX + 1);
	o = json_loadb(line + SUM_HEX + 1, len - SUM_HEX - 1, 0, NULL);
	fuzz_check(o != NULL);
	b64 = json_object_get(o, "path_base64");
	if (b64)
		fuzz_check(base64_decode(&want, json_string_value(b64),
					 json_string_length(b64)) == 0);
	else
		fuzz_check(
			buf_put(&want,
				json_string_value(json_object_get(o, "path")),
				json_string_length(
					json_object_get(o, "path"))) == 0);
	fuzz_check(strlen(e->path) == want.len &&
		   !memcmp(e->path, want.ptr, want.len));
	json_decref(o);
	buf_release(&want);
}

/* Append every record of j to a new journal at path (its bytes into
 * out); 0 or the append's error. */
static int append_all(buf *out, const char *path, const journal *j)
{
	journal_file f;
	int r;

	f.fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0644);
	fuzz_check(f.fd >= 0);
	snprintf(f.path, sizeof(f.path), "%s", path);
	r = journal_append(&f, j->v, j->n, false);
	journal_close(&f);
	buf_clear(out);
	fuzz_check(fs_read_path(path, out) == 0);
	return r;
}

static void load(const uint8_t *data, size_t size)
{
	static char path[PATH_MAX], one[PATH_MAX], again[PATH_MAX];
	journal j = JOURNAL_INIT, j2 = JOURNAL_INIT;
	buf bytes = BUF_INIT, bytes2 = BUF_INIT;
	size_t lines = 0, k = 0, at = 0, nl = 0;
	int r;

	if (!path[0]) {
		fuzz_path(path, "journal");
		fuzz_path(one, "journal.line");
		fuzz_path(again, "journal.again");
	}
	fuzz_write(path, data, size);
	fuzz_check(journal_read_path(&j, path) == 0);
	for (size_t i = 0; i < size; i++)
		nl += data[i] == '\n';
	lines = nl + (size && data[size - 1] != '\n');
	fuzz_check(j.n + j.damaged == lines);
	for (size_t i = 0; i < j.n; i++)
		check_record(&j.v[i]);
	(void)journal_last_turn(&j);

	/* each line alone reads as it did in the file */
	for (size_t l = 0; l < lines && l < MAX_LINES; l++) {
		const uint8_t *s = data + at, *e = memchr(s, '\n', size - at);
		size_t len = e ? (size_t)(e - s) + 1 : size - at;
		journal lj = JOURNAL_INIT;
		fuzz_write(one, s, len);
		fuzz_check(journal_read_path(&lj, one) == 0);
		fuzz_check(lj.n + lj.damaged == 1);
		if (lj.n) {
			fuzz_check(k < j.n);
			same_record(&lj.v[0], &j.v[k]);
			if (lj.v[0].type == JR_WRITE)
				check_path(&lj.v[0], (const char *)s,
					   len - (e != NULL));
			k++;
		}
		journal_release(&lj);
		at += len;
	}
	if (lines <= MAX_LINES)
		fuzz_check(k == j.n);

	/* what was read round-trips */
	r = append_all(&bytes, again, &j);
	if (r < 0) {
		/* only a record that grew past the line limit */
		fuzz_check(r == DECREE_EINVALID && size > 100000);
		decree_error_clear();
		goto done;
	}
	fuzz_check(journal_read_path(&j2, again) == 0);
	fuzz_check(j2.n == j.n && j2.damaged == 0);
	for (size_t i = 0; i < j.n; i++)
		same_record(&j.v[i], &j2.v[i]);
	fuzz_check(append_all(&bytes2, again, &j2) == 0);
	fuzz_check(bytes.len == bytes2.len &&
		   !memcmp(bytes.ptr, bytes2.ptr, bytes.len));
done:
	journal_release(&j);
	journal_release(&j2);
	buf_release(&bytes);
	buf_release(&bytes2);
	decree_error_clear();
}

/* The input with the checksum of every line made right (a line without
 * the "<16 hex> " head gets one). */
static void fix_sums(buf *out, const uint8_t *data, size_t size)
{
	size_t at = 0;

	buf_clear(out);
	while (at < size) {
		const uint8_t *s = data + at, *e = memchr(s, '\n', size - at);
		size_t len = e ? (size_t)(e - s) : size - at;
		const uint8_t *json = s;
		size_t jlen = len;
		char hex[SHA256_HEXLEN + 1];
		oid sum;
		if (len > SUM_HEX && s[SUM_HEX] == ' ') {
			json = s + SUM_HEX + 1;
			jlen = len - SUM_HEX - 1;
		}
		sha256_buf(&sum, json, jlen);
		oid_to_hex(hex, &sum);
		fuzz_check(buf_put(out, hex, SUM_HEX) == 0 &&
			   buf_putc(out, ' ') == 0 &&
			   buf_put(out, json, jlen) == 0);
		if (e)
			fuzz_check(buf_putc(out, '\n') == 0);
		at += len + (e != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buf fixed = BUF_INIT;

	load(data, size);
	fix_sums(&fixed, data, size);
	if (fixed.len != size || memcmp(fixed.ptr, data, size))
		load((const uint8_t *)fixed.ptr, fixed.len);
	buf_release(&fixed);
	return 0;
}
