#!/usr/bin/env bash
# Renders an SVG from blueprint-translate --estimate (--timeline/--memory)
# to PNG with headless Chromium, at the picture's own size.
# Usage: tools/screenshot.sh IN.svg OUT.png
set -euo pipefail
in=$1 out=$2
if ! command -v chromium >/dev/null; then
  SUDO=""; if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
fi
size=$(python3 -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print('%d,%d' % (float(r.get('width')), float(r.get('height'))))" "$in")
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
  --screenshot="$(realpath -m "$out")" "file://$(realpath "$in")" 2>/dev/null
echo "wrote $out ($size)"
