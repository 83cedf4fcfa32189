/*
 * test_agent.c - agent turns, the paths a tool changed, and rewinding
 * (decree/agent.h, the agent_only option of decree/restore.h), through
 * the public API on scratch trees.
 *
 * Turns: a message starts a turn, the same message joins it, `ensure`
 * joins the last turn unless the message names another; a session
 * without messages numbers its turns "turn-<n>"; the label is the
 * prompt's first line cut at 200 bytes on a UTF-8 boundary; bad session
 * ids are refused.  What a tool changed: named paths (files, symlinks,
 * deletions; not directories, .git or paths outside the root) and, for
 * shell tools, a walk that counts only inodes changed after the tool's
 * start (creation, deletion, rename, chmod, symlink retarget; not a bare
 * touch, an earlier edit or an ignored file).  Agent-only restore reverts
 * exactly the agent's paths still as the agent left them, reports the
 * others as user edits, leaves every other file's inode alone, is
 * narrowed by `paths`, writes nothing when dry, and is undone exactly.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "decree/decree.h"
#include "decree/agent.h"
#include "journal/journal.h"
#include "ops/agent.h"
#include "store/repo.h"
#include "store/snap.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>

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

	if (!f || testutil_mkdtemp(f->dir, sizeof(f->dir), "agent") < 0 ||
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
	if (decree_store_open(&f->s, &o) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	decree_store_free(f->s);
	testutil_rm_rf(f->dir);
	free(f);
	return 0;
}

/* --- the tree ----------------------------------------------------------------
 */

static void at(char *out, const fixture *f, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", f->root, rel);
}

/* Write a file (in place when it exists: same inode). */
static void put(const fixture *f, const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *fp;

	at(p, f, rel);
	assert_non_null(fp = fopen(p, "w"));
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void mkdir_at(const fixture *f, const char *rel)
{
	char p[PATH_MAX];

	at(p, f, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void rm_at(const fixture *f, const char *rel)
{
	char p[PATH_MAX];

	at(p, f, rel);
	assert_int_equal(unlink(p), 0);
}

static void symlink_at(const fixture *f, const char *target, const char *rel)
{
	char p[PATH_MAX];

	at(p, f, rel);
	assert_int_equal(symlink(target, p), 0);
}

static bool exists(const fixture *f, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	at(p, f, rel);
	return lstat(p, &st) == 0;
}

/* The text of a file ("" when absent, for messages). */
static const char *text_of(const fixture *f, const char *rel)
{
	static char out[4096];
	char p[PATH_MAX];
	int fd;
	ssize_t n;

	at(p, f, rel);
	out[0] = '\0';
	if ((fd = open(p, O_RDONLY)) < 0)
		return "<absent>";
	n = read(fd, out, sizeof(out) - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	return out;
}

static struct stat stat_of(const fixture *f, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	at(p, f, rel);
	assert_int_equal(lstat(p, &st), 0);
	return st;
}

static void same_inode(const struct stat *a, const struct stat *b)
{
	assert_int_equal(a->st_ino, b->st_ino);
	assert_true(a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
		    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec);
	assert_true(a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
		    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec);
}

/* Every entry below dir: "path mode [content|target]\n", sorted. */
static void walk(buf *out, const char *dir, const char *rel)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++)
			if (strcmp(names[k], names[i]) < 0) {
				char *t = names[i];
				names[i] = names[k];
				names[k] = t;
			}
	for (size_t i = 0; i < n; i++) {
		char p[PATH_MAX], r[PATH_MAX], data[4096];
		struct stat st;
		ssize_t len = 0;
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "",
			 names[i]);
		assert_int_equal(lstat(p, &st), 0);
		if (S_ISLNK(st.st_mode)) {
			len = readlink(p, data, sizeof(data));
		} else if (S_ISREG(st.st_mode)) {
			int fd = open(p, O_RDONLY);
			assert_true(fd >= 0);
			len = read(fd, data, sizeof(data));
			close(fd);
		}
		assert_true(len >= 0);
		buf_printf(out, "%s %o %.*s\n", r, (unsigned)st.st_mode,
			   (int)len, data);
		if (S_ISDIR(st.st_mode))
			walk(out, p, r);
		free(names[i]);
	}
	free(names);
}

static void tree_state(buf *out, const fixture *f)
{
	buf_clear(out);
	walk(out, f->root, "");
}

/* --- the API -----------------------------------------------------------------
 */

static int turn_ext(decree_turn_result *out, fixture *f, const char *session,
		    const char *message, const char *prompt, bool ensure,
		    const char *agent)
{
	decree_turn_options o = DECREE_TURN_OPTIONS_INIT;

	o.session = session;
	o.message = message;
	o.prompt = prompt;
	o.ensure = ensure;
	o.agent = agent;
	return decree_agent_turn(out, f->s, &o);
}

static decree_turn_result turn(fixture *f, const char *session,
			       const char *message, const char *prompt,
			       bool ensure)
{
	decree_turn_result t;

	assert_int_equal(
		turn_ext(&t, f, session, message, prompt, ensure, "test"), 0);
	return t;
}

/* Record these paths for the session's last turn (NULL-terminated). */
static size_t record(fixture *f, const char *session, ...)
{
	const char *v[32];
	size_t n = 0, recorded;
	va_list ap;

	va_start(ap, session);
	while ((v[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	assert_int_equal(decree_agent_record_paths(&recorded, f->s, session,
						   "Write", v),
			 0);
	return recorded;
}

/* The files of turn i of the session, "a b c". */
static const char *turn_files(fixture *f, const char *session, size_t i)
{
	static char out[4096];
	decree_rewind_list *l;
	size_t len = 0;

	assert_int_equal(decree_rewind_list_get(&l, f->s, session), 0);
	out[0] = '\0';
	for (size_t k = 0; k < decree_rewind_list_file_count(l, i); k++)
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s",
					k ? " " : "",
					decree_rewind_list_file(l, i, k));
	assert_int_equal(decree_rewind_list_file_count(l, i),
			 decree_rewind_list_at(l, i)->file_count);
	decree_rewind_list_free(l);
	return out;
}

/* The agent's last write of each path since the session's turn n. */
static void writes_of(agent_writes *w, fixture *f, const char *session,
		      const char *checkpoint)
{
	assert_int_equal(agent_writes_since(w, f->s, session, checkpoint, 0),
			 0);
}

static const agent_write *write_of(const agent_writes *w, const char *path)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].path, path))
			return &w->v[i];
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* plan callback: "ACTION path\n" per call */
static void plan_cb(void *payload, const char *path, decree_action a)
{
	static const char *const names[] = { "?",      "create",  "restore",
					     "delete", "replace", "user" };
	buf_printf(payload, "%s %s\n", names[a <= 5 ? a : 0], path);
}

