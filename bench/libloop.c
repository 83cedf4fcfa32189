/*
 * libloop - the C library alone, for the bindings group of bench/run.sh:
 * time N in-process calls of one operation and print one line per call
 * (nanoseconds), so the Python binding's cost can be set against the
 * library's own on the same tree and store.
 *
 *   libloop ROOT STORE N create   checkpoint the (unchanged) tree
 *   libloop ROOT STORE N list     list every checkpoint of the root and
 *                                 read each one's fields (what a binding
 *                                 converts)
 *
 * Built against libdecree.so (bench/run.sh links it with an rpath).
 */
#define _POSIX_C_SOURCE 200809L
#include <decree/decree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int one_list(decree_store *s, unsigned long long *sink)
{
	decree_checkpoint_list *l;
	size_t n;

	if (decree_checkpoint_list_get(&l, s, NULL, 0) < 0)
		return -1;
	n = decree_checkpoint_list_count(l);
	for (size_t i = 0; i < n; i++) {
		const decree_checkpoint_info *c =
			decree_checkpoint_list_at(l, i);
		*sink += c->file_count + c->total_bytes + (unsigned)c->id[0] +
			 (c->label ? strlen(c->label) : 0) +
			 (c->session ? strlen(c->session) : 0) +
			 (unsigned long long)c->files_changed +
			 (decree_checkpoint_is_capture(c) ? 1 : 0);
	}
	decree_checkpoint_list_free(l);
	return 0;
}

int main(int argc, char **argv)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_store *s;
	unsigned long long sink = 0;
	long n;

	if (argc != 5) {
		fprintf(stderr, "usage: libloop ROOT STORE N create|list\n");
		return 2;
	}
	n = strtol(argv[3], NULL, 10);
	o.root = argv[1];
	o.store_path = argv[2];
	if (decree_store_open(&s, &o) < 0) {
		fprintf(stderr, "libloop: %s\n", decree_error_last());
		return 1;
	}
	co.session = "bench";
	for (long i = 0; i < n; i++) {
		long long t0 = now_ns();
		int r;
		if (!strcmp(argv[4], "create")) {
			decree_checkpoint_created res;
			r = decree_checkpoint_create_ext(&res, s, &co);
		} else {
			r = one_list(s, &sink);
		}
		if (r < 0) {
			fprintf(stderr, "libloop: %s\n", decree_error_last());
			decree_store_free(s);
			return 1;
		}
		printf("%lld\n", now_ns() - t0);
	}
	decree_store_free(s);
	return sink == 1 ? 3 : 0; /* keep the reads */
}
