#!/bin/bash
# concurrency_mix.sh - mixed writers racing on one tree and one store
# (issue 9): in each round CONCURRENCY_PROCS (default 5, at least 4)
# decree processes start at once, each running one of
#   checkpoint create | checkpoint restore A|B|C | apply P | undo
# where A, B and C are checkpoints (three whole trees) and P is the patch
# `checkpoint diff A B` (it applies to A only; on B it has nothing to do,
# on C it conflicts).  After each round:
#   - every process exited 0 or 1, and every exit 1 is a conflict,
#     "nothing to undo" or a busy lock; no "corrupt"/"damaged", no
#     sanitizer report;
#   - the round is serializable: some order of the processes, run one
#     after the other from the state the last round left (tree and undo
#     history, tracked by a model), gives every process the exit status it
#     had and leaves exactly the tree found (which must be A, B or C as a
#     whole, never a mix);
#   - every checkpoint a create printed is listed;
#   - no temp file in the tree or the store, no txn.wal, fsck clean;
#   - `decree undo` does what the model says (put back the state before
#     the last change, or "nothing to undo" when the history is empty).
# CONCURRENCY_ROUNDS (default 8; `make torture` runs 100) rounds;
# CONCURRENCY_SEED picks the operations (printed, to replay a run).
. "$DECREE_TOP/tests/crash/lib.sh"
ROUNDS=${CONCURRENCY_ROUNDS:-8}
PROCS=${CONCURRENCY_PROCS:-5}
SEED=${CONCURRENCY_SEED:-$(($(date +%s) % 100000))}
echo "# concurrency_mix: $ROUNDS rounds of $PROCS processes, seed $SEED"
RANDOM=$SEED
[ "$PROCS" -ge 4 ] || PROCS=4

W=$SCRATCH/w
write_state() { # X: the whole tree of checkpoint X
	rm -rf "$W/d" "$W/n.txt" "$W"/f*.txt
	mkdir -p "$W/d"
	for i in 1 2 3 4 5 6; do printf 'line1\nline2 %d\nline3\n' "$i" >"$W/f$i.txt"; done
	for i in 1 2 3 4 5 6 7 8; do printf 'deep %d\n' "$i" >"$W/d/g$i.txt"; done
	case $1 in
	B) sed -i 's/line2/LINE2-B/' "$W/f1.txt" "$W/f2.txt"
		echo new >"$W/n.txt"
		printf 'deep b\n' >"$W/d/g3.txt" ;;
	C) sed -i 's/line2/LINE2-C/' "$W/f1.txt" "$W/f3.txt"
		rm "$W/f6.txt" "$W/d/g8.txt"
		chmod 755 "$W/f4.txt" ;;
	esac
}
mkdir -p "$W"
for x in A B C; do
	write_state $x
	fast_state "$W" >"$SCRATCH/state.$x"
	"$DECREE" -C "$W" checkpoint create --message "$x" >/dev/null ||
		{ not_ok "set up checkpoint $x" "create failed"; done_testing; exit 1; }
done
"$DECREE" -C "$W" checkpoint diff default:A default:B >"$SCRATCH/p.diff"
[ -s "$SCRATCH/p.diff" ] || { not_ok "set up the patch" "empty diff"; done_testing; exit 1; }

label_of() { # the checkpoint whose tree $W is exactly, or "?"
	local st x
	st=$(fast_state "$W")
	for x in A B C; do
		[ "$st" = "$(cat "$SCRATCH/state.$x")" ] && { echo $x; return; }
	done
	echo "?"
}

# The model: states are (tree, undo stack of (before, after)); the start is
# tree C with an empty history.
cat >"$SCRATCH/model.py" <<'PY'
import itertools, json, sys

def step(st, op):
    tree, undo = st
    if op == "create":
        return st, 0
    if op.startswith("restore:"):
        x = op[8:]
        if x == tree:
            return st, 0                      # nothing to restore
        return (x, undo + ((tree, x),)), 0
    if op == "apply":
        if tree == "A":
            return ("B", undo + (("A", "B"),)), 0
        if tree == "B":
            return st, 0                      # nothing to apply
        return st, 1                          # conflict
    if op == "undo":
        if not undo:
            return st, 1                      # nothing to undo
        before, after = undo[-1]
        if after != tree:
            return st, 1
        return (before, undo[:-1]), 0
    raise ValueError(op)

mode = sys.argv[1]
states = {tuple((s[0], tuple(tuple(e) for e in s[1]))) for s in json.load(open(sys.argv[2]))}
if mode == "round":
    ops = json.loads(sys.argv[3])            # [[op, exit], ...], exit "lock" = did not run
    tree_seen = sys.argv[4]
    ran = [(o, e) for o, e in ops if e != "lock"]
    out = set()
    for st0 in states:
        for perm in itertools.permutations(range(len(ran))):
            st, ok = st0, True
            for i in perm:
                st, want = step(st, ran[i][0])
                if want != ran[i][1]:
                    ok = False
                    break
            if ok and st[0] == tree_seen:
                out.add(st)