static decree_restore_options agent_only_opts(buf *plan, bool dry_run,
					      const char *const *paths)
{
	decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;

	o.agent_only = true;
	o.dry_run = dry_run;
	o.paths = paths;
	o.plan = plan_cb;
	o.payload = plan;
	return o;
}

/* --- turns -------------------------------------------------------------------
 */

static void test_turns(void **state)
{
	fixture *f = *state;
	decree_turn_result t, t2;
	decree_turn_options bad = DECREE_TURN_OPTIONS_INIT;
	decree_rewind_list *l;

	put(f, "a.txt", "a\n");
	assert_int_equal(turn_ext(&t, f, NULL, "m", NULL, false, NULL),
			 DECREE_EINVALID);
	assert_int_equal(turn_ext(&t, f, "", "m", NULL, false, NULL),
			 DECREE_EINVALID);
	assert_int_equal(turn_ext(&t, f, "a:b", "m", NULL, false, NULL),
			 DECREE_EINVALID);
	assert_int_equal(turn_ext(&t, f, "a\nb", "m", NULL, false, NULL),
			 DECREE_EINVALID);
	assert_int_equal(decree_agent_turn(&t, f->s, NULL), DECREE_EINVALID);
	bad.version = 99;
	bad.session = "s";
	assert_int_equal(decree_agent_turn(&t, f->s, &bad), DECREE_EINVALID);

	/* a message starts a turn; the same again joins it */
	t = turn(f, "s", "p1", "Fix the bug\nin detail", false);
	assert_int_equal(t.turn, 1);
	assert_true(t.started);
	assert_int_equal(strlen(t.checkpoint), DECREE_ID_HEXLEN);
	put(f, "a.txt", "changed\n");
	t2 = turn(f, "s", "p1", "Fix the bug\nin detail", false);
	assert_int_equal(t2.turn, 1);
	assert_false(t2.started);
	assert_string_equal(t2.checkpoint, t.checkpoint);
	/* ensure: the last turn when the message is the same or none */
	t2 = turn(f, "s", "p1", NULL, true);
	assert_int_equal(t2.turn, 1);
	assert_false(t2.started);
	t2 = turn(f, "s", NULL, NULL, true);
	assert_int_equal(t2.turn, 1);
	assert_false(t2.started);
	/* ... and a new turn when the message differs */
	t2 = turn(f, "s", "p2", NULL, true);
	assert_int_equal(t2.turn, 2);
	assert_true(t2.started);
	assert_string_not_equal(t2.checkpoint, t.checkpoint);
	t2 = turn(f, "s", "p3", "third", false);
	assert_int_equal(t2.turn, 3);

	/* no messages: turn-1, turn-2; ensure starts a first turn */
	t = turn(f, "nomsg", NULL, NULL, true);
	assert_int_equal(t.turn, 1);
	assert_true(t.started);
	t = turn(f, "nomsg", NULL, NULL, true);
	assert_int_equal(t.turn, 1);
	assert_false(t.started);
	t = turn(f, "nomsg", NULL, "second", false);
	assert_int_equal(t.turn, 2);
	assert_true(t.started);
	assert_int_equal(decree_rewind_list_get(&l, f->s, "nomsg"), 0);
	assert_string_equal(decree_rewind_list_session(l), "nomsg");
	assert_string_equal(decree_rewind_list_agent(l), "test");
	assert_int_equal(decree_rewind_list_count(l), 2);
	assert_string_equal(decree_rewind_list_at(l, 0)->message, "turn-1");
	assert_null(decree_rewind_list_at(l, 0)->prompt);
	assert_string_equal(decree_rewind_list_at(l, 1)->message, "turn-2");
	assert_string_equal(decree_rewind_list_at(l, 1)->prompt, "second");
	assert_int_equal(decree_rewind_list_at(l, 1)->turn, 2);
	assert_null(decree_rewind_list_at(l, 2));
	assert_int_equal(decree_rewind_list_damaged(l), 0);
	decree_rewind_list_free(l);

	/* the turns of "s", their checkpoints named session:message */
	assert_int_equal(decree_rewind_list_get(&l, f->s, "s"), 0);
	assert_int_equal(decree_rewind_list_count(l), 3);
	assert_string_equal(decree_rewind_list_at(l, 0)->message, "p1");
	assert_string_equal(decree_rewind_list_at(l, 0)->prompt, "Fix the bug");
	assert_true(decree_rewind_list_at(l, 0)->checkpoint_exists);
	assert_true(decree_rewind_list_at(l, 0)->created_ns > 0);
	assert_int_equal(strlen(decree_rewind_list_at(l, 0)->created_at), 20);
	{
		char id[DECREE_ID_HEXLEN + 1];
		assert_int_equal(decree_checkpoint_resolve(id, f->s, "s:p2"),
				 0);
		assert_string_equal(id,
				    decree_rewind_list_at(l, 1)->checkpoint);
	}
	decree_rewind_list_free(l);
	assert_int_equal(decree_rewind_list_get(&l, f->s, "nope"),
			 DECREE_ENOTFOUND);
	assert_null(l);
}

static void test_labels(void **state)
{
	fixture *f = *state;
	buf p = BUF_INIT;
	decree_rewind_list *l;
	decree_checkpoint_list *cl;
	const char *label;

	/* 2-byte characters from offset 1: byte 200 is a continuation */
	buf_puts(&p, "a");
	for (int i = 0; i < 150; i++)
		buf_puts(&p, "\xc3\xa9");
	buf_puts(&p, "\nsecond line");
	turn(f, "lab", "m1", p.ptr, false);
	/* 3-byte characters: byte 200 starts one, nothing to back off */
	buf_clear(&p);
	buf_puts(&p, "ab");
	for (int i = 0; i < 100; i++)
		buf_puts(&p, "\xe2\x82\xac");
	turn(f, "lab", "m2", p.ptr, false);
	/* ASCII, CR LF */
	buf_clear(&p);
	for (int i = 0; i < 300; i++)
		buf_putc(&p, 'x');
	turn(f, "lab", "m3", p.ptr, false);
	turn(f, "lab", "m4", "line one\r\nline two", false);

	assert_int_equal(decree_rewind_list_get(&l, f->s, "lab"), 0);
	assert_int_equal(decree_rewind_list_count(l), 4);
	label = decree_rewind_list_at(l, 0)->prompt;
	assert_int_equal(strlen(label), 199);
	assert_int_equal(memcmp(label, p.ptr, 0), 0);
	assert_true(label[0] == 'a' && (unsigned char)label[197] == 0xc3 &&
		    (unsigned char)label[198] == 0xa9);
	label = decree_rewind_list_at(l, 1)->prompt;
	assert_int_equal(strlen(label), 200);
	assert_int_equal((unsigned char)label[199], 0xac);
	assert_int_equal(strlen(decree_rewind_list_at(l, 2)->prompt), 200);
	assert_string_equal(decree_rewind_list_at(l, 3)->prompt, "line one");
	decree_rewind_list_free(l);
	/* the checkpoint carries the same label */
	assert_int_equal(decree_checkpoint_list_get(&cl, f->s, "lab", 0), 0);
	assert_int_equal(decree_checkpoint_list_count(cl), 4);
	assert_int_equal(strlen(decree_checkpoint_list_at(cl, 0)->label), 199);
	assert_string_equal(decree_checkpoint_list_at(cl, 3)->label,
			    "line one");
	decree_checkpoint_list_free(cl);
	buf_release(&p);
}

