#!/bin/sh
# Doxygen's input filter for the public headers: their plain // comments (the project's style) read
# as doc comments, so that a name's page shows the comment written above it (///) or after it on the
# same line (///<, a member's trailing comment). A line indented three spaces past the // (the
# headers' examples) gets two more: Markdown's code block, so `template <class T>` is code, not a tag.
exec sed -e 's|^\([[:space:]]*\)//   |\1///     |' -e 's|^\([[:space:]]*\)// |\1/// |' -e 's|^\([[:space:]]*\)//$|\1///|' \
  -e 's|\([;{},]\)\([[:space:]]*\)// |\1\2///< |' "$1"
