# restart: a hung daemon (SIGSTOP: no more watchdog pings) is killed by systemd's watchdog and
# restarted; a crashed one (SIGSEGV) is restarted. Each time the masks are scrambled while the
# daemon cannot act, so the placement afterwards is the new process's own first pass.
SCEN=restart
WATCHDOG_US=$(prop WatchdogUSec)
measure watchdog_sec "$WATCHDOG_US"
PID0=$(main_pid); NR0=$(prop NRestarts)
jmark
now; T0=$NOW
kill -STOP "$PID0"
scramble
wait_until 120000 active_new_pid "$PID0"; WATCHDOG_MS=$WAITED_MS
measure watchdog_restart_ms "$WATCHDOG_MS"
watchdog() {
  local info="MainPID $PID0 -> $(main_pid), NRestarts $NR0 -> $(prop NRestarts), $(prop ActiveState)"
  REPLY=$info
  [ "$WATCHDOG_MS" -ge 0 ] || return 1
  unit_log_has 'Watchdog timeout' || { REPLY="$info; no watchdog timeout in the journal"; return 1; }
  REPLY="$info; systemd: $REPLY"
  [ "$(prop NRestarts)" = $((NR0 + 1)) ]
}
check watchdog_killed "SIGSTOP: systemd's watchdog kills the daemon and restarts it" -- watchdog
check watchdog_result "the journal gives the result 'watchdog'" -- unit_log_has "Failed with result 'watchdog'"
# Measured, not asserted: from SIGSTOP to the new process active (WatchdogSec plus RestartSec).
check watchdog_placed "the new daemon placed the scrambled queues again" -- placed_as_planned

PID0=$(main_pid); NR0=$(prop NRestarts)
jmark
now; T0=$NOW
# Rust's runtime handles SIGSEGV (to report stack overflows): a SIGSEGV that is not a fault on a
# guard page restores the default action and returns, so the first one sent with kill(1) is
# absorbed; a real fault would fault again. The second is fatal, as a crash is.
kill -SEGV "$PID0"
usleep 300000
SEGV_SENT=1
kill -0 "$PID0" 2>/dev/null && { kill -SEGV "$PID0"; SEGV_SENT=2; }
measure segv_signals $SEGV_SENT
scramble
wait_until 60000 active_new_pid "$PID0"; SEGV_MS=$WAITED_MS
measure segv_restart_ms "$SEGV_MS"
crash() {
  local info="MainPID $PID0 -> $(main_pid), NRestarts $NR0 -> $(prop NRestarts)"
  REPLY=$info
  [ "$SEGV_MS" -ge 0 ] && [ "$(prop NRestarts)" = $((NR0 + 1)) ] || return 1
  unit_log_has 'status=11/SEGV' || { REPLY="$info; no status=11/SEGV in the journal"; return 1; }
  REPLY="$info; systemd: $REPLY"
}
check segv_restarted "SIGSEGV: restarted (Restart=on-failure)" -- crash
check segv_placed "the new daemon placed the scrambled queues again" -- placed_as_planned
