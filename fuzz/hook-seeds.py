#!/usr/bin/env python3
# fuzz/hook-seeds.py OUT - seeds for fuzz_hook (fuzz/fuzz_hook.c).
#
# real-*: the payloads Claude Code 2.1.331, Codex CLI 0.169.0 and Gemini
# CLI 0.61.0 sent their hooks in /work/shared/agents (README.md there,
# long strings as recorded there, "/PROJECT" the project), a session's
# events per input; edge-*: payloads decree must take in its stride.
# An input is up to 4 hook calls joined by "\n--8<--\n", each
#   u8 sel, u8 arg, payload
# sel: agent (bits 0-1: claude-code, codex, gemini), event (bits 2-3:
# prompt, before a tool, after, other), how the project is named (bits
# 4-5: -C, the agent's variable, the payload's cwd), 0x40 built from
# bytes, 0x80 the tool changed the tree; arg: low 3 bits the cwd
# (project, sub, link, sub/deep, gone, .git, .decree/store, none), high
# bits the change (a.txt edited, sub/new.txt, sub/deep/c.txt deleted,
# chmod, symlinks, newdir/f.txt, .git, outside).
import json
import os
import sys

SEP = b"\n--8<--\n"
CLAUDE, CODEX, GEMINI = 0, 1, 2
PROMPT, PRE, POST, OTHER = 0, 1, 2, 3
OPT_C, ENV, CWD = 0, 1, 2
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def ev(agent, event, payload, mode=OPT_C, arg=0, change=None, built=False):
    sel = agent | event << 2 | mode << 4
    if built:
        sel |= 0x40
    if change is not None:
        sel |= 0x80
        arg = (arg & 7) | change << 3
    if isinstance(payload, (dict, list)):
        payload = json.dumps(payload, ensure_ascii=False).encode()
    elif isinstance(payload, str):
        payload = payload.encode()
    return bytes([sel, arg]) + payload


def w(name, *events):
    open(f"{out}/{name}", "wb").write(SEP.join(events))


# --- Claude Code ---
cs = {"session_id": "060c6bdf-4a1e-4f4c-9e55-0d4b1b0a3c11",
      "transcript_path": "/HOME/.claude/projects/-PROJECT/060c6bdf.jsonl",
      "cwd": "/PROJECT", "prompt_id": "2948c6a0-7d1b-4c3e-8f6a-1b2c3d4e5f60",
      "permission_mode": "default"}
def claude(name, extra):
    return dict(cs, hook_event_name=name, **extra)
write_in = {"file_path": "/PROJECT/agent-new.txt",
            "content": "written by the agent\n"}
edit_in = {"file_path": "/PROJECT/a.txt", "old_string": "beta",
           "new_string": "BETA", "replace_all": False}
bash_in = {"command": "sed -i 's/two/TWO/' sub/b.txt && echo made > "
           "sub/new.txt", "description": "scripted shell step"}
w("real-claude-write-edit",
  ev(CLAUDE, PROMPT, claude("UserPromptSubmit",
                            {"prompt": "Please carry out the scripted change."})),
  ev(CLAUDE, PRE, claude("PreToolUse", {"effort": {"level": "medium"},
     "tool_name": "Write", "tool_input": write_in,
     "tool_use_id": "toolu_ed3d37_00"})),
  ev(CLAUDE, POST, claude("PostToolUse", {"tool_name": "Write",
     "tool_input": write_in, "tool_response": {"type": "create",
     "filePath": "/PROJECT/agent-new.txt", "content": "written by the agent\n",
     "structuredPatch": [], "originalFile": None, "userModified": False},
     "tool_use_id": "toolu_ed3d37_00", "duration_ms": 11})),
  ev(CLAUDE, POST, claude("PostToolUse", {"tool_name": "Edit",
     "tool_input": edit_in, "tool_response": {"filePath": "/PROJECT/a.txt",
     "oldString": "beta", "newString": "BETA"},
     "tool_use_id": "toolu_ed3d37_02", "duration_ms": 10}), change=0))
w("real-claude-read-bash",
  ev(CLAUDE, PRE, claude("PreToolUse", {"tool_name": "Read",
     "tool_input": {"file_path": "/PROJECT/a.txt"},
     "tool_use_id": "toolu_ed3d37_01"}), mode=CWD),
  ev(CLAUDE, PRE, claude("PreToolUse", {"tool_name": "Bash",
     "tool_input": bash_in, "tool_use_id": "toolu_ed3d37_03"}), mode=CWD),
  ev(CLAUDE, POST, claude("PostToolUse", {"tool_name": "Bash",
     "tool_input": bash_in, "tool_response": {"stdout": "", "stderr": "",
     "interrupted": False, "isImage": False}, "tool_use_id": "toolu_ed3d37_03",
     "duration_ms": 32}), mode=CWD, change=1),
  ev(CLAUDE, OTHER, claude("Stop", {"stop_hook_active": False,
     "last_assistant_message": "done"}), mode=CWD))
