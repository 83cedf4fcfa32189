#!/bin/bash
# pipeline_process.sh - `decree process` (seed 002 "decree process"):
# every unprocessed specs/*.spec.md, alphabetically, each a new chain of a
# type: spec message; success appends the spec name to
# specs/processed-spec.md; a spec that exhausts its retries is
# dead-lettered and processing continues; the inbox is processed first; a
# spec moved back from dead/ is processed again.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE


P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 1\ndefault_routine: impl\n' >.decree/config.yml
export ORDER=$SCRATCH/order.log
cat >.decree/routines/impl.sh <<'EOF'
#!/bin/bash
# Implement a spec; fails for specs that say FAIL.
echo "$spec_file $message_id" >>"$ORDER"
base=$(basename "$spec_file" .spec.md)
if grep -q FAIL "$spec_file"; then echo "partial" >"partial-$base.txt"; exit 1; fi
printf 'implemented %s\n' "$spec_file" >"impl-$base.txt"
EOF
cat >.decree/routines/special.sh <<'EOF'
#!/bin/bash
echo "$spec_file special $message_id" >>"$ORDER"
EOF
printf '# Zeta\n' >specs/30-zeta.spec.md
printf '# Alpha\n' >specs/10-alpha.spec.md
printf '# Beta\nFAIL\n' >specs/20-beta.spec.md
printf -- '---\nroutine: special\n---\n# Gamma\n' >specs/25-gamma.spec.md
printf '# Old\n' >specs/05-old.spec.md
printf 'notes, not a spec\n' >specs/notes.md
printf '05-old.spec.md\n' >specs/processed-spec.md
mkdir -p specs/sub && printf '# nested\n' >specs/sub/40-nested.spec.md

t "status before: 1 processed, 4 pending" D --json status
same "... specs counts" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin)["specs"]; print(d["processed"], d["pending"])')" "1 4"

: >"$ORDER"
t_exit 1 "decree process (one spec fails): exit 1" D process
same "... every unprocessed spec, alphabetically; the failing one twice (retry); already processed and non-specs skipped" \
	"$(cut -d' ' -f1 "$ORDER")" \
	"$(printf '%s\n' specs/10-alpha.spec.md specs/20-beta.spec.md specs/20-beta.spec.md specs/25-gamma.spec.md specs/30-zeta.spec.md)"
same "... continued past the dead-lettered spec (25, 30 ran)" "$(grep -c -e 25-gamma -e 30-zeta "$ORDER")" 2
for s in 10-alpha 25-gamma 30-zeta; do
	M=.decree/inbox/done/$s.md
	check "... $s: message $s.md in done/" test -f "$M"
	same "... $s: type spec, input_file specs/$s.spec.md, seq 0" "$(fm "$M" type) $(fm "$M" input_file) $(fm "$M" seq)" "spec specs/$s.spec.md 0"
	same "... $s: no body" "$(body "$M")" ""
done
check "... 20-beta: dead-lettered" test -f .decree/inbox/dead/20-beta.md
id=$(fm .decree/inbox/dead/20-beta.md id)
check "... 20-beta: its partial work is reverted" test ! -e partial-20-beta.txt
check "... 20-beta: dead-letter.md" test -f ".decree/runs/$id/dead-letter.md"
same "... processed-spec.md: the old entry, then the successes appended" "$(cat specs/processed-spec.md)" \
	"$(printf '%s\n' 05-old.spec.md 10-alpha.spec.md 25-gamma.spec.md 30-zeta.spec.md)"
chains=$(for s in 10-alpha 25-gamma 30-zeta; do fm ".decree/inbox/done/$s.md" chain; done; fm .decree/inbox/dead/20-beta.md chain)
same "... each spec a new chain (4 distinct)" "$(printf '%s\n' "$chains" | sort -u | wc -l)" 4
same "... chain ids increase in processing order" "$(printf '%s\n' "$chains" | head -3 | tr '\n' ' ')" "$(printf '%s\n' "$chains" | head -3 | sort | tr '\n' ' ')"
same "... 25-gamma used the routine of its frontmatter" "$(fm .decree/inbox/done/25-gamma.md routine)" special
same "... the others the default routine" "$(fm .decree/inbox/done/10-alpha.md routine)" impl
check "... the work of the successes is in the tree" test -f impl-10-alpha.txt -a -f impl-30-zeta.txt
check "... the spec in a sub-directory is not a specs/*.spec.md" test ! -e .decree/inbox/done/40-nested.md

