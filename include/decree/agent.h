/*
 * decree/agent.h - the agent-write journal and rewinding an agent session.
 *
 * Overview: a coding agent (Claude Code, Codex, Gemini CLI, ...) works in
 * turns: the user types a prompt, the agent runs tools.  For each session
 * of an agent, decree keeps a journal in the store
 * (roots/<key>/journal/<session key>, docs/format.md):
 *   - one turn per prompt, with the checkpoint taken before the agent ran
 *     anything (session = the agent's session id, message = the turn's
 *     id, label = the prompt's first line);
 *   - after each tool that may have changed files, the paths it changed
 *     and what it left there (content id and mode, or "deleted").
 * A path the agent changed is named from the tool's input for the tools
 * that say which file they write (decree_agent_record_paths: no walk), and
 * found by a scan for shell commands, subagents and unknown tools
 * (decree_agent_record_scan: a stat-cache walk; only files whose inode
 * changed after the tool started count, see docs/agents.md).
 *
 * decree_checkpoint_restore with agent_only (decree/restore.h) reverts
 * only paths the journal names after the checkpoint, and of those only
 * the ones still as the agent left them: a path the user edited after the
 * agent's last write is left alone and reported as a skipped user edit.
 * decree_rewind_list numbers a session's turns; decree_rewind restores
 * to before turn N.
 *
 * Ownership: lists returned through **out belong to the caller and are
 * freed with their _free function (NULL is fine); getters borrow from the
 * list.
 *
 * Errors: every function returns 0 or a negative decree_error_code;
 * decree_error_last() has the message.  Journal records are appended
 * under the journal's own lock; a record that cannot be read (a torn
 * last line after a crash, damage) is skipped and counted.
 */
#ifndef DECREE_AGENT_H
#define DECREE_AGENT_H

#include "common.h"
#include "checkpoint.h"
#include "restore.h"
#include "store.h"

DECREE_BEGIN_DECL

#define DECREE_TURN_OPTIONS_VERSION 1
typedef struct {
	unsigned version;
	const char *session; /**< the agent's session id (required) */
	const char *agent;   /**< "claude-code", "codex", "gemini", ... */
	/** The turn's id (Claude's prompt_id, Codex's turn_id); NULL: the
	 *  agent has none, the turn is called "turn-<n>". */
	const char *message;
	const char *prompt; /**< the user's prompt; its first line is the
			       checkpoint's label (NULL: none) */
	/** Before a tool: start a turn only when there is none to join
	 *  (the session has no turn yet, or `message` names another turn
	 *  than the last); otherwise return the last turn. */
	bool ensure;
} decree_turn_options;
#define DECREE_TURN_OPTIONS_INIT                                           \
	{                                                                  \
		DECREE_TURN_OPTIONS_VERSION, NULL, NULL, NULL, NULL, false \
	}

typedef struct {
	unsigned turn; /**< 1 = the session's first turn */
	char checkpoint[DECREE_ID_HEXLEN + 1];
	bool started; /**< this call started the turn (made its checkpoint) */
} decree_turn_result;

/**
 * Start a turn of an agent session: checkpoint the tree, then append the
 * turn to the journal.  The same message again (a repeated prompt event)
 * starts nothing and returns that turn.
 * @return 0, DECREE_EINVALID (no session, or one with ':' or a newline;
 *         a session or message that is not UTF-8), DECREE_ELOCKED, -1.
 */
DECREE_API int decree_agent_turn(decree_turn_result *out, decree_store *s,
				 const decree_turn_options *o);

/**
 * Note that a tool that may change files is about to run (for
 * decree_agent_record_scan: changes older than this are not the tool's).
 * tool_id: the agent's id of the tool call (NULL: none).  Takes no store
 * lock and does not walk the tree.
 */
DECREE_API int decree_agent_tool_start(decree_store *s, const char *session,
				       const char *tool, const char *tool_id);

/**
 * Record that a tool changed these paths (relative to the root; a path
 * outside it is refused with DECREE_EINVALID): each is looked at now and
 * its content id and mode, or its absence, is journaled.  A directory is
 * not a path of its own: nothing is recorded for it.  No walk.
 * @param recorded  how many paths were recorded (may be NULL)
 */
