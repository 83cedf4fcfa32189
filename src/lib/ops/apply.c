/*
 * apply.c - decree_apply (decree/apply.h): a unified diff as one
 * transaction, optionally followed by a command that must succeed.
 *
 * Phases (one function each, carrying an apply_run):
 *   1. parse the whole patch (patch.h); nothing is read before it parses.
 *   2. check (check_patch): for every file patch, in order (reverse order
 *      with opts->reverse), read the current bytes of its paths once, then
 *      feed the result of a path into the next patch for the same path.  A
 *      hunk may match away from its line (the nearest exact match, as git
 *      apply does; never fuzz).  A patch that does not apply but whose
 *      reverse applies at the exact lines is "already applied" and
 *      skipped.  Conflicts are collected for every path, then reported
 *      together; nothing is written.
 *   3. write (write_patch): old and new contents go into the store, then
 *      txn_run() makes the change all-or-nothing and pushes it on the undo
 *      history.  Paths whose final bytes and mode equal their current ones
 *      are not part of the transaction (no write, mtime untouched).
 *   4. exec (run_exec): the store lock is released while the command runs
 *      (it may call decree itself).  If it fails, roll_back scans and
 *      captures the tree it left (checkpoint "exec-failed"), and a second
 *      transaction puts back the state before the apply: restore (paths
 *      that existed), remove (paths the patch created), sweep (paths that
 *      appeared while the command ran).  Ignored files, which the scan does
 *      not see, are left alone unless the patch touched them.
 */
#include "util/common.h"
#include "decree/apply.h"
#include "util/alloc.h"
#include "ops/apply.h"
#include "ops/checkpoint.h"
#include "scan/worktree.h"
#include "util/error.h"
#include "util/fs.h"
#include "diff/patch.h"
#include "diff/unidiff.h"
#include "store/repo.h"
#include "util/strset.h"
#include "util/trace.h"
#include "txn/txn.h"

#include <signal.h>
#include <sys/wait.h>

/* --- the state of one path during the check --------------------------------
 */

typedef struct {
	char *path;
	bool orig_exists;
	uint32_t orig_mode;
	buf orig; /* content (a symlink's target) found on disk */
	bool exists;
	uint32_t mode;
	buf data;      /* content after the file patches so far */
	bool is_dir;   /* a directory stands at the path (absent for us) */
	bool blocked;  /* a parent is a file or a symlink (absent for us) */
	char *problem; /* conflict message, or NULL */
} pstate;

struct apply_set {
	pstate *v;
	size_t n, cap;
	strset index; /* path -> position in v */
};
typedef struct apply_set pstates;

static void pstates_release(pstates *t)
{
	for (size_t i = 0; i < t->n; i++) {
		decree_free(t->v[i].path);
		buf_release(&t->v[i].orig);
		buf_release(&t->v[i].data);
		decree_free(t->v[i].problem);
	}
	decree_free(t->v);
	strset_release(&t->index);
	memset(t, 0, sizeof(*t));
}

static int conflict_at(pstate *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int conflict_at(pstate *p, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_clear();
	if (!p->problem && !(p->problem = decree_strdup(msg)))
		return DECREE_ERROR;
	return 0;
}

/* Read what stands at p->path: absent, a regular file or a symlink.
 * Anything else is recorded as a conflict on the path. */
static int load_disk(pstate *p, decree_store *s)
{
	struct stat st;
	const char *base;
	int dfd, fd, r;

	r = fs_open_parent(&dfd, &base, s->rootfd, p->path, false);
	if (r == DECREE_ENOTFOUND) {
		error_clear();
		return 0;
	}
	if (r == DECREE_EINVALID) {
		/* absent; fine if the patch removes what is in the way */
		error_clear();
		p->blocked = true;
		return 0;
	}
	if (r < 0)
		return r;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT
			    ? 0
			    : decree_error_os("cannot stat '%s'", p->path);
		close(dfd);
		return r;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX + 1];
		ssize_t n = readlinkat(dfd, base, target, sizeof(target) - 1);
		close(dfd);
		if (n < 0)
			return decree_error_os("cannot read link '%s'",
					       p->path);
		p->orig_mode = MODE_LINK;
		p->orig_exists = true;
		return buf_put(&p->orig, target, (size_t)n);
	}
	if (S_ISDIR(st.st_mode)) {
		close(dfd);
		p->is_dir = true; /* fine if the patch empties it */
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		close(dfd);
		return conflict_at(p, "'%s' is a special file", p->path);
	}
	/* O_NONBLOCK: never wait on a FIFO that took the file's place */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return decree_error_os("cannot open '%s'", p->path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return conflict_at(p, "'%s' is a special file", p->path);
	}
	if ((uint64_t)st.st_size >= UNIDIFF_MAX_CONTENT) {
		/* patched in memory: a huge file is refused, not loaded */
		close(fd);
		return conflict_at(p,
				   "'%s' is too large to patch (%llu bytes; "
				   "the limit is %llu)",
				   p->path, (unsigned long long)st.st_size,
				   (unsigned long long)UNIDIFF_MAX_CONTENT);
	}
	r = fs_read_fd(fd, &p->orig, p->path);
	close(fd);
	if (r < 0)
		return r;
	p->orig_exists = true;
	p->orig_mode = mode_of_file(st.st_mode);
	return 0;
}

