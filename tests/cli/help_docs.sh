#!/bin/bash
# help_docs.sh - the help texts, docs/cli/*.md and the man page
# docs/decree.1 name the same commands and options.
#
# For every command of 'decree --help' and every subcommand its own help
# lists (checkpoint create, ..., projects move, hook install, workspace
# create, ...):
#   - its help is there ('decree CMD [SUB] --help', exit 0, on stdout);
#   - docs/cli has a synopsis line for it (the first ``` block of a file:
#     lines "decree CMD [SUB] ...", with their continuation lines), and
#     docs/decree.1 an entry (a .TP line under COMMANDS);
#   - every option of its help (the usage lines and the option table: the
#     indented lines that start with '-') appears in its part of
#     docs/cli (its synopsis lines, and its '## ' section when the file
#     has one for it, else the whole file) and in its man entry (the .TP
#     line and the paragraph after it);
#   - the other way round, every option of its docs/cli synopsis and of
#     its man .TP line is in its help.
# The global options of 'decree --help' are checked the same way against
# the synopsis of docs/cli/decree.md and the OPTIONS section of the man
# page, both ways.  One line per mismatch, naming the command, the option
# and where it is missing.
. "$(dirname "$0")/lib.sh"
: "${DECREE_TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"

python3 - "$DECREE" "$DECREE_TOP" <<'EOF'
import glob, os, re, subprocess, sys

decree, top = sys.argv[1], sys.argv[2]
n = 0
failed = 0

def ok(name):
    global n
    n += 1
    print(f"ok {n} - {name}")

def not_ok(name, why=""):
    global n, failed
    n += 1
    failed += 1
    print(f"not ok {n} - {name}")
    for l in why.splitlines():
        print(f"#   {l}")

OPT = re.compile(r"(?<![\w/.<>-])(--?[A-Za-z][A-Za-z0-9-]*)")

def opts(text):
    return set(OPT.findall(text))

def mentions(text, opt):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text) is not None

