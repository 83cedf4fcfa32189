/*
 * fuzz_runs.c - libFuzzer target for the run directory readers
 * (src/pipeline/runs.c): outcome.json through decree_run_list_get and
 * decree_run_list_select, manifest.json through decree_run_revert.
 *
 *   make fuzz && build/fuzz/fuzz_runs fuzz/corpus/runs
 * `make check` replays fuzz/corpus/runs through fuzz/replay.c.
 *
 * The input is "outcome.json of run A", "manifest.json of run A" and,
 * optionally, "outcome.json of run B", separated by FUZZ_SEP
 * (fuzz/common.h).  A pipeline project on tmpfs holds a.txt ("new") and
 * b.txt, and run A's changes.diff, which changed a.txt from "old" to
 * "new" and created b.txt.  Before each input the tree and the run
 * directories are put back, the history file removed; then the runs are
 * listed and run A is reverted.  Beyond "no crash, no leak, no undefined
 * behaviour" the target checks:
 *   - the listing holds both runs (their outcome.json read or not), sorted
 *     by chain then seq, with an outcome from the enum, and selecting by
 *     id, chain and prefix finds them;
 *   - the revert succeeds exactly when the manifest is a JSON object whose
 *     "files" object has "a.txt" with the sha256 of "old\n" and mode "644"
 *     and has no "b.txt" (the state after the revert), and then the tree
 *     is that state; otherwise it is DECREE_ECORRUPT (no manifest) or
 *     DECREE_EVERIFY and the tree is untouched.
 */
#include "util/common.h"
#include "decree/decree.h"
#include "util/error.h"
#include "util/sha256.h"

#include "common.h"

#include <jansson.h>

#define RUN_A "2026112214320700-0"
#define RUN_B "2026112214320700-1"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char changes[] = "diff --git a/a.txt b/a.txt\n"
			      "--- a/a.txt\n"
			      "+++ b/a.txt\n"
			      "@@ -1 +1 @@\n"
			      "-old\n"
			      "+new\n"
			      "diff --git a/b.txt b/b.txt\n"
			      "new file mode 100644\n"
			      "--- /dev/null\n"
			      "+++ b/b.txt\n"
			      "@@ -0,0 +1 @@\n"
			      "+b\n";
static decree_project *proj;
static char root[PATH_MAX], oplog[PATH_MAX], old_hex[SHA256_HEXLEN + 1];

static void setup(void)
{
	decree_project_options o = DECREE_PROJECT_OPTIONS_INIT;
	decree_store *s;
	char path[PATH_MAX], key[SHA256_HEXLEN + 1];
	oid sum;

	fuzz_mkdirs("proj/.decree/inbox");
	fuzz_mkdirs("proj/.decree/runs");
	fuzz_path(root, "proj");
	fuzz_check(realpath(root, path) != NULL);
	snprintf(root, sizeof(root), "%s", path);
	o.root = root;
	o.lock_timeout_ms = 0;
	o.threads = 1;
	fuzz_check(decree_project_open(&proj, &o) == 0);
	fuzz_check(decree_project_store(&s, proj) == 0);
	sha256_buf(&sum, root, strlen(root));
	oid_to_hex(key, &sum);
	snprintf(oplog, sizeof(oplog), "%s/roots/%.32s/oplog",
		 decree_store_path(s), key);
	sha256_buf(&sum, "old\n", 4);
	oid_to_hex(old_hex, &sum);
}

static void put(const char *rel, const void *p, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fuzz_write(path, p, len);
	/* fuzz_write leaves a file it rewrites 0600; the manifest says 644,
	 * and a revert checks every permission bit */
	fuzz_check(chmod(path, 0644) == 0);
}

static bool file_is(const char *rel, const char *want)
{
	char path[PATH_MAX], got[16];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (!(f = fopen(path, "rb")))
		return want == NULL;
	n = fread(got, 1, sizeof(got), f);
	fclose(f);
	return want && n == strlen(want) && !memcmp(got, want, n);
}

