/*
 * agents.c - the agents decree knows (hooks.h): their names, the hook
 * events decree installs, and where their settings live.
 *
 * Events, as each agent names them (../docs/agents.md has the payloads):
 *   prompt          claude-code, codex: UserPromptSubmit  gemini: BeforeAgent
 *   before a tool   PreToolUse                            BeforeTool
 *   after a tool    PostToolUse                           AfterTool
 *   worktrees       claude-code: WorktreeCreate, WorktreeRemove (answered:
 *                   a decree workspace stands in for a git worktree)
 * Tool events match every tool: which tools change files is decided from
 * the payload (run.c), so a tool decree does not know is walked for,
 * never missed.
 */
#include "util/common.h"
#include "hooks.h"

static const hook_event claude_events[] = {
	{ "UserPromptSubmit", HOOK_PROMPT, NULL, 0 },
	{ "PreToolUse", HOOK_PRE_TOOL, "*", 0 },
	{ "PostToolUse", HOOK_POST_TOOL, "*", 0 },
	/* claude --worktree without git: a decree workspace (Claude Code
	 * takes no matcher for these).  Creating one copies the project
	 * (12 s for the Linux tree on ext4, docs/bench.md), and discarding
	 * it captures it first: 10 minutes, not the minute of the others,
	 * so that a large project is not cut off half-way. */
	{ "WorktreeCreate", HOOK_WORKTREE_CREATE, NULL, 600 },
	{ "WorktreeRemove", HOOK_WORKTREE_REMOVE, NULL, 600 },
	{ NULL, 0, NULL, 0 },
};

static const hook_event codex_events[] = {
	{ "UserPromptSubmit", HOOK_PROMPT, NULL, 0 },
	{ "PreToolUse", HOOK_PRE_TOOL, "*", 0 },
	{ "PostToolUse", HOOK_POST_TOOL, "*", 0 },
	{ NULL, 0, NULL, 0 },
};

static const hook_event gemini_events[] = {
	{ "BeforeAgent", HOOK_PROMPT, NULL, 0 },
	{ "BeforeTool", HOOK_PRE_TOOL, ".*", 0 },
	{ "AfterTool", HOOK_POST_TOOL, ".*", 0 },
	{ NULL, 0, NULL, 0 },
};

const hook_agent hook_agents[] = {
	/* Claude Code's user settings follow CLAUDE_CONFIG_DIR (checked with
	 * 2.1.331), Gemini's GEMINI_CLI_HOME (its homedir(), 0.61.0) */
	{ "claude-code", "claude", ".claude/settings.json", "CLAUDE_CONFIG_DIR",
	  "settings.json", ".claude/settings.json", "CLAUDE_PROJECT_DIR", 60,
	  false, claude_events },
	/* codex reads PROJECT/.codex/hooks.json and $CODEX_HOME/hooks.json
	 * (CODEX_HOME defaults to ~/.codex); same shape as Claude's */
	{ "codex", NULL, ".codex/hooks.json", "CODEX_HOME", "hooks.json",
	  ".codex/hooks.json", NULL, 60, false, codex_events },
	{ "gemini", "gemini-cli", ".gemini/settings.json", "GEMINI_CLI_HOME",
	  ".gemini/settings.json", ".gemini/settings.json",
	  "GEMINI_PROJECT_DIR", 60000, true, gemini_events },
	{ NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, false, NULL },
};

const hook_agent *hook_agent_find(const char *name)
{
	for (const hook_agent *a = hook_agents; a->name; a++)
		if (!strcmp(a->name, name) ||
		    (a->alias && !strcmp(a->alias, name)))
			return a;
	return NULL;
}

const hook_event *hook_event_find(const hook_agent *a, const char *event)
{
	for (const hook_event *e = a->events; e->event; e++)
		if (!strcmp(e->event, event))
			return e;
	return NULL;
}
