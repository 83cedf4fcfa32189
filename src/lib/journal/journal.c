/*
 * journal.c - the agent-write journal of one session (journal.h).
 *
 * Record JSON (keys in this order; docs/format.md):
 *   {"type":"session","v":1,"session":S,"agent":A|null,"time":NS}
 *   {"type":"turn","turn":N,"message":M,"prompt":P|null,"checkpoint":ID,"time":NS}
 *   {"type":"start","turn":N,"tool":T,"tool_id":I|null,"time":NS}
 *   {"type":"write","turn":N,"tool":T,"path":P[,"path_base64":B],
 *    "id":ID|null,"mode":"644"|null,"time":NS}
 * Paths that are not UTF-8 carry their exact bytes in path_base64.
 */
#include "util/common.h"
#include "journal/journal.h"
#include "util/alloc.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "store/record.h"
#include "store/repo.h"
#include "store/snap.h"

#include <fcntl.h>
#include <jansson.h>
#include <sys/file.h>

#define SUM_HEX	     16
#define JOURNAL_MAX  (256u << 20) /* a journal is never read beyond this */
#define LINE_MAX_LEN (1u << 20)

struct jr_strings {
	struct jr_strings *next;
	char s[];
};

void journal_dir(char *out, const decree_store *s)
{
	repo_file(out, s, JOURNAL_DIR);
}

int journal_path(char *out, size_t len, const decree_store *s,
		 const char *session)
{
	char dir[PATH_MAX], key[33];

	record_journal_key(key, session);
	journal_dir(dir, s);
	if ((size_t)snprintf(out, len, "%s/%s", dir, key) >= len)
		return decree_error_set(DECREE_EINVALID, "path too long");
	return 0;
}

int journal_open(journal_file *f, decree_store *s, const char *session,
		 bool create)
{
	char dir[PATH_MAX];
	int r;

	f->fd = -1;
	if ((r = journal_path(f->path, sizeof(f->path), s, session)) < 0)
		return r;
	if (create) {
		journal_dir(dir, s);
		if ((r = fs_mkdirs(dir, 0755)) < 0)
			return r;
	}
	f->fd = open(f->path,
		     O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW |
			     (create ? O_CREAT : 0),
		     0644);
	if (f->fd < 0)
		return errno == ENOENT
			       ? decree_error_set(DECREE_ENOTFOUND,
						  "session '%s' has no journal",
						  session)
			       : decree_error_os("cannot open '%s'", f->path);
	while (flock(f->fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			r = decree_error_os("cannot lock '%s'", f->path);
			journal_close(f);
			return r;
		}
	}
	return 0;
}

void journal_close(journal_file *f)
{
	if (f->fd >= 0)
		close(f->fd); /* releases the flock */
	f->fd = -1;
}

void journal_release(journal *j)
{
	while (j->strings) {
		struct jr_strings *n = j->strings->next;
		decree_free(j->strings);
		j->strings = n;
	}
	decree_free(j->v);
	memset(j, 0, sizeof(*j));
}

static const char *keep(journal *j, const char *s, size_t n)
{
	struct jr_strings *e = decree_malloc(sizeof(*e) + n + 1);
	if (!e)
		return NULL;
	memcpy(e->s, s, n);
	e->s[n] = '\0';
	e->next = j->strings;
	j->strings = e;
	return e->s;
}

/* A string member (NULL when absent or null; *bad when of another
 * type or out of memory). */
static const char *str_member(journal *j, json_t *o, const char *key, bool *bad)
{
	json_t *v = json_object_get(o, key);
	const char *k;

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v) ||
	    !(k = keep(j, json_string_value(v), json_string_length(v))))
		*bad = true;
	else
		return k;
	return NULL;
}

static const char *path_member(journal *j, json_t *o, bool *bad)
{
	json_t *b64 = json_object_get(o, "path_base64");
	buf raw = BUF_INIT;
	const char *k = NULL;

	if (!b64)
		return str_member(j, o, "path", bad);
	if (!json_is_string(b64) ||
	    base64_decode(&raw, json_string_value(b64),
			  json_string_length(b64)) < 0 ||
	    memchr(raw.ptr, '\0', raw.len) ||
	    !(k = keep(j, raw.ptr ? raw.ptr : "", raw.len)))
		*bad = true;
	buf_release(&raw);
	return k;
}

