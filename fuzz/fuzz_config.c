/*
 * fuzz_config.c - libFuzzer target for .decree/config.yml
 * (src/pipeline/config.c, decree_config_load).
 *
 *   make fuzz && build/fuzz/fuzz_config fuzz/corpus/config
 * `make check` replays fuzz/corpus/config through fuzz/replay.c.
 *
 * The input is written as <scratch>/proj/.decree/config.yml and read
 * through the public entry point, as every command that opens a project
 * does.  Beyond "no crash, no leak, no undefined behaviour" the target
 * checks the contract of decree/project.h and docs/config.md:
 *   - an error is DECREE_EINVALID naming the file (or -1, out of memory),
 *     and *out stays NULL;
 *   - otherwise every value is within its documented range: max_retries
 *     1..100, max_depth 1..1000000, max_file_size 0 (unset) or positive,
 *     a default routine that is a non-empty string, a store path that is
 *     absolute, excludes a NULL-terminated list of strings, and the store
 *     options filled from it name the same things.
 */
#include "util/common.h"
#include "decree/project.h"
#include "util/error.h"

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char root[PATH_MAX];
	static decree_config sentinel;
	char file[PATH_MAX];
	decree_config *c = &sentinel; /* a failed load must reset it */
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	int r;

	if (!root[0]) {
		fuzz_mkdirs("proj/.decree");
		fuzz_path(root, "proj");
	}
	snprintf(file, sizeof(file), "%s/.decree/config.yml", root);
	fuzz_write(file, data, size);

	r = decree_config_load(&c, root);
	if (r < 0) {
		fuzz_check(c == NULL);
		fuzz_check(r == DECREE_EINVALID || r == DECREE_ERROR);
		fuzz_check(r != DECREE_EINVALID ||
			   strstr(error_last(), "config.yml:") != NULL);
		decree_error_clear();
		return 0;
	}
	fuzz_check(c->max_retries >= 1 && c->max_retries <= 100);
	fuzz_check(c->max_depth >= 1 && c->max_depth <= 1000000);
	fuzz_check(c->default_routine && *c->default_routine);
	fuzz_check(!c->store || c->store[0] == '/');
	fuzz_check(c->excludes != NULL);
	for (size_t i = 0; c->excludes[i]; i++)
		fuzz_check(strlen(c->excludes[i]) <= size);
	fuzz_check(!c->router || *c->router);
	fuzz_check(!c->ai || *c->ai);
	decree_config_store_options(&o, c, root);
	fuzz_check(o.root == root && o.store_path == c->store &&
		   o.max_file_size == c->max_file_size);
	decree_config_free(c);
	return 0;
}
