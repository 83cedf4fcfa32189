/*
 * agent.c - the agent-write journal and rewinding an agent session
 * (decree/agent.h).
 *
 * A turn is a checkpoint plus a journal record; the journal's flock is
 * taken before the store lock wherever both are held, so two hooks of one
 * session (parallel tool calls) serialize on the journal and never
 * deadlock on the store.
 *
 * Which files a shell command changed: the walk with the stat cache hashes
 * every file whose stat data changed since the last walk; of those, the
 * ones whose inode changed (ctime, which no program can set back) after
 * the tool started, and whose content or mode differs from the turn's
 * checkpoint, are the tool's.  Files of the checkpoint that are gone are
 * the tool's deletions (a deletion leaves no time behind: one the user
 * made earlier in the same turn is counted too, see docs/agents.md).
 */
#include "util/common.h"
#include "decree/agent.h"
#include "ops/agent.h"
#include "journal/journal.h"
#include "ops/checkpoint.h"
#include "scan/statcache.h"
#include "scan/worktree.h"
#include "store/record.h"
#include "store/repo.h"
#include "store/snap.h"
#include "txn/txn.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/utc.h"

#include <dirent.h>
#include <time.h>

/* How far before the tool's start a change still counts as the tool's:
 * the file system stamps inodes with a coarse clock. */
#define START_MARGIN_NS (20 * 1000000ll)
#define LABEL_MAX	200

static int check_session(const char *session)
{
	if (!session || !*session)
		return decree_error_set(DECREE_EINVALID,
					"an agent session needs an id");
	if (strchr(session, ':') || strchr(session, '\n'))
		return decree_error_set(
			DECREE_EINVALID,
			"session id '%s' must not contain ':' or newlines",
			session);
	/* the journal keeps it in JSON, where other bytes do not survive */
	if (!json_is_utf8(session, strlen(session)))
		return decree_error_set(DECREE_EINVALID,
					"session id '%s' is not UTF-8",
					session);
	return 0;
}

static int64_t coarse_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The first line of a prompt, at most LABEL_MAX bytes (not cutting a
 * UTF-8 sequence), into out. */
static void first_line(buf *out, const char *prompt)
{
	size_t n = strcspn(prompt, "\r\n");
	if (n > LABEL_MAX) {
		n = LABEL_MAX;
		while (n > 0 && ((unsigned char)prompt[n] & 0xc0) == 0x80)
			n--;
	}
	buf_put(out, prompt, n);
}

/* --- turns ------------------------------------------------------------------
 */

/* The record naming the session (the first, unless it was damaged). */
static const jr_record *session_record(const journal *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->v[i].type == JR_SESSION)
			return &j->v[i];
	return NULL;
}

