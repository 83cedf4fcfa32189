#!/bin/bash
# apply_gitbinary.sh - `decree apply` of git's binary patches
# (docs/diff-format.md 2.4), with git as the oracle: random binary files in
# a git repository are changed every way `git diff --binary` knows (a small
# change: delta; a new file and a full rewrite: literal; a deletion; an
# emptied and a filled empty file; a mode change with the content; a file
# above 64 KiB whose delta copies whole 64 KiB blocks; a rename and a copy
# with changes), and decree must turn a copy of the old tree into the new
# one byte for byte and mode for mode, back with -R, and with undo.  A
# changed pre-image is a conflict that writes nothing; damaged base85,
# zlib or delta data is one clear line and changes nothing.  Also what GNU
# patch and git apply do with decree's own binary records (docs 1.5).
# Random content: DECREE_TEST_SEED=<n> replays a run.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
umask 022
SEED=${DECREE_TEST_SEED:-$(($(date +%s) % 100000))}
echo "# seed $SEED (DECREE_TEST_SEED=$SEED replays it)"
G() { git -c user.name=t -c user.email=t@t -c core.autocrlf=false "$@"; }
# files and links with type, mode, size, inode and mtime (ns): any write shows
stamps() { (cd "$1" && find . -path ./.decree -prune -o -printf '%p %y %m %s %i %T@ %l\n' | LC_ALL=C sort); }
# the tree without .git and .decree: paths, modes, contents
state() { tree_state "$1"; }
one_line() { [ "$(printf '%s\n' "$1" | wc -l)" -eq 1 ]; }

cat >"$SCRATCH/gb.py" <<'EOF'
# gb.py CMD ...: random binary content and git binary patch surgery.
#   rand SEED N FILE         N random bytes (with a NUL) into FILE
#   edit SEED FILE K         K scattered one-byte changes, 5 bytes inserted
#   poke FILE OFFSET...      one byte changed at each offset
#   blocks PATCH             per block: "<path> literal|delta N", and for a
#                            delta "copies C maxsize S maxoff O inserts I"
#   corrupt KIND PATCH       one block damaged: b85 (a character outside
#                            the alphabet), zlib (a byte of the stream),
#                            delta (a copy past the end of the source),
#                            cut (the patch cut inside a base85 line)
import base64, random, re, sys, zlib

def b85_lines(data):
    out = []
    for i in range(0, len(data), 52):
        c = data[i:i + 52]
        n = len(c)
        out.append((chr(ord('A') + n - 1) if n <= 26 else chr(ord('a') + n - 27))
                   + base64.b85encode(c, pad=True).decode())
    return out

def b85_decode(lines):
    data = b""
    for l in lines:
        n = ord(l[0]) - ord('A') + 1 if l[0] <= 'Z' else ord(l[0]) - ord('a') + 27
        data += base64.b85decode(l[1:])[:n]
    return data

