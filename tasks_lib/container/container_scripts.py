"""The POSIX ``sh`` programs tbflow runs inside trial containers.

They are passed as ``sh -c SCRIPT`` arguments, never written into the container, so an agent
cannot edit them. They need only ``/bin/sh`` and ``/proc`` (no procps, no python), because task
images are minimal and must not be changed for tbflow.

Sessions: every ``docker exec`` starts its process as a session leader (pid = sid = pgid;
measured on Docker 20.10 / runc). The wrappers record ``$$`` — that session id — in a file under
``RUN_DIR`` before ``exec``-ing the real command, so later stages know exactly which sessions are
the agent's. Background jobs (``cmd &``) stay in that session; a daemon that detaches itself
calls ``setsid`` and leaves it.
"""

from __future__ import annotations

#: tbflow's scratch directory inside the container (session ids, verifier snapshot, staging).
RUN_DIR = "/opt/tbflow/run"
AGENT_SID_GLOB = f"{RUN_DIR}/agent-*.sid"
VERIFIER_SID_FILE = f"{RUN_DIR}/verifier.sid"
TESTS_STAGING = f"{RUN_DIR}/staging"
#: written by the verifier wrapper when it is done; a progress marker only, nothing trusts it
VERIFIER_DONE_FILE = f"{RUN_DIR}/verifier.done"
#: the most bytes of one reward file the verifier wrapper reports (a reward is one number or a
#: small JSON object)
REWARD_REPORT_CAP = 65536
#: the file systems whose fullness the wrapper reports when test.sh wrote no reward
DISK_PATHS = "/ /tmp /logs/verifier /tests"

# $1 sid file, $2 stdout file, $3 stderr file ("" = merge into stdout), $4.. the command.
AGENT_WRAPPER = r"""
sidfile=$1; out=$2; err=$3; shift 3
echo $$ > "$sidfile"
if [ -z "$err" ]; then exec "$@" </dev/null >"$out" 2>&1; fi
exec "$@" </dev/null >"$out" 2>"$err"
"""

# Lists processes and, in kill mode, kills every process of the given sessions plus their
# descendants (a harness's tool command may run in a session of its own, but it is still the
# harness's child). Processes are stopped first, round by round until no new one appears, then
# killed together, so nothing can fork its way out. $1 = list|kill, $2.. = globs of session-id
# files. Output lines: "killed PID SID CMD", then "left PID SID CMD" for what still runs.
PROCESS_TOOL = r"""
mode=$1; shift
stat_sid() { r=${1##*) }; set -- $r; echo "$4"; }
read -r selfstat < /proc/$$/stat
selfsid=$(stat_sid "$selfstat")
roots=""
for f in "$@"; do
  for g in $f; do [ -r "$g" ] && read -r s < "$g" && roots="$roots $s"; done
done
snapshot() {
  for d in /proc/[0-9]*; do
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    r=${st##*) }
    set -- $r
    echo "${d#/proc/} $2 $4 $1"
  done
}
describe() {
  c=""
  if command -v tr >/dev/null 2>&1; then
    c=$(tr '\000' ' ' < "/proc/$1/cmdline" 2>/dev/null)
  fi
  if [ -z "$c" ]; then { read -r st < "/proc/$1/stat"; } 2>/dev/null; c=${st#*(}; c="[${c%)*}]"; fi
  echo "$c"
}
targets() {
  t=" "
  changed=1
  while [ $changed = 1 ]; do
    changed=0
    while read -r p pp s state; do
      [ -z "$p" ] && continue
      { [ "$p" = 1 ] || [ "$s" = "$selfsid" ] || [ "$state" = Z ]; } && continue
      case "$t" in *" $p "*) continue ;; esac
      hit=0
      for r in $roots; do [ "$s" = "$r" ] && hit=1; done
      case "$t" in *" $pp "*) hit=1 ;; esac
      if [ $hit = 1 ]; then t="$t$p "; changed=1; fi
    done <<SNAPEOF
$SNAP
SNAPEOF
  done
  echo "$t"
}
if [ "$mode" = kill ] && [ -n "$roots" ]; then
  stopped=" "
  i=0
  while [ $i -lt 50 ]; do
    SNAP=$(snapshot)
    new=""
    for p in $(targets); do
      case "$stopped" in *" $p "*) ;; *) new="$new $p" ;; esac
    done
    [ -z "$new" ] && break
    for p in $new; do
      { read -r st < "/proc/$p/stat"; } 2>/dev/null || continue
      kill -STOP "$p" 2>/dev/null
      echo "killed $p $(stat_sid "$st") $(describe "$p")"
      stopped="$stopped$p "
    done
    i=$((i+1))
  done
  for p in $stopped; do kill -KILL "$p" 2>/dev/null; done
  n=0
  while [ $n -lt 100 ]; do
    alive=0
    for p in $stopped; do
      if { read -r st < "/proc/$p/stat"; } 2>/dev/null; then
        case "${st##*) }" in Z*) ;; *) alive=1 ;; esac
      fi
    done
    [ $alive = 0 ] && break
    sleep 0.05 2>/dev/null || sleep 1
    n=$((n+1))
  done
fi
SNAP=$(snapshot)
while read -r p pp s state; do
  [ -z "$p" ] && continue
  { [ "$s" = 1 ] || [ "$s" = "$selfsid" ] || [ "$state" = Z ]; } && continue
  echo "left $p $s $(describe "$p")"
done <<SNAPEOF
$SNAP
SNAPEOF
"""

