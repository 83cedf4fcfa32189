/*
 * main.c - the decree program: global options and the command table.
 *
 * Global options (-C DIR, --store DIR, --json, -q, --help, --version) may
 * stand anywhere before "--"; they are taken out of argv first, then the
 * command (one or two words) is looked up and runs with the rest.  A
 * warning the library left (decree_warning_last) is printed after a
 * command that succeeded as one "decree: warning: ..." line on stderr; it
 * never changes the exit status.
 *
 * --json is taken first, so that every failure, also one raised before a
 * command runs (a bad global option, an unknown command), prints its
 * {"error":...} document (opt.c).
 */
#include "util/common.h"
#include "cli.h"

#include <signal.h>

typedef struct {
	const char *name;
	int (*fn)(cli_ctx *ctx);
	const char *summary;
} command;

static const command commands[] = {
	{ "checkpoint", cmd_checkpoint,
	  "create, list, show, diff, restore, prune, drop checkpoints" },
	{ "apply", cmd_apply,
	  "apply a unified diff as one undoable transaction" },
	{ "rollback", cmd_rollback,
	  "list checkpoints newest first, or restore number N" },
	{ "rewind", cmd_rewind,
	  "the turns of an agent session; restore to before turn N" },
	{ "undo", cmd_undo, "undo the last restore, apply or revert" },
	{ "redo", cmd_redo, "redo what undo undid" },
	{ "recover", cmd_recover,
	  "finish or roll back an interrupted transaction" },
	{ "gc", cmd_gc, "delete objects no checkpoint or history needs" },
	{ "fsck", cmd_fsck, "verify every object and record of the store" },
	{ "projects", cmd_projects,
	  "the project roots a store serves; 'move' re-attaches one" },
	{ "hook", cmd_hook,
	  "hooks for coding agents: install, uninstall, status" },
	{ "init", cmd_init, "make this directory a decree project (pipeline)" },
	{ "run", cmd_run, "queue a message and process it with a routine" },
	{ "process", cmd_process,
	  "process the inbox and every unprocessed spec" },
	{ "status", cmd_status,
	  "what changed since the last checkpoint; the pipeline's state" },
	{ "log", cmd_log, "checkpoints and runs, newest first; a run's logs" },
	{ "diff", cmd_diff,
	  "the changes since the last checkpoint, or of a run" },
	{ "revert", cmd_revert, "reverse a run's changes, verified" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fputs("usage: decree [-C DIR] [--store DIR] [--json] [-q] COMMAND [ARGS]\n\n"
	      "commands:\n",
	      f);
	for (const command *c = commands; c->name; c++)
		fprintf(f, "  %-11s %s\n", c->name, c->summary);
	fputs("\nglobal options:\n"
	      "  -C DIR       project root (default: nearest ancestor with .decree/, else .)\n"
	      "  --store DIR  store directory (also DECREE_STORE, config 'store:')\n"
	      "  --json       machine-readable output on stdout\n"
	      "  -q, --quiet  print only errors\n"
	      "  --help       this help; 'decree COMMAND --help' for a command\n"
	      "  --version    print the version\n\n"
	      "exit codes: 0 success, 1 operation failed, 2 usage error\n",
	      f);
}

/* Take the global options out of argv (up to "--"). */
static int extract_globals(cli_ctx *ctx, int *argc, char **argv, bool *help,
			   bool *version)
{
	int out = 1, i;

	for (i = 1; i < *argc; i++) {
		char *a = argv[i];
		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "-C") || !strcmp(a, "--store")) {
			if (i + 1 >= *argc)
				return usage_error(
					ctx, "option '%s' needs a value", a);
			if (a[1] == 'C')
				ctx->root_opt = argv[++i];
			else
				ctx->store_opt = argv[++i];
		} else if (!strncmp(a, "-C", 2) && a[2]) {
			ctx->root_opt = a + 2;
		} else if (!strncmp(a, "--store=", 8)) {
			ctx->store_opt = a + 8;
		} else if (!strcmp(a, "--json")) {
			ctx->json = true;
			cli_json_errors(true);
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			ctx->quiet = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = true;
		} else if (!strcmp(a, "--version")) {
			*version = true;
		} else {
			argv[out++] = a;
		}
	}
	for (; i < *argc; i++)
		argv[out++] = argv[i];
	*argc = out;
	return 0;
}

int main(int argc, char **argv)
{
	cli_ctx ctx;
	bool help = false, version = false;
	int r;

	memset(&ctx, 0, sizeof(ctx));
	signal(SIGPIPE, SIG_IGN);
	decree_cleanup_on_signals(); /* Ctrl-C leaves no temp pack behind */
	if ((r = extract_globals(&ctx, &argc, argv, &help, &version)) != 0)
		return r;
	if (version) {
		if (ctx.json)
			printf("{\"version\":\"%s\"}\n", decree_version());
		else
			printf("decree %s\n", decree_version());
		return EXIT_OK;
	}
	if (argc < 2 && help) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc < 2) {
		usage(stderr);
		return usage_error(&ctx, "no command given");
	}
	for (const command *c = commands; c->name; c++) {
		if (strcmp(argv[1], c->name))
			continue;
		ctx.cmdname = c->name;
		ctx.argc = argc - 2;
		ctx.argv = argv + 2;
		/* split off "--" and what follows */
		for (int i = 0; i < ctx.argc; i++) {
			if (!strcmp(ctx.argv[i], "--")) {
				ctx.rest_argc = ctx.argc - i - 1;
				ctx.rest_argv = ctx.argv + i + 1;
				ctx.argc = i;
				break;
			}
		}
		ctx.help = help;
		fflush(stdout);
		decree_warning_clear();
		r = c->fn(&ctx);
		if (fflush(stdout) != 0 && r == 0)
			r = fail("cannot write output: %s", strerror(errno));
		/* the library's one-line warning (decree_warning_last): the
		 * command happened, but something after it did not.  (A
		 * failure says one thing: its error.) */
		if (r == EXIT_OK)
			lib_warn();
		return r;
	}
	return usage_error(&ctx, "unknown command '%s'", argv[1]);
}