def help_of(path):
    p = subprocess.run([decree] + path + ["--help"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

SUBS = {}   # command -> its subcommands (filled below)

def help_options(text, path=()):
    """Options of the usage lines and of the first column of the option
    table ("  -p N, --strip N    strip ...").  A help shared by a command
    and its subcommands (hook, projects) gives each the usage lines that
    name it: a line for another subcommand is not its."""
    out = set()
    in_usage = False
    for l in text.splitlines():
        if l.startswith("usage:"):
            in_usage = True
        elif not l.strip():
            in_usage = False
        if in_usage:
            m = re.search(r"decree (\S+) ([a-z][a-z-]*)\b", l)
            if m and m.group(2) in SUBS.get(m.group(1), ()) and \
                    list(path) != [m.group(1), m.group(2)]:
                continue
            out |= opts(l)
        else:
            m = re.match(r"^\s{2,}(-\S.*?)(?:\s{2,}|$)", l)
            if m:
                out |= opts(m.group(1))
    return out

# --- the commands and their help ---------------------------------------------
rc, top_help, _ = help_of([])
GLOBAL = help_options(top_help)
cmds = []
in_cmds = False
for l in top_help.splitlines():
    if l.startswith("commands:"):
        in_cmds = True
        continue
    if in_cmds and not l.strip():
        break
    if in_cmds:
        cmds.append(l.split()[0])

paths = []   # (path words, help text)
for c in cmds:
    rc, h, err = help_of([c] if c != "help" else [])
    if c == "help":
        rc, h, err = 0, top_help, ""
    if rc != 0 or not h.strip() or err:
        not_ok(f"'decree {c} --help' prints the help, exit 0", f"exit {rc}: {err}")
        continue
    subs = []
    for l in h.splitlines():
        m = re.match(r"^\s*(?:usage:\s*)?decree " + re.escape(c) + r" ([a-z][a-z-]+)\b", l)
        if m and m.group(1) not in subs and c in ("checkpoint", "projects", "hook", "workspace"):
            subs.append(m.group(1))
    SUBS[c] = subs
    if c in ("checkpoint", "workspace"):
        paths += [([c, s], None) for s in subs]
    else:
        paths.append(([c], h))
        paths += [([c, s], None) for s in subs]
for i, (p, h) in enumerate(paths):
    if h is None:
        rc, h, err = help_of(p)
        if rc != 0 or not h.strip():
            not_ok(f"'decree {' '.join(p)} --help' prints the help", f"exit {rc}: {err}")
        paths[i] = (p, h)
ok(f"{len(paths)} commands and subcommands have a help text")

# --- docs/cli synopses and sections -------------------------------------------
syn = {}      # "checkpoint create" -> synopsis text
section = {}  # "checkpoint create" -> the part of the doc that documents it
docs = sorted(glob.glob(os.path.join(top, "docs/cli/*.md")))
for f in docs:
    text = open(f, encoding="utf-8").read()
    m = re.search(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    if not m:
        continue
    heads = [(h.start(), h.group(1)) for h in re.finditer(r"^## (.*)$", text, re.M)]
    key = None
    entries = {}
    for l in m.group(1).splitlines():
        l = re.sub(r"\s+#.*$", "", l)
        d = re.search(r"(?:^|\| )decree\b(.*)$", l)
        if d:
            words = []
            for w in d.group(1).split():
                if re.fullmatch(r"[a-z][a-z-]*", w):
                    words.append(w)
                else:
                    break
            key = " ".join(words)
            entries.setdefault(key, "")
            entries[key] += d.group(1) + "\n"
        elif key is not None and l.startswith(" "):
            entries[key] += l + "\n"
    for key, s in entries.items():
        syn[key] = syn.get(key, "") + s
        last = key.split()[-1] if key else ""
        part = None
        for i, (pos, title) in enumerate(heads):
            names = re.findall(r"[a-z][a-z-]*", title)
            if last and (last in names or key == title.strip()):
                end = heads[i + 1][0] if i + 1 < len(heads) else len(text)
                part = text[pos:end]
                break
        section[key] = section.get(key, "") + (part if part is not None else text)

# --- the man page ------------------------------------------------------------
man = open(os.path.join(top, "docs/decree.1"), encoding="utf-8").read()

def deroff(s):
    s = s.replace("\\-", "-").replace("\\(em", "-")
    s = re.sub(r"\\f[BIRP]", "", s)
    s = re.sub(r'^\.(B|BI|BR|I|IR|RB)\s+', "", s, flags=re.M)
    return s.replace('"', "")

sec = {}
for m in re.finditer(r"^\.SH (\S+)\n(.*?)(?=^\.SH |\Z)", man, re.S | re.M):
    sec[m.group(1)] = m.group(2)
man_entry = {}   # "checkpoint create" -> (.TP line, paragraph)
for m in re.finditer(r"^\.TP\n(.*?)\n(.*?)(?=^\.TP|^\.PP|\Z)", sec.get("COMMANDS", ""), re.S | re.M):
    line, para = deroff(m.group(1)), deroff(m.group(2))
    for part in re.split(r",\s+(?![^\[]*\])", line):
        words = []
        for w in part.split():
            if re.fullmatch(r"[a-z][a-z|-]*", w):
                words.append(w)
            else:
                break
        if not words:
            continue
        alts = words[-1].split("|")
        for a in alts:
            key = " ".join(words[:-1] + [a])
            old = man_entry.get(key, ("", ""))
            man_entry[key] = (old[0] + line + "\n", old[1] + para)
man_opts = sec.get("OPTIONS", "")
man_global = set()
for m in re.finditer(r"^\.TP\n(.*?)\n", man_opts, re.M):
    man_global |= opts(deroff(m.group(1)))

# --- the checks --------------------------------------------------------------
def check(name, missing):
    if missing:
        not_ok(name, "\n".join(missing))
    else:
        ok(name)

for p, h in paths:
    key = " ".join(p)
    hopts = help_options(h, p) - GLOBAL
    miss = []
    if key not in syn:
        miss.append(f"no synopsis line 'decree {key} ...' in docs/cli/*.md")
    else:
        for o in sorted(hopts):
            if not mentions(syn[key], o) and not mentions(section[key], o):
                miss.append(f"{o}: in the help, not in docs/cli for '{key}'")
        for o in sorted(opts(syn[key]) - GLOBAL - hopts):
            miss.append(f"{o}: in the docs/cli synopsis, not in 'decree {key} --help'")
    if key not in man_entry:
        miss.append(f"no entry for '{key}' under COMMANDS in docs/decree.1")
    else:
        tp, para = man_entry[key]
        for o in sorted(hopts):
            if not mentions(tp + para, o):
                miss.append(f"{o}: in the help, not in the man page entry of '{key}'")
        for o in sorted(opts(tp) - GLOBAL - hopts):
            miss.append(f"{o}: in the man page synopsis, not in 'decree {key} --help'")
    check(f"'{key}': help, docs/cli and man page agree on the options", miss)

miss = []
for o in sorted(GLOBAL):
    if "" not in syn or not mentions(syn[""], o):
        miss.append(f"global {o}: in 'decree --help', not in the synopsis of docs/cli/decree.md")
    if o not in man_global:
        miss.append(f"global {o}: in 'decree --help', not under OPTIONS in docs/decree.1")
for o in sorted(opts(syn.get("", "")) - GLOBAL):
    miss.append(f"global {o}: in docs/cli/decree.md, not in 'decree --help'")
for o in sorted(man_global - GLOBAL):
    miss.append(f"global {o}: under OPTIONS in docs/decree.1, not in 'decree --help'")
check("global options: 'decree --help', docs/cli/decree.md and the man page agree", miss)

# every synopsis of docs/cli names a command that exists
known = {" ".join(p) for p, _ in paths} | {"", "help", "checkpoint", "workspace"}
extra = [k for k in syn if k not in known and k.split()[0] not in ("hook",)]
check("every command docs/cli shows exists", [f"docs/cli shows 'decree {k}', which is no command" for k in extra])
extra = [k for k in man_entry if k not in known]
check("every command the man page shows exists", [f"docs/decree.1 shows '{k}', which is no command" for k in extra])

print(f"1..{n}")
sys.exit(1 if failed else 0)
EOF
