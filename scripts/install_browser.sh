#!/usr/bin/env bash
# Installs what the dashboard's browser tests need, and nothing when it is already there (idempotent):
#   - Chromium from Debian's packages (apt-get install chromium), the browser Playwright drives;
#   - playwright-core and the front-end build tools from npm (npm ci, from package-lock.json).
# Playwright's own browser downloads are never used (they come from outside the package registries).
# Run as root, or as a user with sudo. CHROMIUM=/path/to/chromium uses another Chromium instead.
set -euo pipefail
cd "$(dirname "$0")/.."

chromium="${CHROMIUM:-}"
if [ -z "$chromium" ]; then
  for candidate in /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -x "$candidate" ]; then chromium="$candidate"; break; fi
  done
fi
if [ -z "$chromium" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser.sh: no Chromium and no apt-get: install Chromium and set CHROMIUM=/path/to/it" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "install_browser.sh: Chromium is missing; run 'apt-get install -y chromium' as root" >&2
      exit 1
    fi
  fi
  echo "Installing Chromium from Debian's packages (about a minute, once)..."
  started=$(date +%s)
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  chromium=/usr/bin/chromium
  echo "Chromium installed in $(( $(date +%s) - started )) s."
fi
if ! "$chromium" --version >/dev/null 2>&1; then
  echo "install_browser.sh: $chromium does not run ('$chromium --version' failed)" >&2
  exit 1
fi

if ! node -e "require.resolve('playwright-core'); require.resolve('esbuild'); require.resolve('chart.js'); require.resolve('axe-core')" >/dev/null 2>&1; then
  echo "Installing playwright-core and the dashboard's build tools from npm (npm ci)..."
  npm ci --no-audit --no-fund --loglevel=error
fi

echo "Browser tests ready: $("$chromium" --version 2>/dev/null | head -1), playwright-core $(node -p "require('playwright-core/package.json').version")"
