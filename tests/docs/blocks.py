#!/usr/bin/python3
"""Run the command blocks of README.md and docs/**/*.md (cli/docs_commands).

Usage: blocks.py TOP SCRATCH DECREE [FILE...]; prints TAP, exits 1 on a
failure.

What a fenced block is to this test (docs/testing.md, "Commands in the
documentation", is the reference for writers):

  ```sh / ```bash / ```shell   a script: it runs, with bash -e -o pipefail,
                in a sandbox of its own (below), after its setup; it must
                exit 0 and so must every `decree` it ran (the `decree` on
                PATH logs each call), and at least as many calls must be
                logged as the block has `decree` commands.  A block whose
                first line is #! is a file's content, not commands.
  ```console    a transcript: each `$ ` line (with its `\\` continuation
                lines) runs in one shell, in order; each must exit 0, and
                its output (stdout and stderr together) must be the lines
                that follow it, where `…` stands for any text within a
                line and a line of just `…` for any number of lines,
                /home/me is the sandbox's $HOME, and times (RFC 3339),
                UUIDs, run ids and hex ids match any other of their kind.
  inline spans  `decree ...` in the prose are checked as synopses are.
  any other     not run; but a line that is a `decree` command (at its
                start, after `$ ` or a `|`) is an error unless the block is
                annotated: new documentation cannot show a command no test
                runs.

Annotations are HTML comments on the lines just before the fence (blank
lines allowed between), invisible in the rendered page:

  <!-- docs-test: skip REASON -->        not run; REASON is printed
  <!-- docs-test: setup COMMANDS -->     shell run first, in the same shell
                                         (a `cd` holds); may span lines
  <!-- docs-test: synopsis -->           a usage synopsis: each `decree ...`
                                         line names a command whose --help
                                         exits 0 and lists every option the
                                         line shows
  <!-- docs-test: illustrative REASON --> console: run, output not compared
  <!-- docs-test: status N -->           the block (its last command) exits N

The sandbox of a block: HOME is <sandbox>/home/me (the docs' /home/me:
compared output reads it so), the working directory is the sample
project $HOME/app (no git; see make_sample), PATH starts with a
directory holding `decree` (a wrapper of $DECREE that logs its calls) and
`claude` (the fake agent tests/docs/fake_claude.py, which runs the
installed hooks), stdin is /dev/null, DECREE_TOP is the source tree,
and no DECREE_STORE, XDG_*_HOME or agent configuration variable leaks
in.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

TOP, SCRATCH, DECREE = sys.argv[1:4]
FILES = sys.argv[4:] or (["README.md"] + sorted(
    os.path.relpath(p, TOP)
    for p in glob.glob(os.path.join(TOP, "docs", "**", "*.md"),
                       recursive=True)))
SHELL_LANGS = ("sh", "bash", "shell")
TIMEOUT = 300

_n = 0
_failed = 0


def ok(name, skip=None):
    global _n
    _n += 1
    print("ok %d - %s%s" % (_n, name, " # SKIP " + skip if skip else ""))


def not_ok(name, why):
    global _n, _failed
    _n += 1
    _failed += 1
    print("not ok %d - %s" % (_n, name))
    for line in why.rstrip("\n").split("\n")[-60:]:
        print("#   " + line)


# --- parsing ---------------------------------------------------------------

FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)")
ANNOT = re.compile(r"^\s*docs-test:\s*([a-z-]+)\s*(.*)$", re.S)
KINDS = ("skip", "setup", "synopsis", "illustrative", "status")


class Block:
    def __init__(self, path, line, lang, annots):
        self.path, self.line, self.lang = path, line, lang
        self.lines = []
        self.annots = annots  # [(kind, rest)]

    def name(self):
        return "%s:%d ```%s" % (self.path, self.line, self.lang)

    def annot(self, kind):
        return [r for k, r in self.annots if k == kind]


def parse(path):
    """The fenced blocks of a markdown file, with their annotations, and
    the errors of the annotations themselves."""
    blocks, errors = [], []
    with open(os.path.join(TOP, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    pending, cur, close, indent = [], None, None, 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if cur is not None:
            if re.match(r"^ {0,3}" + re.escape(close[0]) + "{%d,}\\s*$" %
                        len(close), line):
                blocks.append(cur)
                cur = None
            else:
                cur.lines.append(line[indent:] if line[:indent].strip() == ""
                                 else line.lstrip())
            i += 1
            continue
        m = FENCE.match(line)
        if m:
            indent, close = len(m.group(1)), m.group(2)
            cur = Block(path, i + 1, m.group(3).lower(), pending)
            pending = []
            i += 1
            continue
        s = line.strip()
        if s.startswith("<!--") and "docs-test:" in s:
            start = i
            text = s[4:]
            while "-->" not in text and i + 1 < len(lines):
                i += 1
                text += "\n" + lines[i]
            text = text.split("-->")[0]
            a = ANNOT.match(text)
            if not a or a.group(1) not in KINDS:
                errors.append("%s:%d: unknown docs-test annotation %r" %
                              (path, start + 1, text.strip()))
            else:
                kind, rest = a.group(1), a.group(2).strip()
                if kind in ("skip", "illustrative", "setup") and not rest:
                    errors.append("%s:%d: docs-test: %s needs %s" %
                                  (path, start + 1, kind,
                                   "commands" if kind == "setup"
                                   else "a reason"))
                if kind == "status" and not rest.isdigit():
                    errors.append("%s:%d: docs-test: status needs a number" %
                                  (path, start + 1))
                pending.append((kind, rest))
            i += 1
            continue
        if s and pending:
            errors.append("%s:%d: docs-test annotation not followed by a "
                          "code block" % (path, i))
            pending = []
        i += 1
    if cur is not None:
        errors.append("%s:%d: code block never closed" % (path, cur.line))
    if pending:
        errors.append("%s: docs-test annotation at the end of the file" % path)
    return blocks, errors


SEPARATORS = {None, ";", "&&", "||", "|", "&", "(", "!", "then", "do",
              "else", "time", "exec", "sudo", "|&"}


def count_decree(text):
    """How many `decree` commands a shell text has (in command position,
    not in comments or strings)."""
    src = "; " + text.replace("\\\n", " ").replace("\n", "\n; ")
    try:
        lex = shlex.shlex(src, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        toks = list(lex)
    except ValueError:
        return sum(1 for line in text.split("\n")
                   if re.match(r"^\s*(\$\s+)?decree(\s|$)", line))
    n, prev, in_assign = 0, None, False
    for t in toks:
        if t == "decree" and (prev in SEPARATORS or in_assign):
            n += 1
        in_assign = (prev in SEPARATORS or in_assign) and \
            re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t) is not None
        prev = t
    return n


DECREE_LINE = re.compile(r"^\s*(\$\s+)?decree(\s|$)|\|\s*decree\s")


def has_decree_line(lines):
    return any(DECREE_LINE.search(line) for line in lines)


def console_commands(block):
    """[(command, expected output lines)] of a console block, or raise."""
    cmds = []
    lines = list(block.lines)
    while lines and not lines[-1].strip():
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if not cmds:
                raise ValueError("line %d is output before any `$ ` command" %
                                 (block.line + 1 + i))
            cmds[-1][1].append(line.rstrip())
            i += 1
            continue
        cmd = line[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd += "\n" + lines[i]
        cmds.append((cmd, []))
        i += 1
    return cmds


# --- the sandbox -------------------------------------------------------------

def make_bin():
    b = os.path.join(SCRATCH, "bin")
    os.makedirs(b, exist_ok=True)
    with open(os.path.join(b, "decree"), "w") as f:
        f.write('#!/bin/sh\n'
                '# docs test: the real decree, each call logged\n'
                '"$DOCS_TEST_DECREE" "$@"\n'
                'rc=$?\n'
                'if [ -n "${DOCS_TEST_LOG:-}" ]; then\n'
                '\tprintf \'%s\\t%s\\n\' "$rc" "$*" >>"$DOCS_TEST_LOG"\n'
                'fi\n'
                'exit $rc\n')
    os.chmod(os.path.join(b, "decree"), 0o755)
    claude = os.path.join(b, "claude")
    if not os.path.lexists(claude):
        os.symlink(os.path.join(TOP, "tests", "docs", "fake_claude.py"),
                   claude)
    return b


SAMPLE = {
    "README.md": "# app\n\nA sample project.\n",
    "NOTES.txt": "todo: a --verbose flag\n",
    "src/main.c": "int main(void)\n{\n\treturn 0;\n}\n",
    "Makefile": "test:\n\t@test -s src/main.c\n",
    ".gitignore": "build/\n*.log\n",
    "build.log": "debug output\n",
}


def make_sample(root):
    for rel, text in SAMPLE.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


DROP_ENV = ("DECREE_STORE", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
            "GEMINI_CLI_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
            "XDG_DATA_HOME", "XDG_CACHE_HOME", "GIT_DIR", "GIT_WORK_TREE",
            "DECREE_HOOK_BUDGET", "CDPATH", "BASH_ENV", "ENV",
            # a user at a terminal has no calling make: a block's own
            # make must not print "Entering directory" (make check)
            "MAKEFLAGS", "MFLAGS", "MAKELEVEL")

_sandboxes = 0


def sandbox(bindir):
    """A fresh sandbox: (dir, home, project, env)."""
    global _sandboxes
    _sandboxes += 1
    d = os.path.join(SCRATCH, "block%03d" % _sandboxes)
    home = os.path.join(d, "home", "me")
    project = os.path.join(home, "app")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(project)
    make_sample(project)
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env.update(HOME=home, PATH=bindir + ":" + os.environ["PATH"],
               DOCS_TEST_DECREE=DECREE, DOCS_TEST_LOG=os.path.join(d, "calls"),
               DECREE_TOP=TOP, GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="me", GIT_AUTHOR_EMAIL="me@example.com",
               GIT_COMMITTER_NAME="me", GIT_COMMITTER_EMAIL="me@example.com")
    return d, home, project, env


def calls(d):
    try:
        with open(os.path.join(d, "calls")) as f:
            return [line.rstrip("\n").split("\t", 1) for line in f]
    except FileNotFoundError:
        return []


def tail(text, n=30):
    return "\n".join(text.rstrip("\n").split("\n")[-n:])


# After the setup: how many decree calls it made (the phase file).
COUNT_CALLS = '(cat "$DOCS_TEST_LOG" 2>/dev/null || :) | wc -l'


def run_script(block, bindir):
    d, home, project, env = sandbox(bindir)
    setup = "\n".join(block.annot("setup"))
    body = "\n".join(block.lines)
    script = os.path.join(d, "block.sh")
    phase = os.path.join(d, "phase")
    with open(script, "w") as f:
        # the phase file: the setup is done, and how many calls it made
        f.write("%s\n%s >'%s'\n%s\n" % (setup, COUNT_CALLS, phase, body))
    want = int((block.annot("status") or ["0"])[-1])
    try:
        r = subprocess.run(["bash", "-e", "-o", "pipefail", script],
                           cwd=project, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=TIMEOUT)
        out, rc = r.stdout.decode(errors="replace"), r.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        return not_ok(block.name(), "timed out after %d s\n%s" %
                      (TIMEOUT, tail(out)))
    if not os.path.exists(phase):
        return not_ok(block.name(), "its setup failed (exit %d):\n%s" %
                      (rc, tail(out)))
    bad = []
    if rc != want:
        bad.append("the block exited %d, wanted %d" % (rc, want))
    with open(phase) as f:
        log = calls(d)[int(f.read()):]  # the block's own calls
    if not block.annot("status"):
        bad += ["`decree %s` exited %s" % (args, c) for c, args in log
                if c != "0"]
    need = count_decree(body)
    if len(log) < need:
        bad.append("%d decree command(s) in the block, %d ran" %
                   (need, len(log)))
    if bad:
        return not_ok(block.name(), "\n".join(bad) + "\noutput:\n" +
                      tail(out))
    ok("%s: ran, %d decree call(s)" % (block.name(), len(log)))


# What differs from run to run, the same in the doc and in the output.
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                r"[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b\d{16}-\d+\b"), "<run>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hex>"),
]


def normalize(text):
    for pat, rep in VOLATILE:
        text = pat.sub(rep, text)
    return text


def expected_regex(lines):
    parts = []
    for line in map(normalize, lines):
        if line.strip() == "…":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\\n]*".join(re.escape(p) for p in
                                         line.split("…")) + r"[ \t]*\n")
    return re.compile("".join(parts) + r"\Z")


def run_console(block, bindir):
    try:
        cmds = console_commands(block)
    except ValueError as e:
        return not_ok(block.name(), str(e))
    if not cmds:
        return not_ok(block.name(), "a console block without a `$ ` command")
    d, home, project, env = sandbox(bindir)
    outs = os.path.join(d, "out")
    os.makedirs(outs)
    script = os.path.join(d, "block.sh")
    with open(script, "w") as f:
        f.write("set -o pipefail\n%s\n%s >'%s/phase'\n" %
                ("\n".join(block.annot("setup")), COUNT_CALLS, d))
        for k, (cmd, _) in enumerate(cmds):
            f.write("{ %s\n} >'%s/%d' 2>&1 </dev/null; echo $? >'%s/%d.rc'\n" %
                    (cmd, outs, k, outs, k))
    try:
        subprocess.run(["bash", script], cwd=project, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return not_ok(block.name(), "timed out after %d s" % TIMEOUT)
    if not os.path.exists(os.path.join(d, "phase")):
        return not_ok(block.name(), "its setup failed")
    want_last = int((block.annot("status") or ["0"])[-1])
    compare = not block.annot("illustrative")
    bad = []
    for k, (cmd, expected) in enumerate(cmds):
        try:
            with open(os.path.join(outs, "%d.rc" % k)) as f:
                rc = int(f.read())
            with open(os.path.join(outs, str(k)), errors="replace") as f:
                got = f.read()
        except (OSError, ValueError):
            bad.append("$ %s: did not run" % cmd)
            continue
        want = want_last if k == len(cmds) - 1 else 0
        if rc != want:
            bad.append("$ %s: exit %d, wanted %d:\n%s" % (cmd, rc, want,
                                                         tail(got, 10)))
            continue
        if not compare:
            continue
        for h in (os.path.realpath(home), home):
            got = got.replace(h, "/home/me")
        if got and not got.endswith("\n"):
            got += "\n"
        if not expected_regex(expected).match(normalize(got)):
            bad.append("$ %s: output differs from the doc's\n--- doc\n%s\n"
                       "--- actual\n%s" % (cmd, "\n".join(expected),
                                           got.rstrip("\n")))
    with open(os.path.join(d, "phase")) as f:
        log = calls(d)[int(f.read()):]
    need = sum(count_decree(c) for c, _ in cmds)
    if len(log) < need:
        bad.append("%d decree command(s) in the block, %d ran" %
                   (need, len(log)))
    if bad:
        return not_ok(block.name(), "\n".join(bad))
    ok("%s: ran %d command(s)%s" % (block.name(), len(cmds),
                                     ", output compared" if compare else
                                     " (illustrative output not compared)"))


_help = {}


def help_text(words):
    key = tuple(words)
    if key not in _help:
        r = subprocess.run([DECREE] + words + ["--help"], cwd=SCRATCH,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        _help[key] = (r.returncode, r.stdout.decode(errors="replace"))
    return _help[key]


def command_problems(line):
    """What is wrong with a `decree ...` command line or synopsis: its
    command words must name a command whose --help exits 0, and each
    option it shows must be in that help or the global one."""
    line = re.split(r"\s#\s", line)[0]
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "''", line)  # arguments, not options
    words = []
    for tok in line.split():
        if not re.fullmatch(r"[a-z][a-z-]*", tok):
            break
        words.append(tok)
    rc, text = help_text(words)
    if rc != 0:
        return ["decree %s --help exited %d: %s" %
                (" ".join(words), rc, tail(text, 3))]
    _, glob_text = help_text([])
    bad = []
    for opt in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line):
        pat = r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])"
        if not re.search(pat, text) and not re.search(pat, glob_text):
            bad.append("decree %s: %s is not in its --help" %
                       (" ".join(words), opt))
    return bad


def check_synopsis(block):
    entries = []
    for line in block.lines:
        m = re.search(r"(?:^\s*|\|\s*)decree(\s.*|$)", line)
        if m and not line.lstrip().startswith("decree:"):
            entries.append(m.group(1))
        elif entries and line.startswith((" ", "\t")) and line.strip():
            entries[-1] += " " + line.strip()
    if not entries:
        return not_ok(block.name(), "a synopsis without a `decree` line")
    bad = [b for e in entries for b in command_problems(e)]
    if bad:
        return not_ok(block.name(), "\n".join(bad))
    ok("%s: synopsis of %d command(s) matches --help" % (block.name(),
                                                          len(entries)))


def check_inline(path):
    """The `decree ...` code spans of a file's prose, checked as synopses."""
    with open(os.path.join(TOP, path), encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", "", text,
                  flags=re.S | re.M)
    spans = re.findall(r"(?<!`)`(decree(?:\s[^`]*)?)`(?!`)", text)
    if not spans:
        return
    bad = []
    for span in spans:
        bad += ["`%s`: %s" % (span, b) for b in command_problems(span[6:])]
    if bad:
        return not_ok("%s: inline `decree` commands" % path, "\n".join(bad))
    ok("%s: %d inline `decree` command(s) name real commands and options" %
       (path, len(spans)))


