/*
 * agent_writes.c - what an agent-only restore needs of the agent-write
 * journal (ops/agent.h): the paths the agent changed after a checkpoint,
 * each with the state its last write left.  Apart from agent.c, which
 * calls restore (decree_rewind), so that the two do not depend on each
 * other.
 */
#include "util/common.h"
#include "ops/agent.h"
#include "journal/journal.h"
#include "store/snap.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/strset.h"

static int cmp_write(const void *a, const void *b)
{
	return path_cmp(((const agent_write *)a)->path,
			((const agent_write *)b)->path);
}

void agent_writes_release(agent_writes *w)
{
	for (size_t i = 0; i < w->n; i++)
		decree_free(w->v[i].path);
	decree_free(w->v);
	memset(w, 0, sizeof(*w));
}

int agent_writes_since(agent_writes *out, decree_store *s, const char *session,
		       const char *checkpoint, int64_t created_ns)
{
	char path[PATH_MAX];
	journal j = JOURNAL_INIT;
	strset seen = STRSET_INIT;
	size_t from = 0, cap = 0;
	bool found = false;
	int r;

	memset(out, 0, sizeof(*out));
	/* without the journal's lock: the caller holds the store lock, which
	 * a hook holding the journal's lock may be waiting for */
	if ((r = journal_path(path, sizeof(path), s, session)) < 0)
		return r;
	if ((r = journal_read_path(&j, path)) < 0) {
		if (r == DECREE_ENOTFOUND)
			decree_error_set(
				r,
				"session '%s' has no agent-write journal "
				"(only agent sessions recorded by "
				"'decree hook' have one)",
				session);
		goto done;
	}
	for (size_t i = 0; i < j.n && !found; i++) {
		if (j.v[i].type == JR_TURN &&
		    !strcmp(j.v[i].checkpoint, checkpoint)) {
			from = i;
			found = true;
		}
	}
	/* newest first: the first record seen of a path is its last write */
	for (size_t i = j.n; i > from; i--) {
		const jr_record *e = &j.v[i - 1];
		agent_write *a;
		if (e->type != JR_WRITE || strset_has(&seen, e->path) ||
		    (!found && e->time_ns < created_ns))
			continue;
		if ((r = strset_put(&seen, e->path, 1)) < 0 ||
		    (r = GROW(out->v, cap, out->n + 1)) < 0)
			goto done;
		a = &out->v[out->n];
		if (!(a->path = decree_strdup(e->path))) {
			r = -1;
			goto done;
		}
		a->present = e->present;
		a->mode = e->mode;
		a->id = e->id;
		out->n++;
	}
	if (out->n > 1) /* qsort of a NULL array is undefined */
		qsort(out->v, out->n, sizeof(*out->v), cmp_write);
	r = 0;
done:
	strset_release(&seen);
	journal_release(&j);
	if (r < 0)
		agent_writes_release(out);
	return r;
}
