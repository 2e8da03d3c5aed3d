#!/bin/sh
# Doxygen's input filter for the public headers: their plain // comments (the project's style) read
# as /// doc comments, so that a class's or function's page shows the comment written above it.
exec sed -e 's|^\([[:space:]]*\)// |\1/// |' -e 's|^\([[:space:]]*\)//$|\1///|' "$1"
