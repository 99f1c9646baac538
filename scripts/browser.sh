#!/usr/bin/env bash
# Debian's chromium for the dashboard's browser test (tests/integration/test_dashboard_browser.py):
# prints the browser's path, installing the `chromium` package first when it is missing, so a
# fresh Debian machine runs the test as it is. Playwright drives it (executable_path); Playwright's
# own browser download is never used.
#
#   bash scripts/browser.sh      # -> /usr/bin/chromium
#
# Exits non-zero (and says why on stderr) when chromium is absent and cannot be installed: the
# test then fails, it does not skip.
set -euo pipefail

found() { command -v chromium || command -v chromium-browser || true; }

path="$(found)"
if [[ -z "$path" ]]; then
    command -v apt-get >/dev/null || {
        echo "browser.sh: chromium is not installed and there is no apt-get to install it" >&2
        exit 1
    }
    sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo -n)
    echo "browser.sh: installing Debian's chromium (apt-get install chromium)" >&2
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium >&2
    path="$(found)"
fi
[[ -n "$path" ]] || {
    echo "browser.sh: apt-get install chromium did not provide a chromium binary" >&2
    exit 1
}
echo "$path"