int decree_agent_turn(decree_turn_result *out, decree_store *s,
		      const decree_turn_options *o)
{
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_turn_result dummy;
	journal_file f;
	journal j = JOURNAL_INIT;
	jr_record rec[2];
	const jr_record *last;
	buf label = BUF_INIT, message = BUF_INIT;
	size_t nrec = 0;
	bool created;
	int r;

	if (!out)
		out = &dummy;
	memset(out, 0, sizeof(*out));
	if (!o || o->version != DECREE_TURN_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid turn options");
	if ((r = check_session(o->session)) < 0 || (r = repo_need_root(s)) < 0)
		return r;
	if (o->message && !json_is_utf8(o->message, strlen(o->message)))
		return decree_error_set(DECREE_EINVALID,
					"turn id '%s' is not UTF-8",
					o->message);
	if ((r = repo_ensure(s)) < 0 ||
	    (r = journal_open(&f, s, o->session, true)) < 0)
		return r;
	if ((r = journal_read(&j, &f)) < 0)
		goto done;
	last = journal_last_turn(&j);
	/* join the last turn: the same prompt event again, or a tool of it */
	if (last &&
	    (o->message ? !strcmp(last->message, o->message) : o->ensure)) {
		out->turn = last->turn;
		memcpy(out->checkpoint, last->checkpoint,
		       sizeof(out->checkpoint));
		goto done;
	}
	memset(rec, 0, sizeof(rec));
	if (!session_record(&j)) { /* new, or its record was damaged */
		rec[0].type = JR_SESSION;
		rec[0].session = o->session;
		rec[0].agent = o->agent;
		rec[0].time_ns = fs_now_ns();
		nrec = 1;
	}
	out->turn = last ? last->turn + 1 : 1;
	if (o->message)
		buf_puts(&message, o->message);
	else
		buf_printf(&message, "turn-%u", out->turn);
	if (o->prompt)
		first_line(&label, o->prompt);
	co.session = o->session;
	co.message = message.ptr;
	co.label = o->prompt ? label.ptr : NULL;
	if ((r = decree_checkpoint_create(out->checkpoint, &created, s, &co)) <
	    0)
		goto done;
	if (!created && !o->message) {
		/* "turn-N" already names a checkpoint of the session (the
		 * journal lost the turn that made it): this turn gets its own,
		 * or rewinding it would go back to that older one */
		buf_printf(&message, "-%lld", (long long)fs_now_ns());
		co.message = message.ptr;
		if ((r = decree_checkpoint_create(out->checkpoint, &created, s,
						  &co)) < 0)
			goto done;
	}
	out->started = true;
	rec[nrec].type = JR_TURN;
	rec[nrec].turn = out->turn;
	rec[nrec].message = message.ptr;
	rec[nrec].prompt = co.label;
	memcpy(rec[nrec].checkpoint, out->checkpoint, SHA256_HEXLEN + 1);
	rec[nrec].time_ns = fs_now_ns();
	r = journal_append(&f, rec, nrec + 1, true);
done:
	journal_close(&f);
	journal_release(&j);
	buf_release(&label);
	buf_release(&message);
	return r;
}

/* Open and read the journal of a session that must have a turn. */
static int open_with_turn(journal_file *f, journal *j, const jr_record **turn,
			  decree_store *s, const char *session)
{
	int r;

	if ((r = check_session(session)) < 0 ||
	    (r = journal_open(f, s, session, false)) < 0)
		return r;
	if ((r = journal_read(j, f)) < 0)
		goto fail;
	if (!(*turn = journal_last_turn(j))) {
		r = decree_error_set(DECREE_ENOTFOUND,
				     "agent session '%s' has no turn yet",
				     session);
		goto fail;
	}
	return 0;
fail:
	journal_close(f);
	journal_release(j);
	return r;
}

int decree_agent_tool_start(decree_store *s, const char *session,
			    const char *tool, const char *tool_id)
{
	journal_file f;
	journal j = JOURNAL_INIT;
	const jr_record *turn;
	jr_record rec;
	int r;

	if ((r = open_with_turn(&f, &j, &turn, s, session)) < 0)
		return r;
	memset(&rec, 0, sizeof(rec));
	rec.type = JR_START;
	rec.turn = turn->turn;
	rec.tool = tool ? tool : "tool";
	rec.tool_id = tool_id;
	rec.time_ns = coarse_now_ns();
	r = journal_append(&f, &rec, 1, false);
	journal_close(&f);
	journal_release(&j);
	return r;
}

/* --- what a tool wrote
 * --------------------------------------------------------
 */

/* The state of `path` now: *present, and its mode and content id.  A
 * directory or special file is not a path of its own (*skip). */
static int path_state(jr_record *rec, bool *skip, decree_store *s,
		      const char *path)
{
	struct stat st;
	bool exists;
	buf data = BUF_INIT;
	int r, fd;
	uint64_t size;

	*skip = false;
	if ((r = fs_lstat_beneath(&exists, &st, s->rootfd, path)) < 0)
		return r;
	rec->present = exists && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
	if (exists && !rec->present) {
		*skip = true;
		return 0;
	}
	if (!exists)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		rec->mode = MODE_LINK;
		r = checkpoint_read_path(&data, s->rootfd, path, MODE_LINK);
		if (r == 0)
			sha256_buf(&rec->id, data.ptr, data.len);
		buf_release(&data);
	} else {
		rec->mode = mode_of_file(st.st_mode);
		if ((fd = fs_open_beneath(s->rootfd, path,
					  O_RDONLY | O_NONBLOCK)) < 0)
			return errno == ENOENT
				       ? (rec->present = false, 0)
				       : decree_error_os("cannot open '%s'",
							 path);
		r = sha256_fd(&rec->id, &size, fd, path);
		close(fd);
	}
	if (r == DECREE_ENOTFOUND) { /* gone meanwhile */
		error_clear();
		rec->present = false;
		r = 0;
	}
	return r;
}

