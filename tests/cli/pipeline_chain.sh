#!/bin/bash
# pipeline_chain.sh - chains (seed 002 "Message Processing", "Depth
# Limiting"; DESIGN "Messages", "Processing one message"): follow-ups
# written by a routine as .decree/inbox/<chain>-<seq+1>.md are processed
# immediately, depth-first, before any other chain; seq >= max_depth is
# dead-lettered with a note; follow-ups of a dead-lettered message go to
# dead/ with it; chain ids are unique even when many chains start in one
# second (YYYYMMDDHHmmss + 2 digits).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

outcome() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["outcome"])' "$1/outcome.json" 2>&1; }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 1\nmax_depth: 10\n' >.decree/config.yml
export ORDER=$SCRATCH/order.log
# chainer: logs its id, and below seq `upto` writes the next follow-up
# (follow-up seq `plain` without frontmatter: the file name carries chain/seq)
cat >.decree/routines/chainer.sh <<'EOF'
#!/bin/bash
# Spawn follow-ups up to seq $upto.
upto="${upto:-3}"
fail_at="${fail_at:--1}"
plain="${plain:-}"
echo "$message_id" >>"$ORDER"
echo "seq $seq of $chain" >"step-$seq.txt"
ls .decree/runs >"$message_dir/runs-at-start"
if [ "$seq" -lt "$upto" ]; then
	next=.decree/inbox/$chain-$((seq + 1)).md
	if [ "$((seq + 1))" != "$plain" ]; then
		printf -- '---\nroutine: chainer\nupto: %s\nfail_at: %s\n---\nfollow-up %s\n' "$upto" "$fail_at" "$((seq + 1))" >"$next"
	else
		printf 'follow-up %s without frontmatter\n' "$((seq + 1))" >"$next"
	fi
fi
[ "$seq" != "$fail_at" ]
EOF
# follow-ups without frontmatter run the default routine
printf 'max_retries: 1\nmax_depth: 10\ndefault_routine: chainer\n' >.decree/config.yml

# ===== -0 .. -3 depth-first ================================================================
: >"$ORDER"
t "run a chain root that spawns -1, -2, -3" D run -m root -p start -v routine=chainer -v upto=3 -v plain=1
c=$(fm .decree/inbox/done/root.md chain)
same "... processed in order -0 -1 -2 -3" "$(cat "$ORDER")" "$(printf '%s\n' "$c-0" "$c-1" "$c-2" "$c-3")"
for s in 0 1 2 3; do
	check "... .decree/runs/$c-$s/ exists" test -f ".decree/runs/$c-$s/outcome.json"
done
for s in 1 2 3; do
	check "... follow-up $c-$s.md done" test -f ".decree/inbox/done/$c-$s.md"
done
same "... a follow-up's frontmatter was normalized" "$(fm ".decree/inbox/done/$c-2.md" id) $(fm ".decree/inbox/done/$c-2.md" seq) $(fm ".decree/inbox/done/$c-2.md" routine)" "$c-2 2 chainer"
same "... a follow-up without frontmatter got chain and seq from its name" "$(fm ".decree/inbox/done/$c-1.md" chain) $(fm ".decree/inbox/done/$c-1.md" seq)" "$c 1"
same "... each follow-up saw its parent's changes (no revert between)" "$(ls step-*.txt | tr '\n' ' ')" "step-0.txt step-1.txt step-2.txt step-3.txt "

# ===== depth-first before other chains ======================================================
# an older chain waits in the inbox; `decree run` does its own chain first
cat >.decree/inbox/older.md <<'EOF'
---
id: 2001010100000000-0
chain: 2001010100000000
seq: 0
type: task
routine: chainer
upto: 1
---
an older chain, waiting
EOF
: >"$ORDER"
t "run a new chain while an older chain waits in the inbox" D run -m second -p go -v routine=chainer -v upto=2
c2=$(fm .decree/inbox/done/second.md chain)
same "... its follow-ups come first, then the other chain (and its follow-up)" "$(cat "$ORDER")" \
	"$(printf '%s\n' "$c2-0" "$c2-1" "$c2-2" 2001010100000000-0 2001010100000000-1)"
case "$(cat ".decree/runs/2001010100000000-0/runs-at-start")" in *"$c2-2"*) ok "... .decree/runs/<chain>-2 existed before the other chain started" ;;
*) not_ok "... .decree/runs/<chain>-2 existed before the other chain started" "$(cat ".decree/runs/2001010100000000-0/runs-at-start")" ;; esac
if grep -q 2001010100000000 ".decree/runs/$c2-1/runs-at-start"; then
	not_ok "... the other chain had not run when -1 started"
else ok "... the other chain had not run when -1 started"; fi

