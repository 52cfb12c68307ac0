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

# The OAS sandbox profile's offline apt-get (toolemu.toolkits.sandbox.oas_apt) hands out programs installed here:
#   php-cli openssh-server cron zbar-tools libzbar0   (with --no-install-recommends; services are not started)
# Those are installed as root too; elsewhere a warning names the command and set-up goes on (the sandbox's apt-get
# then says they were not set up).
mode="${TOOLEMU_SYSTEM_PACKAGES:-install}"
oas_missing=()
for pkg in php-cli openssh-server cron zbar-tools libzbar0; do
  [[ "$(dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null)" == installed ]] || oas_missing+=("$pkg")
done
if ((${#oas_missing[@]})); then
  if [[ "$mode" != check && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "toolemu: installing the OAS profile's programs: ${oas_missing[*]}" >&2
    # No service may start on this host (sshd, cron): policy-rc.d refuses every start while they install.
    made_policy=""
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${oas_missing[@]}" || status=$?
    [[ -n "$made_policy" ]] && rm -f /usr/sbin/policy-rc.d
    if [[ -d /run/systemd/system ]]; then  # nor at the next boot (only the services installed just now)
      for pkg in "${oas_missing[@]}"; do
        case "$pkg" in openssh-server) unit=ssh ;; cron) unit=cron ;; *) continue ;; esac
        systemctl disable "$unit.service" >/dev/null 2>&1 || true
      done
    fi
    ((${status:-0} == 0)) || exit "$status"
  else
    echo "toolemu: the OAS profile's apt-get will lack ${oas_missing[*]}; to add them run:" \
         "sudo apt-get install --no-install-recommends ${oas_missing[*]}" >&2
  fi
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
if [[ "$mode" != check && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
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
