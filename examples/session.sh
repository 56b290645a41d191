#!/usr/bin/env bash
# A short lantern session against a throw-away store: run it with `bash examples/session.sh`.
#
# LANTERN_STORE points every command at the temporary store, so nothing touches your own
# default store. Each write below is one git commit, shown at the end with `git log`.
set -euo pipefail

if command -v lantern >/dev/null 2>&1; then
    lantern() { command lantern "$@"; }
else
    # Not installed as a command (e.g. running from a checkout): use the module.
    lantern() { "${PYTHON:-python3}" -m lantern_git "$@"; }
fi

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
export LANTERN_STORE="$workdir/memory"

step() { printf '\n$ %s\n' "$*"; }

step lantern init "\$LANTERN_STORE"
lantern init "$LANTERN_STORE"

step lantern memory add ... --kind preference --scope user:raphael --priority 90
lantern memory add "Raphael prefers separate branches on his repos." \
    --kind preference --scope user:raphael --priority 90

# --quiet prints only the id, for scripts.
deploy_id=$(lantern memory add "Deploys go through Jenkins." \
    --kind fact --scope project:lantern --priority 60 --quiet)
echo "added $deploy_id (captured with --quiet)"

step 'echo ... | lantern memory add - --kind observation --source-ref session:42'
printf 'Standup: the search index rebuild\ntakes 2s on 10k records.\n' |
    lantern memory add - --kind observation --scope project:lantern --source-ref session:42

step lantern memory add ... --kind task_state --urgency 80 --expires-at +7d
lantern memory add "Renew the TLS certificate on zettabyte." \
    --kind task_state --scope host:zettabyte --urgency 80 --expires-at +7d

step lantern memory add ... again '(idempotent: same kind, scope and content; no commit)'
lantern memory add "Deploys go through Jenkins." --kind fact --scope project:lantern

step lantern memory list
lantern memory list

step "lantern memory list --scope 'project:*' --min-priority 40"
lantern memory list --scope 'project:*' --min-priority 40

step lantern memory search deploys
lantern memory search deploys

step lantern memory supersede "${deploy_id:0:7}" ... --reason '"moved CI"'
lantern memory supersede "${deploy_id:0:7}" "Deploys go through GitHub Actions." --reason "moved CI"

step lantern memory update ... --priority 95
pref_id=$(lantern memory add "Raphael prefers separate branches on his repos." \
    --kind preference --scope user:raphael --quiet)
lantern memory update "$pref_id" --priority 95 --reason "said twice"

step lantern memory show "${deploy_id:0:7}"
lantern memory show "${deploy_id:0:7}"

step lantern memory list --status all --json
lantern memory list --status all --json

step lantern status
lantern status

step git log --format='%h %s'
git -C "$LANTERN_STORE" log --format='%h %s'

step git show HEAD '(the last commit: only the lines that changed, and its trailers)'
git -C "$LANTERN_STORE" --no-pager show --format='%B' HEAD

step git status --porcelain '(lantern leaves nothing uncommitted)'
git -C "$LANTERN_STORE" status --porcelain