static int state_of(pstate **out, pstates *t, decree_store *s, const char *path)
{
	pstate *p;
	int at, r;

	if (strset_get(&t->index, path, &at)) {
		*out = &t->v[at];
		return 0;
	}
	if (GROW(t->v, t->cap, t->n + 1) < 0)
		return DECREE_ERROR;
	p = &t->v[t->n];
	memset(p, 0, sizeof(*p));
	if (!(p->path = decree_strdup(path)))
		return DECREE_ERROR;
	t->n++;
	if (strset_put(&t->index, path, (int)(t->n - 1)) < 0)
		return DECREE_ERROR;
	if ((r = load_disk(p, s)) < 0)
		return r;
	p->exists = p->orig_exists;
	p->mode = p->orig_mode;
	if (p->orig.len && buf_put(&p->data, p->orig.ptr, p->orig.len) < 0)
		return DECREE_ERROR;
	*out = p;
	return 0;
}

static bool state_changed(const pstate *p)
{
	if (p->exists != p->orig_exists)
		return true;
	return p->exists &&
	       (p->mode != p->orig_mode || p->data.len != p->orig.len ||
		(p->data.len && memcmp(p->data.ptr, p->orig.ptr, p->data.len)));
}

/* --- phase 2: check ---------------------------------------------------------
 */

static int check_one(pstates *t, decree_store *s, const patch_file *fp,
		     unsigned flags)
{
	bool rev = (flags & PATCH_REVERSE) != 0;
	const char *from = patch_file_source(fp, rev);
	const char *to = patch_file_target(fp, rev);
	bool moves = strcmp(from, to) != 0;
	patch_result res = PATCH_RESULT_INIT;
	pstate *src, *dst;
	int r;

	if ((r = state_of(&src, t, s, from)) < 0 ||
	    (r = state_of(&dst, t, s, to)) < 0)
		return r;
	if (src->problem || dst->problem)
		return 0; /* reported once per path */
	r = patch_apply(&res, fp, src->data.ptr, src->data.len, src->exists,
			flags);
	if (r == DECREE_ECONFLICT || r == DECREE_EAPPLY) {
		char why[1024];
		bool done_already = false;
		snprintf(why, sizeof(why), "%s", error_last());
		/* Already applied?  Then the reverse applies to the target. */
		if (!moves || (fp->is_rename && !src->exists)) {
			patch_result back = PATCH_RESULT_INIT;
			/* at the exact lines only: an offset match of the
			 * reverse is too weak to skip a file silently */
			unsigned back_flags = (flags ^ PATCH_REVERSE) &
					      ~(unsigned)PATCH_ALLOW_OFFSET;
			done_already = patch_apply(&back, fp, dst->data.ptr,
						   dst->data.len, dst->exists,
						   back_flags) == 0;
			patch_result_release(&back);
			error_clear();
		}
		patch_result_release(&res);
		if (done_already)
			return 0; /* reported as a skip: nothing changes */
		return conflict_at(src, "%s", why);
	}
	if (r < 0) {
		patch_result_release(&res);
		return r;
	}
	if (moves && res.exists && dst->exists) {
		patch_result_release(&res);
		return conflict_at(dst,
				   "cannot %s '%s' to '%s': it already exists",
				   fp->is_copy ? "copy" : "rename", from, to);
	}
	if (res.exists) {
		/* mode 0, or the same mode on both sides: the patch changes
		 * nothing; keep the source's (a git diff says 100644 for a
		 * 0600 file; applying it must not make a secret readable) */
		bool keep = src->exists &&
			    (!res.mode || res.mode == res.expect_mode);
		dst->mode = keep ? src->mode : res.mode ? res.mode : MODE_FILE;
		buf_release(&dst->data);
		dst->data = res.data;
		res.data = (buf)BUF_INIT;
	} else {
		buf_clear(&dst->data);
	}
	if (moves && fp->is_rename) {
		src->exists = false;
		buf_clear(&src->data);
	}
	dst->exists = res.exists;
	patch_result_release(&res);
	return 0;
}