int decree_agent_record_paths(size_t *recorded, decree_store *s,
			      const char *session, const char *tool,
			      const char *const *paths)
{
	journal_file f;
	journal j = JOURNAL_INIT;
	const jr_record *turn;
	jr_record *recs = NULL;
	size_t n = 0, cap = 0;
	int r;

	if (recorded)
		*recorded = 0;
	if ((r = repo_need_root(s)) < 0)
		return r;
	for (size_t i = 0; paths && paths[i]; i++)
		if (!fs_path_is_safe(paths[i], false))
			return DECREE_EINVALID;
	if ((r = open_with_turn(&f, &j, &turn, s, session)) < 0)
		return r;
	for (size_t i = 0; paths && paths[i]; i++) {
		jr_record rec;
		bool skip;
		if (repo_path_in_store(s, paths[i]) ||
		    !fs_path_is_safe(paths[i], true))
			continue; /* the store, .git, .decree: never tracked */
		memset(&rec, 0, sizeof(rec));
		if ((r = path_state(&rec, &skip, s, paths[i])) < 0)
			goto done;
		if (skip)
			continue;
		rec.type = JR_WRITE;
		rec.turn = turn->turn;
		rec.tool = tool ? tool : "tool";
		rec.path = paths[i];
		rec.time_ns = fs_now_ns();
		if ((r = GROW(recs, cap, n + 1)) < 0)
			goto done;
		recs[n++] = rec;
	}
	r = journal_append(&f, recs, n, false);
	if (r == 0 && recorded)
		*recorded = n;
done:
	decree_free(recs);
	journal_close(&f);
	journal_release(&j);
	return r;
}

/* When the tool started: its start record (by tool_id, else the last
 * start of the turn), else the turn's own time. */
static int64_t tool_start_ns(const journal *j, const jr_record *turn,
			     const char *tool_id)
{
	for (size_t i = j->n; i > 0; i--) {
		const jr_record *e = &j->v[i - 1];
		if (e == turn)
			break;
		if (e->type != JR_START)
			continue;
		if (!tool_id || (e->tool_id && !strcmp(e->tool_id, tool_id)))
			return e->time_ns;
	}
	return turn->time_ns;
}

static bool same_state(const snap_entry *e, const snap_entry *base)
{
	return base && base->mode == e->mode && !oid_cmp(&base->id, &e->id);
}