static int parse_line(journal *j, const char *line, size_t len)
{
	char sum_hex[SHA256_HEXLEN + 1];
	json_t *o;
	json_error_t jerr;
	jr_record rec;
	const char *type;
	bool bad = false;
	oid sum;

	if (len < SUM_HEX + 3 || line[SUM_HEX] != ' ')
		return 1;
	sha256_buf(&sum, line + SUM_HEX + 1, len - SUM_HEX - 1);
	oid_to_hex(sum_hex, &sum);
	if (memcmp(sum_hex, line, SUM_HEX))
		return 1;
	if (!(o = json_loadb(line + SUM_HEX + 1, len - SUM_HEX - 1, 0,
			     &jerr)) ||
	    !json_is_object(o)) {
		json_decref(o);
		return 1;
	}
	memset(&rec, 0, sizeof(rec));
	type = json_string_value(json_object_get(o, "type"));
	rec.time_ns = json_integer_value(json_object_get(o, "time"));
	rec.turn = (unsigned)json_integer_value(json_object_get(o, "turn"));
	if (!type) {
		bad = true;
	} else if (!strcmp(type, "session")) {
		rec.type = JR_SESSION;
		rec.session = str_member(j, o, "session", &bad);
		rec.agent = str_member(j, o, "agent", &bad);
		bad = bad || !rec.session;
	} else if (!strcmp(type, "turn")) {
		const char *id;
		oid ck;
		rec.type = JR_TURN;
		rec.message = str_member(j, o, "message", &bad);
		rec.prompt = str_member(j, o, "prompt", &bad);
		id = json_string_value(json_object_get(o, "checkpoint"));
		/* an id (a reference like SESSION:MESSAGE would resolve to
		 * another checkpoint) */
		if (!id || oid_from_hex(&ck, id) < 0 || !rec.message ||
		    !rec.turn)
			bad = true;
		else
			oid_to_hex(rec.checkpoint, &ck);
	} else if (!strcmp(type, "start") || !strcmp(type, "write")) {
		rec.type = type[0] == 's' ? JR_START : JR_WRITE;
		rec.tool = str_member(j, o, "tool", &bad);
		rec.tool_id = str_member(j, o, "tool_id", &bad);
		if (rec.type == JR_WRITE) {
			const char *id =
				json_string_value(json_object_get(o, "id"));
			const char *mode =
				json_string_value(json_object_get(o, "mode"));
			char *end;
			rec.path = path_member(j, o, &bad);
			rec.present = id != NULL;
			if (!rec.path ||
			    (id && (!mode || oid_from_hex(&rec.id, id) < 0)))
				bad = true;
			if (mode) {
				/* octal digits, a file's or a symlink's mode */
				unsigned long m = strtoul(mode, &end, 8);
				rec.mode = (uint32_t)m;
				bad = bad || *end || !*mode ||
				      mode[strspn(mode, "01234567")] ||
				      m != rec.mode ||
				      !(mode_is_file(rec.mode) ||
					rec.mode == MODE_LINK);
			}
		}
	} else {
		bad = true; /* a record of a newer decree: not ours to read */
	}
	json_decref(o);
	if (bad)
		return 1;
	if (GROW(j->v, j->cap, j->n + 1) < 0)
		return -1;
	j->v[j->n++] = rec;
	return 0;
}

static int parse_all(journal *j, const buf *data)
{
	size_t off = 0;

	while (off < data->len) {
		const char *nl = memchr(data->ptr + off, '\n', data->len - off);
		int r;
		if (!nl) { /* a torn last line: the append never finished */
			j->damaged++;
			break;
		}
		r = parse_line(j, data->ptr + off,
			       (size_t)(nl - (data->ptr + off)));
		if (r < 0)
			return r;
		j->damaged += (size_t)r;
		off = (size_t)(nl - data->ptr) + 1;
	}
	return 0;
}

int journal_read(journal *j, journal_file *f)
{
	buf data = BUF_INIT;
	struct stat st;
	int r;

	if (fstat(f->fd, &st) < 0)
		return decree_error_os("cannot stat '%s'", f->path);
	if ((uint64_t)st.st_size > JOURNAL_MAX)
		return decree_error_set(DECREE_ECORRUPT,
					"'%s' is too large to be a journal",
					f->path);
	if (lseek(f->fd, 0, SEEK_SET) < 0)
		return decree_error_os("cannot seek in '%s'", f->path);
	if ((r = fs_read_fd(f->fd, &data, f->path)) == 0)
		r = parse_all(j, &data);
	buf_release(&data);
	return r;
}

