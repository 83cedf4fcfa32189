/*
 * fuzz_hook.c - libFuzzer target for the agent hook handler
 * (src/hooks/run.c: hook_run, what "decree hook AGENT EVENT" runs).
 *
 *   make fuzz && build/fuzz/fuzz_hook -dict=fuzz/hook.dict fuzz/corpus/hook
 * `make check` replays fuzz/corpus/hook through fuzz/replay.c;
 * FUZZ_HOOK_DEBUG=1 prints each call, its result and the journal's paths.
 *
 * The input is up to MAX_EVENTS hook calls joined by FUZZ_SEP, each
 *   u8 sel, u8 arg, payload
 * sel: bits 0-1 the agent (claude-code, codex, gemini, claude-code),
 * bits 2-3 the event (prompt, before a tool, after a tool, an event
 * decree does not handle), bits 4-5 how the project is named (0: -C, 1:
 * the agent's project variable, 2 and 3: the payload's cwd), bit 6 the
 * payload is built from the rest of the bytes (build(): known events and
 * tools, file_path / notebook_path / apply_patch text naming paths
 * relative and absolute, through "..", symlinks, a file, .git, .decree,
 * outside the root, names past NAME_MAX, paths past PATH_MAX, odd and
 * non-UTF-8 bytes) instead of taken as it is, bit 7 the "tool" changed
 * the tree first (a file written, created, deleted, chmod'ed, a symlink
 * retargeted, .git or a file outside the root written).  arg picks the
 * cwd or project variable (where()) and the change.  "/PROJECT" and
 * "/OUTSIDE" in a payload stand for the scratch project and a directory
 * beside it, so the payloads the agents really send (as recorded in
 * /work/shared/agents/README.md) are seeds as they are (hook-seeds.py).
 *
 * The project is a scratch tree on tmpfs: files, a subdirectory, symlinks
 * to a directory, a file, outside the root and nowhere, .git/.  Its
 * store, the default .decree/store, is made by the input's first call
 * and removed after the input: an input stands alone (a crash reproduces
 * from it), and it is faster than keeping the store (reading a journal
 * back costs turns x checkpoints: decree_rewind_list_get resolves each
 * turn's checkpoint).  The tree is put back only when an input changed
 * it.  A cwd elsewhere than in the project is never passed (the hook
 * would make a store for that directory): the harness puts one of its
 * own in its place.
 *
 * Beyond "no crash, no leak, no undefined behaviour", after each call:
 *   - hook_run wrote nothing in the project or beside it: every entry's
 *     bytes, mode, inode, mtime and ctime are the same (.decree/ aside);
 *   - the session's journal has no damaged record, and every path in it
 *     is safe and root-relative: not empty, not absolute, no "." / ".."
 *     / empty component, nothing in .git/ or .decree/;
 *   - after a file tool (Write, Edit, apply_patch...), the paths the call
 *     added to the journal are exactly the paths the tool named that lie
 *     in the project: each named path's directory is found by the kernel
 *     (opened a component at a time from "/", symlinks followed, ".."
 *     the real parent) and known by its inode; a journaled path must be
 *     a name in such a directory, and every such name not in .git or
 *     .decree and not a directory must be in the turn;
 *   - after another tool, the paths added are paths the tree has had;
 *     after any other event, none;
 *   - decree_fsck finds the store clean after the input.
 */
#include "util/common.h"
#include "hooks/hooks.h"
#include "util/buf.h"
#include "util/fs.h"

#include <dirent.h>
#include <jansson.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 4

static char proj[PATH_MAX], outside[PATH_MAX], store[PATH_MAX];
static bool dirty; /* the tree is not the base tree */

/* Directories known by device and inode. */
typedef struct {
	dev_t dev;
	ino_t ino;
} ident;

/* the project, its .git and .decree; an fd of the project */
static ident proj_id, git_id, decree_id;
static int proj_fd = -1;

static bool same(ident a, ident b)
{
	return a.dev == b.dev && a.ino == b.ino;
}

static ident ident_of(int fd)
{
	struct stat st;
	ident id;

	fuzz_check(fstat(fd, &st) == 0);
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	return id;
}

static void ident_path(ident *out, const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	fuzz_check(fd >= 0);
	*out = ident_of(fd);
	close(fd);
}

/* --- the scratch project ------------------------------------------------- */

/* Every path the tree ever has (base and changes), root-relative. */
static const char *const universe[] = { "a.txt",       "run.sh",
					"sub/b.txt",   "sub/deep/c.txt",
					"link",	       "link-out",
					"file-link",   "dangling",
					"sub/new.txt", "newdir/f.txt",
					"a-link",      ".gitignore",
					"ignored.txt", NULL };

static void put(const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", proj, rel);
	fuzz_write(path, text, strlen(text));
	fuzz_check(chmod(path, mode) == 0);
}

static void link_to(const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", proj, rel);
	unlink(path);
	fuzz_check(symlink(target, path) == 0);
}