int decree_agent_record_scan(size_t *changed, decree_store *s,
			     const char *session, const char *tool,
			     const char *tool_id)
{
	journal_file f;
	journal j = JOURNAL_INIT;
	const jr_record *turn;
	jr_record *recs = NULL;
	size_t n = 0, cap = 0;
	record base_rec;
	const snap *base;
	snap cur = SNAP_INIT;
	statcache *cache = NULL;
	odb_writer *w = NULL;
	odb *db;
	int64_t since;
	bool locked = false;
	int r;

	if (changed)
		*changed = 0;
	memset(&base_rec, 0, sizeof(base_rec));
	if ((r = repo_need_root(s)) < 0)
		return r;
	if ((r = open_with_turn(&f, &j, &turn, s, session)) < 0)
		return r;
	since = tool_start_ns(&j, turn, tool_id) - START_MARGIN_NS;
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		goto done;
	locked = true;
	if ((r = record_resolve(&base_rec, s, turn->checkpoint)) < 0 ||
	    (r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0 ||
	    (r = worktree_scan(&cur, s, w, &cache, NULL, false)) < 0 ||
	    (r = odb_writer_commit(w)) < 0 ||
	    (r = repo_tree(&base, s, &base_rec.tree)) < 0)
		goto done;
	for (size_t i = 0, k = 0; i < cur.n || k < base->n;) {
		int c = i >= cur.n ? 1
			: k >= base->n
				? -1
				: path_cmp(cur.v[i].path, base->v[k].path);
		snap_entry *e = c <= 0 ? &cur.v[i] : NULL;
		const snap_entry *b = c >= 0 ? &base->v[k] : NULL;
		jr_record rec;
		if (c <= 0)
			i++;
		if (c >= 0)
			k++;
		if (e &&
		    (e->mode == MODE_SKIP || e->cached || same_state(e, b)))
			continue; /* unchanged */
		if (e && e->ctime_ns < since) {
			/* changed before this tool started: maybe by a tool
			 * still running (parallel calls, subagents), whose
			 * own walk must not find it vouched for by the
			 * cache this walk saves */
			e->mtime_ns = 0;
			continue;
		}
		if (!e && b->mode == MODE_SKIP)
			continue;
		memset(&rec, 0, sizeof(rec));
		rec.type = JR_WRITE;
		rec.turn = turn->turn;
		rec.tool = tool ? tool : "tool";
		rec.path = e ? e->path : b->path;
		rec.present = e != NULL;
		if (e) {
			rec.mode = e->mode;
			rec.id = e->id;
		}
		rec.time_ns = fs_now_ns();
		if ((r = GROW(recs, cap, n + 1)) < 0)
			goto done;
		recs[n++] = rec;
	}
	if ((r = journal_append(&f, recs, n, false)) < 0)
		goto done;
	if (changed)
		*changed = n;
	/* a cache: failing to save it costs only speed */
	if (worktree_save_statcache(s, &cur, cache) < 0)
		error_clear();
	cache = NULL;
done:
	statcache_free(cache);
	odb_writer_free(w);
	snap_release(&cur);
	record_release(&base_rec);
	decree_free(recs);
	if (locked)
		repo_unlock(s);
	journal_close(&f);
	journal_release(&j);
	return r;
}

/* --- reading: sessions and turns ---------------------------------------------
 */

struct decree_agent_sessions {
	decree_agent_session_info *v;
	size_t n;
	journal *journals; /* the strings of v live here */
};

static int cmp_session(const void *a, const void *b)
{
	const decree_agent_session_info *x = a, *y = b;
	return x->last_ns < y->last_ns ? -1 : x->last_ns > y->last_ns;
}

int decree_agent_sessions_get(decree_agent_sessions **out, decree_store *s)
{
	char dir[PATH_MAX];
	decree_agent_sessions *l;
	DIR *d;
	struct dirent *de;
	size_t cap = 0, jcap = 0;
	int r = 0;

	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	journal_dir(dir, s);
	if (!(d = opendir(dir))) {
		if (errno == ENOENT) {
			*out = l;
			return 0;
		}
		decree_free(l);
		return decree_error_os("cannot read '%s'", dir);
	}
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX];
		journal *j;
		const jr_record *sr = NULL;
		decree_agent_session_info *e;
		if (strlen(de->d_name) != 32 ||
		    strspn(de->d_name, "0123456789abcdef") != 32)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((r = GROW(l->journals, jcap, l->n + 1)) < 0 ||
		    (r = GROW(l->v, cap, l->n + 1)) < 0)
			break;
		j = &l->journals[l->n];
		memset(j, 0, sizeof(*j));
		if ((r = journal_read_path(j, path)) < 0 ||
		    !(sr = session_record(j))) {
			journal_release(j);
			if (r < 0 && r != DECREE_ECORRUPT &&
			    r != DECREE_ENOTFOUND)
				break;
			error_clear();
			r = 0;
			continue; /* unreadable: not a session to list */
		}
		e = &l->v[l->n++];
		memset(e, 0, sizeof(*e));
		e->session = sr->session;
		e->agent = sr->agent;
		for (size_t i = 0; i < j->n; i++) {
			e->turns += j->v[i].type == JR_TURN;
			if (j->v[i].time_ns > e->last_ns)
				e->last_ns = j->v[i].time_ns;
		}
		utc_format_ns(e->last_at, e->last_ns);
	}
	closedir(d);
	if (r < 0) {
		decree_agent_sessions_free(l);
		return r;
	}
	if (l->n > 1) /* qsort of a NULL array is undefined */
		qsort(l->v, l->n, sizeof(*l->v), cmp_session);
	*out = l;
	return 0;
}