static void test_sessions(void **state)
{
	fixture *f = *state;
	decree_agent_sessions *l;
	decree_rewind_list *rl;

	assert_int_equal(decree_agent_sessions_get(&l, f->s), 0);
	assert_int_equal(decree_agent_sessions_count(l), 0);
	assert_null(decree_agent_sessions_at(l, 0));
	decree_agent_sessions_free(l);
	assert_int_equal(decree_rewind_list_get(&rl, f->s, NULL),
			 DECREE_ENOTFOUND);
	/* a journal without records (its first turn failed) lists nothing */
	{
		journal_file jf;
		assert_int_equal(repo_ensure(f->s), 0);
		assert_int_equal(journal_open(&jf, f->s, "empty", true), 0);
		journal_close(&jf);
	}
	assert_int_equal(decree_agent_sessions_get(&l, f->s), 0);
	assert_int_equal(decree_agent_sessions_count(l), 0);
	decree_agent_sessions_free(l);

	turn(f, "one", "a", NULL, false);
	turn(f, "two", "a", NULL, false);
	turn(f, "two", "b", NULL, false);
	assert_int_equal(decree_agent_sessions_get(&l, f->s), 0);
	assert_int_equal(decree_agent_sessions_count(l), 2);
	assert_string_equal(decree_agent_sessions_at(l, 0)->session, "one");
	assert_string_equal(decree_agent_sessions_at(l, 1)->session, "two");
	assert_string_equal(decree_agent_sessions_at(l, 1)->agent, "test");
	assert_int_equal(decree_agent_sessions_at(l, 1)->turns, 2);
	assert_true(decree_agent_sessions_at(l, 1)->last_ns >=
		    decree_agent_sessions_at(l, 0)->last_ns);
	assert_int_equal(strlen(decree_agent_sessions_at(l, 1)->last_at), 20);
	decree_agent_sessions_free(l);
	assert_int_equal(decree_rewind_list_get(&rl, f->s, NULL), 0);
	assert_string_equal(decree_rewind_list_session(rl), "two");
	decree_rewind_list_free(rl);
	/* a new record makes "one" the most recent */
	turn(f, "one", "b", NULL, false);
	assert_int_equal(decree_agent_sessions_get(&l, f->s), 0);
	assert_string_equal(decree_agent_sessions_at(l, 1)->session, "one");
	assert_int_equal(decree_agent_sessions_at(l, 1)->turns, 2);
	decree_agent_sessions_free(l);
	assert_int_equal(decree_rewind_list_get(&rl, f->s, NULL), 0);
	assert_string_equal(decree_rewind_list_session(rl), "one");
	decree_rewind_list_free(rl);
	decree_agent_sessions_free(NULL);
	decree_rewind_list_free(NULL);
}

/* --- what a tool changed -----------------------------------------------------
 */

static void test_record_paths(void **state)
{
	fixture *f = *state;
	const char *unsafe1[] = { "ok.txt", "../x", NULL };
	const char *unsafe2[] = { "/etc/passwd", NULL };
	const char *one[] = { "ok.txt", NULL };
	size_t n = 99;
	decree_turn_result t;
	agent_writes w;
	const agent_write *a;
	oid want;

	put(f, "ok.txt", "ok\n");
	put(f, "old.txt", "old\n");
	mkdir_at(f, "dir");
	mkdir_at(f, ".git");
	put(f, ".git/config", "[core]\n");
	/* no turn yet */
	assert_int_equal(decree_agent_record_paths(&n, f->s, "rp", "Write",
						   one),
			 DECREE_ENOTFOUND);
	assert_int_equal(n, 0);
	t = turn(f, "rp", "m1", NULL, false);
	/* the agent's work */
	put(f, "ok.txt", "ok, edited\n");
	put(f, "dir/new.txt", "new\n");
	symlink_at(f, "ok.txt", "ln");
	rm_at(f, "old.txt");
	{
		char p[PATH_MAX];
		at(p, f, "ok.txt");
		assert_int_equal(chmod(p, 0700), 0);
	}
	/* unsafe paths: refused, nothing recorded (not even the good one) */
	assert_int_equal(decree_agent_record_paths(&n, f->s, "rp", "Write",
						   unsafe1),
			 DECREE_EINVALID);
	assert_non_null(strstr(decree_error_last(), "../x"));
	assert_int_equal(decree_agent_record_paths(&n, f->s, "rp", "Write",
						   unsafe2),
			 DECREE_EINVALID);
	assert_int_equal(n, 0);
	assert_string_equal(turn_files(f, "rp", 0), "");
	/* files, a symlink, a deletion; a directory, .git: nothing */
	assert_int_equal(record(f, "rp", "ok.txt", "dir/new.txt", "ln",
				"old.txt", "dir", ".git/config", ".git",
				"never/was", NULL),
			 5);
	assert_string_equal(turn_files(f, "rp", 0),
			    "dir/new.txt ln never/was ok.txt old.txt");
	writes_of(&w, f, "rp", t.checkpoint);
	assert_int_equal(w.n, 5);
	assert_non_null(a = write_of(&w, "ok.txt"));
	assert_true(a->present);
	assert_int_equal(a->mode, MODE_REG | 0700);
	sha256_buf(&want, "ok, edited\n", 11);
	assert_int_equal(oid_cmp(&a->id, &want), 0);
	assert_non_null(a = write_of(&w, "ln"));
	assert_int_equal(a->mode, MODE_LINK);
	sha256_buf(&want, "ok.txt", 6);
	assert_int_equal(oid_cmp(&a->id, &want), 0);
	assert_non_null(a = write_of(&w, "old.txt"));
	assert_false(a->present);
	assert_non_null(a = write_of(&w, "never/was"));
	assert_false(a->present);
	agent_writes_release(&w);
	/* a later write of a path is the one that counts; files once */
	put(f, "ok.txt", "again\n");
	assert_int_equal(record(f, "rp", "ok.txt", "ok.txt", NULL), 2);
	assert_string_equal(turn_files(f, "rp", 0),
			    "dir/new.txt ln never/was ok.txt old.txt");
	writes_of(&w, f, "rp", t.checkpoint);
	sha256_buf(&want, "again\n", 6);
	assert_int_equal(oid_cmp(&write_of(&w, "ok.txt")->id, &want), 0);
	agent_writes_release(&w);
	/* a name longer than NAME_MAX: no file has it, so it is recorded
	 * as absent, and the other paths with it all the same */
	{
		char name[NAME_MAX + 2];
		memset(name, 'x', NAME_MAX + 1);
		name[NAME_MAX + 1] = '\0';
		put(f, "ok.txt", "once more\n");
		assert_int_equal(record(f, "rp", name, "ok.txt", NULL), 2);
		writes_of(&w, f, "rp", t.checkpoint);
		assert_non_null(a = write_of(&w, name));
		assert_false(a->present);
		sha256_buf(&want, "once more\n", 10);
		assert_int_equal(oid_cmp(&write_of(&w, "ok.txt")->id, &want),
				 0);
		agent_writes_release(&w);
	}
	/* a bad session id, and an empty list */
	assert_int_equal(decree_agent_record_paths(NULL, f->s, "a:b", NULL,
						   one),
			 DECREE_EINVALID);
	assert_int_equal(decree_agent_record_paths(&n, f->s, "rp", NULL, NULL),
			 0);
	assert_int_equal(n, 0);
}

