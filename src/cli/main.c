/*
 * main.c - the decree program: global options, the command table, and
 * "decree help".
 *
 * Global options (-C DIR, --store DIR, --json, -q, --color[=WHEN],
 * --no-pager, --help, --version) may stand anywhere before "--"; they
 * are taken out of argv first, then the command (one or two words) is
 * looked up and runs with the rest.  "decree help [COMMAND [SUB]]" is
 * "decree [COMMAND [SUB]] --help".  An unknown command, subcommand or
 * option is a usage error naming the nearest known names (opt.c).  A
 * warning the library left (decree_warning_last) is printed after a
 * command that succeeded as one "decree: warning: ..." line on stderr; it
 * never changes the exit status.
 *
 * --json is taken first, so that every failure, also one raised before a
 * command runs (a bad global option, an unknown command), prints its
 * {"error":...} document (opt.c).  Color is decided before the command
 * runs and before a pager takes stdout over (color.c, pager.c); after the
 * command, main waits for the pager.
 */
#include "util/common.h"
#include "cli.h"
#include "util/trace.h"

#include <signal.h>

typedef struct {
	const char *name;
	int (*fn)(cli_ctx *ctx);
	const char *summary;
	const char *const *subs; /* its subcommands, NULL ended, or NULL */
} command;

static const char *const checkpoint_subs[] = { "create", "list",    "show",
					       "diff",	 "restore", "prune",
					       "drop",	 "delete",  NULL };
static const char *const projects_subs[] = { "move", NULL };
static const char *const workspace_subs[] = { "create",	 "list",      "path",
					      "diff",	 "conflicts", "apply",
					      "discard", NULL };
static const char *const hook_subs[] = { "install", "uninstall", "status",
					 NULL };

static const command commands[] = {
	{ "checkpoint", cmd_checkpoint,
	  "create, list, show, diff, restore, prune, drop checkpoints",
	  checkpoint_subs },
	{ "apply", cmd_apply,
	  "apply a unified diff as one undoable transaction", NULL },
	{ "rollback", cmd_rollback,
	  "list checkpoints newest first, or restore number N", NULL },
	{ "rewind", cmd_rewind,
	  "the turns of an agent session; restore to before turn N", NULL },
	{ "undo", cmd_undo, "undo the last restore, apply or revert", NULL },
	{ "redo", cmd_redo, "redo what undo undid", NULL },
	{ "recover", cmd_recover,
	  "finish or roll back an interrupted transaction", NULL },
	{ "gc", cmd_gc, "delete objects no checkpoint or history needs", NULL },
	{ "fsck", cmd_fsck, "verify every object and record of the store",
	  NULL },
	{ "projects", cmd_projects,
	  "the project roots a store serves; 'move' re-attaches one",
	  projects_subs },
	{ "workspace", cmd_workspace,
	  "isolated copies of the project: create, diff, apply, discard",
	  workspace_subs },
	{ "hook", cmd_hook,
	  "hooks for coding agents: install, uninstall, status", hook_subs },
	{ "init", cmd_init, "make this directory a decree project (pipeline)",
	  NULL },
	{ "run", cmd_run, "queue a message and process it with a routine",
	  NULL },
	{ "process", cmd_process,
	  "process the inbox and every unprocessed spec", NULL },
	{ "status", cmd_status,
	  "what changed since the last checkpoint; the pipeline's state",
	  NULL },
	{ "log", cmd_log, "checkpoints and runs, newest first; a run's logs",
	  NULL },
	{ "diff", cmd_diff,
	  "the changes since the last checkpoint, or of a run", NULL },
	{ "revert", cmd_revert, "reverse a run's changes, verified", NULL },
	{ "help", NULL,
	  "this help, or a command's: 'decree help COMMAND [SUBCOMMAND]'",
	  NULL },
	{ NULL, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fputs("usage: decree [-C DIR] [--store DIR] [--json] [-q] [--color[=WHEN]]\n"
	      "              [--no-pager] COMMAND [ARGS]\n\n"
	      "commands:\n",
	      f);
	for (const command *c = commands; c->name; c++)
		fprintf(f, "  %-11s %s\n", c->name, c->summary);
	fputs("\nglobal options:\n"
	      "  -C DIR          project root (default: nearest ancestor with .decree/,\n"
	      "                  else .)\n"
	      "  --store DIR     store directory (also DECREE_STORE, config 'store:')\n"
	      "  --json          machine-readable output on stdout\n"
	      "  -q, --quiet     no progress, summaries or notes; data asked for (ids,\n"
	      "                  lists, diffs, plans), warnings and errors stay\n"
	      "  --color[=WHEN]  color: auto (a terminal, no NO_COLOR), always, never;\n"
	      "                  --color alone is always\n"
	      "  --no-pager      never run a pager (DECREE_PAGER, PAGER, else less)\n"
	      "  -h, --help      this help; 'decree help COMMAND' for a command\n"
	      "  --version       print the version\n\n"
	      "exit codes: 0 success, 1 operation failed, 2 usage error\n",
	      f);
}

/* The names of the commands, NULL ended, for suggestions. */
static const char *const *command_names(void)
{
	static const char *names[ARRAY_SIZE(commands)];

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		names[i] = commands[i].name;
	return names;
}

static const command *find_command(const char *name)
{
	for (const command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* "--color", "--color=WHEN": 0, or the usage error. */
static int take_color(cli_ctx *ctx, const char *a, int *color)
{
	buf typed = BUF_INIT;
	int r;

	if (!a[7]) {
		*color = CLI_COLOR_ALWAYS;
		return 0;
	}
	if ((*color = cli_color_parse(a + 8)) >= 0)
		return 0;
	buf_printf(&typed, "%s", a + 8);
	r = usage_unknown(ctx, "--color value", typed.ptr, 0, cli_color_whens,
			  "");
	buf_release(&typed);
	return r;
}

/* Take the global options out of argv (up to "--"). */
static int extract_globals(cli_ctx *ctx, int *argc, char **argv, bool *help,
			   bool *version, int *color, bool *no_pager)
{
	int out = 1, i, r;

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
		} else if (!strcmp(a, "--color") ||
			   !strncmp(a, "--color=", 8)) {
			if ((r = take_color(ctx, a, color)) != 0)
				return r;
		} else if (!strcmp(a, "--no-pager")) {
			*no_pager = true;
		} else {
			argv[out++] = a;
		}
	}
	for (; i < *argc; i++)
		argv[out++] = argv[i];
	*argc = out;
	return 0;
}

/* "decree help [COMMAND [SUB]]": argv (after "help") becomes the words of
 * "decree COMMAND [SUB] --help".  Returns the command to run with
 * ctx->help set, or NULL with *r the exit status. */
static const command *help_command(cli_ctx *ctx, int argc, char **argv, int *r)
{
	const command *c;

	*r = EXIT_OK;
	if (argc < 1 || !strcmp(argv[0], "help")) {
		if (argc > 1)
			*r = usage_error(ctx, "'decree help help' takes no "
					      "more words");
		else
			usage(stdout);
		return NULL;
	}
	if (!(c = find_command(argv[0]))) {
		*r = usage_unknown(ctx, "command", argv[0], 0, command_names(),
				   "");
		return NULL;
	}
	if (argc > 2 || (argc == 2 && !c->subs)) {
		*r = usage_error(ctx,
				 "usage: decree help [COMMAND [SUBCOMMAND]]"
				 "; '%s' has %s",
				 c->name,
				 c->subs ? "one level of subcommands"
					 : "no subcommands");
		return NULL;
	}
	if (argc == 2) {
		bool known = false;
		for (size_t i = 0; c->subs[i]; i++)
			known = known || !strcmp(c->subs[i], argv[1]);
		if (!known) {
			char what[64];
			snprintf(what, sizeof(what), "%s command", c->name);
			*r = usage_unknown(ctx, what, argv[1], 0, c->subs, "");
			return NULL;
		}
	}
	ctx->help = true;
	return c;
}

/* A command that changed nothing, whose reader went away before all of
 * its output was read, ends the way git and the shell's tools end then:
 * quietly, by SIGPIPE (141 in a shell), which decree ignores until here
 * so that no write of its own can kill it half-way. */
static void die_by_sigpipe(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGPIPE);
	_exit(128 + SIGPIPE); /* (not reached) */
}

