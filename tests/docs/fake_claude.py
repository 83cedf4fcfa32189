#!/usr/bin/python3
"""A stand-in for Claude Code in the documentation tests (blocks.py).

The documentation shows `claude` (Claude Code) at work in a project; the
docs test runs those blocks offline, with this program as `claude` on
PATH.  It does what a real session does to a project and to decree:

  - it edits the project with "tools": Claude's Write and Edit (a file
    path in the tool input) and Bash (a shell command, here one that
    deletes a file and creates one), on the files of the docs test's
    sample project;
  - around them it runs the hooks configured in the project's
    .claude/settings.json and in the user's settings
    ($CLAUDE_CONFIG_DIR/settings.json, default ~/.claude/settings.json)
    exactly as Claude Code does: UserPromptSubmit once per prompt,
    PreToolUse and PostToolUse around every tool, each hook command run
    with `sh -c`, the event's JSON payload on stdin, the project as its
    working directory; a tool's hooks only when their matcher matches.

Usage, as the real one's:
  claude                 an "interactive" session of two prompts
  claude -p PROMPT       one prompt (print mode), a new session
  claude -c [-p PROMPT]  go on with the last session (--continue)

A hook that exits non-zero makes it fail (exit 1): decree's hooks never
do, and the docs test must notice if one did.  Nothing here is the real
agent's behaviour beyond the hook protocol; tests/agents runs the real
ones.
"""
import json
import os
import re
import subprocess
import sys
import uuid

# Each turn: its prompt and its tools (name, input with paths relative to
# the project, what the tool does).
TURNS = [
    ("Add a --verbose flag", [
        ("Write", {"file_path": "src/flags.c",
                   "content": "int verbose;\n"}),
        ("Edit", {"file_path": "src/main.c",
                  "new_string": "/* --verbose: see flags.c */\n"}),
        ("Bash", {"command": "rm -f NOTES.txt && mkdir -p tests && "
                  "echo 'test -s src/flags.c' >tests/flags.sh",
                  "description": "Drop the stale notes, add a test"}),
    ]),
    ("Now document it", [
        ("Edit", {"file_path": "README.md",
                  "new_string": "\n--verbose prints what it does.\n"}),
    ]),
]


def die(msg):
    sys.stderr.write("claude (docs-test fake): %s\n" % msg)
    sys.exit(1)


def settings_files(root):
    user = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(
        os.path.expanduser("~"), ".claude")
    return [os.path.join(root, ".claude", "settings.json"),
            os.path.join(user, "settings.json")]


def load_hooks(root):
    hooks = {}
    for f in settings_files(root):
        try:
            with open(f) as fp:
                d = json.load(fp)
        except FileNotFoundError:
            continue
        except ValueError as e:
            die("%s: %s" % (f, e))
        for event, groups in (d.get("hooks") or {}).items():
            for g in groups:
                hooks.setdefault(event, []).append(g)
    return hooks


def matches(group, tool):
    m = group.get("matcher")
    if m in (None, "", "*"):
        return True
    return re.fullmatch(m, tool) is not None


def run_hooks(hooks, event, payload, root, tool=None):
    env = dict(os.environ)
    env.pop("DOCS_TEST_LOG", None)  # the agent's runs are not the doc's
    for g in hooks.get(event, []):
        if tool is not None and not matches(g, tool):
            continue
        for h in g.get("hooks", []):
            if h.get("type") != "command":
                continue
            p = dict(payload, hook_event_name=event)
            r = subprocess.run(["sh", "-c", h["command"]], cwd=root, env=env,
                               input=json.dumps(p).encode(),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               timeout=h.get("timeout", 60))
            if r.returncode != 0:
                die("hook %s (%s) exited %d: %s" %
                    (event, h["command"], r.returncode,
                     r.stderr.decode(errors="replace")))


def do_tool(root, name, inp):
    if name == "Bash":
        r = subprocess.run(["sh", "-c", inp["command"]], cwd=root)
        return {"stdout": "", "stderr": "", "interrupted": False,
                "exit_code": r.returncode}
    path = inp["file_path"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if name == "Write":
        with open(path, "w") as f:
            f.write(inp["content"])
    else:  # Edit: the new text goes at the end of the file
        with open(path, "a") as f:
            f.write(inp["new_string"])
    return {"filePath": path, "success": True}


def turn(root, hooks, session, prompt, tools):
    base = {
        "session_id": session,
        "transcript_path": os.path.join(
            os.path.expanduser("~"), ".claude", "projects",
            root.replace("/", "-"), session + ".jsonl"),
        "cwd": root,
        "prompt_id": str(uuid.uuid4()),
        "permission_mode": "default",
    }
    run_hooks(hooks, "UserPromptSubmit", dict(base, prompt=prompt), root)
    done = []
    for name, inp in tools:
        inp = dict(inp)
        if "file_path" in inp:
            inp["file_path"] = os.path.join(root, inp["file_path"])
        use = {"tool_name": name, "tool_input": inp,
               "tool_use_id": "toolu_" + uuid.uuid4().hex[:12]}
        run_hooks(hooks, "PreToolUse", dict(base, **use), root, name)
        resp = do_tool(root, name, inp)
        run_hooks(hooks, "PostToolUse", dict(base, tool_response=resp, **use),
                  root, name)
        done.append(inp.get("command") or os.path.relpath(inp["file_path"],
                                                          root))
    print("%s: %s" % (prompt, ", ".join(done)))


def main(argv):
    prompt = None
    resume = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-p", "--print") and i + 1 < len(argv):
            prompt = argv[i + 1]
            i += 2
        elif a in ("-c", "--continue"):
            resume = True
            i += 1
        else:
            sys.stderr.write("usage: claude [-c] [-p PROMPT]\n")
            return 2
    root = os.getcwd()
    state = os.path.join(os.path.expanduser("~"), ".claude",
                         "docs-test-session.json")
    session, next_turn = str(uuid.uuid4()), 0
    if resume:
        try:
            with open(state) as f:
                s = json.load(f)
            session, next_turn = s["session"], s["next_turn"]
        except (OSError, ValueError, KeyError):
            die("no session to continue")
    hooks = load_hooks(root)
    todo = [next_turn % len(TURNS)] if prompt is not None else \
        [(next_turn + k) % len(TURNS) for k in range(2)]
    for t in todo:
        turn(root, hooks, session, prompt if prompt is not None
             else TURNS[t][0], TURNS[t][1])
    os.makedirs(os.path.dirname(state), exist_ok=True)
    with open(state, "w") as f:
        json.dump({"session": session, "next_turn": todo[-1] + 1}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