else:                                         # "undo": the harness's undo
    rc, tree_seen = int(sys.argv[3]), sys.argv[4]
    out = set()
    for st0 in states:
        st, want = step(st0, "undo")
        if want == rc and st[0] == tree_seen:
            out.add(st)
json.dump(sorted([s[0], list(s[1])] for s in out), open(sys.argv[2], "w"))
print(len(out))
PY
echo '[["C", []]]' >"$SCRATCH/model.json"

# PROCS operations, each kind at least once, shuffled, into OPS (in this
# shell: a subshell would draw other random numbers than the seed's)
ops_of_round() {
	local kinds=(create apply undo restore) cks=(A B C) all=() i j t
	all=("${kinds[@]}")
	for i in $(seq 5 "$PROCS"); do all+=("${kinds[$((RANDOM % 4))]}"); done
	for i in "${!all[@]}"; do
		[ "${all[$i]}" = restore ] && all[i]="restore:${cks[$((RANDOM % 3))]}"
	done
	for ((i = ${#all[@]} - 1; i > 0; i--)); do
		j=$((RANDOM % (i + 1)))
		t=${all[$i]} all[i]=${all[$j]} all[j]=$t
	done
	OPS=("${all[@]}")
}

for round in $(seq 1 "$ROUNDS"); do
	ops_of_round
	ops=("${OPS[@]}")
	pids=()
	for i in "${!ops[@]}"; do
		case ${ops[$i]} in
		create) set -- checkpoint create --session "p$i" --message "r$round-p$i" ;;
		restore:*) set -- checkpoint restore "default:${ops[$i]#restore:}" ;;
		apply) set -- apply "$SCRATCH/p.diff" ;;
		undo) set -- undo ;;
		esac
		"$DECREE" -C "$W" "$@" >"$SCRATCH/o$i" 2>"$SCRATCH/e$i" &
		pids[i]=$!
	done
	why="" json="[" created=""
	for i in "${!ops[@]}"; do
		wait "${pids[$i]}"
		rc=$? err=$(cat "$SCRATCH/e$i") e=$rc
		case "$err" in
		*orrupt* | *amaged* | *Sanitizer* | *"runtime error"*) why="$why; ${ops[$i]}: $err" ;;
		esac
		case $rc in
		0) [ "${ops[$i]}" = create ] && created="$created r$round-p$i" ;;
		1) case "$err" in
			*"is locked"* | *"lock"*"held"* | *"waited"*) e='"lock"' ;;
			*conflict* | *"do not apply"* | *"nothing to undo"*) ;;
			*) why="$why; ${ops[$i]} exit 1 without a conflict or lock message: $err" ;;
			esac ;;
		*) why="$why; ${ops[$i]} exit $rc: $err" ;;
		esac
		json="$json[\"${ops[$i]}\", $e],"
	done
	json="${json%,}]"
	tree=$(label_of)
	[ "$tree" != "?" ] || why="$why; the tree is none of A, B, C: $(diff "$SCRATCH/state.A" <(fast_state "$W") | head -6 | tr '\n' ' ')"
	n=$($PY3 "$SCRATCH/model.py" round "$SCRATCH/model.json" "$json" "$tree")
	[ "$n" -gt 0 ] 2>/dev/null || why="$why; no serial order gives these exits and tree $tree: $json"
	listed=$("$DECREE" -C "$W" checkpoint list --json 2>&1)
	for c in $created; do
		case "$listed" in *"\"$c\""*) ;; *) why="$why; checkpoint $c was created but is not listed" ;; esac
	done
	[ -z "$(temps_in "$W")" ] || why="$why; temp files: $(temps_in "$W" | head -3 | tr '\n' ' ')"
	left=$(find "$W/.decree" -name '*tmp*' -o -name checkpoints.drop)
	[ -z "$left" ] || why="$why; store leftovers: $(echo "$left" | head -3 | tr '\n' ' ')"
	[ -z "$(wal_in "$W")" ] || why="$why; a txn.wal is left"
	"$DECREE" -C "$W" fsck >"$SCRATCH/fsck.out" 2>&1 || why="$why; fsck: $(head -3 "$SCRATCH/fsck.out" | tr '\n' ' ')"
	# the harness's own undo, checked against the model
	"$DECREE" -C "$W" undo >"$SCRATCH/undo.out" 2>&1
	rc=$?
	tree2=$(label_of)
	if [ "$n" -gt 0 ] 2>/dev/null; then
		n2=$($PY3 "$SCRATCH/model.py" undo "$SCRATCH/model.json" "$rc" "$tree2")
		[ "$n2" -gt 0 ] 2>/dev/null || why="$why; undo after the round: exit $rc, tree $tree2, which no serial order predicts: $(tail -2 "$SCRATCH/undo.out" | tr '\n' ' ')"
	fi
	if [ -z "$why" ]; then
		ok "round $round: ${ops[*]} -> $tree, undo -> $tree2"
	else
		not_ok "round $round: ${ops[*]} -> $tree" "${why#; }"
		break # the model cannot follow a round it did not understand
	fi
done
echo "# concurrency_mix: $round round(s) run"
done_testing
