/*
 * journal-seeds.c - agent sessions on a scratch project, for the seed
 * journals of fuzz_journal (fuzz/journal-seeds.sh builds and runs it).
 *
 * Usage: journal-seeds PROJECT OUT
 * Runs, through decree/agent.h as the hooks do: a Claude Code session
 * (a Write and an Edit named by the tool, a Bash that creates, deletes,
 * renames, makes a symlink and a file whose name is not UTF-8, a second
 * prompt, a subagent that changes a mode), a Codex session (an
 * apply_patch, a shell command) and a Gemini session without turn ids;
 * then copies each session's journal to OUT/real-<agent>.
 */
#define _GNU_SOURCE
#include "decree/decree.h"
#include "decree/agent.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static decree_store *s;

static void die(const char *what)
{
	fprintf(stderr, "journal-seeds: %s: %s\n", what, decree_error_last());
	exit(1);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void nap(void)
{
	struct timespec ts = { 0, 50 * 1000000 };
	nanosleep(&ts, NULL);
}

static void turn(const char *agent, const char *session, const char *message,
		 const char *prompt)
{
	decree_turn_options o = DECREE_TURN_OPTIONS_INIT;

	o.session = session;
	o.agent = agent;
	o.message = message;
	o.prompt = prompt;
	if (decree_agent_turn(NULL, s, &o) < 0)
		die("turn");
}

static void named(const char *session, const char *tool, const char *path)
{
	const char *v[2] = { path, NULL };

	if (decree_agent_record_paths(NULL, s, session, tool, v) < 0)
		die("record paths");
}

static void start(const char *session, const char *tool, const char *id)
{
	if (decree_agent_tool_start(s, session, tool, id) < 0)
		die("tool start");
	nap();
}

static void scan(const char *session, const char *tool, const char *id)
{
	if (decree_agent_record_scan(NULL, s, session, tool, id) < 0)
		die("record scan");
}

/* Copy the journal of every session to OUT/real-<agent>. */
static void copy_journals(const char *out)
{
	decree_agent_sessions *l;
	char dir[4096];
	DIR *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s", decree_store_path(s));
	if (decree_agent_sessions_get(&l, s) < 0)
		die("sessions");
	decree_agent_sessions_free(l);
	/* the journals: <store>/roots/<key>/journal/<hash> */
	{
		char roots[4200];
		snprintf(roots, sizeof(roots), "%s/roots", dir);
		if (!(d = opendir(roots)))
			die(roots);
		while ((de = readdir(d)) != NULL) {
			char jdir[8400];
			DIR *j;
			struct dirent *je;
			if (de->d_name[0] == '.')
				continue;
			snprintf(jdir, sizeof(jdir), "%s/%s/journal", roots,
				 de->d_name);
			if (!(j = opendir(jdir)))
				continue;
			while ((je = readdir(j)) != NULL) {
				char src[8800], dst[4400], line[256];
				FILE *in, *o;
				size_t n;
				char buf[65536], *agent;
				if (je->d_name[0] == '.')
					continue;
				snprintf(src, sizeof(src), "%s/%s", jdir,
					 je->d_name);
				if (!(in = fopen(src, "rb")) ||
				    !fgets(line, sizeof(line), in))
					die(src);
				agent = strstr(line, "\"agent\":\"");
				if (!agent)
					die("a journal without an agent");
				agent += 9;
				agent[strcspn(agent, "\"")] = '\0';
				rewind(in);
				snprintf(dst, sizeof(dst), "%s/real-%s", out,
					 agent);
				if (!(o = fopen(dst, "wb")))
					die(dst);
				while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
					fwrite(buf, 1, n, o);
				fclose(in);
				if (fclose(o) != 0)
					die(dst);
			}
			closedir(j);
		}
		closedir(d);
	}
}

int main(int argc, char **argv)
{
	decree_store_options so = DECREE_STORE_OPTIONS_INIT;

	if (argc != 3) {
		fprintf(stderr, "usage: journal-seeds PROJECT OUT\n");
		return 2;
	}
	if (chdir(argv[1]) < 0) {
		perror(argv[1]);
		return 1;
	}
	mkdir("src", 0755);
	put("src/main.c", "int main(void) { return 0; }\n");
	put("old.txt", "old\n");
	put("a.txt", "a\n");
	so.root = argv[1];
	if (decree_store_open(&s, &so) < 0)
		die("open");

	/* Claude Code */
	turn("claude-code", "claude-1", "p-1",
	     "Fix main.c\nand clean up \"old\" files");
	put("src/new.c", "new\n");
	named("claude-1", "Write", "src/new.c");
	put("src/main.c", "int main(void) { return 1; }\n");
	named("claude-1", "Edit", "src/main.c");
	start("claude-1", "Bash", "tu-3");
	put("made.txt", "made\n");
	unlink("old.txt");
	rename("a.txt", "b.txt");
	put("caf\xe9.txt", "x\n");
	if (symlink("src/main.c", "link") < 0)
		die("symlink");
	scan("claude-1", "Bash", "tu-3");
	turn("claude-code", "claude-1", "p-2",
	     "caf\xc3\xa9 \xe2\x80\xa8 second turn");
	start("claude-1", "Task", "tu-4");
	chmod("made.txt", 0755);
	scan("claude-1", "Task", "tu-4");

	/* Codex */
	turn("codex", "codex-1", "t-1", "patch it");
	put("src/added.c", "x\n");
	unlink("made.txt");
	named("codex-1", "apply_patch", "src/added.c");
	named("codex-1", "apply_patch", "made.txt");
	start("codex-1", "shell", "c-2");
	put("b.txt", "b, more\n");
	scan("codex-1", "shell", "c-2");

	/* Gemini: no turn ids */
	turn("gemini", "gemini-1", NULL, "first");
	put("g.txt", "g\n");
	named("gemini-1", "write_file", "g.txt");
	turn("gemini", "gemini-1", NULL, "second");

	copy_journals(argv[2]);
	decree_store_free(s);
	return 0;
}
