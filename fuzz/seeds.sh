#!/bin/sh
# fuzz/seeds.sh DECREE OUT - seed inputs from files decree really writes.
#
# Runs a scratch project through the program DECREE (checkpoints with
# sessions, messages, labels and a skipped file; a stat cache base and a
# delta; restore, undo, redo and apply, so the history has undo and redo
# entries; decree init and two pipeline runs, one done and one
# dead-lettered) and writes what it left on disk as seed inputs in the
# input layout of each target (fuzz/common.h: parts joined by FUZZ_SEP):
#   OUT/pack/       idx SEP pack [SEP idx SEP pack]
#   OUT/record/     checkpoints.cache SEP record... (at most 8 records)
#   OUT/statcache/  statcache [SEP statcache.delta]
#   OUT/oplog/      oplog
#   OUT/message/    inbox, done, dead, run and spec messages
#   OUT/config/     .decree/config.yml
#   OUT/runs/       outcome.json SEP manifest.json [SEP outcome.json]
#   OUT/routine/    shell routine [SEP notebook]
# The committed corpora (fuzz/corpus/<target>/) were started from these
# and hand-made edge cases (fuzz/edge-seeds.py), then grown by fuzzing
# and minimized with -merge=1 (docs/fuzzing.md).
# Usage: sh fuzz/seeds.sh build/decree /tmp/seeds
set -eu
DECREE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/decree-seeds.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
SEP='
--8<--
'
mkdir -p "$OUT"/pack "$OUT"/record "$OUT"/statcache "$OUT"/oplog \
	"$OUT"/message "$OUT"/config "$OUT"/runs "$OUT"/routine
d() { "$DECREE" -q "$@"; }
join() { # out file... : the files joined by SEP
	out=$1
	shift
	: >"$out"
	first=1
	for f in "$@"; do
		[ $first = 1 ] || printf '%s' "$SEP" >>"$out"
		first=0
		cat "$f" >>"$out"
	done
}

# --- a project with history --------------------------------------------
p=$work/p
mkdir -p "$p/src/deep/er" "$p/docs"
cd "$p"
for i in $(seq 1 40); do printf 'file %s\n' "$i" >"docs/f$i.txt"; done
printf 'int main(void) { return 0; }\n' >src/main.c
printf '#!/bin/sh\necho hi\n' >src/run.sh
chmod +x src/run.sh
ln -s main.c src/link.c
printf 'x%.0s' $(seq 1 200) >src/deep/er/long.txt
printf 'caf\303\251 \342\200\250 \t tab\n' >"src/na me é.txt"
head -c 3000 /dev/zero | tr '\0' 'z' >big.bin
mkdir -p .decree
printf 'checkpoint:\n  max_file_size: 2K\n  exclude: ["*.tmp", "build/"]\n' \
	>.decree/config.yml
d checkpoint create --session chat --message msg-1
printf 'changed\n' >>src/main.c
d checkpoint create --session chat --message "msg 2: \"quoted\"" --label "a label"
printf 'one more\n' >>docs/f7.txt
d checkpoint create --session other --message "$(printf 'caf\303\251 \001')"
d checkpoint create
d checkpoint restore chat:msg-1
d undo
d checkpoint restore chat:msg-1
d undo
d redo
d undo
d checkpoint diff chat:msg-1 >"$work/turn.diff"
d checkpoint restore chat:msg-1
d apply "$work/turn.diff"
rootdir=$(ls -d .decree/store/roots/*)

i=0
for idx in .decree/store/packs/*.idx; do
	i=$((i + 1))
	join "$OUT/pack/real-$i" "$idx" "${idx%.idx}.pack"
done
set -- .decree/store/packs/*.idx
join "$OUT/pack/real-two" "$1" "${1%.idx}.pack" "$2" "${2%.idx}.pack"

recs=$(ls "$rootdir"/checkpoints/* | head -8)
# shellcheck disable=SC2086
join "$OUT/record/real-cache-and-records" "$rootdir/checkpoints.cache" $recs
i=0
for r in $recs; do
	i=$((i + 1))
	printf '%s' "$SEP" >"$OUT/record/real-record-$i"
	cat "$r" >>"$OUT/record/real-record-$i"
done
cp "$rootdir/checkpoints.cache" "$OUT/record/real-cache-alone"

cp "$rootdir/statcache" "$OUT/statcache/real-base"
# a new base (more than 1/16 of the files changed), then one file of 46
# changed: a delta.  The base is written a second after the files (racy
# entries are re-hashed, which counts as changed).
for i in $(seq 20 30); do printf 'again\n' >>"docs/f$i.txt"; done
sleep 1.1
d checkpoint create --session chat --message base
sleep 1.1
printf 'delta\n' >>docs/f9.txt
d checkpoint create --session chat --message delta
if [ -f "$rootdir/statcache.delta" ]; then
	join "$OUT/statcache/real-base-delta" "$rootdir/statcache" \
		"$rootdir/statcache.delta"
fi
cp "$rootdir/oplog" "$OUT/oplog/real-undo-redo"

# --- a pipeline project --------------------------------------------------
q=$work/q
mkdir -p "$q"
cd "$q"
d init
printf 'old\n' >a.txt
cat >.decree/routines/edit.sh <<'ROUTINE'
#!/usr/bin/env bash
# Change a.txt and add b.txt.
set -eu
printf 'new\n' > a.txt
printf 'b\n' > b.txt
ROUTINE
cat >.decree/routines/fail.sh <<'ROUTINE'
#!/usr/bin/env bash
# Never succeeds.
echo "no luck" >&2
exit 1
ROUTINE
d run -m "edit a" -p "Edit a.txt, add b.txt" -v routine=edit -v "note=a: b # c"
d run -m failing -p "$(printf 'Fail.\n---\nnot frontmatter\n')" -v routine=fail || true
cp .decree/config.yml "$OUT/config/real-init"
i=0
for m in .decree/inbox/done/*.md .decree/inbox/dead/*.md .decree/runs/*/message.md \
	specs/*.md; do
	[ -f "$m" ] || continue
	i=$((i + 1))
	cp "$m" "$OUT/message/real-$i"
done
cat >"$work/nb.ipynb" <<'NOTEBOOK'
{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# A notebook routine\n"]},
  {"cell_type": "code", "execution_count": null, "metadata": {"tags": ["parameters"]}, "outputs": [],
   "source": ["spec_file = \"\"\n", "target = \"staging\"  # where\n", "level = 1\n"]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["print(target)\n"]}
 ],
 "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
 "nbformat": 4, "nbformat_minor": 5
}
NOTEBOOK
for r in .decree/routines/*.sh; do
	cp "$r" "$OUT/routine/real-$(basename "$r" .sh)"
done
join "$OUT/routine/real-develop-and-notebook" .decree/routines/develop.sh \
	"$work/nb.ipynb"
set -- .decree/runs/*/
join "$OUT/runs/real-done" "$1/outcome.json" "$1/manifest.json" "$2/outcome.json"
join "$OUT/runs/real-dead" "$2/outcome.json" "$2/manifest.json"