/* The documented verdict on a manifest, read the way runs.c reads it. */
static bool manifest_allows(const fuzz_part *m)
{
	json_error_t je;
	json_t *o = json_loadb((const char *)m->ptr, m->len, 0, &je);
	json_t *files = json_object_get(o, "files"), *a;
	bool ok;

	a = json_object_get(files, "a.txt");
	ok = json_is_object(files) &&
	     json_is_string(json_object_get(a, "sha256")) &&
	     !strcmp(json_string_value(json_object_get(a, "sha256")),
		     old_hex) &&
	     json_is_string(json_object_get(a, "mode")) &&
	     !strcmp(json_string_value(json_object_get(a, "mode")), "644") &&
	     !json_object_get(files, "b.txt");
	json_decref(o);
	return ok;
}

static void check_list(bool has_b)
{
	decree_run_list *l = NULL;
	size_t first, count, n;

	fuzz_check(decree_run_list_get(&l, proj) == 0);
	n = decree_run_list_count(l);
	fuzz_check(n == (has_b ? 2u : 1u));
	for (size_t i = 0; i < n; i++) {
		const decree_run_info *ri = decree_run_list_at(l, i);
		fuzz_check(ri && ri->id && ri->chain && ri->dir);
		fuzz_check(!strcmp(ri->id, i ? RUN_B : RUN_A));
		fuzz_check(!strcmp(ri->chain, "2026112214320700"));
		fuzz_check(ri->seq == (long)i);
		fuzz_check(ri->outcome >= DECREE_RUN_UNFINISHED &&
			   ri->outcome <= DECREE_RUN_ERROR);
		(void)decree_run_outcome_name(ri->outcome);
	}
	fuzz_check(decree_run_list_at(l, n) == NULL);
	fuzz_check(decree_run_list_select(&first, &count, l, RUN_A) == 0 &&
		   first == 0 && count == 1);
	fuzz_check(decree_run_list_select(&first, &count, l,
					  "2026112214320700") == 0 &&
		   first == 0 && count == n);
	fuzz_check(decree_run_list_select(&first, &count, l, NULL) == 0 &&
		   first == n - 1 && count == 1);
	fuzz_check(decree_run_list_select(&first, &count, l, "2026112214") ==
		   (has_b ? DECREE_EAMBIGUOUS : 0));
	fuzz_check(decree_run_list_select(&first, &count, l, "9") ==
		   DECREE_ENOTFOUND);
	decree_run_list_free(l);
	decree_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_part parts[3];
	size_t n = fuzz_split(parts, 3, data, size);
	decree_revert_result res;
	char dirb[PATH_MAX];
	bool allows;
	int r;

	if (!proj)
		setup();
	/* the tree after run A, its run directory, no history */
	put("a.txt", "new\n", 4);
	put("b.txt", "b\n", 2);
	unlink(oplog);
	fuzz_mkdirs("proj/.decree/runs/" RUN_A);
	put(".decree/runs/" RUN_A "/changes.diff", changes,
	    sizeof(changes) - 1);
	put(".decree/runs/" RUN_A "/outcome.json", parts[0].ptr, parts[0].len);
	if (n > 1)
		put(".decree/runs/" RUN_A "/manifest.json", parts[1].ptr,
		    parts[1].len);
	else {
		char path[PATH_MAX];
		snprintf(path, sizeof(path),
			 "%s/.decree/runs/" RUN_A "/manifest.json", root);
		unlink(path);
	}
	snprintf(dirb, sizeof(dirb), "%s/.decree/runs/" RUN_B, root);
	if (n > 2) {
		fuzz_mkdirs("proj/.decree/runs/" RUN_B);
		put(".decree/runs/" RUN_B "/outcome.json", parts[2].ptr,
		    parts[2].len);
	} else {
		fuzz_mkdirs("proj/.decree/runs/" RUN_B);
		fuzz_empty_dir(dirb);
		fuzz_check(rmdir(dirb) == 0);
	}

	check_list(n > 2);

	allows = n > 1 && manifest_allows(&parts[1]);
	r = decree_run_revert(&res, proj, RUN_A);
	if (r == 0) {
		fuzz_check(allows);
		fuzz_check(!strcmp(res.id, RUN_A) && !res.empty);
		fuzz_check(res.verified == 2);
		fuzz_check(file_is("a.txt", "old\n") && file_is("b.txt", NULL));
	} else {
		fuzz_check(!allows);
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_EVERIFY);
		fuzz_check(file_is("a.txt", "new\n") &&
			   file_is("b.txt", "b\n"));
	}
	decree_error_clear();
	return 0;
}