size_t decree_agent_sessions_count(const decree_agent_sessions *l)
{
	return l ? l->n : 0;
}

const decree_agent_session_info *
decree_agent_sessions_at(const decree_agent_sessions *l, size_t i)
{
	return l && i < l->n ? &l->v[i] : NULL;
}

void decree_agent_sessions_free(decree_agent_sessions *l)
{
	if (!l)
		return;
	/* the journals array may hold one more (a failed read) than v */
	for (size_t i = 0; i < l->n; i++)
		journal_release(&l->journals[i]);
	decree_free(l->journals);
	decree_free(l->v);
	decree_free(l);
}

typedef struct {
	decree_turn_info info;
	char **files;
	size_t nfiles;
} turn_entry;

struct decree_rewind_list {
	char *session, *agent;
	turn_entry *v;
	size_t n;
	size_t damaged;
	journal j;
};

static int cmp_str(const void *a, const void *b)
{
	return path_cmp(*(char *const *)a, *(char *const *)b);
}

/* The files of each turn, sorted, each once. */
static int collect_files(decree_rewind_list *l)
{
	strset seen = STRSET_INIT;
	int r = 0;

	for (size_t t = 0; t < l->n && r == 0; t++) {
		turn_entry *te = &l->v[t];
		size_t cap = 0;
		strset_release(&seen);
		for (size_t i = 0; i < l->j.n; i++) {
			const jr_record *e = &l->j.v[i];
			if (e->type != JR_WRITE || e->turn != te->info.turn ||
			    strset_has(&seen, e->path))
				continue;
			if ((r = strset_put(&seen, e->path, 1)) < 0 ||
			    (r = GROW(te->files, cap, te->nfiles + 1)) < 0)
				break;
			te->files[te->nfiles++] = (char *)e->path;
		}
		if (te->nfiles > 1) /* qsort of a NULL array is undefined */
			qsort(te->files, te->nfiles, sizeof(char *), cmp_str);
		te->info.file_count = te->nfiles;
	}
	strset_release(&seen);
	return r;
}