DECREE_API int decree_agent_record_paths(size_t *recorded, decree_store *s,
					 const char *session, const char *tool,
					 const char *const *paths);

/**
 * Record what a tool whose writes are unknown (a shell command, a
 * subagent) changed: walk the tree with the stat cache and journal every
 * file created or changed since the tool started
 * (decree_agent_tool_start with the same tool_id; else the turn's start)
 * and every file of the turn's checkpoint that is gone.  Contents are
 * stored, so the next walk is cheap.
 * @param changed  how many paths were recorded (may be NULL)
 * @return 0, DECREE_ELOCKED, DECREE_ENOTFOUND (the session has no turn),
 *         -1.
 */
DECREE_API int decree_agent_record_scan(size_t *changed, decree_store *s,
					const char *session, const char *tool,
					const char *tool_id);

/* --- reading: sessions, turns ----------------------------------------------
 */

typedef struct decree_agent_sessions decree_agent_sessions;
typedef struct {
	const char *session;
	const char *agent; /**< NULL when not recorded */
	size_t turns;
	int64_t last_ns;  /**< time of its last record */
	char last_at[40]; /**< the same, RFC 3339 UTC */
} decree_agent_session_info;

/** The agent sessions of this root that have a journal, most recent
 *  last. */
DECREE_API int decree_agent_sessions_get(decree_agent_sessions **out,
					 decree_store *s);
DECREE_API size_t decree_agent_sessions_count(const decree_agent_sessions *l);
DECREE_API const decree_agent_session_info *
decree_agent_sessions_at(const decree_agent_sessions *l, size_t i);
DECREE_API void decree_agent_sessions_free(decree_agent_sessions *l);

typedef struct decree_rewind_list decree_rewind_list;
typedef struct {
	unsigned turn; /**< 1 = first */
	const char *message;
	const char *prompt; /**< the prompt's first line (NULL: none) */
	char checkpoint[DECREE_ID_HEXLEN + 1];
	bool checkpoint_exists; /**< false once pruned or dropped */
	int64_t created_ns;
	char created_at[40]; /**< RFC 3339 UTC */
	size_t file_count;   /**< paths the agent changed in this turn */
} decree_turn_info;

/**
 * The turns of an agent session (NULL: the most recent session of this
 * root), in order.  DECREE_ENOTFOUND when there is no such session.
 */
DECREE_API int decree_rewind_list_get(decree_rewind_list **out, decree_store *s,
				      const char *session);
DECREE_API const char *decree_rewind_list_session(const decree_rewind_list *l);
/** The agent that ran the session (NULL when not recorded). */
DECREE_API const char *decree_rewind_list_agent(const decree_rewind_list *l);
DECREE_API size_t decree_rewind_list_count(const decree_rewind_list *l);
DECREE_API const decree_turn_info *
decree_rewind_list_at(const decree_rewind_list *l, size_t i);
/** The paths the agent changed in turn i (sorted, each once). */
DECREE_API size_t decree_rewind_list_file_count(const decree_rewind_list *l,
						size_t i);
DECREE_API const char *decree_rewind_list_file(const decree_rewind_list *l,
					       size_t i, size_t k);
/** How many journal records could not be read (skipped). */
DECREE_API size_t decree_rewind_list_damaged(const decree_rewind_list *l);
DECREE_API void decree_rewind_list_free(decree_rewind_list *l);

/**
 * Restore the tree to before turn `turn` of a session (NULL: the most
 * recent one): decree_checkpoint_restore of that turn's checkpoint with
 * the same options (agent_only, dry_run, paths, callbacks).
 * @return the codes of decree_checkpoint_restore, and DECREE_ENOTFOUND
 *         when the session or turn does not exist or its checkpoint was
 *         deleted.
 */
DECREE_API int decree_rewind(decree_restore_result *result, decree_store *s,
			     const char *session, unsigned turn,
			     const decree_restore_options *opts);

DECREE_END_DECL

#endif
