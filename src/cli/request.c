/*
 * request.c - a request to run (request.h).
 */
#include "util/common.h"
#include "request.h"

int run_request_set(run_request *rq, const char *key, const char *value)
{
	return kvlist_set(&rq->vars, key, value) < 0 ? fail("out of memory")
						     : 0;
}

const char *run_request_get(const run_request *rq, const char *key)
{
	return kvlist_get(&rq->vars, key);
}

void run_request_release(run_request *rq)
{
	kvlist_release(&rq->vars);
	free(rq->name);
	free(rq->body);
	memset(rq, 0, sizeof(*rq));
}

int run_request_view(decree_run_request *out, decree_field **fields,
		     const run_request *rq)
{
	decree_run_request v = DECREE_RUN_REQUEST_INIT;

	*fields = NULL;
	if (rq->vars.n && !(*fields = calloc(rq->vars.n, sizeof(decree_field))))
		return fail("out of memory");
	for (size_t i = 0; i < rq->vars.n; i++) {
		(*fields)[i].key = rq->vars.v[i].key;
		(*fields)[i].value = rq->vars.v[i].value;
	}
	v.name = rq->name;
	v.body = rq->body;
	v.fields = *fields;
	v.nfields = rq->vars.n;
	*out = v;
	return 0;
}
