/*
 * inbox.h - what waits to be processed: inbox messages and specs.
 *
 * Invariants: a chain id is 16 digits (local time YYYYMMDDHHmmss + a
 * 2-digit counter) unique among the chains of runs/, inbox/, done/ and
 * dead/; a run id is "<chain>-<seq>".  A new inbox message is created
 * with O_EXCL and fsynced, never overwriting one; a message leaves the
 * inbox only by rename to done/ or dead/.
 */
#ifndef DECREE_PIPELINE_INBOX_H
#define DECREE_PIPELINE_INBOX_H

#include "decree/pipeline.h"

#include <limits.h>

/* An inbox file with the chain and seq it carries (its frontmatter, else
 * a "<chain>-<seq>.md" name); has_id false when it carries none. */
typedef struct {
	char *file; /* name in the inbox directory */
	char chain[17];
	long seq;
	bool has_id;
} inbox_item;

/* The .md files of an inbox directory (a missing one is empty). */
int inbox_list(inbox_item **out, size_t *n, const char *dir);
void inbox_items_free(inbox_item *v, size_t n);

/* A new chain id. */
int inbox_new_chain(char out[17], const decree_project *p);

/* The value of a request's frontmatter field `key` (the last one given
 * wins), or NULL. */
const char *inbox_request_field(const decree_run_request *rq, const char *key);

/* Write the seq-0 message of a request into the inbox as a new chain:
 * its name in file_out (NAME_MAX + 1 bytes). */
int inbox_queue(char chain[17], char *file_out, decree_project *p,
		const decree_run_request *rq);

/* Move inbox/<file> to inbox/<to>/<file>. */
int inbox_move(const decree_project *p, const char *file, const char *to);

/* Is specs/<spec_name> listed in specs/processed-spec.md?  Lines may
 * carry "- " and "specs/". */
bool spec_processed(const decree_project *p, const char *spec_name);
/* Append the base name of input_file to specs/processed-spec.md. */
int spec_mark_processed(const decree_project *p, const char *input_file);
/* Is a message for spec `rel` ("specs/x.spec.md") in inbox/dead/? */
bool spec_is_dead(const decree_project *p, const char *rel);
/* The base names of the specs (specs/NAME.spec.md), sorted. */
int spec_list(char ***out, size_t *n, const decree_project *p);
void spec_list_free(char **v, size_t n);

#endif
