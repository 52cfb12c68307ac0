#!/usr/bin/env bash
# Checks the system programs toolemu uses and installs the missing ones with apt when it can (root, apt-get),
# else stops at once with the one command to run. `make setup` runs it before any long build.
#   bwrap              bubblewrap       the real-tool sandbox
#   setpriv, nsenter   util-linux       dropping root in the sandbox, joining an episode's network for checks
#   objdump            binutils         the AMX scan of the llama.cpp build
#   faketime           faketime         the episode clock (its libfaketime is preloaded in the sandbox)
#   cc, c++            gcc, g++         compiling llama-cpp-python; the sandbox tests' preload library
#   chromium           chromium         the HTML viewer's browser test
#   chromedriver       chromium-driver  the same
#   $PYTHON's venv     python3.X-venv   `make setup` creates .venv with it (Debian ships it apart from Python)
# $PYTHON (default python3) must be Python >= 3.11. Set TOOLEMU_SYSTEM_PACKAGES=check to only check (exit 1
# when something is missing).
set -euo pipefail
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "toolemu: $python not found; toolemu needs Python >= 3.11 (make PYTHON=/path/to/python3.11 ...)" >&2
  exit 1
fi
version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "toolemu: $python is Python $version; toolemu needs Python >= 3.11 (make PYTHON=/path/to/python3.11 ...)" >&2
  exit 1
fi

declare -A package=(
  [bwrap]=bubblewrap [setpriv]=util-linux [nsenter]=util-linux [objdump]=binutils [faketime]=faketime [cc]=gcc [c++]=g++
  [chromium]=chromium [chromedriver]=chromium-driver
)
programs=(bwrap setpriv nsenter objdump faketime cc c++ chromium chromedriver)

if ! "$python" -c 'import ensurepip' >/dev/null 2>&1 && [[ $(command -v "$python") != /usr/bin/* ]]; then
  echo "toolemu: $python has no ensurepip, so it cannot create .venv; use a Python with venv (make PYTHON=...)" >&2
  exit 1
fi

missing_packages() {
  local program
  for program in "${programs[@]}"; do
    command -v "$program" >/dev/null 2>&1 || echo "${package[$program]}"
  done
  # Debian and Ubuntu ship `venv`'s ensurepip in a package of its own, for their own Pythons only.
  "$python" -c 'import ensurepip' >/dev/null 2>&1 || echo "python$version-venv"
}

# One entry per package, in a stable order.
mapfile -t missing < <(missing_packages | sort -u)
((${#missing[@]})) || exit 0
command_line="apt-get install -y ${missing[*]}"
if [[ "${TOOLEMU_SYSTEM_PACKAGES:-install}" != check && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "toolemu: installing system packages: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  mapfile -t still < <(missing_packages | sort -u)
  if ((${#still[@]})); then
    echo "toolemu: apt-get installed ${missing[*]} but these still provide no program here: ${still[*]}" >&2
    exit 1
  fi
  exit 0
fi
if command -v apt-get >/dev/null; then
  echo "toolemu: missing system packages: ${missing[*]}. Run: sudo apt-get update && sudo $command_line" >&2
else
  echo "toolemu: missing system programs from the Debian packages ${missing[*]}; install their equivalents" \
       "with your system's package manager, then run make again" >&2
fi
exit 1
