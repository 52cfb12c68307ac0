#!/usr/bin/env bash
# Checks the system programs toolemu uses and installs the missing ones with apt when it can (root, apt-get),
# else stops at once with the one command to run. `make setup` runs it before any long build.
#   bwrap              bubblewrap       the real-tool sandbox
#   setpriv, nsenter   util-linux       dropping root in the sandbox, joining an episode's network for checks
#   objdump            binutils         the AMX scan of the llama.cpp build
#   faketime           faketime         the episode clock (its libfaketime is preloaded in the sandbox)
#   chromium           chromium         the HTML viewer's browser test
#   chromedriver       chromium-driver  the same
# Set TOOLEMU_SYSTEM_PACKAGES=check to only check (exit 1 when something is missing).
set -euo pipefail
declare -A package=(
  [bwrap]=bubblewrap [setpriv]=util-linux [nsenter]=util-linux [objdump]=binutils [faketime]=faketime
  [chromium]=chromium [chromedriver]=chromium-driver
)
missing=()
for program in bwrap setpriv nsenter objdump faketime chromium chromedriver; do
  command -v "$program" >/dev/null 2>&1 || missing+=("${package[$program]}")
done
((${#missing[@]})) || exit 0
# One entry per package, in a stable order.
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
command_line="apt-get install -y ${missing[*]}"
if [[ "${TOOLEMU_SYSTEM_PACKAGES:-install}" != check && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "toolemu: installing system packages: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  exit 0
fi
if command -v apt-get >/dev/null; then
  echo "toolemu: missing system packages: ${missing[*]}. Run: sudo apt-get update && sudo $command_line" >&2
else
  echo "toolemu: missing system programs from the Debian packages ${missing[*]}; install their equivalents" \
       "with your system's package manager, then run make again" >&2
fi
exit 1