/* The base tree (the project emptied first, .decree/ aside). */
static void make_tree(void)
{
	DIR *d = opendir(proj);
	struct dirent *de;
	char path[PATH_MAX];

	fuzz_check(d != NULL);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".decree"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", proj, de->d_name);
		if (de->d_type == DT_DIR) {
			fuzz_empty_dir(path);
			fuzz_check(rmdir(path) == 0);
		} else {
			fuzz_check(unlink(path) == 0);
		}
	}
	closedir(d);
	snprintf(path, sizeof(path), "%s/.decree/note", proj);
	unlink(path);
	fuzz_empty_dir(outside);
	fuzz_mkdirs("proj/sub/deep");
	fuzz_mkdirs("proj/.git");
	fuzz_mkdirs("proj/.decree");
	put("a.txt", "alpha\nbeta\ngamma\n", 0644);
	put("run.sh", "#!/bin/sh\necho hi\n", 0755);
	put("sub/b.txt", "one\ntwo\n", 0644);
	put("sub/deep/c.txt", "deep\n", 0644);
	put(".gitignore", "ignored.txt\n", 0644);
	put("ignored.txt", "ignored\n", 0644);
	put(".git/HEAD", "ref: refs/heads/main\n", 0644);
	link_to("link", "sub");
	link_to("link-out", "../outside");
	link_to("file-link", "a.txt");
	link_to("dangling", "gone");
	snprintf(path, sizeof(path), "%s/o.txt", outside);
	fuzz_write(path, "outside\n", 8);
	snprintf(path, sizeof(path), "%s/.git", proj);
	ident_path(&git_id, path);
	dirty = false;
}

/* What a tool did to the tree before its post-tool event. */
static void change_tree(unsigned what)
{
	char path[PATH_MAX];

	dirty = true;
	switch (what % 8) {
	case 0:
		put("a.txt", "alpha\nBETA\ngamma\n", 0644);
		break;
	case 1:
		put("sub/new.txt", "new\n", 0644);
		break;
	case 2:
		snprintf(path, sizeof(path), "%s/sub/deep/c.txt", proj);
		unlink(path);
		break;
	case 3:
		snprintf(path, sizeof(path), "%s/a.txt", proj);
		fuzz_check(chmod(path, 0755) == 0);
		break;
	case 4:
		link_to("link", "sub/deep");
		link_to("a-link", "/etc/passwd");
		break;
	case 5:
		fuzz_mkdirs("proj/newdir");
		put("newdir/f.txt", "f\n", 0600);
		break;
	case 6:
		put(".git/HEAD", "ref: refs/heads/other\n", 0644);
		put(".decree/note", "not the project's\n", 0644);
		break;
	case 7:
		snprintf(path, sizeof(path), "%s/o2.txt", outside);
		fuzz_write(path, "outside too\n", 12);
		put("ignored.txt", "still ignored\n", 0644);
		break;
	}
}

/* Everything about the tree a write would change: each entry's path,
 * type and mode, inode, size, mtime, ctime and bytes (a symlink's
 * target), depth first; proj/.decree is not the project's. */
static void describe(buf *out, const char *dir, bool top)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX];
	struct stat st;

	fuzz_check(d != NULL);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (top && !strcmp(de->d_name, ".decree")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fuzz_check(lstat(path, &st) == 0);
		buf_printf(out, "%s %o %lu %lld %lld.%09ld %lld.%09ld\n", path,
			   (unsigned)st.st_mode, (unsigned long)st.st_ino,
			   (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			   st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
			   st.st_ctim.tv_nsec);
		if (S_ISDIR(st.st_mode)) {
			describe(out, path, false);
		} else if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t n = readlink(path, t, sizeof(t));
			fuzz_check(n >= 0);
			buf_put(out, t, (size_t)n);
			buf_putc(out, '\n');
		} else {
			fuzz_check(fs_read_path(path, out) == 0);
		}
	}
	closedir(d);
}

static void tree_state(buf *out)
{
	struct stat st;

	buf_clear(out);
	fuzz_check(stat(proj, &st) == 0);
	buf_printf(out, "%lld.%09ld %lld.%09ld\n", (long long)st.st_mtim.tv_sec,
		   st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
		   st.st_ctim.tv_nsec);
	describe(out, proj, true);
	describe(out, outside, false);
}

