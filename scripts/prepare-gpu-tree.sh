#!/usr/bin/env bash
# Copies a source tree (default: this checkout) without build outputs into .gpu-tree/ of this
# checkout, with the staged .deps, so that a device run builds exactly that tree even while
# other work is in progress here.   usage: scripts/prepare-gpu-tree.sh [source-dir]
set -euo pipefail
root=$(git rev-parse --show-toplevel)
src=${1:-$root}
grep -qx '/.gpu-tree/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu-tree/' >> "$root/.git/info/exclude"
[[ -d $root/.deps ]] || (cd "$root" && ../shared/tools/stage-gpu-deps)
rm -rf "$root/.gpu-tree"
mkdir -p "$root/.gpu-tree"
tar -C "$src" --exclude='./build*' --exclude='./.git' --exclude='./.gpu-tree' --exclude='./.deps' -cf - . | tar -C "$root/.gpu-tree" -xf -
cp -r "$root/.deps" "$root/.gpu-tree/.deps"
du -sh "$root/.gpu-tree"