w("real-claude-env-notebook",
  ev(CLAUDE, PROMPT, claude("UserPromptSubmit", {"prompt": "second\nturn"}),
     mode=ENV, arg=1),
  ev(CLAUDE, PRE, claude("PreToolUse", {"tool_name": "NotebookEdit",
     "tool_input": {"notebook_path": "deep/c.txt", "new_source": "x"},
     "tool_use_id": "toolu_1"}), mode=ENV, arg=1),
  ev(CLAUDE, POST, claude("PostToolUse", {"tool_name": "NotebookEdit",
     "tool_input": {"notebook_path": "deep/c.txt", "new_source": "x"},
     "tool_use_id": "toolu_1"}), mode=ENV, arg=1, change=2))

# --- Codex CLI ---
xs = {"session_id": "01a20e77-5b6c-4d7e-8f90-a1b2c3d4e5f6",
      "turn_id": "01a20e77-aea4-4b5c-9d6e-7f8091a2b3c4",
      "transcript_path": "/HOME/.codex/sessions/rollout-01a20e77.jsonl",
      "cwd": "/PROJECT", "model": "gpt-5.5",
      "permission_mode": "bypassPermissions"}
def codex(name, extra):
    return dict(xs, hook_event_name=name, **extra)
add = {"command": "*** Begin Patch\n*** Add File: agent-new.txt\n"
       "+written by the agent\n*** End Patch\n"}
upd = {"command": "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n"
       "-beta\n+BETA\n gamma\n*** End Patch\n"}
w("real-codex-apply-patch",
  ev(CODEX, PROMPT, codex("UserPromptSubmit",
                          {"prompt": "Please carry out the scripted change."}),
     mode=CWD),
  ev(CODEX, PRE, codex("PreToolUse", {"tool_name": "apply_patch",
     "tool_input": add, "tool_use_id": "call_fbafa4_0"}), mode=CWD),
  ev(CODEX, POST, codex("PostToolUse", {"tool_name": "apply_patch",
     "tool_input": add, "tool_response": "Exit code: 0\nWall time: 0 seconds\n"
     "Output:\nSuccess. Updated the following files:\nA agent-new.txt\n",
     "tool_use_id": "call_fbafa4_0"}), mode=CWD),
  ev(CODEX, POST, codex("PostToolUse", {"tool_name": "apply_patch",
     "tool_input": upd, "tool_response": "Exit code: 0\n",
     "tool_use_id": "call_fbafa4_1"}), mode=CWD, change=0))
w("real-codex-bash",
  ev(CODEX, PRE, codex("PreToolUse", {"tool_name": "Bash",
     "tool_input": {"command": bash_in["command"]},
     "tool_use_id": "call_fbafa4_2"})),
  ev(CODEX, POST, codex("PostToolUse", {"tool_name": "Bash",
     "tool_input": {"command": bash_in["command"]}, "tool_response": "",
     "tool_use_id": "call_fbafa4_2"}), change=5),
  ev(CODEX, OTHER, codex("Stop", {"stop_hook_active": False}), arg=0))

# --- Gemini CLI ---
gs = {"session_id": "1521033a-2b3c-4d5e-6f70-8192a3b4c5d6",
      "transcript_path": "/HOME/.gemini/tmp/gemini/chats/session-1521033a.jsonl",
      "cwd": "/PROJECT", "timestamp": "2026-11-24T16:50:59.069Z"}
def gemini(name, extra):
    return dict(gs, hook_event_name=name, **extra)
wf = {"file_path": "/PROJECT/agent-new.txt", "content": "written by the agent\n"}
rp = {"file_path": "/PROJECT/sub/b.txt", "old_string": "two",
      "new_string": "TWO", "instruction": "scripted edit"}