# The verifier wrapper. $1 workdir, $2 the process tool, $3 "staged" (tests were uploaded to the
# staging dir) or "inline" (they follow as "kind path mode content" quadruples, see inline_files).
#
# Its report travels on the exec's own stdout (fd 3 below), which tbflow reads on the host: no
# file in the container decides the verdict, so nothing left running can rewrite it once test.sh
# has exited (verifier_witness parses it; README "Validity against adversarial agents"). Every
# other command writes to /dev/null or to a file, and test.sh runs with fd 3 closed. Reward files
# travel as hex (od), so their bytes cannot be confused with the report's own lines.
# Report lines: "tbflow-witness 1"; "p <process line>" (what the verifier runs next to);
# "note <what the agent left broken and the wrapper repaired>"; "pre|file NAME SIZE" + hex lines
# + "end" (a reward file found before test.sh / at its exit); "absent NAME"; "missing bash";
# "size test-stdout.txt N"; "df <line>"; "fail <why>"; "exit RC"; "done".
VERIFIER_WRAPPER = rf"""
exec 3>&1 >/dev/null 2>&1
echo $$ > {VERIFIER_SID_FILE}
workdir=$1; procs=$2; how=$3; shift 3
say() {{ printf '%s\n' "$*" >&3; }}
report_file() {{
  n=$(wc -c < "$3"); say "$1 $2 $n"; head -c {REWARD_REPORT_CAP} "$3" | od -An -v -tx1 >&3; say end
}}
report_disks() {{ df -PT {DISK_PATHS} 2>/dev/null | while IFS= read -r l; do say "df $l"; done; }}
say "tbflow-witness 1"
/bin/sh -c "$procs" tbflow-procs list 3>&- 2>&1 | while IFS= read -r l; do say "p $l"; done
if [ -L /logs ] || {{ [ -e /logs ] && [ ! -d /logs ]; }}; then
  say "note /logs was replaced by a non-directory; tbflow recreated it"; rm -f /logs
elif [ ! -d /logs ]; then say "note /logs was removed; tbflow recreated it"
elif [ -L /logs/verifier ] || {{ [ -e /logs/verifier ] && [ ! -d /logs/verifier ]; }}; then
  say "note /logs/verifier was replaced by a non-directory; tbflow recreated it"
elif [ ! -d /logs/verifier ]; then say "note /logs/verifier was removed; tbflow recreated it"
fi
for f in reward.txt reward.json; do
  if [ -f /logs/verifier/$f ] && [ ! -L /logs/verifier/$f ]; then report_file pre $f /logs/verifier/$f; fi
done
rm -rf /logs/verifier /tests
mkdir -p /logs/verifier || {{ say "fail /logs/verifier could not be created"; report_disks; exit 95; }}
chmod 755 /logs; chmod 777 /logs/verifier
if [ "$how" = staged ]; then
  mv {TESTS_STAGING}/tests /tests || {{ say "fail the tests could not be moved to /tests"; report_disks; exit 96; }}
else
  mkdir -p /tests
  while [ $# -ge 4 ]; do
    if [ "$1" = d ]; then mkdir -p "/tests/$2"; else
      printf '%b' "$4" > "/tests/$2" || {{ say "fail the tests could not be written to /tests"; report_disks; exit 96; }}
    fi
    chmod "$3" "/tests/$2"
    shift 4
  done
fi
if [ -n "$workdir" ]; then
  if [ ! -d "$workdir" ]; then say "note the workdir $workdir was removed; tbflow recreated it"; mkdir -p "$workdir"; fi
  cd "$workdir" || {{ say "fail cd $workdir"; report_disks; exit 97; }}
fi
command -v bash >/dev/null 2>&1 || say "missing bash"
bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1 </dev/null 3>&-
rc=$?
for f in reward.txt reward.json; do
  if [ -f /logs/verifier/$f ]; then report_file file $f /logs/verifier/$f; else say "absent $f"; fi
done
say "size test-stdout.txt $(wc -c < /logs/verifier/test-stdout.txt)"
[ -f /logs/verifier/reward.txt ] || [ -f /logs/verifier/reward.json ] || report_disks
say "exit $rc"
say done
: > {VERIFIER_DONE_FILE}
"""