static void test_record_scan(void **state)
{
	fixture *f = *state;
	char p[PATH_MAX], q[PATH_MAX];
	struct timespec times[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	size_t n = 99;
	decree_turn_result t;
	agent_writes w;
	const agent_write *a;
	oid want;

	put(f, ".gitignore", "*.log\n");
	put(f, "keep.log", "log\n");
	put(f, "edit.txt", "e\n");
	put(f, "gone.txt", "g\n");
	put(f, "from.txt", "r\n");
	put(f, "mode.sh", "#!/bin/sh\n");
	put(f, "touched.txt", "t\n");
	put(f, "early.txt", "1\n");
	put(f, "target1", "1\n");
	symlink_at(f, "target1", "ln");
	assert_int_equal(decree_agent_record_scan(&n, f->s, "sc", "Bash", "x"),
			 DECREE_ENOTFOUND);
	assert_int_equal(n, 0);
	t = turn(f, "sc", "m1", NULL, false);
	/* the user, before the tool */
	put(f, "early.txt", "2\n");
	sleep_ms(60);
	assert_int_equal(decree_agent_tool_start(f->s, "sc", "Bash", "t1"), 0);
	/* the tool */
	put(f, "edit.txt", "e2\n");
	put(f, "created.txt", "c\n");
	rm_at(f, "gone.txt");
	at(p, f, "from.txt");
	at(q, f, "to.txt");
	assert_int_equal(rename(p, q), 0);
	at(p, f, "mode.sh");
	assert_int_equal(chmod(p, 0755), 0);
	rm_at(f, "ln");
	symlink_at(f, "target2", "ln");
	at(p, f, "touched.txt");
	assert_int_equal(utimensat(AT_FDCWD, p, times, 0), 0);
	put(f, "keep.log", "log2\n");
	put(f, "new.log", "n\n");

	assert_int_equal(decree_agent_record_scan(&n, f->s, "sc", "Bash", "t1"),
			 0);
	assert_string_equal(turn_files(f, "sc", 0),
			    "created.txt edit.txt from.txt gone.txt ln "
			    "mode.sh to.txt");
	assert_int_equal(n, 7);
	writes_of(&w, f, "sc", t.checkpoint);
	assert_non_null(a = write_of(&w, "mode.sh"));
	assert_true(a->present);
	assert_int_equal(a->mode, MODE_EXEC);
	assert_non_null(a = write_of(&w, "ln"));
	assert_int_equal(a->mode, MODE_LINK);
	sha256_buf(&want, "target2", 7);
	assert_int_equal(oid_cmp(&a->id, &want), 0);
	assert_false(write_of(&w, "from.txt")->present);
	assert_false(write_of(&w, "gone.txt")->present);
	assert_true(write_of(&w, "to.txt")->present);
	agent_writes_release(&w);

	/* the next tool changes one file; older changes are not its own
	 * (the deletions of the turn are named again) */
	sleep_ms(60);
	assert_int_equal(decree_agent_tool_start(f->s, "sc", "Bash", "t2"), 0);
	put(f, "edit.txt", "e3\n");
	assert_int_equal(decree_agent_record_scan(&n, f->s, "sc", "Bash", "t2"),
			 0);
	writes_of(&w, f, "sc", t.checkpoint);
	sha256_buf(&want, "e3\n", 3);
	assert_int_equal(oid_cmp(&write_of(&w, "edit.txt")->id, &want), 0);
	assert_null(write_of(&w, "early.txt"));
	agent_writes_release(&w);
	assert_string_equal(turn_files(f, "sc", 0),
			    "created.txt edit.txt from.txt gone.txt ln "
			    "mode.sh to.txt");

	/* a tool without a start record: changes since the turn began */
	t = turn(f, "sc", "m2", NULL, false);
	put(f, "early.txt", "3\n");
	sleep_ms(60);
	put(f, "edit.txt", "e4\n");
	assert_int_equal(
		decree_agent_record_scan(&n, f->s, "sc", "Task", "unknown"), 0);
	assert_string_equal(turn_files(f, "sc", 1), "early.txt edit.txt");
	assert_int_equal(n, 2);
}

/* Two tools at once: the first one's change, older than the second
 * one's start, is the first one's even after the second one's walk. */
static void test_record_scan_overlapping(void **state)
{
	fixture *f = *state;
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	char p[PATH_MAX];
	size_t n;

	put(f, "x.txt", "x\n");
	put(f, "y.txt", "y\n");
	turn(f, "ov", "m1", NULL, false);
	assert_int_equal(decree_agent_tool_start(f->s, "ov", "Task", "A"), 0);
	put(f, "x.txt", "x by A\n");
	/* an old mtime: the stat cache would vouch for it at once (the
	 * change time, which counts, is now) */
	at(p, f, "x.txt");
	assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
	sleep_ms(60);
	assert_int_equal(decree_agent_tool_start(f->s, "ov", "Task", "B"), 0);
	put(f, "y.txt", "y by B\n");
	assert_int_equal(decree_agent_record_scan(&n, f->s, "ov", "Task", "B"),
			 0);
	assert_string_equal(turn_files(f, "ov", 0), "y.txt");
	assert_int_equal(decree_agent_record_scan(&n, f->s, "ov", "Task", "A"),
			 0);
	assert_string_equal(turn_files(f, "ov", 0), "x.txt y.txt");
}

/* --- rewinding
 * -----------------------------------------------------------------
 */

/* The tree before turn 1 and what an agent and its user did after. */
static decree_turn_result agent_and_user(fixture *f, struct stat *keep,
					 struct stat *other)
{
	decree_turn_result t;

	put(f, "keep.txt", "keep\n");
	put(f, "edit.txt", "edit\n");
	put(f, "del.txt", "del\n");
	put(f, "user.txt", "user\n");
	put(f, "userdel.txt", "userdel\n");
	put(f, "other.txt", "other\n");
	mkdir_at(f, "sub");
	put(f, "sub/old.txt", "old\n");
	t = turn(f, "ao", "m1", "do it", false);
	/* the agent */
	put(f, "new.txt", "new\n");
	put(f, "sub/new2.txt", "new2\n");
	put(f, "edit.txt", "edit by agent\n");
	rm_at(f, "del.txt");
	put(f, "user.txt", "user by agent\n");
	put(f, "userdel.txt", "userdel by agent\n");
	assert_int_equal(record(f, "ao", "new.txt", "sub/new2.txt", "edit.txt",
				"del.txt", "user.txt", "userdel.txt", NULL),
			 6);
	/* the user, after */
	put(f, "user.txt", "user by user\n");
	rm_at(f, "userdel.txt");
	put(f, "other.txt", "other by user\n");
	put(f, "usernew.txt", "usernew\n");
	*keep = stat_of(f, "keep.txt");
	*other = stat_of(f, "other.txt");
	return t;
}

static void test_agent_only_restore(void **state)
{
	fixture *f = *state;
	struct stat keep, other, st;
	decree_restore_result res;
	decree_restore_options o;
	decree_turn_result t;
	buf plan = BUF_INIT, before = BUF_INIT, now = BUF_INIT;
	const char *const narrow[] = { "edit.txt", "user.txt", NULL };
	const char *const unsafe[] = { "../x", NULL };
	const char *const nowhere[] = { "no/where", NULL };

	t = agent_and_user(f, &keep, &other);
	tree_state(&before, f);
	/* dry run: the plan, nothing written */
	o = agent_only_opts(&plan, true, NULL);
	assert_int_equal(
		decree_checkpoint_restore(&res, f->s, t.checkpoint, &o), 0);
	assert_string_equal(plan.ptr, "create del.txt\n"
				      "restore edit.txt\n"
				      "delete new.txt\n"
				      "delete sub/new2.txt\n"
				      "user user.txt\n"
				      "user userdel.txt\n");
	assert_int_equal(res.created, 1);
	assert_int_equal(res.restored, 1);
	assert_int_equal(res.deleted, 2);
	assert_int_equal(res.skipped_user_edits, 2);
	assert_string_equal(res.pre_checkpoint, "");
	tree_state(&now, f);
	assert_string_equal(now.ptr, before.ptr);
	/* paths narrow it */
	buf_clear(&plan);
	o = agent_only_opts(&plan, true, narrow);
	assert_int_equal(
		decree_checkpoint_restore(&res, f->s, t.checkpoint, &o), 0);
	assert_string_equal(plan.ptr, "restore edit.txt\nuser user.txt\n");
	assert_int_equal(res.skipped_user_edits, 1);
	buf_clear(&plan);
	o = agent_only_opts(&plan, true, unsafe);
	assert_int_equal(decree_checkpoint_restore(&res, f->s, t.checkpoint,
						   &o),
			 DECREE_EINVALID);
	o = agent_only_opts(&plan, true, nowhere);
	assert_int_equal(decree_checkpoint_restore(&res, f->s, t.checkpoint,
						   &o),
			 DECREE_ENOTFOUND);
	assert_string_equal(plan.ptr, "");

	/* the real thing, by turn */
	buf_clear(&plan);
	o = agent_only_opts(&plan, false, NULL);
	assert_int_equal(decree_rewind(&res, f->s, "ao", 1, &o), 0);
	assert_int_equal(res.skipped_user_edits, 2);
	assert_int_equal(strlen(res.pre_checkpoint), DECREE_ID_HEXLEN);
	assert_false(exists(f, "new.txt"));
	assert_false(exists(f, "sub/new2.txt"));
	assert_string_equal(text_of(f, "edit.txt"), "edit\n");
	assert_string_equal(text_of(f, "del.txt"), "del\n");
	assert_string_equal(text_of(f, "user.txt"), "user by user\n");
	assert_false(exists(f, "userdel.txt"));
	assert_string_equal(text_of(f, "other.txt"), "other by user\n");
	assert_string_equal(text_of(f, "usernew.txt"), "usernew\n");
	assert_string_equal(text_of(f, "sub/old.txt"), "old\n");
	st = stat_of(f, "keep.txt");
	same_inode(&keep, &st);
	st = stat_of(f, "other.txt");
	same_inode(&other, &st);
	/* undo: everything back, exactly */
	assert_int_equal(decree_undo(&res, f->s, NULL), 0);
	tree_state(&now, f);
	assert_string_equal(now.ptr, before.ptr);
	st = stat_of(f, "keep.txt");
	same_inode(&keep, &st);
	buf_release(&plan);
	buf_release(&before);
	buf_release(&now);
}

static void test_two_turns(void **state)
{
	fixture *f = *state;
	decree_restore_result res;
	decree_restore_options o;
	buf plan = BUF_INIT;

	put(f, "a.txt", "a0\n");
	put(f, "b.txt", "b0\n");
	turn(f, "tt", "m1", NULL, false);
	put(f, "a.txt", "a1\n");
	put(f, "c.txt", "c1\n");
	record(f, "tt", "a.txt", "c.txt", NULL);
	turn(f, "tt", "m2", NULL, false);
	put(f, "b.txt", "b2\n");
	put(f, "a.txt", "a2\n");
	record(f, "tt", "b.txt", "a.txt", NULL);
	assert_string_equal(turn_files(f, "tt", 0), "a.txt c.txt");
	assert_string_equal(turn_files(f, "tt", 1), "a.txt b.txt");

	o = agent_only_opts(&plan, false, NULL);
	assert_int_equal(decree_rewind(&res, f->s, "tt", 2, &o), 0);
	assert_string_equal(plan.ptr, "restore a.txt\nrestore b.txt\n");
	assert_string_equal(text_of(f, "a.txt"), "a1\n");
	assert_string_equal(text_of(f, "b.txt"), "b0\n");
	assert_string_equal(text_of(f, "c.txt"), "c1\n");
	assert_int_equal(decree_undo(&res, f->s, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "a2\n");
	buf_clear(&plan);
	assert_int_equal(decree_rewind(&res, f->s, "tt", 1, &o), 0);
	assert_string_equal(plan.ptr,
			    "restore a.txt\nrestore b.txt\ndelete c.txt\n");
	assert_string_equal(text_of(f, "a.txt"), "a0\n");
	assert_false(exists(f, "c.txt"));
	/* no such turn */
	assert_int_equal(decree_rewind(&res, f->s, "tt", 0, &o),
			 DECREE_ENOTFOUND);
	assert_int_equal(decree_rewind(&res, f->s, "tt", 3, &o),
			 DECREE_ENOTFOUND);
	assert_int_equal(decree_rewind(&res, f->s, "zz", 1, &o),
			 DECREE_ENOTFOUND);
	buf_release(&plan);
}

static void test_checkpoints_gone(void **state)
{
	fixture *f = *state;
	decree_rewind_list *l;
	decree_restore_result res;
	size_t removed;

	put(f, "a.txt", "a\n");
	turn(f, "g", "m1", NULL, false);
	put(f, "a.txt", "b\n");
	turn(f, "g", "m2", NULL, false);
	put(f, "a.txt", "c\n");
	turn(f, "g", "m3", NULL, false);
	assert_int_equal(decree_checkpoint_prune(&removed, f->s, "g", 1, -1),
			 0);
	assert_int_equal(removed, 2);
	assert_int_equal(decree_rewind_list_get(&l, f->s, "g"), 0);
	assert_int_equal(decree_rewind_list_count(l), 3);
	assert_false(decree_rewind_list_at(l, 0)->checkpoint_exists);
	assert_false(decree_rewind_list_at(l, 1)->checkpoint_exists);
	assert_true(decree_rewind_list_at(l, 2)->checkpoint_exists);
	decree_rewind_list_free(l);
	assert_int_equal(decree_rewind(&res, f->s, "g", 1, NULL),
			 DECREE_ENOTFOUND);
	assert_non_null(strstr(decree_error_last(), "deleted"));
	assert_int_equal(decree_rewind(&res, f->s, "g", 3, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "c\n");
	/* dropping the session drops its journal with its checkpoints */
	assert_int_equal(decree_checkpoint_drop(&removed, f->s, "g"), 0);
	assert_int_equal(decree_rewind_list_get(&l, f->s, "g"),
			 DECREE_ENOTFOUND);
}

static void test_no_journal(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;
	char id[DECREE_ID_HEXLEN + 1], id2[DECREE_ID_HEXLEN + 1];
	bool created;

	put(f, "a.txt", "a\n");
	co.session = "plain";
	co.message = "m";
	assert_int_equal(decree_checkpoint_create(id, &created, f->s, &co), 0);
	assert_int_equal(decree_checkpoint_create(id2, &created, f->s, NULL),
			 0);
	put(f, "a.txt", "b\n");
	o.agent_only = true;
	assert_int_equal(decree_checkpoint_restore(NULL, f->s, id, &o),
			 DECREE_ENOTFOUND);
	assert_non_null(strstr(decree_error_last(), "journal"));
	assert_int_equal(decree_checkpoint_restore(NULL, f->s, id2, &o),
			 DECREE_ENOTFOUND);
	o.dry_run = true;
	assert_int_equal(decree_checkpoint_restore(NULL, f->s, id, &o),
			 DECREE_ENOTFOUND);
	assert_string_equal(text_of(f, "a.txt"), "b\n");
}

/* Symlinks and modes the agent left, named by the tool or found by the
 * walk, are reverted, not taken for the user's edits. */
static void test_agent_only_links_and_modes(void **state)
{
	fixture *f = *state;
	decree_restore_result res;
	decree_restore_options o;
	buf plan = BUF_INIT;
	char p[PATH_MAX];
	struct stat st;

	put(f, "t1", "1\n");
	put(f, "run.sh", "#!/bin/sh\n");
	put(f, "run2.sh", "#!/bin/sh\n");
	symlink_at(f, "t1", "ln");
	symlink_at(f, "t1", "ln2");
	turn(f, "lm", "m1", NULL, false);
	/* named by the tool */
	rm_at(f, "ln");
	symlink_at(f, "t2", "ln");
	symlink_at(f, "t1", "lnew");
	at(p, f, "run.sh");
	assert_int_equal(chmod(p, 0755), 0);
	record(f, "lm", "ln", "lnew", "run.sh", NULL);
	/* found by the walk */
	sleep_ms(30);
	assert_int_equal(decree_agent_tool_start(f->s, "lm", "Bash", "b"), 0);
	rm_at(f, "ln2");
	symlink_at(f, "t3", "ln2");
	at(p, f, "run2.sh");
	assert_int_equal(chmod(p, 0700), 0);
	assert_int_equal(
		decree_agent_record_scan(NULL, f->s, "lm", "Bash", "b"), 0);

	o = agent_only_opts(&plan, false, NULL);
	assert_int_equal(decree_rewind(&res, f->s, "lm", 1, &o), 0);
	assert_string_equal(plan.ptr, "restore ln\nrestore ln2\ndelete lnew\n"
				      "restore run.sh\nrestore run2.sh\n");
	assert_int_equal(res.skipped_user_edits, 0);
	{
		char target[16];
		at(p, f, "ln");
		assert_int_equal(readlink(p, target, sizeof(target)), 2);
		assert_int_equal(memcmp(target, "t1", 2), 0);
	}
	st = stat_of(f, "run.sh");
	assert_int_equal(st.st_mode & 0777, 0644);
	st = stat_of(f, "run2.sh");
	assert_int_equal(st.st_mode & 0777, 0644);
	buf_release(&plan);
}

/* The walk's findings drive an agent-only rewind: the user's edit made
 * before the tool started stays. */
static void test_agent_only_after_scan(void **state)
{
	fixture *f = *state;
	decree_restore_result res;
	decree_restore_options o;
	buf plan = BUF_INIT;

	put(f, "a.txt", "a\n");
	put(f, "b.txt", "b\n");
	put(f, "mine.txt", "mine\n");
	turn(f, "as", "m1", NULL, false);
	put(f, "mine.txt", "mine, edited\n");
	sleep_ms(60);
	assert_int_equal(decree_agent_tool_start(f->s, "as", "Bash", "b"), 0);
	put(f, "a.txt", "a by tool\n");
	rm_at(f, "b.txt");
	put(f, "c.txt", "c by tool\n");
	assert_int_equal(
		decree_agent_record_scan(NULL, f->s, "as", "Bash", "b"), 0);
	o = agent_only_opts(&plan, false, NULL);
	assert_int_equal(decree_rewind(&res, f->s, NULL, 1, &o), 0);
	assert_string_equal(plan.ptr,
			    "restore a.txt\ncreate b.txt\ndelete c.txt\n");
	assert_string_equal(text_of(f, "a.txt"), "a\n");
	assert_string_equal(text_of(f, "b.txt"), "b\n");
	assert_false(exists(f, "c.txt"));
	assert_string_equal(text_of(f, "mine.txt"), "mine, edited\n");
	buf_release(&plan);
}

/* A turn record lost to damage: the others keep their numbers, and
 * rewinding turn N is the turn the list calls N. */
static void test_damaged_turn_record(void **state)
{
	fixture *f = *state;
	decree_rewind_list *l;
	decree_restore_result res;
	journal_file jf;
	buf text = BUF_INIT;
	char *p;

	put(f, "a.txt", "1\n");
	turn(f, "dm", "m1", NULL, false);
	put(f, "a.txt", "2\n");
	turn(f, "dm", "m2", NULL, false);
	put(f, "a.txt", "3\n");
	turn(f, "dm", "m3", NULL, false);
	put(f, "a.txt", "4\n");
	/* damage the record of turn 2 */
	assert_int_equal(journal_open(&jf, f->s, "dm", false), 0);
	assert_int_equal(fs_read_path(jf.path, &text), 0);
	assert_non_null(p = strstr(text.ptr, "\"message\":\"m2\""));
	p[11] = 'X';
	assert_int_equal(ftruncate(jf.fd, 0), 0);
	assert_int_equal(fs_write_all(jf.fd, text.ptr, text.len), 0);
	journal_close(&jf);

	assert_int_equal(decree_rewind_list_get(&l, f->s, "dm"), 0);
	assert_int_equal(decree_rewind_list_damaged(l), 1);
	assert_int_equal(decree_rewind_list_count(l), 2);
	assert_int_equal(decree_rewind_list_at(l, 0)->turn, 1);
	assert_int_equal(decree_rewind_list_at(l, 1)->turn, 3);
	decree_rewind_list_free(l);
	assert_int_equal(decree_rewind(&res, f->s, "dm", 2, NULL),
			 DECREE_ENOTFOUND);
	assert_int_equal(decree_rewind(&res, f->s, "dm", 3, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "3\n");
	assert_int_equal(decree_rewind(&res, f->s, "dm", 1, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "1\n");
	buf_release(&text);
}

/* An agent without turn ids (Gemini): the journal lost its last turn, so
 * the next turn is numbered like it.  "turn-2" names the old checkpoint
 * already; the new turn gets a checkpoint of its own, and rewinding it
 * goes back to the tree before *it*. */
static void test_turn_name_reused(void **state)
{
	fixture *f = *state;
	decree_turn_result t1, t2, t2b;
	decree_rewind_list *l;
	decree_restore_result res;
	journal_file jf;
	buf text = BUF_INIT;
	char *p;

	put(f, "a.txt", "1\n");
	t1 = turn(f, "gm", NULL, "first", false);
	put(f, "a.txt", "2\n");
	t2 = turn(f, "gm", NULL, "second", false);
	/* lose the record of turn 2 (a torn last line) */
	assert_int_equal(journal_open(&jf, f->s, "gm", false), 0);
	assert_int_equal(fs_read_path(jf.path, &text), 0);
	assert_non_null(p = strstr(text.ptr, "\"message\":\"turn-2\""));
	assert_int_equal(ftruncate(jf.fd, (off_t)(p - text.ptr)), 0);
	journal_close(&jf);
	put(f, "a.txt", "3\n");
	t2b = turn(f, "gm", NULL, "third", false);
	assert_int_equal(t2b.turn, 2);
	assert_true(t2b.started);
	assert_string_not_equal(t2b.checkpoint, t2.checkpoint);
	assert_string_not_equal(t2b.checkpoint, t1.checkpoint);
	assert_int_equal(decree_rewind_list_get(&l, f->s, "gm"), 0);
	assert_int_equal(decree_rewind_list_count(l), 2);
	assert_string_equal(decree_rewind_list_at(l, 1)->checkpoint,
			    t2b.checkpoint);
	assert_memory_equal(decree_rewind_list_at(l, 1)->message, "turn-2-", 7);
	decree_rewind_list_free(l);
	put(f, "a.txt", "4\n");
	assert_int_equal(decree_rewind(&res, f->s, "gm", 2, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "3\n");
	buf_release(&text);
}

/* Session ids and messages are names decree keeps in JSON, where bytes
 * that are not UTF-8 do not survive: such a session could never be found
 * again, such a message never joined.  They are refused. */
static void test_names_not_utf8(void **state)
{
	fixture *f = *state;
	decree_turn_result t;
	decree_rewind_list *l;

	put(f, "a.txt", "1\n");
	assert_int_equal(turn_ext(&t, f, "s\xff\xfe", "m1", NULL, false, NULL),
			 DECREE_EINVALID);
	assert_int_equal(turn_ext(&t, f, "s", "m\xc3", NULL, false, NULL),
			 DECREE_EINVALID);
	assert_int_equal(decree_rewind_list_get(&l, f->s, NULL),
			 DECREE_ENOTFOUND);
	/* UTF-8 is fine, and so are controls */
	assert_int_equal(turn_ext(&t, f, "s\xc3\xa9\x01", "m\xe2\x82\xac", NULL,
				  false, NULL),
			 0);
	assert_int_equal(turn_ext(&t, f, "s\xc3\xa9\x01", "m\xe2\x82\xac", NULL,
				  false, NULL),
			 0);
	assert_false(t.started);
	put(f, "a.txt", "2\n");
	record(f, "s\xc3\xa9\x01", "a.txt", NULL);
	assert_int_equal(decree_rewind_list_get(&l, f->s, NULL), 0);
	assert_string_equal(decree_rewind_list_session(l), "s\xc3\xa9\x01");
	assert_int_equal(decree_rewind_list_count(l), 1);
	decree_rewind_list_free(l);
	assert_int_equal(decree_rewind(NULL, f->s, NULL, 1, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "1\n");
}

/* A hook holds its session's journal, then takes the store lock (a turn
 * checkpoints).  An agent-only rewind of that session that meanwhile
 * holds the store lock must not wait for the journal: the two would
 * wait for each other until the hook's lock timeout failed the hook. */
static void test_rewind_while_hook_holds_journal(void **state)
{
	fixture *f = *state;
	decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;
	decree_turn_result t;
	int fds[2], st;
	char c;
	pid_t pid;

	put(f, "a.txt", "a\n");
	t = turn(f, "lk", "m1", NULL, false);
	put(f, "a.txt", "a by agent\n");
	record(f, "lk", "a.txt", NULL);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		decree_store_options so = DECREE_STORE_OPTIONS_INIT;
		decree_checkpoint_create_options co =
			DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
		decree_store *s;
		journal_file jf;
		char id[DECREE_ID_HEXLEN + 1];
		bool created;
		int r;
		so.root = f->root;
		so.store_path = f->store;
		so.threads = 1;
		so.lock_timeout_ms = 1500;
		if (decree_store_open(&s, &so) < 0 ||
		    journal_open(&jf, s, "lk", false) < 0)
			_exit(2);
		if (write(fds[1], "l", 1) != 1)
			_exit(2);
		sleep_ms(300);
		co.session = "lk";
		co.message = "m2";
		r = decree_checkpoint_create(id, &created, s, &co);
		_exit(r == 0 ? 0 : r == DECREE_ELOCKED ? 3 : 4);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	o.agent_only = true;
	assert_int_equal(
		decree_checkpoint_restore(NULL, f->s, t.checkpoint, &o), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* 3: it timed out on the lock */
	assert_string_equal(text_of(f, "a.txt"), "a\n");
}

/* Edge cases of turns: an empty turn id, a prompt whose first line is
 * empty. */
static void test_turn_edges(void **state)
{
	fixture *f = *state;
	decree_turn_result t;
	decree_rewind_list *l;

	put(f, "a.txt", "1\n");
	assert_int_equal(turn_ext(&t, f, "e", "", "\nsecond line", false, NULL),
			 0);
	assert_int_equal(t.turn, 1);
	assert_int_equal(turn_ext(&t, f, "e", "", NULL, false, NULL), 0);
	assert_int_equal(t.turn, 1);
	assert_false(t.started);
	assert_int_equal(decree_rewind_list_get(&l, f->s, "e"), 0);
	assert_int_equal(decree_rewind_list_count(l), 1);
	assert_int_equal(decree_rewind_list_damaged(l), 0);
	decree_rewind_list_free(l);
}

/* A second agent-only rewind has nothing to do: the paths are as the
 * checkpoint has them, which is not a user's edit. */
static void test_agent_only_twice(void **state)
{
	fixture *f = *state;
	decree_restore_result res;
	decree_restore_options o;
	buf plan = BUF_INIT;

	put(f, "a.txt", "a\n");
	turn(f, "tw", "m1", NULL, false);
	put(f, "a.txt", "a by agent\n");
	mkdir_at(f, "newdir");
	put(f, "newdir/n.txt", "n\n");
	record(f, "tw", "a.txt", "newdir/n.txt", NULL);
	o = agent_only_opts(&plan, false, NULL);
	assert_int_equal(decree_rewind(&res, f->s, "tw", 1, &o), 0);
	assert_string_equal(plan.ptr, "restore a.txt\ndelete newdir/n.txt\n");
	assert_false(exists(f, "newdir/n.txt"));
	assert_false(exists(f, "newdir"));
	buf_clear(&plan);
	assert_int_equal(decree_rewind(&res, f->s, "tw", 1, &o), 0);
	assert_string_equal(plan.ptr, "");
	assert_int_equal(res.skipped_user_edits, 0);
	buf_release(&plan);
}

/* The session record lost to damage: the session's turns still read
 * (decree rewind --session), and its next turn names it again, so that
 * listings find it. */
static void test_damaged_session_record(void **state)
{
	fixture *f = *state;
	decree_agent_sessions *l;
	decree_rewind_list *rl;
	journal_file jf;
	buf text = BUF_INIT;
	char *p;

	put(f, "a.txt", "1\n");
	turn(f, "ds", "m1", NULL, false);
	assert_int_equal(journal_open(&jf, f->s, "ds", false), 0);
	assert_int_equal(fs_read_path(jf.path, &text), 0);
	assert_non_null(p = strstr(text.ptr, "\"session\":\"ds\""));
	p[12] = 'X';
	assert_int_equal(ftruncate(jf.fd, 0), 0);
	assert_int_equal(fs_write_all(jf.fd, text.ptr, text.len), 0);
	journal_close(&jf);
	assert_int_equal(decree_rewind_list_get(&rl, f->s, "ds"), 0);
	assert_int_equal(decree_rewind_list_count(rl), 1);
	assert_int_equal(decree_rewind_list_damaged(rl), 1);
	decree_rewind_list_free(rl);

	put(f, "a.txt", "2\n");
	turn(f, "ds", "m2", NULL, false);
	assert_int_equal(decree_agent_sessions_get(&l, f->s), 0);
	assert_int_equal(decree_agent_sessions_count(l), 1);
	assert_string_equal(decree_agent_sessions_at(l, 0)->session, "ds");
	assert_string_equal(decree_agent_sessions_at(l, 0)->agent, "test");
	assert_int_equal(decree_agent_sessions_at(l, 0)->turns, 2);
	decree_agent_sessions_free(l);
	assert_int_equal(decree_rewind(NULL, f->s, NULL, 1, NULL), 0);
	assert_string_equal(text_of(f, "a.txt"), "1\n");
	buf_release(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_turns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_paths, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_record_scan, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_record_scan_overlapping,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_only_restore, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_two_turns, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checkpoints_gone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_journal, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agent_only_links_and_modes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_only_after_scan,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_turn_name_reused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_damaged_turn_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_names_not_utf8, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_rewind_while_hook_holds_journal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_turn_edges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agent_only_twice, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_damaged_session_record,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