# decree process: two id-less messages; the first one's follow-up runs before the second
printf -- '---\nroutine: chainer\nupto: "1"\n---\nA\n' >.decree/inbox/a-first.md
printf -- '---\nroutine: chainer\nupto: "0"\n---\nB\n' >.decree/inbox/b-second.md
: >"$ORDER"
t "process two waiting chains, the first spawning a follow-up" D process
ca=$(fm .decree/inbox/done/a-first.md chain)
cb=$(fm .decree/inbox/done/b-second.md chain)
same "... a-0, a-1, then b-0" "$(cat "$ORDER")" "$(printf '%s\n' "$ca-0" "$ca-1" "$cb-0")"
check "... each id-less message got its own chain" test "$ca" != "$cb"

# a follow-up written for another chain's id does not jump the queue of this chain
: >"$ORDER"
cat >.decree/routines/twochains.sh <<'EOF'
#!/bin/bash
echo "$message_id" >>"$ORDER"
if [ "$seq" = 0 ]; then
	printf -- '---\nroutine: chainer\nupto: "0"\n---\nother\n' >.decree/inbox/zz-unrelated.md
	printf -- '---\nroutine: chainer\nupto: "1"\n---\nmine\n' >".decree/inbox/$chain-1.md"
fi
EOF
t "a routine that queues an unrelated message and a follow-up" D run -m two -p x -v routine=twochains
c3=$(fm .decree/inbox/done/two.md chain)
cz=$(fm .decree/inbox/done/zz-unrelated.md chain)
same "... own chain first (-0, -1), then the unrelated one" "$(cat "$ORDER")" "$(printf '%s\n' "$c3-0" "$c3-1" "$cz-0")"

# numeric seq order: -9 before -10
printf 'max_retries: 1\nmax_depth: 20\ndefault_routine: chainer\n' >.decree/config.yml
for s in 10 9; do
	printf -- '---\nroutine: chainer\nupto: "0"\n---\nseq %s\n' "$s" >".decree/inbox/2002020200000000-$s.md"
done
: >"$ORDER"
t "two follow-ups -9 and -10 waiting" D process
same "... -9 runs before -10 (numeric)" "$(cat "$ORDER")" "$(printf '%s\n' 2002020200000000-9 2002020200000000-10)"

# ===== max_depth =============================================================================
printf 'max_retries: 1\nmax_depth: 3\ndefault_routine: chainer\n' >.decree/config.yml
: >"$ORDER"
t_exit 1 "a chain running past max_depth 3: exit 1" D run -m deep -p x -v routine=chainer -v upto=6
c=$(fm .decree/inbox/done/deep.md chain)
same "... -0, -1, -2 processed" "$(cat "$ORDER")" "$(printf '%s\n' "$c-0" "$c-1" "$c-2")"
check "... -3 (seq >= max_depth) is in inbox/dead/" test -f ".decree/inbox/dead/$c-3.md"
check "... -1 and -2 are done" test -f ".decree/inbox/done/$c-1.md" -a -f ".decree/inbox/done/$c-2.md"
check "... the note names MaxDepthExceeded" grep -q MaxDepthExceeded ".decree/runs/$c-3/dead-letter.md"
same "... outcome dead" "$(outcome ".decree/runs/$c-3")" dead
check "... nothing ran for -3 (no routine.log)" test ! -e ".decree/runs/$c-3/routine.log"
case "$ERR" in *"$c-3"*) ok "... stderr reports it" ;; *) not_ok "... stderr reports it" "$ERR" ;; esac
check "... no -4 was created" test ! -e ".decree/inbox/$c-4.md" -a ! -e ".decree/inbox/dead/$c-4.md"
printf -- '---\nid: 2003030300000000-12\nchain: 2003030300000000\nseq: 12\ntype: task\nroutine: chainer\n---\nway too deep\n' >.decree/inbox/deep-hand.md
: >"$ORDER"
t_exit 1 "a hand-written message with seq 12 (max_depth 3): exit 1" D process
check "... dead-lettered" test -f .decree/inbox/dead/deep-hand.md
same "... never ran" "$(cat "$ORDER")" ""

# ===== follow-ups of a dead-lettered message go to dead/ with it ===========================
printf 'max_retries: 2\nmax_depth: 10\ndefault_routine: chainer\n' >.decree/config.yml
: >"$ORDER"
t_exit 1 "a chain whose -1 spawns -2 and then fails: exit 1" D run -m failing -p x -v routine=chainer -v upto=3 -v fail_at=1
c=$(fm .decree/inbox/done/failing.md chain)
check "... -0 done" test -f ".decree/inbox/done/failing.md"
check "... -1 dead" test -f ".decree/inbox/dead/$c-1.md"
check "... the -2 it left behind is dead-lettered with it" test -f ".decree/inbox/dead/$c-2.md"
check "... and not left in the inbox" test ! -e ".decree/inbox/$c-2.md"
same "... -2 never ran" "$(grep -c -- "$c-2" "$ORDER")" 0
same "... -1 ran max_retries + 1 = 3 times" "$(grep -c -- "$c-1" "$ORDER")" 3
same "... inbox empty afterwards" "$(ls .decree/inbox | grep -c '\.md$')" 0