int journal_read_path(journal *j, const char *path)
{
	buf data = BUF_INIT;
	int r = fs_read_path(path, &data);

	if (r == 0 && data.len > JOURNAL_MAX)
		r = decree_error_set(DECREE_ECORRUPT,
				     "'%s' is too large to be a journal", path);
	if (r == 0)
		r = parse_all(j, &data);
	buf_release(&data);
	return r;
}

static const char *type_name(jr_type t)
{
	return t == JR_SESSION ? "session"
	       : t == JR_TURN  ? "turn"
	       : t == JR_START ? "start"
			       : "write";
}

static int format(buf *b, const jr_record *r)
{
	buf_printf(b, "{\"type\":\"%s\"", type_name(r->type));
	switch (r->type) {
	case JR_SESSION:
		buf_puts(b, ",\"v\":1");
		json_kv_str(b, "session", r->session, true);
		json_kv_str(b, "agent", r->agent, true);
		break;
	case JR_TURN:
		buf_printf(b, ",\"turn\":%u", r->turn);
		json_kv_str(b, "message", r->message, true);
		json_kv_str(b, "prompt", r->prompt, true);
		json_kv_str(b, "checkpoint", r->checkpoint, true);
		break;
	case JR_START:
	case JR_WRITE:
		buf_printf(b, ",\"turn\":%u", r->turn);
		json_kv_str(b, "tool", r->tool, true);
		json_kv_str(b, "tool_id", r->tool_id, true);
		if (r->type == JR_WRITE) {
			char hex[SHA256_HEXLEN + 1], mode[16];
			json_kv_path(b, "path", r->path, true);
			oid_to_hex(hex, &r->id);
			snprintf(mode, sizeof(mode), "%o", r->mode);
			json_kv_str(b, "id", r->present ? hex : NULL, true);
			json_kv_str(b, "mode", r->present ? mode : NULL, true);
		}
		break;
	}
	return buf_printf(b, ",\"time\":%lld}", (long long)r->time_ns);
}

/* Records as journal lines into out. */
static int format_lines(buf *out, const jr_record *v, size_t n)
{
	buf one = BUF_INIT;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		char hex[SHA256_HEXLEN + 1];
		oid sum;
		buf_clear(&one);
		if ((r = format(&one, &v[i])) < 0)
			break;
		if (one.len > LINE_MAX_LEN) {
			r = decree_error_set(
				DECREE_EINVALID,
				"a journal record of %zu bytes is too large",
				one.len);
			break;
		}
		sha256_buf(&sum, one.ptr, one.len);
		oid_to_hex(hex, &sum);
		if (buf_put(out, hex, SUM_HEX) < 0 || buf_putc(out, ' ') < 0 ||
		    buf_put(out, one.ptr, one.len) < 0 ||
		    buf_putc(out, '\n') < 0)
			r = -1;
	}
	buf_release(&one);
	return r;
}

int journal_append(journal_file *f, const jr_record *v, size_t n, bool sync)
{
	buf out = BUF_INIT;
	struct stat st;
	char last = '\n';
	int r;

	if ((r = format_lines(&out, v, n)) < 0 || !out.len)
		goto done;
	/* a torn line left by a crash must not swallow this record */
	if (fstat(f->fd, &st) == 0 && st.st_size > 0 &&
	    pread(f->fd, &last, 1, st.st_size - 1) == 1 && last != '\n' &&
	    fs_write_all(f->fd, "\n", 1) < 0)
		r = decree_error_os("cannot write '%s'", f->path);
	else if (fs_fault_hook && (errno = fs_fault_hook("write")) != 0)
		r = decree_error_os("cannot write '%s'", f->path);
	else if (fs_write_all(f->fd, out.ptr, out.len) < 0)
		r = decree_error_os("cannot write '%s'", f->path);
	else if (sync && fdatasync(f->fd) < 0)
		r = decree_error_os("cannot fsync '%s'", f->path);
done:
	buf_release(&out);
	return r;
}

int journal_rewrite(const char *path, const journal *j)
{
	buf out = BUF_INIT;
	int r = format_lines(&out, j->v, j->n);

	if (r == 0)
		r = fs_write_atomic(path, out.ptr ? out.ptr : "", out.len,
				    0644);
	buf_release(&out);
	return r;
}

const jr_record *journal_last_turn(const journal *j)
{
	for (size_t i = j->n; i > 0; i--)
		if (j->v[i - 1].type == JR_TURN)
			return &j->v[i - 1];
	return NULL;
}