static void setup(void)
{
	char p[PATH_MAX];

	fuzz_mkdirs("proj");
	fuzz_mkdirs("outside");
	fuzz_mkdirs("state");
	fuzz_path(proj, "proj");
	fuzz_path(outside, "outside");
	snprintf(store, sizeof(store), "%s/.decree/store", proj);
	/* the hook log of a store that cannot be opened goes here, and
	 * nothing of the environment names another store or project */
	fuzz_path(p, "state");
	setenv("XDG_STATE_HOME", p, 1);
	setenv("HOME", p, 1);
	unsetenv("DECREE_STORE");
	unsetenv("DECREE_LOCK_TIMEOUT_MS");
	for (const hook_agent *a = hook_agents; a->name; a++)
		if (a->root_env)
			unsetenv(a->root_env);
	make_tree();
	ident_path(&proj_id, proj);
	snprintf(p, sizeof(p), "%s/.decree", proj);
	ident_path(&decree_id, p);
	proj_fd = open(proj, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fuzz_check(proj_fd >= 0);
}

/* --- building payloads -----------------------------------------------------
 */

typedef struct {
	const uint8_t *p;
	size_t n;
} src;

static unsigned take(src *s, unsigned mod)
{
	unsigned v;

	if (!s->n)
		return 0;
	v = *s->p++;
	s->n--;
	return v % mod;
}

/* Up to `max` bytes of the input, as they are (NUL as '?'). */
static void take_bytes(buf *out, src *s, size_t max)
{
	size_t n = take(s, (unsigned)max + 1);

	for (size_t i = 0; i < n && s->n; i++, s->p++, s->n--)
		buf_putc(out, *s->p ? (char)*s->p : '?');
}

/* A JSON string of these bytes: quotes, backslashes and control bytes
 * escaped, every other byte as it is (not UTF-8: jansson refuses it). */
static void json_str(buf *out, const char *s, size_t len)
{
	buf_putc(out, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			buf_printf(out, "\\%c", c);
		else if (c == '\n')
			buf_puts(out, "\\n");
		else if (c < 0x20)
			buf_printf(out, "\\u%04x", c);
		else
			buf_putc(out, (char)c);
	}
	buf_putc(out, '"');
}

static void json_cstr(buf *out, const char *s)
{
	json_str(out, s, strlen(s));
}

static void json_buf(buf *out, buf *b)
{
	json_str(out, b->ptr ? b->ptr : "", b->len);
	buf_clear(b);
}

/* "key": */
static void key(buf *out, const char *k)
{
	if (out->len && out->ptr[out->len - 1] != '{')
		buf_putc(out, ',');
	json_cstr(out, k);
	buf_putc(out, ':');
}

/* The cwd (or project variable) `i` names (out: CWD_MAX): in the
 * project always, through a subdirectory, a symlink, a missing
 * directory, .git or .decree, "..", past PATH_MAX; NULL: none. */
#define CWD_MAX (PATH_MAX + 64)
static const char *where(char *out, unsigned i)
{
	static const char *const rel[] = {
		"",	 "/sub",    "/link",	      "/sub/deep", "/gone",
		"/.git", "/sub/..", "/.decree/store", "//sub/",	   "/link/deep"
	};
	size_t n;

	i %= 16;
	if (i == 10)
		return NULL;
	if (i == 11) {
		/* sub/deep through "/." and "..", past PATH_MAX: its first
		 * PATH_MAX - 1 bytes name sub */
		n = (size_t)snprintf(out, CWD_MAX, "%s/sub", proj);
		if ((PATH_MAX - 1 - 8 - n) % 2)
			out[n++] = '/';
		while (n < PATH_MAX - 1 - 8) {
			out[n++] = '/';
			out[n++] = '.';
		}
		snprintf(out + n, CWD_MAX - n, "/deep/../deep");
		return out;
	}
	snprintf(out, CWD_MAX, "%s%s", proj, rel[i % 10]);
	return out;
}

/* A path as a tool names it. */
static void build_path(buf *out, src *s)
{
	static const char *const parts[] = { "a.txt",
					     "sub",
					     "deep",
					     "c.txt",
					     "b.txt",
					     "link",
					     "link-out",
					     "file-link",
					     "dangling",
					     "..",
					     ".",
					     ".git",
					     "HEAD",
					     ".decree",
					     "store",
					     "new.txt",
					     "gone",
					     "",
					     "run.sh",
					     "o.txt",
					     ".decree-tmp-x",
					     "ignored.txt",
					     "\xc3\xa9t\xc3\xa9",
					     " sp ace " };
	const unsigned nparts = sizeof(parts) / sizeof(*parts);
	unsigned n;

	switch (take(s, 10)) {
	case 0:
		break;
	case 1:
		buf_printf(out, "%s/", proj);
		break;
	case 2:
		buf_putc(out, '/');
		break;
	case 3:
		buf_puts(out, "./");
		break;
	case 4:
		buf_puts(out, "../");
		break;
	case 5:
		buf_printf(out, "/%s//", proj);
		break;
	case 6:
		buf_printf(out, "%s/", outside);
		break;
	case 7:
		buf_printf(out, "%s/../proj/", proj);
		break;
	case 8:
		buf_printf(out, "%s/link/", proj);
		break;
	case 9:
		buf_puts(out, "/tmp/");
		break;
	}
	n = 1 + take(s, 6);
	for (unsigned i = 0; i < n; i++) {
		unsigned k = take(s, nparts + 5);
		if (i)
			buf_putc(out, '/');
		if (k < nparts) {
			buf_puts(out, parts[k]);
			continue;
		}
		switch (k - nparts) {
		case 0: /* a name longer than NAME_MAX */
			for (int j = 0; j < 256; j++)
				buf_putc(out, 'x');
			break;
		case 1: /* the longest name */
			for (int j = 0; j < 255; j++)
				buf_putc(out, 'y');
			break;
		case 2: /* past PATH_MAX twice, through ".." */
			for (int j = 0; j < 1400; j++)
				buf_puts(out, "sub/../");
			buf_puts(out, "sub");
			break;
		case 3: /* past PATH_MAX, through "." */
			for (int j = 0; j < 2100; j++)
				buf_puts(out, "./");
			buf_puts(out, "a.txt");
			break;
		case 4:
			take_bytes(out, s, 16);
			break;
		}
	}
	switch (take(s, 6)) {
	case 1:
		buf_putc(out, '/');
		break;
	case 2:
		buf_puts(out, "//");
		break;
	case 3:
		buf_putc(out, ' ');
		break;
	case 4:
		buf_puts(out, "\t\r");
		break;
	}
}

/* A Codex apply_patch text. */
static void build_patch(buf *out, src *s)
{
	static const char *const heads[] = {
		"*** Add File: ", "*** Update File: ", "*** Delete File: ",
		"*** Move to: ",  "*** Add File:",     "***  Add File: ",
		"*** add file: ", "*** Update File: "
	};
	unsigned n = 1 + take(s, 4);

	if (take(s, 4))
		buf_puts(out, "*** Begin Patch\n");
	for (unsigned i = 0; i < n; i++) {
		buf_puts(out, heads[take(s, 8)]);
		build_path(out, s);
		switch (take(s, 5)) {
		case 0:
			buf_putc(out, '\n');
			break;
		case 1:
			buf_puts(out, "\r\n");
			break;
		case 2:
			buf_puts(out, " \n");
			break;
		case 3:
			buf_puts(out, "\n@@\n alpha\n-beta\n+BETA\n");
			break;
		case 4: /* no newline: the last line */
			i = n;
			break;
		}
	}
	if (take(s, 4))
		buf_puts(out, "*** End Patch\n");
}

static void build_tool_input(buf *out, src *s)
{
	buf t = BUF_INIT;
	unsigned k = take(s, 9);

	switch (k) {
	case 0:
	case 1:
	case 2:
		build_path(&t, s);
		buf_printf(out,
			   "{\"%s\":", k == 2 ? "notebook_path" : "file_path");
		json_buf(out, &t);
		if (k == 1) /* an edit's other fields */
			buf_puts(out, ",\"old_string\":\"beta\","
				      "\"new_string\":\"BETA\"");
		buf_putc(out, '}');
		break;
	case 3:
	case 4:
		build_patch(&t, s);
		buf_printf(out, "{\"%s\":", k == 3 ? "command" : "input");
		json_buf(out, &t);
		buf_putc(out, '}');
		break;
	case 5:
		build_patch(&t, s);
		json_buf(out, &t);
		break;
	case 6:
		buf_puts(out, "{\"command\":\"sed -i s/two/TWO/ sub/b.txt && "
			      "echo made > made.txt\",\"description\":\"x\"}");
		break;
	case 7:
		buf_puts(out, "{\"file_path\":42,\"command\":[1],"
			      "\"notebook_path\":null}");
		break;
	case 8:
		buf_puts(out, take(s, 2) ? "null" : "[]");
		break;
	}
	buf_release(&t);
}

/* A payload for event `ev` (0 prompt, 1 before a tool, 2 after, 3
 * another event), built from the bytes of s. */
static void build(buf *out, src *s, unsigned ev, const char *cwd)
{
	static const char *const sessions[] = { "060c6bdf-1f2e",
						"01a20e77-aea4", "1521033a",
						"s:colon", "s\nnewline" };
	static const char *const tools[] = {
		"Write",	"Edit",		"MultiEdit",
		"NotebookEdit", "write_file",	"replace",
		"apply_patch",	"Bash",		"run_shell_command",
		"Task",		"mcp__srv__do", "Read",
		"read_file",	"update_plan",	""
	};
	const unsigned ntools = sizeof(tools) / sizeof(*tools);
	buf t = BUF_INIT;
	unsigned k;

	buf_putc(out, '{');
	key(out, "hook_event_name");
	json_cstr(out, ev == 0 ? "UserPromptSubmit" : "PreToolUse");
	k = take(s, 8);
	if (k < 5) {
		key(out, "session_id");
		json_cstr(out, sessions[k]);
	} else if (k < 7) {
		key(out, "session_id");
		take_bytes(&t, s, 40);
		json_buf(out, &t);
	}
	if (cwd) {
		key(out, "cwd");
		json_cstr(out, cwd);
	}
	k = take(s, 6);
	if (k == 1 || k == 2) {
		key(out, k == 1 ? "prompt_id" : "turn_id");
		json_cstr(out, take(s, 2) ? "2948c6a0" : "01a20e77-aea4-0001");
	} else if (k == 3) {
		key(out, "prompt_id");
		take_bytes(&t, s, 40);
		json_buf(out, &t);
	}
	if (ev == 0 || take(s, 4) == 0) {
		key(out, "prompt");
		switch (take(s, 4)) {
		case 0:
			json_cstr(out, "Please carry out the scripted change.");
			break;
		case 1:
			json_cstr(out, "first line\r\nsecond line\n");
			break;
		case 2: /* past the label's 200 bytes, in 2-byte characters */
			for (int i = 0; i < 150; i++)
				buf_puts(&t, "\xc3\xa9");
			json_buf(out, &t);
			break;
		case 3:
			take_bytes(&t, s, 255);
			json_buf(out, &t);
			break;
		}
	}
	if (ev != 0) {
		k = take(s, ntools + 2);
		key(out, "tool_name");
		if (k < ntools) {
			json_cstr(out, tools[k]);
		} else if (k == ntools) {
			take_bytes(&t, s, 24);
			json_buf(out, &t);
		} else {
			buf_puts(out, "7");
		}
		k = take(s, 4);
		if (k) {
			key(out, "tool_use_id");
			json_cstr(out, k == 1	? "toolu_0"
				       : k == 2 ? "toolu_1"
						: "call_2");
		}
		key(out, "tool_input");
		build_tool_input(out, s);
		if (ev == 2) {
			key(out, "tool_response");
			json_cstr(out, "Exit code: 0\n");
		}
	}
	buf_putc(out, '}');
	buf_release(&t);
}

/* --- the checks ------------------------------------------------------------
 */

/* A session's journal: every path of every turn, and those of its last
 * turn (each NULL-ended); exists false: no journal. */
typedef struct {
	bool exists;
	char **all, **last;
} journal_view;

static void add_path(char ***v, size_t *n, const char *p)
{
	*v = realloc(*v, (*n + 2) * sizeof(**v));
	fuzz_check(*v != NULL);
	(*v)[*n] = strdup(p);
	fuzz_check((*v)[*n] != NULL);
	(*v)[++*n] = NULL;
}

/* The journal of the last session an event named, as it was after the
 * event (the next event of that session starts from it: reading a
 * journal back costs more than the hook call). */
static char *last_session;
static journal_view last_view;

static void view_release(journal_view *v)
{
	for (size_t i = 0; v->all && v->all[i]; i++)
		free(v->all[i]);
	for (size_t i = 0; v->last && v->last[i]; i++)
		free(v->last[i]);
	free(v->all);
	free(v->last);
	memset(v, 0, sizeof(*v));
}

/* What the journal of `session` holds; `check`: no damaged record. */
static void view_get(journal_view *out, decree_store *s, const char *session,
		     bool check)
{
	decree_rewind_list *l = NULL;
	size_t n = 0, nl = 0, turns;
	int r = decree_rewind_list_get(&l, s, session);

	memset(out, 0, sizeof(*out));
	if (r < 0) {
		fuzz_check(r == DECREE_ENOTFOUND || r == DECREE_EINVALID);
		decree_error_clear();
		return;
	}
	out->exists = true;
	if (check && decree_rewind_list_damaged(l)) {
		fprintf(stderr, "session '%s': %zu damaged records\n", session,
			decree_rewind_list_damaged(l));
		fuzz_check(false);
	}
	turns = decree_rewind_list_count(l);
	for (size_t i = 0; i < turns; i++)
		for (size_t k = 0; k < decree_rewind_list_file_count(l, i);
		     k++) {
			const char *p = decree_rewind_list_file(l, i, k);
			add_path(&out->all, &n, p);
			if (i + 1 == turns)
				add_path(&out->last, &nl, p);
		}
	decree_rewind_list_free(l);
}

static bool in(const char *const *v, const char *p)
{
	for (size_t i = 0; v && v[i]; i++)
		if (!strcmp(v[i], p))
			return true;
	return false;
}

/* A safe root-relative path, nothing of .git or .decree. */
static void check_safe(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/')
		fprintf(stderr, "journaled path '%s'\n", p);
	fuzz_check(*p && *p != '/');
	for (;;) {
		size_t n = strcspn(c, "/");
		bool bad = n == 0 || (n == 1 && c[0] == '.') ||
			   (n == 2 && c[0] == '.' && c[1] == '.') ||
			   (n == 4 && !memcmp(c, ".git", 4)) ||
			   (c == p && n == 7 && !memcmp(c, ".decree", 7));
		if (bad)
			fprintf(stderr, "journaled path '%s'\n", p);
		fuzz_check(!bad);
		if (!c[n])
			break;
		c += n + 1;
	}
}

/*
 * The paths a file tool names, seen by the kernel rather than by the
 * hook's string handling: each directory opened a component at a time
 * from "/" (symlinks followed, ".." the real parent: what realpath
 * does, at any length), known by its device and inode.
 */
/* Open the directory `dir` (len bytes) below `at` one component at a
 * time (nofollow: none may be a symlink); -1 when one cannot be. */
static int open_steps(int at, const char *dir, size_t len, bool nofollow)
{
	int fd = fcntl(at, F_DUPFD_CLOEXEC, 3);
	size_t i = 0;

	fuzz_check(fd >= 0);
	while (i < len) {
		size_t n = 0;
		char comp[NAME_MAX + 2];
		int next;
		while (i + n < len && dir[i + n] != '/')
			n++;
		if (n > NAME_MAX) {
			close(fd);
			return -1;
		}
		if (n) {
			memcpy(comp, dir + i, n);
			comp[n] = '\0';
			next = openat(fd, comp,
				      O_PATH | O_DIRECTORY | O_CLOEXEC |
					      (nofollow ? O_NOFOLLOW : 0));
			close(fd);
			if (next < 0)
				return -1;
			fd = next;
		}
		i += n + 1;
	}
	return fd;
}

typedef struct {
	ident dir;
	char *base;
	bool expected; /* in the project, not .git or .decree, not a
			  directory: the hook must journal it */
} named;

static named *names;
static size_t nnames, names_cap;

/* Note the path `p` a tool names (trailing blanks cut when `trim`),
 * relative to `start`. */
static void name_path(const char *start, const char *p, size_t len, bool trim)
{
	buf full = BUF_INIT;
	const char *base;
	size_t dl;
	int fd, root;
	struct stat st;
	named *n;

	while (trim && len && strchr(" \t\r", p[len - 1]))
		len--;
	if (!len)
		return;
	if (*p != '/')
		buf_printf(&full, "%s/", start);
	buf_put(&full, p, len);
	while (full.len > 1 && full.ptr[full.len - 1] == '/')
		full.ptr[--full.len] = '\0';
	base = strrchr(full.ptr, '/') + 1;
	dl = (size_t)(base - full.ptr);
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") ||
	    memchr(full.ptr, '\0', full.len)) {
		buf_release(&full);
		return;
	}
	fuzz_check((root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);
	fd = open_steps(root, full.ptr, dl, false);
	close(root);
	if (fd < 0) { /* no such directory: nothing to journal */
		buf_release(&full);
		return;
	}
	if (nnames == names_cap) {
		names_cap = names_cap ? 2 * names_cap : 16;
		names = realloc(names, names_cap * sizeof(*names));
		fuzz_check(names != NULL);
	}
	n = &names[nnames++];
	n->dir = ident_of(fd);
	n->base = strdup(base);
	fuzz_check(n->base != NULL);
	n->expected = false;
	/* in the project? (its directory, or one above it, is the root;
	 * none of them .git or .decree) */
	for (int up = fcntl(fd, F_DUPFD_CLOEXEC, 3);;) {
		ident id = ident_of(up);
		int parent;
		if (same(id, git_id) || same(id, decree_id)) {
			close(up);
			break;
		}
		if (same(id, proj_id)) {
			n->expected = !(same(n->dir, proj_id) &&
					!strcmp(base, ".decree")) &&
				      strcmp(base, ".git") != 0;
			close(up);
			break;
		}
		parent = openat(up, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		fuzz_check(parent >= 0);
		close(up);
		if (same(ident_of(parent), id)) { /* "/" */
			close(parent);
			break;
		}
		up = parent;
	}
	/* a directory (or a special file) is not a path of its own */
	if (n->expected && fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		n->expected = false;
	close(fd);
	buf_release(&full);
}

/* The paths the tool of payload `p` names, if it is a file tool. */
static bool name_paths(json_t *p, const char *start)
{
	/* run.c's file tools: those journaled by name, without a walk */
	static const char *const by_path[] = { "Write",	      "Edit",
					       "MultiEdit",   "NotebookEdit",
					       "write_file",  "replace",
					       "apply_patch", NULL };
	static const char *const heads[] = {
		"*** Add File: ", "*** Update File: ", "*** Delete File: ",
		"*** Move to: ", NULL
	};
	const char *tool = json_string_value(json_object_get(p, "tool_name"));
	json_t *input = json_object_get(p, "tool_input"), *t;
	const char *text;

	if (!tool || !in((const char *const *)by_path, tool))
		return false;
	if (strlen(start) >= PATH_MAX)
		return true; /* no project found from there: nothing */
	if (strcmp(tool, "apply_patch")) {
		text = json_string_value(json_object_get(
			input, strcmp(tool, "NotebookEdit") ? "file_path"
							    : "notebook_path"));
		if (text)
			name_path(start, text, strlen(text), false);
		return true;
	}
	t = json_object_get(input, "command");
	if (!json_is_string(t))
		t = json_object_get(input, "input");
	if (!json_is_string(t) && json_is_string(input))
		t = input;
	for (text = json_string_value(t); text && *text;) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		for (size_t i = 0; heads[i]; i++) {
			size_t h = strlen(heads[i]);
			if (len > h && !strncmp(text, heads[i], h))
				name_path(start, text + h, len - h, true);
		}
		text = nl ? nl + 1 : NULL;
	}
	return true;
}

/* Whether the journaled path `p` is the named path `n`. */
static bool is_named(const char *p, const named *n)
{
	const char *base = strrchr(p, '/');
	size_t dl = base ? (size_t)(base - p) : 0;
	int fd;
	bool r;

	base = base ? base + 1 : p;
	if (strcmp(base, n->base))
		return false;
	if ((fd = open_steps(proj_fd, p, dl, true)) < 0)
		return false;
	r = same(ident_of(fd), n->dir);
	close(fd);
	return r;
}

static void names_release(void)
{
	for (size_t i = 0; i < nnames; i++)
		free(names[i].base);
	nnames = 0;
}

static void print_names(void)
{
	for (size_t i = 0; i < nnames; i++)
		fprintf(stderr, "  named: '%s' in %lu (%s)\n", names[i].base,
			(unsigned long)names[i].dir.ino,
			names[i].expected ? "to journal" : "not the project's");
}

/*
 * After a hook call about `session`: its journal is undamaged, every
 * path safe; the paths the call added are, after a file tool, the paths
 * it named in the project (all of them, none else), after another tool
 * paths the tree has had, after any other event none.
 */
static void check_journal(journal_view *out, decree_store *s,
			  const char *session, const journal_view *before,
			  bool post, bool by_path)
{
	journal_view after;

	view_get(&after, s, session, true);
	for (size_t i = 0; after.all && after.all[i]; i++) {
		const char *p = after.all[i];
		bool ok = true;
		check_safe(p);
		if (in((const char *const *)before->all, p))
			continue;
		if (!post)
			ok = false;
		else if (!by_path)
			ok = in(universe, p);
		else {
			ok = false;
			for (size_t k = 0; k < nnames && !ok; k++)
				ok = names[k].expected &&
				     is_named(p, &names[k]);
		}
		if (!ok) {
			fprintf(stderr, "journaled '%s' (session '%s')\n", p,
				session);
			print_names();
		}
		fuzz_check(ok);
	}
	for (size_t k = 0; by_path && post && after.exists && k < nnames; k++) {
		bool ok = !names[k].expected;
		for (size_t i = 0; !ok && after.last && after.last[i]; i++)
			ok = is_named(after.last[i], &names[k]);
		if (!ok) {
			fprintf(stderr, "not journaled: '%s' (session '%s')\n",
				names[k].base, session);
			print_names();
		}
		fuzz_check(ok);
	}
	*out = after;
}

static decree_store *open_store(void)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	decree_store *s;

	o.root = proj;
	o.lock_timeout_ms = 0;
	fuzz_check(decree_store_open(&s, &o) == 0);
	return s;
}

static void report_fsck(void *payload, decree_fsck_problem kind,
			const char *what, const char *detail)
{
	(void)payload;
	fprintf(stderr, "fsck: %d %s: %s\n", (int)kind, what, detail);
}

static void fsck(decree_store *s)
{
	struct stat st;

	if (stat(store, &st) < 0)
		return;
	fuzz_check(decree_fsck(s, report_fsck, NULL) == 0);
}

/* --- one input -------------------------------------------------------------
 */

/* The payload of a raw event with "/PROJECT" and "/OUTSIDE" made the
 * scratch directories. */
static void expand(buf *out, const uint8_t *p, size_t n)
{
	static const char *const from[] = { "/PROJECT", "/OUTSIDE" };
	const char *to[] = { proj, outside };

	for (size_t i = 0; i < n;) {
		size_t k;
		for (k = 0; k < 2; k++)
			if (n - i >= 8 && !memcmp(p + i, from[k], 8))
				break;
		if (k < 2) {
			buf_puts(out, to[k]);
			i += 8;
		} else {
			buf_putc(out, (char)p[i++]);
		}
	}
}

/* A cwd the hook may take for the project's: in it, without "..". */
static bool cwd_ok(const char *cwd)
{
	size_t pl = strlen(proj);

	return strncmp(cwd, proj, pl) == 0 &&
	       (cwd[pl] == '\0' || cwd[pl] == '/') && !strstr(cwd, "/..");
}

/* One hook call: sel, arg, payload (see the head comment). */
static void one_event(decree_store *s, const uint8_t *data, size_t size,
		      buf *state, buf *after)
{
	static const char *const other_events[] = { "Stop", "SessionStart",
						    "BeforeTool", "" };
	unsigned sel = data[0], arg = size > 1 ? data[1] : 0;
	const hook_agent *a = &hook_agents[(sel & 3) % 3];
	unsigned ev = (sel >> 2) & 3, mode = (sel >> 4) & 3;
	char cwd[CWD_MAX];
	const char *dir = where(cwd, arg), *session = NULL, *start;
	hook_request rq;
	buf payload = BUF_INIT;
	journal_view before;
	bool by_path = false;
	json_t *j;
	int back, r;

	data += size > 1 ? 2 : 1;
	size -= size > 1 ? 2 : 1;
	if (sel & 0x80) { /* the tool changed the tree */
		change_tree(arg >> 3);
		tree_state(state);
	}
	if (sel & 0x40) {
		src in = { data, size };
		build(&payload, &in, ev, dir);
	} else {
		expand(&payload, data, size);
	}
	/* never a project the harness did not make: a cwd elsewhere is
	 * replaced (the payload rewritten) */
	j = json_loadb(payload.ptr ? payload.ptr : "", payload.len, 0, NULL);
	if (json_is_object(j) && mode != 0) {
		const char *c = json_string_value(json_object_get(j, "cwd"));
		if (c && *c == '/' && !cwd_ok(c)) {
			char *text;
			if (dir)
				json_object_set_new(j, "cwd", json_string(dir));
			else
				json_object_del(j, "cwd");
			text = json_dumps(j, JSON_COMPACT);
			fuzz_check(text != NULL);
			buf_clear(&payload);
			buf_puts(&payload, text);
			free(text);
		}
	}
	memset(&before, 0, sizeof(before));
	if (json_is_object(j) &&
	    (session = json_string_value(json_object_get(j, "session_id")))) {
		/* the agent's directory, as run.c's find_root takes it */
		const char *c = json_string_value(json_object_get(j, "cwd"));
		start = mode == 0			  ? proj
			: mode == 1 && a->root_env && dir ? dir
			: c && *c == '/'		  ? c
							  : proj;
		if (last_session && !strcmp(last_session, session)) {
			before = last_view;
			memset(&last_view, 0, sizeof(last_view));
		} else {
			view_get(&before, s, session, false);
		}
		by_path = ev == 2 && name_paths(j, start);
	}
	memset(&rq, 0, sizeof(rq));
	rq.agent = a;
	rq.event = ev < 3 ? a->events[ev].event : other_events[arg >> 6];
	rq.root_opt = mode == 0 ? proj : NULL;
	rq.payload = payload.ptr ? payload.ptr : "";
	rq.payload_len = payload.len;
	if (mode == 1 && a->root_env && dir)
		setenv(a->root_env, dir, 1);
	/* the working directory, which a payload without a cwd names, is
	 * the project's during the call only (replay names its inputs
	 * relative to the caller's) */
	fuzz_check((back = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0);
	fuzz_check(chdir(proj) == 0);
	r = hook_run(&rq);
	if (getenv("FUZZ_HOOK_DEBUG"))
		fprintf(stderr, "hook %s %s (mode %u): %d %s\n  %.*s\n",
			a->name, rq.event, mode, r, decree_error_last(),
			(int)(payload.len > 400 ? 400 : payload.len),
			payload.ptr ? payload.ptr : "");
	fuzz_check(fchdir(back) == 0);
	close(back);
	decree_error_clear();
	if (a->root_env)
		unsetenv(a->root_env);
	/* it wrote nothing in the tree, nor beside it */
	tree_state(after);
	if (after->len != state->len ||
	    memcmp(after->ptr, state->ptr, state->len)) {
		fprintf(stderr,
			"the tree changed:\n--- before\n%s--- after\n%s",
			state->ptr, after->ptr);
		fuzz_check(false);
	}
	view_release(&last_view);
	free(last_session);
	last_session = NULL;
	if (session) {
		check_journal(&last_view, s, session, &before, ev == 2,
			      by_path);
		last_session = strdup(session);
		fuzz_check(last_session != NULL);
	}
	view_release(&before);
	names_release();
	json_decref(j);
	buf_release(&payload);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	fuzz_part parts[MAX_EVENTS];
	size_t nparts;
	buf state = BUF_INIT, after = BUF_INIT;
	struct stat st;
	decree_store *s;

	if (!ready) {
		setup();
		ready = true;
	}
	if (dirty)
		make_tree();
	s = open_store();
	nparts = fuzz_split(parts, MAX_EVENTS, data, size);
	tree_state(&state);
	for (size_t i = 0; i < nparts; i++)
		if (parts[i].len)
			one_event(s, parts[i].ptr, parts[i].len, &state,
				  &after);
	view_release(&last_view);
	free(last_session);
	last_session = NULL;
	/* the store stays clean; the next input gets a new one */
	fsck(s);
	decree_store_free(s);
	if (stat(store, &st) == 0) {
		fuzz_empty_dir(store);
		fuzz_check(rmdir(store) == 0);
	}
	buf_release(&state);
	buf_release(&after);
	decree_error_clear();
	return 0;
}