sh = {"command": bash_in["command"], "description": "scripted shell step"}
w("real-gemini-write-replace",
  ev(GEMINI, PROMPT, gemini("BeforeAgent",
                            {"prompt": "Please carry out the scripted change."}),
     mode=ENV),
  ev(GEMINI, PRE, gemini("BeforeTool", {"tool_name": "write_file",
     "tool_input": wf}), mode=ENV),
  ev(GEMINI, POST, gemini("AfterTool", {"tool_name": "write_file",
     "tool_input": wf, "tool_response": {"llmContent": "Successfully created "
     "and wrote to new file: /PROJECT/agent-new.txt.", "returnDisplay": {
     "fileName": "agent-new.txt", "filePath": "/PROJECT/agent-new.txt",
     "isNewFile": True}}}), mode=ENV),
  ev(GEMINI, POST, gemini("AfterTool", {"tool_name": "replace",
     "tool_input": rp, "tool_response": {"llmContent": "Successfully modified "
     "file: /PROJECT/sub/b.txt (1 replacements)."}}), mode=ENV))
w("real-gemini-shell",
  ev(GEMINI, PRE, gemini("BeforeTool", {"tool_name": "run_shell_command",
     "tool_input": sh}), mode=CWD, arg=1),
  ev(GEMINI, POST, gemini("AfterTool", {"tool_name": "run_shell_command",
     "tool_input": sh, "tool_response": {"llmContent": "Output: (empty)",
     "returnDisplay": ""}}), mode=CWD, arg=1, change=3),
  ev(GEMINI, PRE, gemini("BeforeTool", {"tool_name": "read_file",
     "tool_input": {"file_path": "/PROJECT/a.txt"}}), mode=CWD),
  ev(GEMINI, OTHER, gemini("AfterAgent", {"prompt_response": "done"}),
     mode=CWD, arg=0x40))

# --- edge cases ---
s = {"session_id": "edge-session", "cwd": "/PROJECT"}
def post(tool, tin, **kw):
    return dict(s, tool_name=tool, tool_input=tin, **kw)
w("edge-not-json", ev(CLAUDE, PROMPT, b"{\"session_id\": \"x\""),
  ev(CODEX, POST, b"[1,2]"), ev(GEMINI, PRE, b""),
  ev(CLAUDE, PRE, b"\xff\xfe{\"session_id\":\"\xc3\x28\"}"))
w("edge-sessions",
  ev(CLAUDE, PROMPT, {"session_id": "a:b", "prompt": "x"}),
  ev(CLAUDE, PROMPT, {"session_id": "", "prompt": "x"}),
  ev(CLAUDE, PRE, {"session_id": 7, "tool_name": "Bash"}),
  ev(CLAUDE, PRE, {"session_id": "s\u2028", "tool_name": 3,
                   "prompt_id": "p\u00e9"}))
w("edge-patch-paths",
  ev(CODEX, POST, post("apply_patch", {"command":
     "*** Begin Patch\n*** Update File: sub/b.txt\n*** Move to: link/moved.txt\n"
     "*** Delete File: sub/deep/c.txt \r\n*** Add File: ../outside/x\n"
     "*** Add File: /OUTSIDE/o.txt\n*** Add File: .git/HEAD\n"
     "*** Add File: .decree/store/marker\n*** Add File: link-out/o.txt\n"
     "*** Add File: dangling\n"
     "*** Add File: sub/./deep/../b.txt\n*** Add File: \n"
     "*** Update File: sub/\n*** Update File: ..\n*** End Patch"}),
     mode=CWD, arg=1))
w("edge-patch-shapes",
  ev(CODEX, POST, post("apply_patch", {"input":
     "*** Add File: a.txt\n*** Add File:b.txt\n***  Add File: c\n"}), arg=0),
  ev(CODEX, POST, post("apply_patch",
     "*** Begin Patch\n*** Delete File: run.sh\n*** End Patch\n")),
  ev(CODEX, POST, post("apply_patch", {"command": ["*** Add File: a.txt"]})),
  ev(CODEX, POST, post("apply_patch", {"command": 5, "input":
     "*** Update File: sub/deep/c.txt"})))
w("edge-long-names",
  ev(CLAUDE, POST, post("Write", {"file_path": "sub/" + "y" * 255})),
  ev(CLAUDE, POST, post("Write", {"file_path": "/PROJECT/" + "./" * 2100 +
                                  "a.txt"})),
  ev(CLAUDE, POST, post("Edit", {"file_path": "/PROJECT/" + "x" * 256 +
                                 "/a.txt"})))
w("edge-odd-paths",
  ev(GEMINI, POST, post("write_file", {"file_path": "/"}), mode=ENV, arg=2),
  ev(GEMINI, POST, post("replace", {"file_path": "//PROJECT//sub//b.txt//"}),
     mode=ENV, arg=2),
  ev(GEMINI, POST, post("write_file", {"file_path": "\u00e9t\u00e9/\x01\x7f"}),
     mode=ENV, arg=3),
  ev(GEMINI, POST, post("write_file", {"file_path": "/PROJECT/.decree"}),
     mode=CWD, arg=6))
