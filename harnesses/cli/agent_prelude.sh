#!/bin/sh
# The start of a CLI harness's command inside the trial container: sets default environment
# variables, creates the harness's own directories, writes its config files, then execs the CLI.
# tbflow passes this file's text as the script of `sh -c` (harnesses/cli/cli_harness.py,
# sh_prelude) and every input as a positional parameter, so no content is ever quoted into
# shell code. POSIX sh only: the image may have nothing but dash or busybox.
#
# Usage: sh -c "$(cat agent_prelude.sh)" sh N NAME=VALUE... M DIR... K PATH CONTENT... ARGV...
#   N defaults: NAME is exported as VALUE only where the image leaves it unset or empty, so an
#     image that sets, say, XDG_CONFIG_HOME keeps it
#   M directories, created with their parents
#   K files: PATH gets CONTENT and a newline, byte for byte
#   then ARGV replaces the shell (its exit status is the command's)
# Exit status: 2 for a malformed call, else that of a failing step, else ARGV's.
set -eu

tbflow_n=$1
shift
while [ "$tbflow_n" -gt 0 ]; do
  tbflow_name=${1%%=*}
  case $tbflow_name in
    '' | [0-9]* | *[!A-Za-z0-9_]*)
      printf 'tbflow prelude: not a variable name: %s\n' "$tbflow_name" >&2
      exit 2 ;;
  esac
  eval "tbflow_current=\${$tbflow_name-}"
  if [ -z "$tbflow_current" ]; then
    export "$tbflow_name=${1#*=}"
  fi
  tbflow_n=$((tbflow_n - 1))
  shift
done

tbflow_n=$1
shift
while [ "$tbflow_n" -gt 0 ]; do
  mkdir -p -- "$1"
  tbflow_n=$((tbflow_n - 1))
  shift
done

tbflow_n=$1
shift
while [ "$tbflow_n" -gt 0 ]; do
  printf '%s\n' "$2" > "$1"
  tbflow_n=$((tbflow_n - 1))
  shift 2
done

unset tbflow_n tbflow_name tbflow_current
exec "$@"
