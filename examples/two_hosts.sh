#!/bin/sh
# Two hosts sharing one memory store through a bare git remote, all in a temporary folder.
#
#   sh examples/two_hosts.sh            (needs lantern and git on PATH; LANTERN=... to override)
#
# Host "laptop" creates the store and pushes it; host "desktop" clones it. Both then change the
# same record differently, sync, and end with byte-identical record files; the merge commit
# lists the fields both sides changed.
set -eu

LANTERN=${LANTERN:-lantern}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lantern-two-hosts.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export LANTERN_AUTHOR="Example <example@localhost>"
unset LANTERN_STORE

say() { printf '\n== %s\n' "$*"; }

say "a bare remote, and the first host's store pushed to it"
git init -q --bare remote.git
$LANTERN init laptop
git -C laptop remote add origin "$WORK/remote.git"
$LANTERN --store laptop sync

say "the second host clones it; lantern clone registers the merge driver (git config is not cloned)"
$LANTERN clone remote.git desktop
git -C desktop config merge.lantern.driver
git -C desktop config pull.rebase

say "a record written on the laptop reaches the desktop"
ID=$($LANTERN --store laptop memory add "Deploys happen on Fridays." --kind fact \
    --scope project:web --priority 50 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
$LANTERN --store laptop sync
$LANTERN --store desktop sync
$LANTERN --store desktop memory list

say "both hosts change the same record while apart"
$LANTERN --store laptop memory update "$ID" --priority 90 --add-source-ref chat:laptop
$LANTERN --store laptop memory archive "$ID" --reason "moved to continuous deploys"
sleep 1  # a later updated_at on the desktop: its priority wins the two-sided change
$LANTERN --store desktop memory update "$ID" --priority 20 --add-source-ref chat:desktop
$LANTERN --store desktop memory add "The web team owns deploys." --kind fact --scope project:web

say "sync both ways: the desktop merges, the laptop fast-forwards"
$LANTERN --store laptop sync
$LANTERN --store desktop sync --json | python3 -m json.tool
$LANTERN --store laptop sync

say "the merge commit, as git log shows it"
git -C desktop log --graph --format='%h %s%n%b' -4

say "the merged record: archived (laptop), priority 20 (desktop, later), both source refs"
$LANTERN --store laptop memory show "$ID"

say "identical record files on both hosts"
diff -r laptop/memory desktop/memory && echo "laptop/memory and desktop/memory are identical"
git -C laptop status --porcelain
git -C desktop status --porcelain