int decree_rewind_list_get(decree_rewind_list **out, decree_store *s,
			   const char *session)
{
	decree_rewind_list *l;
	journal_file f;
	strset ids = STRSET_INIT; /* the checkpoints that still exist */
	record *recs;
	size_t cap = 0, nrecs;
	int r;

	*out = NULL;
	if (!session) {
		decree_agent_sessions *all;
		size_t n;
		if ((r = decree_agent_sessions_get(&all, s)) < 0)
			return r;
		n = decree_agent_sessions_count(all);
		if (!n) {
			decree_agent_sessions_free(all);
			return decree_error_set(
				DECREE_ENOTFOUND,
				"no agent session has been recorded for '%s'",
				decree_store_root(s));
		}
		r = decree_rewind_list_get(
			out, s, decree_agent_sessions_at(all, n - 1)->session);
		decree_agent_sessions_free(all);
		return r;
	}
	if ((r = journal_open(&f, s, session, false)) < 0) {
		if (r == DECREE_ENOTFOUND)
			decree_error_set(r, "no agent session '%s'", session);
		return r;
	}
	if (!(l = decree_calloc(1, sizeof(*l)))) {
		journal_close(&f);
		return -1;
	}
	r = journal_read(&l->j, &f);
	journal_close(&f);
	if (r < 0)
		goto fail;
	l->damaged = l->j.damaged;
	if ((r = record_load_all(&recs, &nrecs, s)) < 0)
		goto fail;
	for (size_t i = 0; i < nrecs && r == 0; i++)
		r = strset_put(&ids, recs[i].info.id, 1);
	record_free_all(recs, nrecs);
	if (r < 0)
		goto fail;
	if (!(l->session = decree_strdup(session))) {
		r = -1;
		goto fail;
	}
	for (size_t i = 0; i < l->j.n; i++) {
		const jr_record *e = &l->j.v[i];
		turn_entry *te;
		if (e->type == JR_SESSION && e->agent && !l->agent &&
		    !(l->agent = decree_strdup(e->agent))) {
			r = -1;
			goto fail;
		}
		if (e->type != JR_TURN)
			continue;
		if ((r = GROW(l->v, cap, l->n + 1)) < 0)
			goto fail;
		te = &l->v[l->n++];
		memset(te, 0, sizeof(*te));
		te->info.turn = e->turn;
		te->info.message = e->message;
		te->info.prompt = e->prompt;
		memcpy(te->info.checkpoint, e->checkpoint,
		       sizeof(te->info.checkpoint));
		te->info.created_ns = e->time_ns;
		utc_format_ns(te->info.created_at, e->time_ns);
		te->info.checkpoint_exists = strset_has(&ids, e->checkpoint);
	}
	if ((r = collect_files(l)) < 0)
		goto fail;
	strset_release(&ids);
	*out = l;
	return 0;
fail:
	strset_release(&ids);
	decree_rewind_list_free(l);
	return r;
}

const char *decree_rewind_list_session(const decree_rewind_list *l)
{
	return l ? l->session : NULL;
}

const char *decree_rewind_list_agent(const decree_rewind_list *l)
{
	return l ? l->agent : NULL;
}

size_t decree_rewind_list_count(const decree_rewind_list *l)
{
	return l ? l->n : 0;
}

const decree_turn_info *decree_rewind_list_at(const decree_rewind_list *l,
					      size_t i)
{
	return l && i < l->n ? &l->v[i].info : NULL;
}

size_t decree_rewind_list_file_count(const decree_rewind_list *l, size_t i)
{
	return l && i < l->n ? l->v[i].nfiles : 0;
}

const char *decree_rewind_list_file(const decree_rewind_list *l, size_t i,
				    size_t k)
{
	return l && i < l->n && k < l->v[i].nfiles ? l->v[i].files[k] : NULL;
}

size_t decree_rewind_list_damaged(const decree_rewind_list *l)
{
	return l ? l->damaged : 0;
}

void decree_rewind_list_free(decree_rewind_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		decree_free(l->v[i].files);
	decree_free(l->v);
	decree_free(l->session);
	decree_free(l->agent);
	journal_release(&l->j);
	decree_free(l);
}

int decree_rewind(decree_restore_result *result, decree_store *s,
		  const char *session, unsigned turn,
		  const decree_restore_options *opts)
{
	decree_rewind_list *l;
	const decree_turn_info *t = NULL;
	char id[DECREE_ID_HEXLEN + 1];
	int r;

	repo_notices_clear(s);
	if ((r = decree_rewind_list_get(&l, s, session)) < 0)
		return r;
	/* by its number: with a damaged turn record, the i-th turn listed
	 * is not turn i */
	for (size_t i = 0; i < l->n && !t; i++)
		if (l->v[i].info.turn == turn)
			t = &l->v[i].info;
	if (!t) {
		r = decree_error_set(DECREE_ENOTFOUND,
				     "session '%s' has no turn %u (it has %zu)",
				     l->session, turn, l->n);
	} else if (!t->checkpoint_exists) {
		r = decree_error_set(
			DECREE_ENOTFOUND,
			"the checkpoint of turn %u (%.12s) was deleted; that "
			"turn cannot be rewound",
			turn, t->checkpoint);
	} else {
		memcpy(id, t->checkpoint, sizeof(id));
		r = 0;
	}
	decree_rewind_list_free(l);
	return r < 0 ? r : decree_checkpoint_restore(result, s, id, opts);
}
