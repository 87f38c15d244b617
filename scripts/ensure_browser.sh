#!/usr/bin/env bash
# Headless Chromium and its driver from Debian's packages, for the tests that open the report and
# diff pages in a real browser (tests/helpers/browser.py; selenium itself is a dev dependency).
# Idempotent: a check of two binaries when they are there. As root on Debian/Ubuntu it installs
# `chromium` and `chromium-driver`; elsewhere it says what to install and fails.
set -euo pipefail

say() { echo "ensure_browser: $*" >&2; }

have() { command -v "$1" >/dev/null 2>&1; }

have_browser() { { have chromium || have chromium-browser || have google-chrome; } && have chromedriver; }

have_browser && exit 0
if [ "$(id -u)" = 0 ] && have apt-get; then
  say "installing chromium and chromium-driver (Debian)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The lock wait: another apt run (e.g. tracking_server.sh install) may hold dpkg for a while.
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium chromium-driver >/dev/null
fi
have_browser || { say "no Chromium and chromedriver; install them (Debian: apt-get install chromium chromium-driver)"; exit 1; }
