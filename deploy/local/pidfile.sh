# shellcheck shell=bash
# Pid files that name the process they were written for, sourced by
# stack.sh (and through it galera.sh) and run.sh.
#
# Why not just `kill -0 $(cat f)`: a pid file outlives its process when the
# machine stops, or the process is SIGKILLed, and the kernel hands the pid
# out again. A state directory kept across a reboot (the Galera nodes' lives
# in /var/lib/flashsale, outside the checkout) then names a stranger: CI's
# Galera step took such a stranger for node-1, skipped the bootstrap, and
# failed at once on node-1's socket; `down` would have sent it SIGTERM.
#
# So a pid file holds the pid and the process's start time (field 22 of
# /proc/PID/stat, clock ticks since boot), and a process counts only when
# both match. A pid file of an older stack, with the pid alone, counts when
# its process started no later than the file was written (2 s of slack for
# the boot time's rounding).

# proc_start PID: the process's start time in clock ticks since boot.
proc_start() {
  local stat f
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # The command name (field 2) may hold spaces and parentheses: count
  # fields after its closing one. Field 3 is then the first, field 22 the 20th.
  stat=${stat##*) }
  read -ra f <<<"$stat"
  echo "${f[19]}"
}

# pidfile_write FILE PID: FILE names PID, as started now.
pidfile_write() {
  echo "$2 $(proc_start "$2" || echo -)" >"$1"
}

# pidfile_pid FILE: the pid FILE names (ask pidfile_alive first).
pidfile_pid() {
  local pid _
  read -r pid _ <"$1" || [[ -n ${pid:-} ]] || return 1
  echo "$pid"
}

# pidfile_alive FILE: the process FILE was written for is running.
pidfile_alive() {
  local f=$1 pid start now_start btime hz mtime
  [[ -f $f ]] || return 1
  read -r pid start <"$f" || [[ -n ${pid:-} ]] || return 1
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  now_start=$(proc_start "$pid") || return 1
  if [[ -n ${start:-} ]]; then
    [[ $start == "$now_start" ]]
    return
  fi
  btime=$(awk '$1 == "btime" {print $2}' /proc/stat)
  hz=$(getconf CLK_TCK)
  mtime=$(stat -c %Y "$f")
  ((btime + now_start / hz <= mtime + 2))
}