def blocks(text):
    """(path, kind, size, first data line index, line count) per block"""
    lines = text.split("\n")
    path, i, res = None, 0, []
    while i < len(lines):
        m = re.match(r"diff --git a/(\S+) b/(\S+)", lines[i])
        if m:
            path = m.group(2)
        m = re.match(r"(literal|delta) (\d+)$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j]:
                j += 1
            res.append((path, m.group(1), int(m.group(2)), i + 1, j - i - 1))
            i = j
        i += 1
    return lines, res

def varint(d, p):
    v = s = 0
    while True:
        c = d[p]; p += 1
        v |= (c & 0x7f) << s; s += 7
        if not c & 0x80:
            return v, p

def delta_ops(d):
    src, p = varint(d, 0)
    dst, p = varint(d, p)
    copies = inserts = maxsize = maxoff = 0
    while p < len(d):
        c = d[p]; p += 1
        if c & 0x80:
            off = size = 0
            for i in range(4):
                if c & (1 << i):
                    off |= d[p] << (8 * i); p += 1
            for i in range(3):
                if c & (0x10 << i):
                    size |= d[p] << (8 * i); p += 1
            size = size or 0x10000
            copies += 1; maxsize = max(maxsize, size); maxoff = max(maxoff, off)
        else:
            inserts += 1; p += c
    return "copies %d maxsize %d maxoff %d inserts %d" % (copies, maxsize, maxoff, inserts)

cmd = sys.argv[1]
if cmd == "rand":
    r = random.Random(int(sys.argv[2]))
    n = int(sys.argv[3])
    data = bytearray(r.randbytes(n))
    if n:
        data[r.randrange(n)] = 0
    open(sys.argv[4], "wb").write(data)
elif cmd == "edit":
    r = random.Random(int(sys.argv[2]))
    data = bytearray(open(sys.argv[3], "rb").read())
    for _ in range(int(sys.argv[4])):
        data[r.randrange(len(data))] ^= 0x5a
    at = r.randrange(len(data))
    data[at:at] = b"\0edit"
    open(sys.argv[3], "wb").write(data)
elif cmd == "poke":
    data = bytearray(open(sys.argv[2], "rb").read())
    for off in sys.argv[3:]:
        data[int(off)] ^= 0x5a
    open(sys.argv[2], "wb").write(data)
elif cmd == "blocks":
    lines, bl = blocks(open(sys.argv[2]).read())
    for path, kind, size, first, count in bl:
        extra = ""
        if kind == "delta":
            extra = " " + delta_ops(zlib.decompress(b85_decode(lines[first:first + count])))
        print(path, kind, size, extra.strip())
elif cmd == "corrupt":
    kind, patch = sys.argv[2], sys.argv[3]
    lines, bl = blocks(open(patch).read())
    path, k, size, first, count = bl[0]
    if kind == "b85":
        l = lines[first]
        lines[first] = l[:3] + '"' + l[4:]
    elif kind == "zlib":
        z = bytearray(b85_decode(lines[first:first + count]))
        z[len(z) // 2] ^= 0xff
        lines[first:first + count] = b85_lines(bytes(z))
    elif kind == "delta":
        # a copy of 10 bytes from the end of the source, inserted whole
        d = zlib.decompress(b85_decode(lines[first:first + count]))
        src, p = varint(d, 0)
        bad = bytearray()
        for v in (src, 10):
            while True:
                c = v & 0x7f; v >>= 7
                bad.append(c | (0x80 if v else 0))
                if not v:
                    break
        off = src - 5
        bad += bytes([0x80 | 0x0f | 0x10]) + off.to_bytes(4, "little") + bytes([10])
        z = zlib.compress(bytes(bad))
        lines[first - 1] = "delta %d" % len(bad)
        lines[first:first + count] = b85_lines(z)
    elif kind == "cut":
        l = lines[first]
        lines = lines[:first] + [l[:len(l) // 2]]
        sys.stdout.write("\n".join(lines))
        sys.exit(0)
    sys.stdout.write("\n".join(lines))
EOF
gb() { python3 "$SCRATCH/gb.py" "$@"; }

# ===== the trees ===============================================================
R=$SCRATCH/repo
mkdir -p "$R/sub" && cd "$R" || exit 1
G init -q .
gb rand $((SEED + 1)) 4000 small.bin
gb rand $((SEED + 2)) 3000 new.bin.src
gb rand $((SEED + 3)) 2000 gone.bin
gb rand $((SEED + 4)) 2500 rewrite.bin
gb rand $((SEED + 5)) 700 toempty.bin
: >fromempty.bin
gb rand $((SEED + 6)) 1500 mode.bin
gb rand $((SEED + 7)) 300000 big.bin
gb rand $((SEED + 8)) 5000 moved.bin
gb rand $((SEED + 9)) 5000 sub/orig.bin
gb rand $((SEED + 10)) 900 sub/same.bin
chmod 600 sub/same.bin
mv new.bin.src "$SCRATCH/new.bin"
G add -A && G commit -qm old
rm -rf "$SCRATCH/old" && mkdir "$SCRATCH/old" && G archive HEAD | tar --no-same-permissions -x -C "$SCRATCH/old"
chmod 600 "$SCRATCH/old/sub/same.bin" # the mode git does not keep

gb edit $((SEED + 11)) small.bin 3
cp "$SCRATCH/new.bin" sub/new.bin
rm gone.bin
gb rand $((SEED + 12)) 2500 rewrite.bin
: >toempty.bin
gb rand $((SEED + 13)) 600 fromempty.bin
gb edit $((SEED + 14)) mode.bin 2 && chmod +x mode.bin
gb poke big.bin 1000 250000 # 249 KiB unchanged between: whole 64 KiB copies
G mv moved.bin sub/moved.bin && gb edit $((SEED + 16)) sub/moved.bin 1
cp sub/orig.bin sub/copy.bin && gb edit $((SEED + 17)) sub/copy.bin 1
G add -A
G diff --cached --binary -M -C --find-copies-harder >"$SCRATCH/all.diff"
G commit -qm new
# the same without copy detection (sub/copy.bin a creation)
G diff --binary -M HEAD~1 HEAD >"$SCRATCH/nocopy.diff"
rm -rf "$SCRATCH/new" && mkdir "$SCRATCH/new" && G archive HEAD | tar --no-same-permissions -x -C "$SCRATCH/new"
chmod 600 "$SCRATCH/new/sub/same.bin"
A=$SCRATCH/all.diff
gb blocks "$A" >"$SCRATCH/blocks"
sed 's/^/# /' "$SCRATCH/blocks"

# the patch has every shape the test is about
check "small.bin: delta both ways" test "$(grep -c '^small.bin delta' "$SCRATCH/blocks")" -eq 2
check "sub/new.bin: literal (and literal 0 back)" grep -q '^sub/new.bin literal 3000' "$SCRATCH/blocks"
check "gone.bin: deleted, literal 0 then the old content" grep -q '^gone.bin literal 0' "$SCRATCH/blocks"
check "rewrite.bin: literal" grep -q '^rewrite.bin literal 2500' "$SCRATCH/blocks"
check "toempty.bin and fromempty.bin: binary records" test "$(grep -c '^\(toempty\|fromempty\).bin ' "$SCRATCH/blocks")" -eq 4
check "mode.bin: mode change and binary patch" grep -A3 '^diff --git a/mode.bin' "$A" | grep -q '^new mode 100755'
check "big.bin: delta with 64 KiB copies at offsets past 64 KiB" \
	grep -qE '^big.bin delta [0-9]+ copies [0-9]+ maxsize 65536 maxoff ([7-9][0-9]{4}|[0-9]{6})' "$SCRATCH/blocks"
check "sub/moved.bin: a rename with a binary patch" grep -q '^rename to sub/moved.bin' "$A"
check "sub/copy.bin: a copy with a binary patch" grep -q '^copy to sub/copy.bin' "$A"
check "every binary record has a full index line" test "$(grep -c '^GIT binary patch' "$A")" -eq "$(grep -cE '^index [0-9a-f]{40}\.\.[0-9a-f]{40}' "$A")"

# ===== apply, -R, undo, redo ====================================================
W=$SCRATCH/w
fresh() { rm -rf "$W" && cp -a "$SCRATCH/old" "$W" && cd "$W" && D -q checkpoint create --message base >/dev/null 2>&1; }
fresh
t "decree apply of git diff --binary" D apply "$A"
same "... the old tree becomes the new one byte for byte, mode for mode" "$(state "$W")" "$(state "$SCRATCH/new")"
check "... sub/same.bin keeps its 0600" test "$(stat -c %a sub/same.bin)" = 600
check "... big.bin is exactly git's" cmp -s big.bin "$SCRATCH/new/big.bin"
fresh
t "the patch without copies (git diff --binary -M) applies too" D -q apply "$SCRATCH/nocopy.diff"
same "... to the new tree exactly" "$(state "$W")" "$(state "$SCRATCH/new")"
B=$(stamps "$W")
t "... applied again: every file is already as the patch leaves it" D apply "$SCRATCH/nocopy.diff"
check "... and it says so" grep -q '^nothing to apply: every file is already as .*nocopy.diff leaves it$' <<<"$OUT"
check "... naming each of the 11 files" test "$(grep -c '^skip .* (already as the patch leaves it)$' <<<"$ERR")" -eq 11
same "... nothing written" "$(stamps "$W")" "$B"
t "... and -R brings the old tree back" D -q apply -R "$SCRATCH/nocopy.diff"
same "... exactly" "$(state "$W")" "$(state "$SCRATCH/old")"
fresh
t "decree apply of git diff --binary (again)" D -q apply "$A"
t "decree apply -R (the reverse blocks)" D -q apply -R "$A"
same "... back to the old tree exactly" "$(state "$W")" "$(state "$SCRATCH/old")"
t "decree undo" D -q undo
same "... the new tree again" "$(state "$W")" "$(state "$SCRATCH/new")"
t "decree undo again (the first apply)" D -q undo
same "... the old tree again" "$(state "$W")" "$(state "$SCRATCH/old")"
t "decree apply --check lists every path" D apply --check "$A"
same "... create, modify and delete as git says" "$(printf '%s\n' "$OUT" | grep -E '^(create|modify|delete|skip) ' | sort)" \
	"$(printf '%s\n' 'create sub/copy.bin' 'create sub/moved.bin' 'create sub/new.bin' 'delete gone.bin' \
		'delete moved.bin' 'modify big.bin' 'modify fromempty.bin' 'modify mode.bin' 'modify rewrite.bin' \
		'modify small.bin' 'modify toempty.bin' 'skip sub/orig.bin' | sort)"

# abbreviated ids (7 hex digits) are accepted as prefixes
sed -E 's/^index ([0-9a-f]{7})[0-9a-f]{33}\.\.([0-9a-f]{7})[0-9a-f]{33}/index \1..\2/' "$A" >"$SCRATCH/abbrev.diff"
check "the abbreviated patch has short index lines" grep -qE '^index [0-9a-f]{7}\.\.[0-9a-f]{7}( |$)' "$SCRATCH/abbrev.diff"
fresh
t "a patch with 7-digit blob ids applies" D -q apply "$SCRATCH/abbrev.diff"
same "... to the new tree exactly" "$(state "$W")" "$(state "$SCRATCH/new")"

# ===== conflicts: nothing is written ===========================================
fresh
gb edit $((SEED + 20)) small.bin 1
B=$(stamps "$W")
t_err "*conflict: *binary file 'small.bin' is not the one the patch expects (its git blob id is *, the index line says *)*decree: 1 of * do not apply ('small.bin'); nothing was written*" \
	"pre-image differs: exit 1 naming small.bin" 1 D apply "$A"
same "... nothing written (contents, modes, inodes, mtimes)" "$(stamps "$W")" "$B"
fresh
cp "$SCRATCH/new/sub/new.bin" sub/new.bin && printf 'x' >>sub/new.bin
B=$(stamps "$W")
t_err "*conflict: *cannot create 'sub/new.bin': it already exists*" "a file to create exists with other content: exit 1" 1 D apply "$A"
same "... nothing written" "$(stamps "$W")" "$B"
fresh
cp "$SCRATCH/new/sub/new.bin" sub/new.bin
t "a file to create that exists with exactly the new content: skipped" D -q apply "$A"
same "... the rest applied: the new tree" "$(state "$W")" "$(state "$SCRATCH/new")"

# the index line names a result the data does not give (a damaged patch
# whose data still inflates: the new id of small.bin replaced)
newid=$(sed -n '/^diff --git a\/small.bin/,/^GIT/s/^index [0-9a-f]*\.\.\([0-9a-f]*\).*/\1/p' "$A")
sed "s/\.\.$newid/..$(printf '%040d' 1)/" "$A" >"$SCRATCH/wrongid.diff"
fresh
B=$(stamps "$W")
t_err "*conflict: *binary patch for 'small.bin' gives a file whose git blob id * is not the index line's 000000000000*" \
	"the result is not the index line's new blob: exit 1" 1 D apply "$SCRATCH/wrongid.diff"
same "... nothing written" "$(stamps "$W")" "$B"

# -R without reverse blocks: refused, nothing written
python3 - "$A" >"$SCRATCH/fwdonly.diff" <<'EOF'
import sys
out, blk = [], 0
lines = open(sys.argv[1]).read().split("\n")
i = 0
while i < len(lines):
    l = lines[i]
    if l == "GIT binary patch":
        blk = 0
    if l.startswith("literal ") or l.startswith("delta "):
        blk += 1
        if blk == 2:  # drop the reverse block and its empty line
            while lines[i]:
                i += 1
            i += 1
            continue
    out.append(l)
    i += 1
sys.stdout.write("\n".join(out))
EOF
check "the forward-only patch has one block per record" test "$(grep -cE '^(literal|delta) ' "$SCRATCH/fwdonly.diff")" -eq "$(grep -c '^GIT binary patch' "$A")"
fresh
t "a patch without reverse blocks applies forwards" D -q apply "$SCRATCH/fwdonly.diff"
same "... to the new tree" "$(state "$W")" "$(state "$SCRATCH/new")"
B=$(stamps "$W")
t_err "*has no reverse block: it cannot be applied in reverse*" "... -R is refused: exit 1" 1 D apply -R "$SCRATCH/fwdonly.diff"
same "... nothing written" "$(stamps "$W")" "$B"

# ===== damaged data: one line, nothing changed =================================
G -C "$R" diff --binary HEAD~1 HEAD -- small.bin >"$SCRATCH/small.diff"
for kind in b85 zlib delta cut; do
	gb corrupt $kind "$SCRATCH/small.diff" >"$SCRATCH/bad-$kind.diff"
	check "the patch damaged by '$kind' differs from the good one" test -s "$SCRATCH/bad-$kind.diff" -a -n "$(cmp "$SCRATCH/small.diff" "$SCRATCH/bad-$kind.diff" 2>&1)"
done
fresh
B=$(stamps "$W")
t_err "decree: $SCRATCH/bad-b85.diff:5: malformed binary patch data: invalid base85 character" \
	"damaged base85: exit 1" 1 D apply "$SCRATCH/bad-b85.diff"
check "... one line" one_line "$ERR"
t_err "decree: $SCRATCH/bad-zlib.diff:4: damaged binary patch data: *" \
	"damaged zlib stream: exit 1" 1 D apply "$SCRATCH/bad-zlib.diff"
check "... one line" one_line "$ERR"
t_err "decree: $SCRATCH/bad-delta.diff:4: damaged binary patch delta: delta copies bytes * of a *-byte source" \
	"delta copying past its source: exit 1" 1 D apply "$SCRATCH/bad-delta.diff"
check "... one line" one_line "$ERR"
t_err "decree: $SCRATCH/bad-cut.diff:5: malformed binary patch data: base85 line for * bytes has * characters, not *" \
	"patch cut inside a base85 line: exit 1" 1 D apply "$SCRATCH/bad-cut.diff"
check "... one line" one_line "$ERR"
grep -v '^index ' "$SCRATCH/small.diff" >"$SCRATCH/noindex.diff"
t_err "decree: $SCRATCH/noindex.diff:1: git binary patch for 'small.bin' without an index line naming both blobs (7 to 40 hex digits)" \
	"no index line: exit 1" 1 D apply "$SCRATCH/noindex.diff"
check "... one line" one_line "$ERR"
G -C "$R" diff HEAD~1 HEAD -- small.bin >"$SCRATCH/nodata.diff"
check "git diff without --binary says 'Binary files ... differ'" grep -q '^Binary files a/small.bin and b/small.bin differ$' "$SCRATCH/nodata.diff"
t_err "decree: $SCRATCH/nodata.diff:3: binary change without content (\"Binary files ... differ\") cannot be applied" \
	"'Binary files a/x and b/x differ': exit 1" 1 D apply "$SCRATCH/nodata.diff"
check "... one line" one_line "$ERR"
same "... none of them changed anything" "$(stamps "$W")" "$B"
t_exit 1 "... nor does --check pass them" D apply --check "$SCRATCH/bad-zlib.diff"

# ===== decree's own binary records in GNU patch and git apply ====================
# (docs/diff-format.md 1.5 quotes these messages)
O=$SCRATCH/own
mkdir -p "$O" && cd "$O" || exit 1
printf 'a\0b' >img.bin && printf 'hello\n' >t.txt
D -q checkpoint create --session s --message base >/dev/null
printf 'n\0w' >img.bin && printf 'hello world\n' >t.txt
D checkpoint diff s:base >"$SCRATCH/own.diff"
D -q checkpoint restore s:base
check "decree's diff carries a decree-base64 record" grep -q '^decree-base64 new 3$' "$SCRATCH/own.diff"
rm -rf "$SCRATCH/p1" && mkdir "$SCRATCH/p1" && cp img.bin t.txt "$SCRATCH/p1/"
(cd "$SCRATCH/p1" && patch -p1 <"$SCRATCH/own.diff") >"$SCRATCH/.o" 2>&1
same "GNU patch: exit 1" "$?" 1
same "... skips the binary record, applies the text one" "$(cat "$SCRATCH/.o")" "File img.bin: git binary diffs are not supported.
patching file t.txt"
check "... img.bin untouched" cmp -s "$SCRATCH/p1/img.bin" img.bin
check "... t.txt patched" grep -qx 'hello world' "$SCRATCH/p1/t.txt"
rm -rf "$SCRATCH/g1" && mkdir "$SCRATCH/g1" && cp img.bin t.txt "$SCRATCH/g1/"
(cd "$SCRATCH/g1" && git apply "$SCRATCH/own.diff") >"$SCRATCH/.o" 2>&1
same "git apply: exit 128" "$?" 128
same "... refuses the whole patch" "$(cat "$SCRATCH/.o")" "error: unrecognized binary patch at line 3
error: No valid patches in input (allow with \"--allow-empty\")"
same "... and writes nothing" "$(state "$SCRATCH/g1")" "$(state "$O")"
t "decree apply takes it" D -q apply "$SCRATCH/own.diff"
check "... img.bin is the new one" test "$(od -An -c img.bin | tr -d ' ')" = 'n\0w'

done_testing
