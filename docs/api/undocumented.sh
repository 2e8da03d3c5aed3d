#!/usr/bin/env bash
# Lists the public names of include/coalesce without a doc comment (doxygen's "is not documented"
# warnings with EXTRACT_ALL off), counted per header, the worst first; the full list in $1 (default
# /tmp/coalesce-undocumented.txt). The docs target and the docs.api_reference test fail on any such
# name (docs/api/Doxyfile.in: WARN_AS_ERROR); this says which and where, per header.
#   usage: docs/api/undocumented.sh [list file]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
list=${1:-/tmp/coalesce-undocumented.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s|@PROJECT_SOURCE_DIR@|$root|g" -e "s|@CMAKE_CURRENT_BINARY_DIR@|$work|g" -e "s|@PROJECT_VERSION@|check|g" \
  -e "s|^EXTRACT_ALL .*|EXTRACT_ALL = NO|" -e "s|^WARN_IF_UNDOCUMENTED .*|WARN_IF_UNDOCUMENTED = YES|" \
  -e "s|^GENERATE_HTML .*|GENERATE_HTML = NO|" -e "s|^WARN_AS_ERROR .*|WARN_AS_ERROR = NO|" "$root/docs/api/Doxyfile.in" > "$work/Doxyfile"
echo "WARN_LOGFILE = $work/warnings.txt" >> "$work/Doxyfile"
(cd "$work" && doxygen Doxyfile > /dev/null 2>&1)
{ grep "is not documented" "$work/warnings.txt" || true; } | sed "s|$root/||" | sort > "$list"
echo "$(wc -l < "$list") public names without a doc comment (list: $list)"
cut -d: -f1 "$list" | sort | uniq -c | sort -rn