/* Does the patch delete a file at `path`, or below it (below = true)? */
static bool deletes(const pstates *t, const char *path, size_t len, bool below)
{
	for (size_t i = 0; i < t->n; i++) {
		const pstate *q = &t->v[i];
		if (!q->orig_exists || q->exists)
			continue;
		if (below ? !strncmp(q->path, path, len) && q->path[len] == '/'
			  : strlen(q->path) == len &&
				    !memcmp(q->path, path, len))
			return true;
	}
	return false;
}

/*
 * A file that ends up where a directory stands, or below a file or a
 * symlink, needs the patch to delete what is in the way; the transaction
 * removes emptied directories and refuses anything else.
 */
static int check_shapes(pstates *t)
{
	for (size_t i = 0; i < t->n; i++) {
		pstate *p = &t->v[i];
		bool clear = false;
		int r = 0;
		if (!p->exists || p->problem)
			continue;
		if (p->is_dir && !deletes(t, p->path, strlen(p->path), true))
			r = conflict_at(p, "'%s' is a directory", p->path);
		/* a file or symlink this patch leaves at a parent's place */
		for (const char *c = strchr(p->path, '/'); c && !r;
		     c = strchr(c + 1, '/')) {
			char parent[PATH_MAX];
			int at;
			snprintf(parent, sizeof(parent), "%.*s",
				 (int)(c - p->path), p->path);
			if (strset_get(&t->index, parent, &at) &&
			    t->v[at].exists)
				r = conflict_at(
					p,
					"a parent of '%s' is a file or a "
					"symlink",
					p->path);
		}
		if (p->blocked) {
			for (const char *c = strchr(p->path, '/'); c && !clear;
			     c = strchr(c + 1, '/'))
				clear = deletes(t, p->path,
						(size_t)(c - p->path), false);
			if (!clear)
				r = conflict_at(
					p,
					"a parent of '%s' is a file or a "
					"symlink",
					p->path);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static decree_apply_action action_of(const pstate *p)
{
	if (p->problem)
		return DECREE_APPLY_CONFLICT;
	if (!state_changed(p))
		return DECREE_APPLY_SKIP;
	return !p->exists	? DECREE_APPLY_DELETE
	       : p->orig_exists ? DECREE_APPLY_MODIFY
				: DECREE_APPLY_CREATE;
}

/* --- phase 4: the command ---------------------------------------------------
 */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* Run `cmd` with /bin/sh -c in the root.  *status: exit code, 128+signal.
 * SIGINT, SIGTERM and SIGHUP reach the command (not us): a Ctrl-C makes it
 * fail, and the failure is rolled back. */
static int run_command(int *status, decree_store *s, const char *cmd,
		       bool stdout_to_stderr)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa, old[4];
	pid_t pid;
	int ws, r = 0;

	fflush(NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	child_pid = 0;
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	pid = fork();
	if (pid < 0) {
		r = decree_error_os("cannot run '%s'", cmd);
		goto done;
	}
	if (pid == 0) {
		for (size_t i = 0; i < 4; i++)
			sigaction(sigs[i], &old[i], NULL);
		if (fchdir(s->rootfd) < 0)
			_exit(126);
		if (stdout_to_stderr && dup2(2, 1) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	child_pid = pid;
	while (waitpid(pid, &ws, 0) < 0) {
		if (errno != EINTR) {
			r = decree_error_os("cannot wait for '%s'", cmd);
			goto done;
		}
	}
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
done:
	child_pid = 0;
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	return r;
}

typedef struct {
	txn_change *v;
	const char **label; /* restore / remove / sweep, per change */
	size_t n, cap, lcap;
} rb_list;

static void rb_release(rb_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		decree_free(l->v[i].path);
	decree_free(l->v);
	decree_free(l->label);
	memset(l, 0, sizeof(*l));
}

static txn_change *rb_add(rb_list *l, const char *path, const char *label)
{
	txn_change *t;
	if (GROW(l->v, l->cap, l->n + 1) < 0 ||
	    GROW(l->label, l->lcap, l->n + 1) < 0)
		return NULL;
	t = &l->v[l->n];
	memset(t, 0, sizeof(*t));
	if (!(t->path = decree_strdup(path)))
		return NULL;
	l->label[l->n++] = label;
	return t;
}

static void set_new_from(txn_change *t, const snap_entry *e)
{
	t->has_new = true;
	t->new_mode = e->mode;
	t->new_size = e->size;
	t->new_id = e->id;
}

static void set_old_from(txn_change *t, const snap_entry *e)
{
	t->has_old = true;
	t->old_mode = e->mode;
	t->old_size = e->size;
	t->old_id = e->id;
}

static bool change_is_noop(const txn_change *t)
{
	return t->has_old == t->has_new &&
	       (!t->has_old || (t->old_mode == t->new_mode &&
				!oid_cmp(&t->old_id, &t->new_id)));
}

/*
 * Plan the way back from `post` (the tree the command left) to the state
 * before the apply: `pre` for scanned paths, `applied` for the paths the
 * patch wrote (they may be ignored, so they are captured one by one).
 */
static int plan_rollback(rb_list *out, decree_store *s, odb_writer *w,
			 const snap *pre, const snap *post,
			 const txn_change *applied, size_t napplied)
{
	strset mine = STRSET_INIT;
	size_t i, j;
	int r = 0;

	for (i = 0; i < napplied; i++) {
		const txn_change *c = &applied[i];
		txn_change *t;
		bool present;
		if ((r = strset_put(&mine, c->path, 1)) < 0)
			goto done;
		if (!(t = rb_add(out, c->path,
				 c->has_old ? "restore" : "remove"))) {
			r = DECREE_ERROR;
			goto done;
		}
		if ((r = txn_capture_old(t, s, w, &present)) < 0)
			goto done;
		if (c->has_old) {
			t->has_new = true;
			t->new_mode = c->old_mode;
			t->new_size = c->old_size;
			t->new_id = c->old_id;
		}
		if (change_is_noop(t)) {
			decree_free(t->path);
			out->n--;
		}
	}
	for (i = 0, j = 0; i < pre->n || j < post->n;) {
		int c = i >= pre->n ? 1
			: j >= post->n
				? -1
				: path_cmp(pre->v[i].path, post->v[j].path);
		const snap_entry *a = c <= 0 ? &pre->v[i] : NULL;
		const snap_entry *b = c >= 0 ? &post->v[j] : NULL;
		const char *path = c <= 0 ? pre->v[i].path : post->v[j].path;
		txn_change *t;

		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
		if (strset_has(&mine, path) ||
		    (a && b && snap_entry_same(a, b)))
			continue;
		if ((a && !snap_entry_is_stored(a)) ||
		    (b && !snap_entry_is_stored(b)))
			continue; /* too large: never stored, never deleted */
		if (!(t = rb_add(out, path, a ? "restore" : "sweep"))) {
			r = DECREE_ERROR;
			goto done;
		}
		if (b)
			set_old_from(t, b);
		if (a)
			set_new_from(t, a);
	}
done:
	strset_release(&mine);
	return r;
}

typedef struct {
	const decree_apply_options *o;
	const rb_list *plan;
	strset index;
} rb_progress;

/* The rollback transaction reports its steps as rolling_back + label. */
static void on_rollback_step(void *payload, decree_phase ph, const char *path,
			     const char *action)
{
	rb_progress *p = payload;
	int at;
	(void)action;
	if (!p->o->progress || ph != DECREE_PHASE_APPLYING || !path ||
	    !strset_get(&p->index, path, &at))
		return;
	p->o->progress(p->o->payload, DECREE_PHASE_ROLLING_BACK, path,
		       p->plan->label[at]);
}

/* Does a directory exist at `rel` below the root (no symlink followed)? */
static bool dir_exists(decree_store *s, const char *rel)
{
	struct stat st;
	bool exists;

	if (fs_lstat_beneath(&exists, &st, s->rootfd, rel) < 0) {
		error_clear();
		return false;
	}
	return exists && S_ISDIR(st.st_mode);
}

/* The directories the apply will create: missing ancestors of created
 * paths (so a rollback can remove them even when the command deleted the
 * file the patch put there). */
static int missing_dirs(strset *out, decree_store *s, const txn_change *ch,
			size_t n)
{
	char dir[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		if (ch[i].has_old || !ch[i].has_new)
			continue;
		snprintf(dir, sizeof(dir), "%s", ch[i].path);
		for (char *sl = strrchr(dir, '/'); sl; sl = strrchr(dir, '/')) {
			*sl = '\0';
			if (strset_has(out, dir) || dir_exists(s, dir))
				break;
			if (strset_put(out, dir, 1) < 0)
				return DECREE_ERROR;
		}
	}
	return 0;
}

static int by_depth(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
	return (la < lb) - (la > lb); /* deepest (longest) first */
}

/* Remove those directories again where they are empty. */
static void remove_dirs(decree_store *s, const strset *dirs)
{
	char **v = decree_calloc(dirs->count + 1, sizeof(char *));
	size_t n = 0;

	if (!v)
		return;
	for (size_t i = 0; i < dirs->cap; i++)
		if (dirs->keys[i])
			v[n++] = dirs->keys[i];
	qsort(v, n, sizeof(char *), by_depth);
	for (size_t i = 0; i < n; i++) {
		const char *base;
		int dfd;
		if (fs_open_parent(&dfd, &base, s->rootfd, v[i], false) < 0) {
			error_clear();
			continue;
		}
		unlinkat(dfd, base, AT_REMOVEDIR); /* fails if not empty: fine
						    */
		close(dfd);
	}
	decree_free(v);
}

static int roll_back(decree_apply_result *res, decree_store *s,
		     const decree_apply_options *o, const snap *pre,
		     const txn_change *applied, size_t napplied,
		     const char *pushed_id, const char *session,
		     const strset *made_dirs)
{
	snap post = SNAP_INIT;
	rb_list plan = { NULL, NULL, 0, 0, 0 };
	rb_progress prog;
	oplog hist = OPLOG_INIT;
	oplog_entry e;
	txn_spec sp;
	odb_writer *w = NULL;
	char path[PATH_MAX];
	odb *db;
	int r;

	memset(&prog, 0, sizeof(prog));
	memset(&sp, 0, sizeof(sp));
	memset(&e, 0, sizeof(e));
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0 ||
	    (r = worktree_scan(&post, s, w, NULL, pre, false)) < 0 ||
	    (r = plan_rollback(&plan, s, w, pre, &post, applied, napplied)) <
		    0 ||
	    (r = checkpoint_write(res->exec_checkpoint, s, w, &post, session,
				  NULL, CAPTURE_EXEC_FAILED)) < 0)
		goto done;
	for (size_t i = 0; i < plan.n; i++) {
		if ((r = strset_put(&prog.index, plan.v[i].path, (int)i)) < 0)
			goto done;
		if (!strcmp(plan.label[i], "restore"))
			res->restored++;
		else if (!strcmp(plan.label[i], "remove"))
			res->removed++;
		else
			res->swept++;
	}
	prog.o = o;
	prog.plan = &plan;
	sp.changes = plan.v;
	sp.n = plan.n;
	sp.progress = on_rollback_step;
	sp.payload = &prog;
	/* The apply moves to the redo history if it is still on top of the
	 * undo history; otherwise the rollback is an entry of its own. */
	repo_file(path, s, "oplog");
	if ((r = oplog_load_all(&hist, path)) < 0)
		goto done;
	if (pushed_id[0] && hist.nundo && !hist.undo[hist.nundo - 1].damaged &&
	    !strcmp(hist.undo[hist.nundo - 1].id, pushed_id)) {
		sp.history = TXN_HISTORY_UNDO;
		sp.moved_id = pushed_id;
	} else {
		e.kind = OPLOG_APPLY;
		e.time_ns = fs_now_ns();
		e.session = (char *)session;
		e.what = (char *)"roll back after a failed command";
		e.changes = plan.v;
		e.n = plan.n;
		sp.history = TXN_HISTORY_PUSH;
		sp.entry = &e;
	}
	if ((r = txn_run(s, &sp)) == 0)
		remove_dirs(s, made_dirs);
done:
	oplog_release(&hist);
	strset_release(&prog.index);
	rb_release(&plan);
	odb_writer_free(w);
	snap_release(&post);
	return r;
}

/* The command as messages show it: one line, at most ~500 bytes. */
static void command_label(char *out, size_t len, const char *cmd)
{
	size_t n = 0, max = len - 4;

	for (; *cmd && n < max; cmd++)
		out[n++] = (unsigned char)*cmd < 0x20 ? ' ' : *cmd;
	if (*cmd) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

/* --- decree_apply -----------------------------------------------------------
 */

static void report(const decree_apply_options *o, decree_apply_result *res,
		   const pstate *p)
{
	decree_apply_action a = action_of(p);
	switch (a) {
	case DECREE_APPLY_CREATE:
		res->created++;
		break;
	case DECREE_APPLY_MODIFY:
		res->modified++;
		break;
	case DECREE_APPLY_DELETE:
		res->deleted++;
		break;
	case DECREE_APPLY_SKIP:
		res->skipped++;
		break;
	default:
		res->conflicts++;
	}
	if (o->report)
		o->report(o->payload, p->path, a, p->problem);
}

/* Let the caller check every final state; name the refused paths. */
static int verify_all(const decree_apply_options *o, const pstates *t)
{
	buf bad = BUF_INIT;
	size_t nbad = 0;
	int r = 0;

	for (size_t i = 0; i < t->n; i++) {
		const pstate *p = &t->v[i];
		char hex[SHA256_HEXLEN + 1] = "";
		unsigned mode = 0;
		if (p->exists) {
			oid id;
			sha256_buf(&id, p->data.ptr, p->data.len);
			oid_to_hex(hex, &id);
			mode = mode_is_file(p->mode) ? p->mode & MODE_PERM
						     : 0120000;
		}
		if (!o->verify(o->payload, p->path, p->exists, mode, hex))
			continue;
		if (nbad++ < 10)
			buf_printf(&bad, "%s'%s'", nbad > 1 ? ", " : "",
				   p->path);
	}
	if (nbad)
		r = decree_error_set(DECREE_EVERIFY,
				     "%zu path(s) would not match after the "
				     "apply: %s%s; nothing was written",
				     nbad, bad.ptr ? bad.ptr : "",
				     nbad > 10 ? ", ..." : "");
	buf_release(&bad);
	return r;
}

/* Store both sides of every changed path; fill `out` in path order. */
static int stage_changes(txn_change **out, size_t *nout, odb_writer *w,
			 const pstates *t)
{
	txn_change *v = NULL;
	size_t n = 0, cap = 0;
	int r;

	for (size_t i = 0; i < t->n; i++) {
		const pstate *p = &t->v[i];
		txn_change *c;
		if (!state_changed(p))
			continue;
		if (GROW(v, cap, n + 1) < 0)
			goto oom;
		c = &v[n];
		memset(c, 0, sizeof(*c));
		if (!(c->path = decree_strdup(p->path)))
			goto oom;
		n++;
		if ((c->has_old = p->orig_exists)) {
			c->old_mode = p->orig_mode;
			c->old_size = p->orig.len;
			if ((r = odb_writer_add(w, ODB_BLOB, p->orig.ptr,
						p->orig.len, NULL,
						&c->old_id)) < 0)
				goto fail;
		}
		if ((c->has_new = p->exists)) {
			c->new_mode = p->mode;
			c->new_size = p->data.len;
			if ((r = odb_writer_add(w, ODB_BLOB, p->data.ptr,
						p->data.len, NULL,
						&c->new_id)) < 0)
				goto fail;
		}
	}
	*out = v;
	*nout = n;
	return 0;
oom:
	r = DECREE_ERROR;
fail:
	for (size_t i = 0; i < n; i++)
		decree_free(v[i].path);
	decree_free(v);
	return r;
}

static int cmp_change(const void *a, const void *b)
{
	return path_cmp(((const txn_change *)a)->path,
			((const txn_change *)b)->path);
}

/* The state of one decree_apply call, carried from phase to phase. */
typedef struct {
	decree_store *s;
	const decree_apply_options *o;
	decree_apply_result *res;
	const char *name;    /* of the patch, for messages */
	const char *what;    /* the history's description (NULL: "apply
				NAME") */
	const char *session; /* of safety captures */
	pstates st;	     /* every path the patch touches (phase 2) */
	txn_change *ch;	     /* the changed ones, in path order (phase 3) */
	size_t nch;
	snap pre;	  /* with exec: the tree before the apply */
	strset made_dirs; /* with exec: directories the apply creates */
	char pushed[17];  /* id of the undo entry the apply pushed */
	bool locked;
} apply_run;

/* Phase 2: check every file patch against the current bytes. */
static int check_patch(apply_run *a, const patch_set *ps)
{
	unsigned flags = PATCH_ALLOW_OFFSET |
			 (a->o->reverse ? PATCH_REVERSE : 0);
	int r;

	for (size_t k = 0; k < ps->nfiles; k++) {
		size_t i = a->o->reverse ? ps->nfiles - 1 - k : k;
		if ((r = check_one(&a->st, a->s, &ps->files[i], flags)) < 0)
			return r;
	}
	return 0;
}

/* Phase 2, end: report every path, and refuse the whole set if any
 * path conflicts. */
static int check_set(apply_run *a)
{
	int r;

	if ((r = check_shapes(&a->st)) < 0)
		return r;
	for (size_t i = 0; i < a->st.n; i++)
		report(a->o, a->res, &a->st.v[i]);
	if (a->res->conflicts) {
		buf names = BUF_INIT;
		size_t k = 0;
		for (size_t i = 0; i < a->st.n; i++)
			if (a->st.v[i].problem && k++ < 5)
				buf_printf(&names, "%s'%s'", k > 1 ? ", " : "",
					   a->st.v[i].path);
		r = decree_error_set(
			DECREE_ECONFLICT,
			"%zu of %zu file(s) in %s do not apply (%s%s); nothing "
			"was written",
			a->res->conflicts, a->st.n, a->name,
			names.ptr ? names.ptr : "", k > 5 ? ", ..." : "");
		buf_release(&names);
		return r;
	}
	return 0;
}

/* Phase 3: store both sides of every changed path (and, with exec, the
 * tree as it is now), then write them as one transaction pushed on the
 * undo history. */
static int write_patch(apply_run *a)
{
	const decree_apply_options *o = a->o;
	odb_writer *w = NULL;
	odb *db;
	int r;

	if ((r = repo_odb(&db, a->s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0 ||
	    (r = stage_changes(&a->ch, &a->nch, w, &a->st)) < 0)
		goto done;
	trace_phase("apply: staged");
	if (a->nch > 1)
		qsort(a->ch, a->nch, sizeof(*a->ch), cmp_change);
	if (o->exec &&
	    ((r = worktree_scan(&a->pre, a->s, w, NULL, NULL, false)) < 0 ||
	     (r = missing_dirs(&a->made_dirs, a->s, a->ch, a->nch)) < 0))
		goto done;
	if ((r = odb_writer_commit(w)) < 0)
		goto done;
	trace_phase("apply: objects committed");
	if (a->nch) {
		oplog_entry e;
		txn_spec sp;
		char what[256];
		memset(&e, 0, sizeof(e));
		memset(&sp, 0, sizeof(sp));
		if (a->what)
			snprintf(what, sizeof(what), "%s", a->what);
		else
			snprintf(what, sizeof(what), "apply %s%s",
				 o->reverse ? "-R " : "", a->name);
		e.kind = OPLOG_APPLY;
		e.time_ns = fs_now_ns();
		e.session = (char *)a->session;
		e.what = what;
		e.changes = a->ch;
		e.n = a->nch;
		sp.changes = a->ch;
		sp.n = a->nch;
		sp.history = TXN_HISTORY_PUSH;
		sp.entry = &e;
		sp.progress = o->progress;
		sp.payload = o->payload;
		sp.pushed_id = a->pushed;
		sp.cancel = o->version >= 2 ? o->cancel : NULL;
		if ((r = txn_run(a->s, &sp)) == 0)
			checkpoint_repack_small(a->s); /* its new files' pack */
	}
done:
	odb_writer_free(w);
	return r;
}

/* Phase 4: run the command without the lock; if it fails, put the tree
 * back as it was before the apply. */
static int run_exec(apply_run *a)
{
	const decree_apply_options *o = a->o;
	decree_apply_result *res = a->res;
	char label[512], note[1100] = "";
	bool warned = *warning_last() != '\0';
	int r;

	repo_unlock(a->s);
	a->locked = false;
	if ((r = run_command(&res->exec_status, a->s, o->exec,
			     o->exec_stdout_to_stderr)) < 0)
		return r;
	res->exec_ran = true;
	command_label(label, sizeof(label), o->exec);
	if (res->exec_status == 0)
		return 0;
	if ((r = txn_lock(NULL, NULL, a->s)) == 0) {
		a->locked = true;
		r = roll_back(res, a->s, o, &a->pre, a->ch, a->nch, a->pushed,
			      a->session, &a->made_dirs);
	}
	if (r < 0) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		return decree_error_set(r,
					"'%s' failed (status %d) and rolling "
					"back failed: %s; the patch is still "
					"applied",
					label, res->exec_status, msg);
	}
	/* The call fails: a warning of the rollback (made, but not
	 * recorded) belongs in its one message (and stays in the slot, for
	 * the caller to see that something is left to finish). */
	if (!warned && *warning_last())
		snprintf(note, sizeof(note), " (%s)", warning_last());
	return decree_error_set(
		DECREE_EEXEC,
		"'%s' failed (status %d); rolled back: restored %zu, "
		"removed %zu, swept %zu file(s)%s",
		label, res->exec_status, res->restored, res->removed,
		res->swept, note);
}

/* Options and result as every entry point checks them. */
static int apply_begin(apply_run *a, decree_apply_result **res,
		       const decree_apply_options **o,
		       decree_apply_options *def, decree_apply_result *dummy,
		       decree_store *s, const char *name)
{
	if (!*o)
		*o = def;
	if (!*res)
		*res = dummy;
	memset(*res, 0, sizeof(**res));
	memset(a, 0, sizeof(*a));
	a->pre = (snap)SNAP_INIT;
	a->made_dirs = (strset)STRSET_INIT;
	a->st.index = (strset)STRSET_INIT;
	if ((*o)->version != 1 && (*o)->version != DECREE_APPLY_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid apply options");
	if ((*o)->check_only && (*o)->exec)
		return decree_error_set(DECREE_EINVALID,
					"a check runs no command");
	a->s = s;
	a->o = *o;
	a->res = *res;
	a->name = name ? name : "<patch>";
	a->session = (*o)->session ? (*o)->session : "default";
	return 0;
}

/* Phases 2 (end), 3 and 4: report, refuse conflicts, verify, write, run
 * the command. */
static int apply_finish(apply_run *a)
{
	int r;

	if ((r = check_set(a)) < 0)
		return r;
	if (a->o->verify && (r = verify_all(a->o, &a->st)) < 0)
		return r;
	if (a->o->check_only)
		return 0;
	if ((r = write_patch(a)) < 0 || !a->o->exec)
		return r;
	return run_exec(a);
}

static void apply_end(apply_run *a)
{
	if (a->locked)
		repo_unlock(a->s);
	for (size_t i = 0; i < a->nch; i++)
		decree_free(a->ch[i].path);
	decree_free(a->ch);
	snap_release(&a->pre);
	strset_release(&a->made_dirs);
	pstates_release(&a->st);
}

int decree_apply(decree_apply_result *res, decree_store *s, const char *name,
		 const char *text, size_t len, const decree_apply_options *o)
{
	decree_apply_options def = DECREE_APPLY_OPTIONS_INIT;
	patch_parse_options po = PATCH_PARSE_OPTIONS_INIT;
	decree_apply_result dummy;
	patch_set *ps = NULL;
	apply_run a;
	int r;

	DECREE_ASSERT_ARG(s);
	DECREE_ASSERT_ARG(text || !len);
	if ((r = repo_need_root(s)) < 0)
		return r;
	if ((r = apply_begin(&a, &res, &o, &def, &dummy, s, name)) < 0)
		goto done;
	po.strip = o->strip;
	/* 1. parse */
	if ((r = patch_parse(&ps, a.name, text ? text : "", len, &po)) < 0)
		goto done;
	if (!o->check_only) {
		if ((r = txn_lock(NULL, NULL, s)) < 0)
			goto done;
		a.locked = true;
	}
	/* 2. check, 3. write, 4. exec */
	if ((r = check_patch(&a, ps)) == 0)
		r = apply_finish(&a);
done:
	apply_end(&a);
	patch_set_free(ps);
	return r;
}

/* --- apply_set (ops/apply.h) ------------------------------------------------
 */

int apply_set_new(apply_set **out)
{
	if (!(*out = decree_calloc(1, sizeof(**out))))
		return DECREE_ERROR;
	(*out)->index = (strset)STRSET_INIT;
	return 0;
}

void apply_set_free(apply_set *t)
{
	if (!t)
		return;
	pstates_release(t);
	decree_free(t);
}

int apply_set_path(apply_set *t, decree_store *s, const char *path, bool exists,
		   uint32_t mode, const void *data, size_t len)
{
	pstate *p;
	int r;

	if ((r = state_of(&p, t, s, path)) < 0)
		return r;
	p->exists = exists;
	p->mode = exists ? mode : 0;
	buf_clear(&p->data);
	if (exists && len && buf_put(&p->data, data, len) < 0)
		return DECREE_ERROR;
	return 0;
}

int apply_set_conflict(apply_set *t, decree_store *s, const char *path,
		       const char *why)
{
	pstate *p;
	int r;

	if ((r = state_of(&p, t, s, path)) < 0)
		return r;
	return conflict_at(p, "%s", why);
}

int apply_set_run(decree_apply_result *res, decree_store *s, apply_set *t,
		  const char *name, const char *what,
		  const decree_apply_options *o, bool *locked)
{
	decree_apply_options def = DECREE_APPLY_OPTIONS_INIT;
	decree_apply_result dummy;
	apply_run a;
	int r;

	if ((r = apply_begin(&a, &res, &o, &def, &dummy, s, name)) == 0) {
		a.what = what;
		a.st = *t; /* taken over: t is left empty */
		memset(t, 0, sizeof(*t));
		t->index = (strset)STRSET_INIT;
		a.locked = *locked;
		r = apply_finish(&a);
		*locked = a.locked;
		a.locked = false; /* the caller's to release */
	}
	apply_end(&a);
	return r;
}