# --- main --------------------------------------------------------------------

def main():
    bindir = make_bin()
    counts = {"run": 0, "skip": 0, "synopsis": 0, "other": 0}
    for path in FILES:
        blocks, errors = parse(path)
        for e in errors:
            not_ok("annotation: " + e, e)
        check_inline(path)
        for b in blocks:
            is_file = b.lines and b.lines[0].startswith("#!")
            if b.annot("skip"):
                counts["skip"] += 1
                ok(b.name(), skip=b.annot("skip")[0])
            elif b.annot("synopsis"):
                counts["synopsis"] += 1
                check_synopsis(b)
            elif b.lang in SHELL_LANGS and not is_file:
                counts["run"] += 1
                run_script(b, bindir)
            elif b.lang == "console":
                counts["run"] += 1
                run_console(b, bindir)
            elif has_decree_line(b.lines):
                not_ok(b.name(), "shows a `decree` command no test runs: "
                       "make it ```sh or ```console, or annotate it "
                       "(docs/testing.md, \"Commands in the documentation\")")
            else:
                counts["other"] += 1
    if len(sys.argv) == 4 and not (counts["run"] and counts["synopsis"]):
        not_ok("the documentation has blocks to run and synopses to check",
               "found none in %s" % " ".join(FILES))
    print("# %d blocks run, %d synopses checked, %d skipped, %d other blocks "
          "(code, output, formats) not run" %
          (counts["run"], counts["synopsis"], counts["skip"], counts["other"]))
    return counts


if __name__ == "__main__":
    main()
    print("1..%d" % _n)
    sys.exit(1 if _failed else 0)
