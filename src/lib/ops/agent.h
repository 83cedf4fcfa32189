/*
 * agent.h - what restore.c uses of agent.c: the paths an agent changed
 * after a checkpoint, each with the state the agent's last write left.
 */
#ifndef DECREE_OPS_AGENT_H
#define DECREE_OPS_AGENT_H

#include "decree/agent.h"
#include "util/sha256.h"
#include "util/strset.h"

typedef struct {
	char *path;
	bool present; /* false: the agent's last act deleted it */
	uint32_t mode;
	oid id;
} agent_write;

typedef struct {
	agent_write *v; /* one per path, in path_cmp order */
	size_t n;
} agent_writes;

/*
 * The agent-write journal of `session`, from the turn whose checkpoint is
 * `checkpoint` on (when no turn has it: from records at or after
 * created_ns).  DECREE_ENOTFOUND when the session has no journal.
 */
int agent_writes_since(agent_writes *out, decree_store *s, const char *session,
		       const char *checkpoint, int64_t created_ns);
void agent_writes_release(agent_writes *w);

#endif
