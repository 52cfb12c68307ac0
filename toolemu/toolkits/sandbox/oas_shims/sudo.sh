#!/bin/sh
# sudo of the OAS sandbox profile: the agent is already root inside the sandbox (an unprivileged uid on the
# host, without capabilities), so sudo skips its options and runs the command as it is.
shell=""
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -u|-g|-p|-C|-D|-r|-t|-T|-U|-h|--user|--group|--prompt|--chdir|--role|--type|--host|--other-user)
      shift; [ $# -gt 0 ] && shift ;;
    -i|-s|--login|--shell) shell=1; shift ;;
    -l|--list) echo "User root may run the following commands: (ALL : ALL) ALL"; exit 0 ;;
    -v|-k|-K|--validate|--reset-timestamp|--remove-timestamp) exit 0 ;;
    -V|--version) echo "Sudo version 1.9 (toolemu sandbox: runs the command as root)"; exit 0 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  if [ -n "$shell" ]; then exec /bin/bash -l; fi
  echo "usage: sudo [-u user] [-E] [-H] [-n] [-s|-i] [--] command [args...]" >&2
  exit 1
fi
if [ -n "$shell" ]; then exec /bin/bash -c "$*"; fi
exec "$@"
