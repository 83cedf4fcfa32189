/*
 * names.c - the names of the public API's enums, as `--json` writes them
 * and the Node and Python bindings give them: one table per enum, so that
 * the three cannot drift apart.  Each returns "other" for a value it does
 * not know (a newer library's, or garbage); the strings are static.
 */
#include "util/common.h"
#include "decree/apply.h"
#include "decree/checkpoint.h"
#include "decree/maint.h"
#include "decree/restore.h"
#include "decree/store.h"

/* names[v] for 1 <= v < n, else "other" */
static const char *pick(const char *const *names, size_t n, int v)
{
	return v >= 1 && (size_t)v < n && names[v] ? names[v] : "other";
}

const char *decree_action_name(decree_action a)
{
	static const char *const names[] = {
		NULL,	  "create",  "restore",
		"delete", "replace", "skip-user-edit",
	};
	return pick(names, ARRAY_SIZE(names), (int)a);
}

const char *decree_phase_name(decree_phase p)
{
	static const char *const names[] = {
		NULL,	      "staging",      "applying",
		"committing", "rolling_back", "done",
	};
	return pick(names, ARRAY_SIZE(names), (int)p);
}

const char *decree_apply_action_name(decree_apply_action a)
{
	static const char *const names[] = {
		NULL, "create", "modify", "delete", "skip", "conflict",
	};
	return pick(names, ARRAY_SIZE(names), (int)a);
}

const char *decree_progress_stage_name(decree_progress_stage s)
{
	static const char *const names[] = {
		NULL, "scan", "check", "write", "verify",
	};
	return pick(names, ARRAY_SIZE(names), (int)s);
}

const char *decree_fsck_problem_name(decree_fsck_problem k)
{
	static const char *const names[] = {
		NULL, "damaged", "unfinished", "repaired", "lost", "unrepaired",
	};
	return pick(names, ARRAY_SIZE(names), (int)k);
}

const char *decree_notice_kind_name(decree_notice_kind k)
{
	static const char *const names[] = {
		NULL,	     "mostly_ignored", "existing",
		"too_large", "edits_saved",    "workspace",
	};
	return pick(names, ARRAY_SIZE(names), (int)k);
}
