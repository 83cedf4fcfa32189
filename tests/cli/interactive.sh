#!/bin/bash
# interactive.sh - the interactive form of `decree run` (no arguments, stdin
# a terminal), driven through a pseudo-terminal: the routine selector
# (arrows, Ctrl-P/Ctrl-N, type-ahead fuzzy filter, the default routine or
# the last run's pre-highlighted), message name (required), input file
# (optional), one prompt per custom parameter (Enter keeps the routine's
# default silently), the body (ends at an empty line or Ctrl-D; required
# without an input file); .decree/last-run.yml pre-fills the next run (never
# the body); Ctrl-C, Esc, Ctrl-D and SIGTERM create nothing; the terminal
# modes are restored on every path; tiny and resized terminals.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
export LC_ALL=C.UTF-8

if ! command -v python3 >/dev/null; then
	echo "1..0 # SKIP python3 is missing"
	exit 0
fi

same() { # name got want
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -40)"; fi
}
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }

# The driver: a pty, a tiny VT100 screen, and a script of keystrokes.
DRIVE=$SCRATCH/ptydrive.py
cat >"$DRIVE" <<'PY'
"""ptydrive.py ROWS COLS SCRIPT -- CMD...

Runs CMD on a new pseudo-terminal of ROWS x COLS (0: unknown size) and
follows SCRIPT, one step per line:
    expect TEXT     wait (5 s at most) for TEXT on the emulated screen or in
                    the output since the last expect (escape sequences cut)
    send TEXT       write TEXT with Python escapes (\\r, \\x1b, \\x03 ...)
    sendu TEXT      write TEXT as UTF-8, no escapes
    sleep SECONDS   read output meanwhile
    resize ROWS COLS
    signal NAME     to the terminal's foreground process group, except
                    the shell CMD started (which runs the program)
    screen FILE     the emulated screen (right-trimmed rows) into FILE
    wraps           print "wraps N": characters drawn past the last column
Prints "timeout TEXT" and the screen when an expect fails (then kills
CMD), and "exit N" at the end.
"""
import fcntl, os, pty, re, select, signal, struct, sys, termios, time

ESC = re.compile(r'\x1b\[([0-9;?]*)([@-~])|\x1b[^\[]')


class Screen:
    def __init__(self, rows, cols):
        self.rows, self.cols = max(rows, 1), max(cols, 1)
        self.lines = [[' '] * self.cols for _ in range(self.rows)]
        self.y = self.x = 0
        self.wraps = 0
        self.pend = ''

    def resize(self, rows, cols):
        rows, cols = max(rows, 1), max(cols, 1)
        lines = [(l + [' '] * cols)[:cols] for l in self.lines]
        while len(lines) > rows and self.y > 0:
            lines.pop(0)
            self.y -= 1
        lines = (lines + [[' '] * cols for _ in range(rows)])[:rows]
        self.lines, self.rows, self.cols = lines, rows, cols
        self.y, self.x = min(self.y, rows - 1), min(self.x, cols)

    def lf(self):
        if self.y == self.rows - 1:
            self.lines.pop(0)
            self.lines.append([' '] * self.cols)
        else:
            self.y += 1

    def feed(self, s):
        s, self.pend, i = self.pend + s, '', 0
        while i < len(s):
            c = s[i]
            if c == '\x1b':
                m = ESC.match(s, i)
                if not m:
                    self.pend = s[i:]
                    return
                if m.group(2):
                    self.csi(m.group(1), m.group(2))
                i = m.end()
                continue
            if c == '\r':
                self.x = 0
            elif c == '\n':
                self.lf()
            elif c == '\b':
                self.x = max(self.x - 1, 0)
            elif c >= ' ':
                if self.x >= self.cols:
                    self.wraps += 1
                    self.x = 0
                    self.lf()
                self.lines[self.y][self.x] = c
                self.x += 1
            i += 1

    def csi(self, p, f):
        n = max(int(p) if p.isdigit() else 1, 1)
        if f == 'A':
            self.y = max(self.y - n, 0)
        elif f == 'B':
            self.y = min(self.y + n, self.rows - 1)
        elif f == 'C':
            self.x = min(self.x + n, self.cols - 1)
        elif f == 'D':
            self.x = max(min(self.x, self.cols - 1) - n, 0)
        elif f == 'K':
            for x in range(min(self.x, self.cols), self.cols):
                self.lines[self.y][x] = ' '
        elif f == 'J':
            self.csi('', 'K')
            for y in range(self.y + 1, self.rows):
                self.lines[y] = [' '] * self.cols

    def text(self):
        return '\n'.join(''.join(l).rstrip() for l in self.lines)