int main(int argc, char **argv)
{
	cli_ctx ctx;
	bool help = false, version = false, no_pager = false;
	int color = CLI_COLOR_AUTO, r;
	const command *c;

	trace_start();
	memset(&ctx, 0, sizeof(ctx));
	signal(SIGPIPE, SIG_IGN);
	decree_cleanup_on_signals(); /* Ctrl-C leaves no temp pack behind */
	if ((r = extract_globals(&ctx, &argc, argv, &help, &version, &color,
				 &no_pager)) != 0)
		return r;
	/* before any output, and before a pager takes stdout over */
	cli_color_init(color, ctx.json);
	cli_pager_allow(!no_pager && !ctx.json);
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
	if (argv[1][0] == '-' && argv[1][1]) {
		/* not a global option, and no command yet */
		size_t skip = argv[1][1] == '-' ? 2 : 1;
		buf typed = BUF_INIT;
		buf_printf(&typed, "%.*s", (int)strcspn(argv[1], "="), argv[1]);
		r = usage_unknown(&ctx, "option", typed.ptr, skip,
				  cli_global_options, "--");
		buf_release(&typed);
		return r;
	}
	if (!strcmp(argv[1], "help")) {
		if (!(c = help_command(&ctx, argc - 2, argv + 2, &r)))
			return r;
		argv++; /* "help" goes; COMMAND takes its place */
		argc--;
	} else if (!(c = find_command(argv[1]))) {
		return usage_unknown(&ctx, "command", argv[1], 0,
				     command_names(), "");
	}
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
	ctx.help = ctx.help || help;
	fflush(stdout);
	decree_warning_clear();
	r = c->fn(&ctx);
	trace_phase("command done");
	/* stdout that stops taking bytes because the user quit the pager
	 * is no failure: the output went where it was asked to go */
	if ((fflush(stdout) != 0 || ferror(stdout)) && r == 0 &&
	    !cli_pager_active()) {
		/* the change itself is done: say so on the same line */
		const char *did = cli_did_text();
		if (!*did && cli_output_reader_gone())
			die_by_sigpipe(); /* `decree checkpoint list | head` */
		r = fail("cannot write output: %s%s%s", strerror(errno),
			 *did ? "; " : "", did);
	}
	/* the library's one-line warning (decree_warning_last): the
	 * command happened, but something after it did not.  (A failure
	 * says one thing: its error.) */
	if (r == EXIT_OK)
		lib_warn();
	return cli_pager_finish(r);
}