# ===== unique chain ids ======================================================================
printf 'echo "$chain" >>"$CHAINS"\n' >.decree/routines/quick.sh
export CHAINS=$SCRATCH/chains
: >"$CHAINS"
now=$(date +%Y%m%d%H%M%S)
for i in 1 2 3 4 5 6; do D -q run -m "quick-$i" -p x -v routine=quick || not_ok "quick run $i" "$?"; done
pids=
for i in 7 8 9 10; do D -q run -m "quick-$i" -p x -v routine=quick & pids="$pids $!"; done
for p in $pids; do wait "$p" || not_ok "parallel run exit" "pid $p"; done
later=$(date +%Y%m%d%H%M%S)
same "10 runs in quick succession (4 in parallel): 10 chains" "$(wc -l <"$CHAINS")" 10
same "... all distinct" "$(sort -u "$CHAINS" | wc -l)" 10
same "... each YYYYMMDDHHmmss + 2 digits" "$(grep -cxE '[0-9]{16}' "$CHAINS")" 10
bad=
while read -r ch; do
	stamp=${ch:0:14}
	[ "$stamp" -ge "$now" ] && [ "$stamp" -le "$later" ] || bad="$bad $ch"
	date -d "${stamp:0:8} ${stamp:8:2}:${stamp:10:2}:${stamp:12:2}" >/dev/null 2>&1 || bad="$bad $ch(not a date)"
done <"$CHAINS"
same "... the timestamp is the local time of the run" "$bad" ""
for i in 1 2 3 4 5 6 7 8 9 10; do
	ch=$(fm ".decree/inbox/done/quick-$i.md" chain)
	[ -d ".decree/runs/$ch-0" ] || bad="$bad quick-$i"
done
same "... each message ran in its own <chain>-0 directory" "$bad" ""
# a chain id already used only by a dead-lettered message is not reused
same "... none reuses a chain of dead/ or done/" "$(for f in .decree/inbox/dead/*.md .decree/inbox/done/*.md; do [ "$(fm "$f" seq)" = 0 ] && fm "$f" chain; done | sort | uniq -d | wc -l)" 0

# two pipelines never work on one tree at once
cat >.decree/routines/exclusive.sh <<'EOF2'
#!/bin/bash
if ! mkdir "$SCRATCH_LOCK" 2>/dev/null; then echo "overlap $message_id" >>"$OVERLAP"; fi
sleep 0.3
echo "$message_id" >>exclusive.txt
rmdir "$SCRATCH_LOCK" 2>/dev/null
true
EOF2
export SCRATCH_LOCK=$SCRATCH/exclusive.lock OVERLAP=$SCRATCH/overlap
: >"$OVERLAP"
pids=
for i in 1 2 3 4; do D -q run -m "excl-$i" -p x -v routine=exclusive & pids="$pids $!"; done
rcs=
for p in $pids; do wait "$p"; rcs="$rcs $?"; done
same "4 parallel decree runs all succeed" "$rcs" " 0 0 0 0"
same "... their routines never overlapped" "$(cat "$OVERLAP")" ""
same "... all 4 ran" "$(wc -l <exclusive.txt)" 4

# 100 chains of this second (and the next two) taken: the next chain id waits
now=$(date +%s)
for dt in 0 1 2; do
	st=$(date -d "@$((now + dt))" +%Y%m%d%H%M%S)
	for k in $(seq -w 0 99); do printf -- '---\nchain: %s%s\nseq: 0\n---\n' "$st" "$k" >".decree/inbox/done/taken-$st$k.md"; done
done
: >"$CHAINS"
t "a run when 100 chain ids of this second are taken" timeout 60 "$DECREE" -q run -m after-taken -p x -v routine=quick
ch=$(cat "$CHAINS")
case "$ch" in [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]) ok "... gets a 16-digit chain id" ;; *) not_ok "... gets a 16-digit chain id" "$ch" ;; esac
check "... not one of the taken ones" test ! -e ".decree/inbox/done/taken-$ch.md"
rm -f .decree/inbox/done/taken-*.md

# dead/ is read for chains too (done/ and dead/ are read only for messages
# written in the last two hours, docs/pipeline.md: these are new): the two
# first chain ids of this second and the next three are taken there, with
# no run directory
now=$(date +%s)
for dt in 0 1 2 3; do
	st=$(date -d "@$((now + dt))" +%Y%m%d%H%M%S)
	for k in 00 01; do printf -- '---\nchain: %s%s\nseq: 0\n---\n' "$st" "$k" >".decree/inbox/dead/ahead-$st$k.md"; done
done
: >"$CHAINS"
t "a run when chain ids of this second are taken in dead/" D -q run -m after-dead -p x -v routine=quick
ch=$(cat "$CHAINS")
check "... its chain is not one of them" test ! -e ".decree/inbox/dead/ahead-$ch.md"
if [ -e ".decree/inbox/dead/ahead-${ch:0:14}00.md" ]; then
	same "... the first free one of its second" "${ch:14}" 02
else
	not_ok "... the first free one of its second" "the run began more than 3 s late: $ch"
fi
rm -f .decree/inbox/dead/ahead-*.md

done_testing