w("edge-events",
  ev(CLAUDE, OTHER, s, arg=0x40), ev(GEMINI, OTHER, s, arg=0x80),
  ev(CODEX, OTHER, s, arg=0xc0),
  ev(CLAUDE, POST, post("Task", {"prompt": "sub agent"},
                        tool_use_id="toolu_9"), change=4))
w("edge-cwd",
  ev(CLAUDE, PROMPT, dict(s, cwd="/", prompt="p"), mode=CWD, arg=7),
  ev(CLAUDE, PRE, dict(s, cwd="relative/dir", tool_name="Bash"), mode=CWD),
  ev(CLAUDE, POST, dict(s, cwd="/PROJECT/../../etc", tool_name="Write",
                        tool_input={"file_path": "passwd"}), mode=CWD, arg=4),
  ev(CLAUDE, POST, dict(s, cwd="/PROJECT/.git", tool_name="Write",
                        tool_input={"file_path": "HEAD"}), mode=CWD, arg=5))
w("edge-prompts",
  ev(CLAUDE, PROMPT, dict(s, session_id="p1", prompt="\u00e9" * 150,
                          prompt_id="same")),
  ev(CLAUDE, PROMPT, dict(s, session_id="p1", prompt="again",
                          prompt_id="same")),
  ev(GEMINI, PROMPT, dict(s, session_id="p1", prompt="\r\n")),
  ev(GEMINI, PRE, dict(s, session_id="p1", tool_name="replace")))
# built from bytes (sel 0x40): a few starting points
w("edge-built-1", ev(CLAUDE, PRE, bytes([0, 1, 0, 1, 0]), built=True),
  ev(CLAUDE, POST, bytes([0, 1, 0, 2, 0, 0, 1, 1, 0, 3, 0]), built=True))
w("edge-built-2", ev(CODEX, POST, bytes([1, 2, 0, 3, 0, 6, 2, 3, 1, 4, 5, 2,
                                          0, 22, 9, 0, 1]), built=True,
                     mode=CWD, arg=1))
w("edge-built-3", ev(GEMINI, POST, bytes([2, 0, 0, 2, 4, 0, 6, 3, 28, 26, 1]),
                     built=True, mode=ENV, change=6))

# --- regressions: inputs that failed a check before a fix ---
# a name longer than NAME_MAX failed the whole record: the other paths of
# the call were lost
w("regress-name-too-long",
  ev(CODEX, POST, post("apply_patch", {"command": "*** Update File: " +
     "x" * 300 + "\n*** Update File: a.txt\n"}), change=0),
  ev(CLAUDE, POST, post("Write", {"file_path": "/PROJECT/sub/" + "z" * 256})))
# a path through a file (file-link/x, a.txt/x) was journaled as a.txt/x:
# realpath() resolves a file as well as a directory
w("regress-path-through-file",
  ev(CODEX, POST, post("apply_patch", {"command":
     "*** Add File: file-link/x\n*** Update File: a.txt/y/\n"
     "*** Add File: run.sh/./z\n*** Add File: a.txt\n"}), mode=CWD),
  ev(CLAUDE, POST, post("Write", {"file_path": "/PROJECT/file-link/w"})))
# a path past 8 KiB (through "..") was cut short: a.txt was journaled as
# another name, or not at all
w("regress-path-past-8k",
  ev(CLAUDE, POST, post("Edit", {"file_path": "/PROJECT/" + "sub/../" * 1400 +
                                 "a.txt"})),
  ev(GEMINI, POST, post("write_file", {"file_path": "sub/" + "deep/../" * 1100 +
                                       "b.txt"}), mode=CWD))
# an agent directory past PATH_MAX (CLAUDE_PROJECT_DIR, arg 11: sub/deep
# through "/." and "..", whose first PATH_MAX - 1 bytes name sub) was cut
# short: c.txt was journaled as sub/c.txt, not sub/deep/c.txt
w("regress-long-cwd",
  ev(CLAUDE, POST, {"session_id": "long-cwd", "tool_name": "Write",
                    "tool_input": {"file_path": "c.txt"}}, mode=ENV, arg=11),
  ev(CLAUDE, POST, {"session_id": "long-cwd", "tool_name": "Write",
                    "tool_input": {"file_path": "/PROJECT/a.txt"}},
     mode=ENV, arg=11))
