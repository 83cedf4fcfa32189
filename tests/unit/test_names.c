/*
 * test_names.c - the enums' names (src/lib/ops/names.c): every value of
 * every public enum has the name `--json` documents, and a value the
 * library does not know (0, one past the last, negative) is "other".  The
 * CLI, the Node addon and the Python binding all print these strings.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decree/decree.h"

typedef const char *(*namer)(int);

static void check(namer f, const char *const *want, int n)
{
	for (int v = 1; v <= n; v++)
		assert_string_equal(f(v), want[v - 1]);
	assert_string_equal(f(0), "other");
	assert_string_equal(f(n + 1), "other");
	assert_string_equal(f(-1), "other");
	assert_string_equal(f(1 << 30), "other");
}

/* Each call through its own prototype, the int widened to the enum. */
static const char *action(int v)
{
	return decree_action_name((decree_action)v);
}
static const char *phase(int v)
{
	return decree_phase_name((decree_phase)v);
}
static const char *apply_action(int v)
{
	return decree_apply_action_name((decree_apply_action)v);
}
static const char *stage(int v)
{
	return decree_progress_stage_name((decree_progress_stage)v);
}
static const char *fsck(int v)
{
	return decree_fsck_problem_name((decree_fsck_problem)v);
}
static const char *notice(int v)
{
	return decree_notice_kind_name((decree_notice_kind)v);
}

static void test_every_name(void **state)
{
	static const char *const actions[] = { "create", "restore", "delete",
					       "replace", "skip-user-edit" };
	static const char *const phases[] = { "staging", "applying",
					      "committing", "rolling_back",
					      "done" };
	static const char *const apply_actions[] = { "create", "modify",
						     "delete", "skip",
						     "conflict" };
	static const char *const stages[] = { "scan", "check", "write",
					      "verify" };
	static const char *const kinds[] = { "damaged", "unfinished",
					     "repaired", "lost", "unrepaired" };
	static const char *const notices[] = { "mostly_ignored", "existing",
					       "too_large", "edits_saved",
					       "workspace" };

	(void)state;
	assert_int_equal(DECREE_ACTION_SKIP_USER_EDIT, 5);
	check(action, actions, 5);
	assert_int_equal(DECREE_PHASE_DONE, 5);
	check(phase, phases, 5);
	assert_int_equal(DECREE_APPLY_CONFLICT, 5);
	check(apply_action, apply_actions, 5);
	assert_int_equal(DECREE_PROGRESS_VERIFY, 4);
	check(stage, stages, 4);
	assert_int_equal(DECREE_FSCK_UNREPAIRED, 5);
	check(fsck, kinds, 5);
	assert_int_equal(DECREE_NOTICE_WORKSPACE, 5);
	check(notice, notices, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