def main():
    rows, cols, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    cmd = sys.argv[sys.argv.index('--') + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
        os.execvp(cmd[0], cmd)
    scr = Screen(rows or 24, cols or 80)
    state = {'since': '', 'alive': True}

    def pump(timeout):
        if not state['alive'] or not select.select([fd], [], [], timeout)[0]:
            return False
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b''
        if not data:
            state['alive'] = False
            return False
        t = data.decode('utf-8', 'replace')
        scr.feed(t)
        state['since'] += ESC.sub('', t)
        return True

    def settle():
        while pump(0.15):
            pass

    failed = False
    for line in open(script, encoding='utf-8'):
        line = line.rstrip('\n')
        op, _, arg = line.partition(' ')
        if op == 'expect':
            end = time.time() + 5
            while arg not in scr.text() and arg not in state['since']:
                if not state['alive'] or time.time() > end:
                    print('timeout ' + arg)
                    print(scr.text())
                    failed = True
                    break
                pump(0.05)
            if failed:
                break
            state['since'] = ''
        elif op == 'send':
            os.write(fd, arg.encode('latin-1', 'backslashreplace')
                     .decode('unicode_escape').encode('latin-1'))
        elif op == 'sendu':
            os.write(fd, arg.encode('utf-8'))
        elif op == 'sleep':
            end = time.time() + float(arg)
            while time.time() < end:
                if not pump(end - time.time()) and not state['alive']:
                    break
        elif op == 'resize':
            r, c = map(int, arg.split())
            settle()
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', r, c, 0, 0))
            scr.resize(r, c)
        elif op == 'signal':
            settle()
            pgrp = os.tcgetpgrp(fd)
            for p in os.listdir('/proc'):
                try:
                    with open('/proc/%s/stat' % p) as f:
                        st = f.read().rsplit(')', 1)[1].split()
                except (OSError, IndexError):
                    continue
                if p.isdigit() and int(st[2]) == pgrp and int(p) != pid:
                    os.kill(int(p), getattr(signal, arg))
        elif op == 'screen':
            settle()
            with open(arg, 'w', encoding='utf-8') as f:
                f.write(scr.text() + '\n')
        elif op == 'wraps':
            settle()
            print('wraps %d' % scr.wraps)
    if failed:
        os.kill(pid, signal.SIGKILL)
    end = time.time() + 10
    while state['alive'] and time.time() < end:
        pump(0.1)
    if state['alive']:
        os.kill(pid, signal.SIGKILL)
    _, st = os.waitpid(pid, 0)
    print('exit %d' % os.waitstatus_to_exitcode(st))


main()
PY

# form ROWS COLS < SCRIPT: `decree run` on a pty of that size, in a shell
# that records `stty -a` before and after; sets RC (decree's exit status),
# DRV (the driver's report), RUNERR (decree's stderr)
form() {
	cat >"$SCRATCH/script"
	rm -f "$SCRATCH"/stty.* "$SCRATCH"/run.*
	DRV=$(python3 "$DRIVE" "$1" "$2" "$SCRATCH/script" -- bash -c '
		stty -a | sed 1d >"$1/stty.before" # not the size line
		"$2" run >"$1/run.out" 2>"$1/run.err" </dev/tty
		echo $? >"$1/run.rc"
		stty -a | sed 1d >"$1/stty.after"' sh "$SCRATCH" "$DECREE")
	RC=$(cat "$SCRATCH/run.rc" 2>/dev/null || echo none)
	RUNERR=$(cat "$SCRATCH/run.err" 2>/dev/null)
}
driven() { case "$DRV" in *timeout*) return 1 ;; esac; }
sane() { [ -s "$SCRATCH/stty.before" ] && cmp -s "$SCRATCH/stty.before" "$SCRATCH/stty.after"; }
# form_ok NAME: the script ran through, decree exited 0, the terminal is as before
form_ok() {
	if driven && [ "$RC" = 0 ] && sane; then ok "$1"; else
		not_ok "$1" "exit $RC; driver: $DRV; stderr: $RUNERR; stty: $(diff "$SCRATCH/stty.before" "$SCRATCH/stty.after" 2>&1)"
	fi
}
# What a cancelled form must not touch.
snapshot() { (cd "$P" && find .decree/inbox .decree/runs specs | LC_ALL=C sort; cat .decree/last-run.yml 2>/dev/null); }
# cancelled NAME [WANT_RC]: nothing created, terminal restored, exit 130
cancelled() {
	local want=${2:-130} why=
	driven || why="driver: $DRV"
	[ "$RC" = "$want" ] || why="$why exit $RC (wanted $want); stderr: $RUNERR"
	sane || why="$why stty changed: $(diff "$SCRATCH/stty.before" "$SCRATCH/stty.after" 2>&1)"
	[ "$(snapshot)" = "$BEFORE" ] || why="$why files changed: $(diff <(printf '%s\n' "$BEFORE") <(snapshot))"
	if [ -z "$why" ]; then ok "$1"; else not_ok "$1" "$why"; fi
}
# fm FILE KEY: a frontmatter value; body FILE: the text after the frontmatter
fm() { sed -n '2,/^---$/p' "$1" | sed -n "s/^$2: //p"; }
body() { awk 'n >= 2 { print } /^---$/ { n++ }' "$1"; }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" || exit 1
t "init" "$DECREE" init
R=.decree/routines
printf '#!/usr/bin/env bash\n# Develop a change.\nexit 0\n' >$R/develop.sh
cat >$R/review.sh <<'EOF'
#!/usr/bin/env bash
# Review a branch.
target_branch="${target_branch:-main}"
reviewer="${reviewer:-alice}"
printf '%s|%s\n' "$target_branch" "$reviewer" >review-out.txt
EOF
for n in alpha beta deploy docs zeta; do
	printf '#!/usr/bin/env bash\n# The %s routine, whose summary is too long for a small terminal.\nexit 0\n' $n >$R/$n.sh
done
mkdir -p specs && printf '# Add auth\n' >specs/01-add-auth.spec.md
DONE=.decree/inbox/done

# ===== a first run: filter, required fields, a kept and a set parameter ======
form 24 80 <<EOF
expect > develop
screen $SCRATCH/scr.start
send rev
expect > review
screen $SCRATCH/scr.filtered
send \r
expect message name:
send \r
expect message name (required):
send Fix Auth Types\r
expect input file (optional):
send \r
expect target_branch [main]:
send \r
expect reviewer [alice]:
send bob\r
expect message body (end with an empty line or Ctrl-D):
send \r
expect (required)>
send first line\rsecond line\r\r
screen $SCRATCH/scr.end
EOF
form_ok "a first run through the form succeeds and restores the terminal"
same "the configured default routine is pre-highlighted, the list under the prompt" \
	"$(head -8 "$SCRATCH/scr.start")" "routine:
  alpha    The alpha routine, whose summary is too long for a small terminal.
  beta     The beta routine, whose summary is too long for a small terminal.
  deploy   The deploy routine, whose summary is too long for a small terminal.
> develop  Develop a change.
  docs     The docs routine, whose summary is too long for a small terminal.
  review   Review a branch.
  zeta     The zeta routine, whose summary is too long for a small terminal."
same "typing filters the list by fuzzy match" "$(head -3 "$SCRATCH/scr.filtered")" "routine: rev
> review   Review a branch."
same "the transcript keeps one line per answer, the selector's list cleared" \
	"$(sed -n '1,9p' "$SCRATCH/scr.end")" "routine: review
message name: Fix Auth Types
input file: (none)
target_branch: main (default)
reviewer: bob
message body (end with an empty line or Ctrl-D):
> first line
> second line"
M=$DONE/fix-auth-types.md
check "the message is named from the kebab-cased name and processed" test -f "$M"
same "frontmatter: the routine, the typed parameter; the kept one unset" \
	"$(fm "$M" routine) $(fm "$M" reviewer) $(fm "$M" type) [$(fm "$M" target_branch)]" "review bob task []"
same "the body is the typed lines" "$(body "$M")" "first line
second line"
same "the routine got the typed value and its own default" "$(cat review-out.txt)" "main|bob"
same "last-run.yml records the run" "$(cat .decree/last-run.yml)" "routine: review
message_name: Fix Auth Types
custom:
  reviewer: bob"

# ===== the second run: everything pre-filled, Enter accepts ==================
form 24 80 <<EOF
expect > review
screen $SCRATCH/scr.recall
send \r
expect message name [Fix Auth Types]:
send \r
expect input file (optional):
send \r
expect target_branch [main]:
send \r
expect reviewer [bob]:
send \r
expect message body
screen $SCRATCH/scr.body
sendu héllo wörld ✓✓
send \x7f\r\r
EOF
form_ok "a second run accepts the pre-filled values with Enter"
check "the last run's routine is pre-highlighted instead of the default" \
	grep -qx '> review   Review a branch.' "$SCRATCH/scr.recall"
check "the body is never pre-filled" grep -qx '>' "$SCRATCH/scr.body"
M=$DONE/fix-auth-types-2.md
same "the recalled values reach the message" \
	"$(fm "$M" routine) $(fm "$M" reviewer) [$(fm "$M" target_branch)]" "review bob []"
same "UTF-8 passes through; Backspace removes a whole character" "$(body "$M")" "héllo wörld ✓"

# ===== arrows, no match, an input file (the body becomes optional) ===========
form 24 80 <<EOF
expect > review
send \x1b[A
expect > docs
send \x10
expect > develop
send \x1b[B\x0e\x0e\x1b[A\x1b[A
expect > docs
send \x10
expect > develop
send qqq
expect (no match)
send \r\x7f\x7f\x7f
expect > develop
send \r
expect message name [Fix Auth Types]:
send add auth\r
expect input file (optional):
send specs/nope.md\r
expect input file (not found; Backspace edits): specs/nope.md
send \x15 specs/01-add-auth.spec.md \r
expect message body (optional; end with an empty line or Ctrl-D):
send \r
EOF
form_ok "arrows and Ctrl-P/Ctrl-N move; no match holds Enter; a missing input file is asked again"
M=$DONE/add-auth.md
same "an input file makes a spec message without a body" \
	"$(fm "$M" routine) $(fm "$M" input_file) $(fm "$M" type) [$(body "$M")]" \
	"develop specs/01-add-auth.spec.md spec []"
same "last-run.yml records the input file, no custom values" "$(cat .decree/last-run.yml)" "routine: develop
message_name: add auth
input_file: specs/01-add-auth.spec.md"

# ===== values that need quoting; Ctrl-D ends the body ========================
form 24 80 <<EOF
expect > develop
send re\r
expect message name [add auth]:
send Quoted: "x" #1\r
expect input file (optional) [specs/01-add-auth.spec.md]:
send \x7f
expect input file (optional):
send \r
expect target_branch [main]:
send bad\xff\r
expect target_branch (unusable characters) [main]: bad?
send \x15release/1.0\r
expect reviewer [alice]:
sendu a "b": #c \ d é
send \r
expect message body
send line one\rline two\x04
EOF
form_ok "Backspace drops an offered value; bytes YAML cannot hold are refused; Ctrl-D ends the body"
M=$DONE/quoted-x-1.md
same "typed values reach the message; Ctrl-D kept the pending line" \
	"$(fm "$M" target_branch)|$(body "$M")|$(test -e .decree/inbox/done/quoted-x-1.md && echo "$(fm "$M" input_file)")" \
	"release/1.0|line one
line two|"
if ! python3 -c 'import yaml' 2>/dev/null; then
	ok "last-run.yml quotes what needs it and reads back # SKIP no PyYAML"
else same "last-run.yml quotes what needs it and reads back (PyYAML)" \
	"$(python3 -c 'import sys, yaml; print(yaml.load(open(sys.argv[1]), Loader=yaml.BaseLoader))' .decree/last-run.yml 2>&1)" \
	"{'routine': 'review', 'message_name': 'Quoted: \"x\" #1', 'custom': {'target_branch': 'release/1.0', 'reviewer': 'a \"b\": #c \\\\ d é'}}"
fi

# ===== cancelling: Ctrl-C, Esc, Ctrl-D, SIGTERM ===============================
BEFORE=$(snapshot)
form 24 80 <<EOF
expect > review
send \x03
EOF
cancelled "Ctrl-C at the routine selector cancels: nothing created, terminal restored"
case "$RUNERR" in *cancelled*) ok "a cancel says so" ;; *) not_ok "a cancel says so" "stderr: $RUNERR" ;; esac
form 24 80 <<EOF
expect > review
send rev
expect routine: rev
send \x1b
sleep 0.3
EOF
cancelled "Esc at the routine selector cancels"
form 24 80 <<EOF
expect > review
send \r
expect message name
send half a na
send \x03
EOF
cancelled "Ctrl-C at the message name cancels"
form 24 80 <<EOF
expect > review
send \r
expect message name
send \x04
EOF
cancelled "Ctrl-D on an empty message name cancels"
form 24 80 <<EOF
expect > review
send \r
expect message name
send \r
expect input file
send \x1b
sleep 0.3
EOF
cancelled "Esc at the input file cancels"
form 24 80 <<EOF
expect > review
send \r
expect message name
send \r
expect input file
send \r
expect target_branch [release/1.0]:
send \r
expect reviewer [a "b": #c \ d é]:
send \x1b
sleep 0.3
EOF
cancelled "Esc at a custom parameter (offered from last-run.yml, quotes and all) cancels"
form 24 80 <<EOF
expect > review
send \r\r\r\r\r
expect message body
send a line\r
expect > a line
send more\x03
EOF
cancelled "Ctrl-C in the body cancels"
form 24 80 <<EOF
expect > review
send \r
expect message name
signal SIGTERM
EOF
cancelled "SIGTERM during the form: the terminal is restored and the signal kills" 143

# ===== signals that do not end the form; resizing; tiny terminals ============
form 8 40 <<EOF
expect > review
signal SIGWINCH
resize 4 24
expect > review
screen $SCRATCH/scr.resized
send \r
expect message name
signal SIGTSTP
expect message name
signal SIGSTOP
sleep 0.1
signal SIGCONT
expect message name
send \x1a
expect message name
send after signals\r\r\r\rbody\r\r
wraps
EOF
form_ok "SIGWINCH, SIGTSTP (orphaned: not stopped), SIGSTOP+SIGCONT and Ctrl-Z leave the form working"
same "after a resize the list fits the new size" "$(cat "$SCRATCH/scr.resized")" "routine:
  develop  Develop a ch
  docs     The docs rou
> review   Review a bra"
check "a message came out of it" test -f $DONE/after-signals.md
rm -f .decree/last-run.yml
form 3 20 <<EOF
expect > develop
screen $SCRATCH/scr.tiny0
send \x0e\x0e\x0e
screen $SCRATCH/scr.tiny1
send \r
expect message name:
send a name far too long for twenty columns\r
expect input file
screen $SCRATCH/scr.tiny2
send \r
expect body
send a body line far too long for twenty columns\r\r
wraps
EOF
form_ok "a 3x20 terminal works"
same "3 rows: the prompt and a window of two list rows, truncated to the width" \
	"$(cat "$SCRATCH/scr.tiny0")|$(cat "$SCRATCH/scr.tiny1")" "routine:
  deploy   The depl
> develop  Develop|routine:
  review   Review a
> zeta     The zeta"
same "no line wrapped at 20 columns" "$(printf '%s\n' "$DRV" | grep wraps)" "wraps 0"
check "the tiny form made its message (zeta)" grep -qx 'routine: zeta' $DONE/a-name-far-too-long-for-twenty-columns.md
rm -f .decree/last-run.yml
form 2 10 <<EOF
expect > develop
send \r
sleep 0.2
send x\r\r
sleep 0.2
send y\r\r
wraps
EOF
form_ok "a 2x10 terminal works"
same "no line wrapped at 10 columns" "$(printf '%s\n' "$DRV" | grep wraps)" "wraps 0"
printf 'routine: [\n' >.decree/last-run.yml
form 0 0 <<EOF
expect > develop
send \r
expect message name
send unknown size\r\r
expect message body
send z\r\r
EOF
form_ok "a terminal that reports no size (0x0) works"
case "$RUNERR" in *"ignoring '$P/.decree/last-run.yml': line "*) ok "a damaged last-run.yml is reported and ignored" ;;
*) not_ok "a damaged last-run.yml is reported and ignored" "stderr: $RUNERR" ;; esac

# ===== a routine that cannot run: told at once ===============================
# (it calls the AI command and commands.ai is unset: nothing more is asked)
cd "$P" || exit 1
printf '#!/usr/bin/env bash\n# Ask the AI.\neval "$DECREE_AI_COMMAND"\n' >$R/needs-ai.sh
rm -f .decree/last-run.yml
BEFORE=$(snapshot)
form 24 80 <<EOF
expect > develop
send needs-ai
expect > needs-ai
send \r
sleep 0.5
screen $SCRATCH/scr.ai
EOF
cancelled "picking a routine that needs commands.ai ends the form at once: nothing created, terminal restored" 1
case "$RUNERR" in "decree: routine 'needs-ai' calls the AI command"*"commands.ai is not set"*) ok "... the error says what to set" ;;
*) not_ok "... the error says what to set" "stderr: $RUNERR" ;; esac
case "$(cat "$SCRATCH/scr.ai" 2>/dev/null)" in *"routine: needs-ai"*) case "$(cat "$SCRATCH/scr.ai")" in *"message name"*) not_ok "... no further question" "$(cat "$SCRATCH/scr.ai")" ;; *) ok "... no further question" ;; esac ;;
*) not_ok "... no further question" "screen: $(cat "$SCRATCH/scr.ai" 2>/dev/null)" ;; esac
rm -f $R/needs-ai.sh

# ===== no routines ===========================================================
mkdir -p "$SCRATCH/empty" && cd "$SCRATCH/empty" && "$DECREE" init >/dev/null && rm -f .decree/routines/*
form 24 80 </dev/null
if [ "$RC" = 1 ] && sane && case "$RUNERR" in "decree: no routines in .decree/routines/"*) true ;; *) false ;; esac; then
	ok "no routines: a clear error"
else
	not_ok "no routines: a clear error" "exit $RC; stderr: $RUNERR"
fi
done_testing