t "status after" D --json status
same "... 4 processed, 1 pending (the dead one); 3 done, 1 dead" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["specs"]["processed"], d["specs"]["pending"], d["inbox"]["done"], d["inbox"]["dead"])')" "4 1 3 1"

: >"$ORDER"
t "decree process again: nothing to do (the dead spec waits for a re-queue), exit 0" D process
same "... no routine ran" "$(cat "$ORDER")" ""

# ===== a new spec is picked up; a re-queued dead spec is processed again ===================
printf '# Delta\n' >specs/15-delta.spec.md
printf '# Beta, fixed\n' >specs/20-beta.spec.md
mv .decree/inbox/dead/20-beta.md .decree/inbox/
: >"$ORDER"
t "decree process after a new spec and a re-queue" D process
same "... the re-queued inbox message first, then the new spec" "$(cut -d' ' -f1 "$ORDER")" "$(printf '%s\n' specs/20-beta.spec.md specs/15-delta.spec.md)"
check "... 20-beta done" test -f .decree/inbox/done/20-beta.md
same "... with its old id" "$(fm .decree/inbox/done/20-beta.md id)" "$id"
check "... its first run directory moved aside" test -f ".decree/runs/$id.old-1/dead-letter.md"
check "... the fresh run directory has no dead-letter.md" test ! -e ".decree/runs/$id/dead-letter.md"
same "... processed-spec.md gets both" "$(tail -2 specs/processed-spec.md)" "$(printf '%s\n' 20-beta.spec.md 15-delta.spec.md)"

# processed-spec.md edits by hand: a spec removed from the list runs again
sed -i '/^10-alpha.spec.md$/d' specs/processed-spec.md
: >"$ORDER"
t "a spec taken off processed-spec.md" D process
same "... runs again, as a new message 10-alpha-2.md" "$(cut -d' ' -f1 "$ORDER")|$(ls .decree/inbox/done | grep -c '^10-alpha-2.md$')" "specs/10-alpha.spec.md|1"
check "... and is listed again" grep -qx '10-alpha.spec.md' specs/processed-spec.md

# the inbox is processed before the specs
printf -- '---\nroutine: special\n---\nwaiting task\n' >.decree/inbox/waiting.md
printf '# Eta\n' >specs/50-eta.spec.md
: >"$ORDER"
t "inbox message and new spec" D process
same "... the inbox first, then the spec" "$(sed 's/ [0-9-]*$//' "$ORDER")" "$(printf ' special\nspecs/50-eta.spec.md')"
check "... the waiting message is done" test -f .decree/inbox/done/waiting.md

# without a processed-spec.md (another project)
P2=$SCRATCH/nolist
mkdir -p "$P2" && cd "$P2" && D -q init && cp "$P/.decree/config.yml" "$P/.decree/routines/impl.sh" .decree/ 2>/dev/null
mv .decree/impl.sh .decree/routines/
rm specs/processed-spec.md
printf '# Theta\n' >specs/60-theta.spec.md
t "process without specs/processed-spec.md" D process
check "... processed-spec.md is created" test -f specs/processed-spec.md
case "$(cat specs/processed-spec.md)" in *60-theta.spec.md*) ok "... listing the new success" ;; *) not_ok "... listing the new success" "$(cat specs/processed-spec.md)" ;; esac

# --json
cd "$P" || exit 1
printf '# Iota\n' >specs/70-iota.spec.md
printf '# Kappa\nFAIL\n' >specs/71-kappa.spec.md
t_exit 1 "process --json with one success and one dead spec" D --json process
same "... the runs and counts" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(r["message"], r["outcome"]) for r in d["runs"] if r["message"] in ("70-iota.md","71-kappa.md")], d["dead"], d["interrupted"])')" \
	"[('70-iota.md', 'done'), ('71-kappa.md', 'dead')] 1 False"

done_testing
